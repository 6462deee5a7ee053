"""Canonical ``jobs`` and ``nodes`` tables: schemas, defaults and validation.

Every adapter ends by calling :func:`validate_jobs` (or :func:`validate_nodes`);
nothing downstream checks again. Each table carries a ``source_row`` column,
the 1-based data row of the raw file the record came from (the header is not
counted), so an error can point at the line a person would open.

The tables are the ones of docs/inputs.md:

- ``jobs``: one row per job, a job being a gang of ``num_pods`` identical pods
  each asking for ``gpu_milli`` thousandths of a GPU (above 1000 only whole
  multiples: 4000 is four whole GPUs on one node). ``job_id`` is the int64 key
  the engine uses (ties in time break by it); ``job_name`` is the trace's own
  id when that is text (``"jobA"``), null otherwise.
- ``nodes``: one row per machine.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

import polars as pl

from gpureplay.cluster.catalog import alias_table
from gpureplay.errors import InputError, Problem

#: The canonical jobs schema, in column order. ``source_row`` and ``source_*``
#: columns follow these.
JOBS_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "job_name": pl.String(),
    "submit_time": pl.Float64(),
    "duration": pl.Float64(),
    "num_pods": pl.Int32(),
    "gpu_milli": pl.Int32(),
    "gpu_mem_mib": pl.Int32(),
    "gpu_models": pl.List(pl.String()),
    "mig_profile": pl.String(),
    "cpu_milli": pl.Int32(),
    "mem_mib": pl.Int32(),
    "queue": pl.String(),
    "user": pl.String(),
    "priority": pl.Int32(),
    "preemptible": pl.Boolean(),
    "topology_mode": pl.String(),
    "topology_level": pl.String(),
    "topology_slice_level": pl.String(),
    "topology_slice_size": pl.Int32(),
}

#: Columns a generic trace must carry; the rest default as in :data:`JOB_DEFAULTS`.
REQUIRED_JOB_COLUMNS: tuple[str, ...] = ("job_id", "submit_time", "duration", "num_pods", "gpu_milli")

#: Defaults for the optional job columns. ``None`` means null ("not given"):
#: no GPU-memory request, any GPU model, no MIG profile, no user.
#: ``preemptible`` defaults to True because in Kubernetes any pod below a
#: higher PriorityClass can be preempted unless a policy says otherwise.
JOB_DEFAULTS: dict[str, object] = {
    "job_name": None,
    "gpu_mem_mib": None,
    "gpu_models": None,
    "mig_profile": None,
    "cpu_milli": 0,
    "mem_mib": 0,
    "queue": "default",
    "user": None,
    "priority": 0,
    "preemptible": True,
    "topology_mode": None,
    "topology_level": None,
    "topology_slice_level": None,
    "topology_slice_size": None,
}

#: Columns that may hold nulls; every other canonical column must be filled.
NULLABLE_JOB_COLUMNS: frozenset[str] = frozenset(
    {
        "job_name",
        "gpu_mem_mib",
        "gpu_models",
        "mig_profile",
        "user",
        "topology_mode",
        "topology_level",
        "topology_slice_level",
        "topology_slice_size",
    }
)

#: Restart overhead of Lucid's simulator (``simulation/policy/policy.py``): checkpoint
#: and cold start, 40 s for jobs of at most 8 GPUs, 60 s for larger ones
#: (docs/systems.md, "Research simulators"), used when the jobs table gives no
#: ``restart_overhead`` column.
LUCID_SMALL_OVERHEAD = 40.0
LUCID_LARGE_OVERHEAD = 60.0
LUCID_SMALL_GPUS = 8

#: PriorityClass ``preemptionPolicy`` values (docs/systems.md, "kube-scheduler").
PREEMPTION_POLICIES: tuple[str, ...] = ("PreemptLowerPriority", "Never")


def lucid_overhead(gpus: pl.Expr) -> pl.Expr:
    """Lucid's restart overhead for a job of ``gpus`` GPUs (40 s up to 8 GPUs, else 60 s)."""
    return pl.when(gpus <= LUCID_SMALL_GPUS).then(LUCID_SMALL_OVERHEAD).otherwise(LUCID_LARGE_OVERHEAD)


#: The canonical nodes schema, in column order.
NODES_SCHEMA: dict[str, pl.DataType] = {
    "node_id": pl.Int32(),
    "node_name": pl.String(),
    "gpu_model": pl.String(),
    "num_gpus": pl.Int32(),
    "gpu_mem_mib": pl.Int32(),
    "cpu_milli": pl.Int32(),
    "mem_mib": pl.Int32(),
    "numa_of_gpu": pl.List(pl.Int8()),
    "nvlink_domain": pl.Int32(),
    "rack": pl.Int32(),
    "spine": pl.Int32(),
    "mig_layout": pl.String(),
}

NULLABLE_NODE_COLUMNS: frozenset[str] = frozenset({"gpu_model", "numa_of_gpu", "mig_layout"})

#: Node capacity used when a node list does not give CPU or memory (Philly,
#: the spot-GPU list's memory): large enough never to constrain a pod.
UNKNOWN_CAPACITY: int = 2**31 - 1

#: How many problems an error lists before it says "... and N more".
MAX_SHOWN = 10

#: Default bound on trace times (config ``max_time``): 100 years of 365.25 days, in seconds.
DEFAULT_MAX_TIME: float = 100 * 365.25 * 86_400.0

#: Times from here on lose whole seconds: IEEE 754 binary64 has ``sys.float_info.mant_dig`` = 53
#: significant bits, so a value in ``[2**e, 2**(e + 1))`` steps by ``2**(e - 52)`` s: 1 s up to
#: ``2**53`` s (285 million years), 2 s from there, 16384 s at 1e20 s, where a job of 100 s would end
#: at its start. The engine adds durations to times, so a trace time must stay below it.
SECOND_RESOLUTION_LIMIT: float = 2.0**sys.float_info.mant_dig


def float_step(seconds: float) -> float:
    """The gap between ``seconds`` and the next float64 up: what a time that large can be off by.

    Examples
    --------
    >>> float_step(2.0**52), float_step(2.0**53), float_step(1e20)
    (1.0, 2.0, 16384.0)
    """
    return math.ulp(seconds)


def too_coarse(seconds: float) -> str:
    """Why a time of ``seconds`` cannot be replayed to the second (for messages).

    Examples
    --------
    >>> print(too_coarse(1e20))  # doctest: +NORMALIZE_WHITESPACE
    at 1e+20 s float64 steps by 16384 s, so durations of seconds vanish in rounding;
    times must stay below 2**53 s = 9.0072e+15 s (285 million years)
    """
    years = SECOND_RESOLUTION_LIMIT / (365.25 * 86_400) / 1e6
    return (
        f"at {seconds:g} s float64 steps by {float_step(seconds):g} s, so durations of seconds vanish in "
        f"rounding; times must stay below 2**{sys.float_info.mant_dig} s = {SECOND_RESOLUTION_LIMIT:.5g} s "
        f"({years:.0f} million years)"
    )


#: The bound :func:`validate_jobs` applies when not given one (see :func:`max_time_limit`).
_MAX_TIME: ContextVar[float] = ContextVar("gpureplay_max_time", default=DEFAULT_MAX_TIME)


@contextmanager
def max_time_limit(seconds: float) -> Iterator[None]:
    """Make :func:`validate_jobs` refuse times beyond ``seconds`` inside the ``with`` block.

    The run sets it from the config key ``max_time`` around the trace adapters,
    which call :func:`validate_jobs` themselves (like :func:`decimal.localcontext`).
    """
    token = _MAX_TIME.set(float(seconds))
    try:
        yield
    finally:
        _MAX_TIME.reset(token)


@dataclass(frozen=True)
class Rule:
    """A row-level check: rows where ``bad`` is true are reported.

    ``detail`` is an expression rendered into the message for each bad row
    (usually the offending value), so the user sees what was found.
    """

    column: str
    bad: pl.Expr
    message: str
    detail: pl.Expr | None = None
    #: Words for the detail value in the message; default ``found <value>``.
    describe: Callable[[Any], str] | None = None


#: Text spellings accepted for booleans (case-insensitive).
TRUE_WORDS = ("true", "t", "yes", "y", "1")
FALSE_WORDS = ("false", "f", "no", "n", "0")

#: Separator of several GPU models in one text cell ("V100M16|V100M32", as openb writes them).
MODEL_SEPARATOR = "|"


def _lenient_cast(column: str, source: pl.DataType, target: pl.DataType) -> pl.Expr:
    """Cast that yields null (not an error) for a value that does not convert.

    polars cannot cast text to Boolean or List directly, so those two are
    parsed here: booleans from the usual words, lists by splitting on
    :data:`MODEL_SEPARATOR` (an empty cell is null).
    """
    col = pl.col(column)
    if source == pl.String and target == pl.Boolean:
        word = col.str.strip_chars().str.to_lowercase()
        return pl.when(word.is_in(TRUE_WORDS)).then(True).when(word.is_in(FALSE_WORDS)).then(False)
    if source.is_integer() and target == pl.Boolean:
        return pl.when(col == 1).then(True).when(col == 0).then(False)
    if source == pl.String and isinstance(target, pl.List):
        parts = col.str.split(MODEL_SEPARATOR).list.eval(pl.element().str.strip_chars())
        return pl.when(col.str.strip_chars() != "").then(parts.cast(target, strict=False))
    return col.cast(target, strict=False)


def _text_like(dtype: pl.DataType) -> bool:
    return dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum)


def _readable_as(source: pl.DataType, target: pl.DataType) -> bool:
    """Whether a column of type ``source`` holds values of a ``target`` column (text always may).

    A cast polars would do is not enough: a Boolean cast to a number gives 0 or 1 (a ``true`` in
    ``gpu_milli`` would be one milli-GPU), and a list or struct cast to a number does not convert at all.
    """
    if source == pl.Null or _text_like(source):
        return True
    if isinstance(target, pl.List):
        return isinstance(source, pl.List) and (
            source.inner == pl.Null or _text_like(cast(pl.DataType, source.inner))
        )
    if target == pl.Boolean:
        return source.is_integer()  # 0 and 1; any other number is reported as a bad value
    if _text_like(target):
        return source.is_integer()  # queue or user ids written as numbers
    if target.is_numeric():
        return source.is_numeric()  # not Boolean: polars does not count it as numeric
    return False


#: What a canonical column holds, in words, for the message about a column of the wrong type.
_EXPECTED = {"Int": "whole numbers", "Float": "numbers", "Boolean": "true/false", "String": "text"}

#: Hints for values that do not read, by canonical column.
_CAST_HINTS = {
    "priority": "priority is the integer value of a PriorityClass (e.g. 1000), not its name; map names to "
    "values in the file, or leave the column out and give workload.priority_classes",
}


def _expected(target: pl.DataType) -> str:
    if isinstance(target, pl.List):
        return "lists of text (or text such as 'A100|H100')"
    for prefix, words in _EXPECTED.items():
        if str(target).startswith(prefix):
            return words
    return str(target)


def _wrong_types(
    df: pl.DataFrame, dtypes: Mapping[str, pl.DataType], source: str, raw_names: Mapping[str, str]
) -> list[Problem]:
    """One problem per column whose type cannot hold its canonical values (a Parquet file's own types)."""
    return [
        Problem(
            f"the column holds {df.schema[c]} values; {c} must hold {_expected(t)} ({t})",
            source,
            column=raw_names.get(c, c),
        )
        for c, t in dtypes.items()
        if c in df.columns and df.schema[c] != t and not _readable_as(df.schema[c], t)
    ]


def cast_columns(
    df: pl.DataFrame,
    dtypes: Mapping[str, pl.DataType],
    source: str,
    raw_names: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Cast ``df``'s columns to ``dtypes``, reporting every value that does not convert.

    Parameters
    ----------
    df
        Table with a ``source_row`` column; columns in ``dtypes`` that are absent
        are left alone (the caller adds defaults).
    dtypes
        Target dtype per column.
    source
        File name used in error messages.
    raw_names
        Canonical → raw column names, so a message names the column as it is
        spelled in the file.

    Raises
    ------
    InputError
        Naming the file and column of a column whose type cannot hold the values
        (a Parquet list, struct or Boolean where a number belongs), or the file,
        row and column of each value that cannot be read, e.g.
        ``trace.csv, row 3, column 'duration': cannot read 'abc' as Float64``.
    """
    raw_names = raw_names or {}
    wrong = _wrong_types(df, dtypes, source, raw_names)
    if wrong:
        raise InputError(wrong)
    present = {c: t for c, t in dtypes.items() if c in df.columns and df.schema[c] != t}
    if not present:
        return df
    casted = df.with_columns(_lenient_cast(c, df.schema[c], t).alias(c) for c, t in present.items())
    problems: list[Problem] = []
    total = 0
    for col, dtype in present.items():
        failed = (df[col].is_not_null()) & casted[col].is_null()
        if df.schema[col] == pl.String:
            # Empty cells read as "" in string columns mean "missing", not "bad".
            failed &= df[col].str.strip_chars() != ""
        bad = df.filter(failed)
        total += bad.height
        hint = f"; {_CAST_HINTS[col]}" if col in _CAST_HINTS else ""
        for row, value in bad.select("source_row", col).head(MAX_SHOWN).iter_rows():
            problems.append(
                Problem(f"cannot read {value!r} as {dtype}{hint}", source, int(row), raw_names.get(col, col))
            )
    if total:
        raise InputError(problems, total=total)
    return casted


def check_rules(
    df: pl.DataFrame, rules: Iterable[Rule], source: str, raw_names: Mapping[str, str] | None = None
) -> None:
    """Raise :class:`InputError` listing the rows that break any rule."""
    raw_names = raw_names or {}
    problems: list[Problem] = []
    total = 0
    for rule in rules:
        detail = rule.detail if rule.detail is not None else pl.col(rule.column)
        bad = df.filter(rule.bad.fill_null(False)).select(pl.col("source_row"), detail.alias("_detail"))
        total += bad.height
        for row, value in bad.head(MAX_SHOWN).iter_rows():
            found = rule.describe(value) if rule.describe is not None else f"found {value!r}"
            problems.append(
                Problem(
                    f"{rule.message} ({found})",
                    source,
                    int(row),
                    raw_names.get(rule.column, rule.column),
                )
            )
    if total:
        problems.sort(key=lambda p: p.row or 0)
        raise InputError(problems, total=total)


def canonical_model_expr(expr: pl.Expr) -> pl.Expr:
    """Map GPU model spellings (aliases, any case) to catalog names; unknown ones pass through.

    Unknown names are left as they are so the validation rules can report them.
    """
    return (
        expr.str.strip_chars()
        .str.to_lowercase()
        .replace_strict(alias_table(), default=expr.str.strip_chars())
    )


def with_job_defaults(df: pl.DataFrame) -> pl.DataFrame:
    """Add every optional canonical column that ``df`` lacks, at its default value."""
    missing = [c for c in JOBS_SCHEMA if c not in df.columns and c in JOB_DEFAULTS]
    return df.with_columns(pl.lit(JOB_DEFAULTS[c], dtype=JOBS_SCHEMA[c]).alias(c) for c in missing)


def _ordered(df: pl.DataFrame, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    extra = sorted(c for c in df.columns if c.startswith("source_") and c != "source_row")
    return df.select(*schema, pl.col("source_row").cast(pl.Int64), *extra)


def _require_columns(df: pl.DataFrame, columns: Iterable[str], source: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError.single(
            f"missing column(s) {', '.join(missing)}; found {', '.join(df.columns) or 'none'}", source
        )


def _null_rules(schema: Mapping[str, pl.DataType], nullable: frozenset[str]) -> list[Rule]:
    return [Rule(c, pl.col(c).is_null(), "missing value") for c in schema if c not in nullable]


def _nonfinite_or_negative(column: str) -> Rule:
    return Rule(
        column,
        pl.col(column).is_nan() | pl.col(column).is_infinite() | (pl.col(column) < 0),
        "must be a finite number >= 0",
    )


def _beyond(column: str, value: pl.Expr, max_time: float, what: str) -> Rule:
    """``value`` (finite) beyond ``max_time``: a typo or a unit mistake, and a replay that never ends.

    A value too large for float64 to hold to the second is left to :func:`coarse_time_rule` (raising max_time
    would not help it).
    """
    return Rule(
        column,
        value.is_finite() & (value > max_time) & (value < SECOND_RESOLUTION_LIMIT),
        f"{what} is beyond max_time = {max_time:g} s ({max_time / (365.25 * 86_400):g} years); "
        "if the trace really spans that long, raise the config key max_time",
        value,
    )


def coarse_time_rule(column: str, value: pl.Expr, what: str) -> Rule:
    """``value`` (finite) so large that float64 steps by more than a second there (see
    :data:`SECOND_RESOLUTION_LIMIT`).

    Adapters that shift times (the first job at 0) check the times as read with it too: a value
    rounded when it was read stays rounded after the shift.
    """
    return Rule(
        column,
        value.is_finite() & (value >= SECOND_RESOLUTION_LIMIT),
        f"{what} is too large to replay to the second",
        value,
        describe=lambda found: f"found {found!r}; {too_coarse(float(found))}",
    )


def job_rules(max_time: float = DEFAULT_MAX_TIME) -> list[Rule]:
    """Row rules of the canonical jobs table (see module docstring)."""
    known = set(alias_table().values())
    end = pl.col("submit_time") + pl.col("duration")
    within = (pl.col("submit_time") <= max_time) & (pl.col("duration") <= max_time)
    return [
        *_null_rules(JOBS_SCHEMA, NULLABLE_JOB_COLUMNS),
        _nonfinite_or_negative("submit_time"),
        _nonfinite_or_negative("duration"),
        _beyond("submit_time", pl.col("submit_time"), max_time, "submit_time"),
        _beyond("duration", pl.col("duration"), max_time, "duration"),
        _beyond("duration", pl.when(within).then(end), max_time, "submit_time + duration (the job's end)"),
        coarse_time_rule("submit_time", pl.col("submit_time"), "submit_time"),
        coarse_time_rule("duration", pl.col("duration"), "duration"),
        coarse_time_rule(
            "duration",
            pl.when(
                (pl.col("submit_time") < SECOND_RESOLUTION_LIMIT)
                & (pl.col("duration") < SECOND_RESOLUTION_LIMIT)
            ).then(end),
            "submit_time + duration (the job's end)",
        ),
        Rule("num_pods", pl.col("num_pods") < 1, "a job needs at least one pod"),
        Rule("gpu_milli", pl.col("gpu_milli") < 0, "gpu_milli must be >= 0"),
        Rule(
            "gpu_milli",
            (pl.col("gpu_milli") > 1000) & (pl.col("gpu_milli") % 1000 != 0),
            "gpu_milli above 1000 must be a whole multiple of 1000 (whole GPUs)",
        ),
        Rule("gpu_mem_mib", pl.col("gpu_mem_mib") < 0, "gpu_mem_mib must be >= 0"),
        Rule("cpu_milli", pl.col("cpu_milli") < 0, "cpu_milli must be >= 0"),
        Rule("mem_mib", pl.col("mem_mib") < 0, "mem_mib must be >= 0"),
        Rule(
            "gpu_models",
            pl.col("gpu_models").list.eval(pl.element().is_in(list(known)).not_()).list.any(),
            f"unknown GPU model; known models: {', '.join(sorted(known))}",
        ),
        Rule("job_id", pl.col("job_id").is_duplicated(), "duplicate job_id"),
    ]


def validate_jobs(
    df: pl.DataFrame,
    source: str,
    raw_names: Mapping[str, str] | None = None,
    max_time: float | None = None,
) -> pl.DataFrame:
    """Check a canonical jobs table and return it in canonical column order and dtypes.

    Parameters
    ----------
    df
        Candidate table: the canonical columns (optional ones may be missing and
        take :data:`JOB_DEFAULTS`), ``source_row`` and any ``source_*`` columns.
    source
        The raw file's name, for messages.
    raw_names
        Canonical → raw column names used in messages.
    max_time
        Largest ``submit_time``, ``duration`` and ``submit_time + duration``
        accepted, seconds; None = the one set by :func:`max_time_limit`
        (default :data:`DEFAULT_MAX_TIME`, 100 years).

    Returns
    -------
    polars.DataFrame
        The same rows, columns ordered as :data:`JOBS_SCHEMA` then ``source_row``
        then the sorted ``source_*`` columns.

    Raises
    ------
    InputError
        On an empty trace, a missing required column, a value of the wrong type,
        a missing, negative, NaN or infinite time or duration, a time beyond
        ``max_time`` or too large for float64 to hold to the second
        (:data:`SECOND_RESOLUTION_LIMIT`), zero pods,
        ``gpu_milli`` above 1000 that is not a whole multiple, an unknown GPU
        model, or a duplicate ``job_id``; each problem names file, row and column.
    """
    if df.height == 0:
        raise InputError.single("the trace has no jobs", source)
    _require_columns(df, ("source_row", *REQUIRED_JOB_COLUMNS), source)
    df = cast_columns(with_job_defaults(df), JOBS_SCHEMA, source, raw_names)
    df = df.with_columns(pl.col("gpu_models").list.eval(canonical_model_expr(pl.element())))
    check_rules(df, job_rules(_MAX_TIME.get() if max_time is None else max_time), source, raw_names)
    return _ordered(df, JOBS_SCHEMA)


def node_rules() -> list[Rule]:
    """Row rules of the canonical nodes table."""
    known = set(alias_table().values())
    return [
        *_null_rules(NODES_SCHEMA, NULLABLE_NODE_COLUMNS),
        Rule("node_id", pl.col("node_id").is_duplicated(), "duplicate node_id"),
        Rule("num_gpus", pl.col("num_gpus") < 0, "num_gpus must be >= 0"),
        Rule(
            "gpu_model",
            (pl.col("num_gpus") > 0) & pl.col("gpu_model").is_null(),
            "a node with GPUs needs a gpu_model",
        ),
        Rule(
            "gpu_model",
            pl.col("gpu_model").is_not_null() & pl.col("gpu_model").is_in(list(known)).not_(),
            f"unknown GPU model; known models: {', '.join(sorted(known))}",
        ),
        Rule("gpu_mem_mib", pl.col("gpu_mem_mib") < 0, "gpu_mem_mib must be >= 0"),
        Rule("cpu_milli", pl.col("cpu_milli") < 0, "cpu_milli must be >= 0"),
        Rule("mem_mib", pl.col("mem_mib") < 0, "mem_mib must be >= 0"),
        Rule(
            "numa_of_gpu",
            pl.col("numa_of_gpu").is_not_null() & (pl.col("numa_of_gpu").list.len() != pl.col("num_gpus")),
            "numa_of_gpu must list one NUMA node per GPU",
        ),
    ]


def validate_nodes(df: pl.DataFrame, source: str, raw_names: Mapping[str, str] | None = None) -> pl.DataFrame:
    """Check a canonical nodes table and return it in canonical order and dtypes.

    Raises
    ------
    InputError
        On an empty node list, a missing column, a wrong type, a duplicate node,
        negative capacities, or an unknown GPU model; each names file, row, column.
    """
    if df.height == 0:
        raise InputError.single("the node list has no nodes", source)
    _require_columns(df, ("source_row", *NODES_SCHEMA), source)
    df = cast_columns(df, NODES_SCHEMA, source, raw_names)
    df = df.with_columns(canonical_model_expr(pl.col("gpu_model")))
    check_rules(df, node_rules(), source, raw_names)
    return _ordered(df, NODES_SCHEMA)
