"""Any CSV or Parquet job table → canonical jobs, by naming which column is which.

This is the adapter for traces gpureplay has no dedicated reader for (and for
files written by ``gpureplay trace convert``). The file needs one column for
each of ``job_id``, ``submit_time``, ``duration``, ``num_pods`` and
``gpu_milli``; every other canonical column is optional. ``columns`` says where
each canonical column is when the file spells it differently, e.g.
``{"submit_time": "arrival", "gpu_milli": "gpu_share"}``.

Job ids may be integers or text. Integer ids are the engine's key as they are.
When any id is not an integer (``"jobA"``, a UUID), every id is read as a
name: it is kept in ``job_name`` and ``job_id`` becomes the 1-based data row of
the file, so jobs submitted at the same time are queued in file order.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import polars as pl

from gpureplay.errors import InputError
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import AdaptedTrace, file_sha256
from gpureplay.traces.schema import (
    JOB_DEFAULTS,
    JOBS_SCHEMA,
    REQUIRED_JOB_COLUMNS,
    Rule,
    canonical_model_expr,
    cast_columns,
    check_rules,
    coarse_time_rule,
    validate_jobs,
)

#: Seconds per unit of ``time_unit``.
TIME_UNITS: dict[str, float] = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0, "h": 3600.0}

#: Spellings of true / false accepted in a text ``preemptible`` column (any case).
TRUE_WORDS: frozenset[str] = frozenset({"true", "t", "yes", "y", "1"})
FALSE_WORDS: frozenset[str] = frozenset({"false", "f", "no", "n", "0"})

_INTEGER_COLUMNS = frozenset(c for c, t in JOBS_SCHEMA.items() if t.is_integer())


def model_list_expr(expr: pl.Expr, separator: str = "|") -> pl.Expr:
    """Split ``"A|B"`` text into a list of catalog model names.

    Spaces around names and empty names are dropped; each name goes through the
    GPU catalog's aliases (unknown names pass through for validation to report).
    A null cell stays null; an empty cell gives an empty list.

    Examples
    --------
    >>> df = pl.DataFrame({"spec": ["V100M32| T4", "", None]})
    >>> df.select(model_list_expr(pl.col("spec"))).to_series().to_list()
    [['V100-32GB', 'T4'], [], None]
    """
    return (
        expr.str.split(separator)
        .list.eval(pl.element().str.strip_chars())
        .list.eval(pl.element().filter(pl.element() != ""))
        .list.eval(canonical_model_expr(pl.element()))
    )


@contextmanager
def reading(source: str, file: Path | None = None) -> Iterator[None]:
    """Turn polars' errors while reading a raw file into an :class:`InputError` naming the file.

    Wrap only the statements that read (scan, schema, collect of the raw table),
    so that errors in the adapter's own expressions are not disguised as bad input.
    Given the ``file`` of a CSV, a row polars cannot split is found and named
    (:func:`malformed_csv_row`), instead of polars' advice about its own options.
    """
    try:
        yield
    except pl.exceptions.NoDataError as err:
        raise InputError.single("the file is empty", source) from err
    except pl.exceptions.PolarsError as err:
        found = malformed_csv_row(file) if file is not None and _is_csv(file) else None
        if found is not None:
            raise InputError.single(found[1], source, row=found[0]) from err
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError.single(f"cannot read the file: {first}", source) from err


def malformed_csv_row(file: Path) -> tuple[int, str] | None:
    """The first data row (1-based, the header not counted) of a CSV that cannot be split, and why.

    A row with more fields than the header, or a quoted field that is never closed; None when
    every row splits (the error was something else). Read with Python's ``csv`` module, whose
    quoting is polars' (RFC 4180 double quotes).
    """
    opener = gzip.open if file.name.lower().endswith(".gz") else open
    try:
        with opener(file, "rt", encoding="utf-8-sig", errors="replace", newline="") as text:
            rows = csv.reader(text, strict=True)
            header = next(rows, [])
            row = 0
            try:
                for row, fields in enumerate(rows, start=1):
                    if len(fields) > len(header):
                        return row, f"{len(fields)} fields, where the header names {len(header)} columns"
            except csv.Error as err:
                return row + 1, f"cannot split the row: {err} (a quoted field that is never closed?)"
    except (OSError, EOFError):
        return None
    return None


def drop_blank_rows(df: pl.DataFrame, changes: Counter[str]) -> pl.DataFrame:
    """Drop rows whose every cell is empty (polars reads a blank line as one), counting them."""
    cells = [c for c in df.columns if c != "source_row"]
    if not cells:
        return df
    kept = df.filter(~pl.all_horizontal(pl.col(c).is_null() for c in cells))
    if kept.height != df.height:
        changes["blank line: ignored"] += df.height - kept.height
    return kept


def load_table(
    path: str | Path,
    columns: Mapping[str, str] | None = None,
    defaults: Mapping[str, object] | None = None,
    time_unit: Literal["s", "ms", "us", "min", "h"] = "s",
    datetime_format: str | None = None,
    model_separator: str = "|",
) -> AdaptedTrace:
    """Read a CSV (``.csv``, ``.csv.gz``) or Parquet (``.parquet``) job table as canonical jobs.

    Parameters
    ----------
    path
        The table; relative paths are looked up with
        :func:`gpureplay.paths.resolve_data_path`.
    columns
        Canonical column name → column name in the file. A canonical column not
        listed is looked for under its own name.
    defaults
        Values for optional canonical columns the file does not have (and for
        empty cells in those it has); columns in neither take
        :data:`gpureplay.traces.schema.JOB_DEFAULTS`.
    time_unit
        Unit of ``submit_time`` and ``duration`` in the file; converted to seconds.
    datetime_format
        When set, ``submit_time`` is date-time text in this ``strftime`` format
        (e.g. ``"%Y-%m-%d %H:%M:%S"``) and becomes seconds from the earliest
        one. A Parquet datetime column is read that way without it.
    model_separator
        Separator of the model names in a text ``gpu_models`` cell (``"A100|H100"``).

    Returns
    -------
    AdaptedTrace
        Sorted by ``(submit_time, job_id)``, the first job at time 0. Columns of
        the file that no canonical column uses are kept as ``source_<name>``
        (names already starting with ``source_`` are kept as they are; a file
        column that would become ``source_row`` is kept as
        ``source_original_row``, since ``source_row`` is the row in this file).

    Raises
    ------
    InputError
        For an unsupported file type, a missing required column (listing what
        was looked for and what was found), a bad ``columns``/``defaults``
        entry, or any value that does not read or breaks the canonical rules;
        row problems name the file, the 1-based data row and the column as
        spelled in the file.

    Notes
    -----
    CSV files are read with every column as text so that a bad value is
    reported with its row rather than failing the whole read. A text
    ``preemptible`` accepts true/false, yes/no, t/f, y/n and 1/0 in any case.
    Only uniform shifts and unit conversions touch the times; a shift of the
    submit times so the first job is at 0 is counted in ``changes``, as is
    every empty cell filled with a default.
    """
    if time_unit not in TIME_UNITS:
        raise InputError.single(
            f"time_unit must be one of {', '.join(TIME_UNITS)}, not {time_unit!r}",
            "load_table",
            column="time_unit",
        )
    if not model_separator:
        raise InputError.single("model_separator must not be empty", "load_table", column="model_separator")
    file = resolve_data_path(path, "trace file")
    source = str(file)
    mapping = _column_mapping(columns)
    fill = _defaults(defaults, model_separator)

    lazy = _scan(file, source)
    if _is_csv(file):
        _refuse_repeated_columns(file, source)
    with reading(source, file):
        found = lazy.collect_schema().names()
    _require(mapping, columns or {}, found, source)
    used = {c: mapping[c] for c in JOBS_SCHEMA if mapping[c] in found}
    extras = [f for f in found if f not in used.values()]
    renamed = {f: _source_name(f) for f in extras}
    clashes = sorted({n for n in renamed.values() if list(renamed.values()).count(n) > 1})
    if clashes:
        raise InputError.single(
            f"columns {', '.join(extras)} give clashing names {', '.join(clashes)}", source
        )
    raw_names = dict(used)
    with reading(source, file):
        df = (
            lazy.select(
                *(pl.col(f).alias(c) for c, f in used.items()),
                *(pl.col(f).alias(n) for f, n in renamed.items()),
            )
            .with_row_index("source_row", offset=1)
            .collect()
        )

    changes: Counter[str] = Counter()
    if _is_csv(file):
        df = drop_blank_rows(df, changes)
    df = _read_job_ids(df, changes, source, raw_names)
    df = _read_models(df, model_separator, changes, source, raw_names)
    df = _read_preemptible(df, source, raw_names)
    df = _read_times(df, TIME_UNITS[time_unit], datetime_format, source, raw_names)
    _check_whole(df, source, raw_names)
    rest = {
        c: JOBS_SCHEMA[c] for c in used if c not in ("gpu_models", "preemptible", "submit_time", "duration")
    }
    df = cast_columns(df, rest, source, raw_names)
    df = _fill_defaults(df, fill, changes)

    # Checked before the shift below: a time float64 rounded when it was read stays rounded after it.
    check_rules(
        df, [coarse_time_rule("submit_time", pl.col("submit_time"), "submit_time")], source, raw_names
    )
    first = df.get_column("submit_time").min()
    if isinstance(first, float) and first != 0.0:
        changes["submit_time shifted so the first job arrives at 0"] += df.height
    jobs = (
        df.lazy()
        .with_columns(pl.col("submit_time") - pl.col("submit_time").min())
        .sort("submit_time", "job_id")
        .collect()
    )
    return AdaptedTrace(validate_jobs(jobs, source, raw_names), source, file_sha256(file), changes)


def _is_csv(file: Path) -> bool:
    return file.name.lower().endswith((".csv", ".csv.gz"))


def _refuse_repeated_columns(file: Path, source: str) -> None:
    """A CSV header naming a column twice is ambiguous (polars would rename the second copy): refuse it."""
    with reading(source):
        raw = gzip.open(file, "rb") if file.name.lower().endswith(".gz") else open(file, "rb")  # noqa: SIM115
        with raw, io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="") as text:
            header = next(csv.reader(text), [])
    seen: dict[str, list[int]] = {}
    for position, name in enumerate(header, start=1):
        seen.setdefault(name, []).append(position)
    for name, positions in seen.items():
        if len(positions) > 1:
            where = ", ".join(str(i) for i in positions)
            raise InputError.single(
                f"the header names this column {len(positions)} times (fields {where}); "
                "each column must be named once",
                source,
                column=name,
            )


def _read_job_ids(
    df: pl.DataFrame, changes: Counter[str], source: str, raw_names: Mapping[str, str]
) -> pl.DataFrame:
    """Integer ids stay as they are; text ids become ``job_name``, with ``job_id`` = the file row.

    An empty id is a missing value and a repeated name a duplicate, reported with
    row and column like every other bad value.
    """
    dtype = df.schema["job_id"]
    if not (dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum)):
        return df
    text = pl.col("job_id").cast(pl.String).str.strip_chars()
    filled = text.fill_null("") != ""
    named = df.select((filled & text.cast(pl.Int64, strict=False).is_null()).any()).item()
    if not named:  # every id reads as an integer: read as before (cast_columns reports the rest)
        return df.with_columns(pl.col("job_id").cast(pl.String))
    if "job_name" in df.columns:
        raise InputError.single(
            "job ids are text, which gpureplay keeps as job_name, but the file also has a job_name column; "
            "map one of them elsewhere with trace.columns",
            source,
            column=raw_names.get("job_id", "job_id"),
        )
    check_rules(
        df.with_columns(text.alias("_name")),
        [Rule("job_id", ~filled, "missing value"),
         Rule("job_id", filled & pl.col("_name").is_duplicated(), "duplicate job_id", pl.col("_name"))],
        source,
        raw_names,
    )  # fmt: skip
    changes["text job ids: kept as job_name, job_id = the file row"] += df.height
    return df.with_columns(text.alias("job_name"), pl.col("source_row").cast(pl.Int64).alias("job_id"))


def _scan(file: Path, source: str) -> pl.LazyFrame:
    name = file.name.lower()
    if name.endswith((".csv", ".csv.gz")):
        return pl.scan_csv(file, infer_schema=False)
    if name.endswith((".parquet", ".pq")):
        return pl.scan_parquet(file)
    raise InputError.single("unsupported file type: expected .csv, .csv.gz or .parquet", source)


def _column_mapping(columns: Mapping[str, str] | None) -> dict[str, str]:
    columns = dict(columns or {})
    unknown = sorted(set(columns) - set(JOBS_SCHEMA))
    if unknown:
        raise InputError.single(
            f"unknown canonical column(s) {', '.join(unknown)}; known: {', '.join(JOBS_SCHEMA)}", "columns"
        )
    return {c: str(columns.get(c, c)) for c in JOBS_SCHEMA}


def _require(mapping: Mapping[str, str], asked: Mapping[str, str], found: list[str], source: str) -> None:
    needed = [c for c in JOBS_SCHEMA if c in REQUIRED_JOB_COLUMNS or c in asked]
    missing = [
        c if mapping[c] == c else f"{c} (as {mapping[c]!r})" for c in needed if mapping[c] not in found
    ]
    if missing:
        raise InputError.single(
            f"missing column(s) {', '.join(missing)}; found {', '.join(found) or 'none'}", source
        )


def _source_name(column: str) -> str:
    name = column if column.startswith("source_") else f"source_{column}"
    return "source_original_row" if name == "source_row" else name


def _defaults(defaults: Mapping[str, object] | None, separator: str) -> dict[str, object]:
    """Merge ``defaults`` over JOB_DEFAULTS, checking each value converts to its column's dtype."""
    merged = dict(JOB_DEFAULTS)
    for column, value in (defaults or {}).items():
        if column not in JOB_DEFAULTS:
            why = (
                "is required; map it with columns"
                if column in REQUIRED_JOB_COLUMNS
                else "is not a canonical column"
            )
            raise InputError.single(
                f"{column!r} {why}; defaults apply to {', '.join(JOB_DEFAULTS)}", "defaults", column=column
            )
        if column == "gpu_models" and isinstance(value, str):
            value = [m.strip() for m in value.split(separator) if m.strip()] or None
        try:
            pl.Series([value], dtype=JOBS_SCHEMA[column], strict=True)
        except (TypeError, ValueError, pl.exceptions.PolarsError) as err:
            raise InputError.single(
                f"default {value!r} is not a {JOBS_SCHEMA[column]}: {err}", "defaults", column=column
            ) from err
        merged[column] = value
    return merged


def _read_models(
    df: pl.DataFrame, separator: str, changes: Counter[str], source: str, raw_names: Mapping[str, str]
) -> pl.DataFrame:
    if "gpu_models" not in df.columns:
        return df
    dtype = df.schema["gpu_models"]
    if dtype == pl.String:
        df = df.with_columns(model_list_expr(pl.col("gpu_models"), separator))
    elif not isinstance(dtype, pl.List):
        raise InputError.single(
            f"gpu_models must be text like 'A100|H100' or a list of names, not {dtype}",
            source,
            column=raw_names.get("gpu_models", "gpu_models"),
        )
    empty = int(df.select((pl.col("gpu_models").list.len() == 0).sum()).item())
    if empty:
        # An empty list would read as "no model allowed"; an empty cell means "not given".
        changes["empty gpu_models read as any model"] += empty
    return df.with_columns(
        pl.when(pl.col("gpu_models").list.len() > 0).then(pl.col("gpu_models")).alias("gpu_models")
    )


def _read_preemptible(df: pl.DataFrame, source: str, raw_names: Mapping[str, str]) -> pl.DataFrame:
    if "preemptible" not in df.columns or df.schema["preemptible"] != pl.String:
        return df
    word = pl.col("preemptible").str.strip_chars().str.to_lowercase()
    parsed = pl.when(word.is_in(list(TRUE_WORDS))).then(True).when(word.is_in(list(FALSE_WORDS))).then(False)
    df = df.with_columns(parsed.alias("_preemptible"))
    check_rules(
        df,
        [Rule("preemptible", pl.col("_preemptible").is_null() & (word.fill_null("") != ""),
              "cannot read as true/false (accepted: true/false, yes/no, t/f, y/n, 1/0)")],
        source,
        raw_names,
    )  # fmt: skip
    return df.with_columns(pl.col("_preemptible").alias("preemptible")).drop("_preemptible")


def _read_times(
    df: pl.DataFrame, scale: float, datetime_format: str | None, source: str, raw_names: Mapping[str, str]
) -> pl.DataFrame:
    """submit_time and duration → float seconds (submit not yet shifted to start at 0)."""
    submit_dtype = df.schema["submit_time"]
    if isinstance(submit_dtype, pl.Datetime) or (datetime_format is not None and submit_dtype == pl.String):
        if submit_dtype == pl.String:
            assert datetime_format is not None
            parsed = pl.col("submit_time").str.strptime(pl.Datetime("us"), datetime_format, strict=False)
            df = df.with_columns(parsed.alias("_submit"))
            check_rules(
                df,
                [Rule("submit_time", pl.col("_submit").is_null() & _filled(pl.col("submit_time")),
                      f"cannot read as a date-time in format {datetime_format!r}")],
                source,
                raw_names,
            )  # fmt: skip
            df = df.with_columns(pl.col("_submit").alias("submit_time")).drop("_submit")
        micros = pl.col("submit_time").dt.epoch("us")
        df = df.with_columns(((micros - micros.min()).cast(pl.Float64()) / 1e6).alias("submit_time"))
    elif datetime_format is not None:
        raise InputError.single(
            f"datetime_format is set but the column is {submit_dtype}, not text", source,
            column=raw_names.get("submit_time", "submit_time"),
        )  # fmt: skip
    else:
        df = cast_columns(df, {"submit_time": pl.Float64()}, source, raw_names)
        df = df.with_columns(pl.col("submit_time") * scale)
    if isinstance(df.schema["duration"], pl.Duration):
        return df.with_columns(pl.col("duration").dt.total_microseconds().cast(pl.Float64()) / 1e6)
    df = cast_columns(df, {"duration": pl.Float64()}, source, raw_names)
    return df.with_columns(pl.col("duration") * scale)


def _filled(text: pl.Expr) -> pl.Expr:
    """A text cell that holds something (not null, not blank)."""
    return text.str.strip_chars().fill_null("") != ""


def _check_whole(df: pl.DataFrame, source: str, raw_names: Mapping[str, str]) -> None:
    """Float values bound for integer columns must be whole: casting would truncate them."""
    rules = [
        Rule(c, pl.col(c).is_finite() & (pl.col(c) != pl.col(c).round(0)), "must be a whole number")
        for c in _INTEGER_COLUMNS
        if c in df.columns and df.schema[c].is_float()
    ]
    check_rules(df, rules, source, raw_names)


def _fill_defaults(df: pl.DataFrame, fill: Mapping[str, object], changes: Counter[str]) -> pl.DataFrame:
    """Add absent optional columns at their default; fill empty cells of present ones (counted)."""
    for column, value in fill.items():
        dtype = JOBS_SCHEMA[column]
        if column not in df.columns:
            df = df.with_columns(pl.lit(value, dtype=dtype).alias(column))
            continue
        if value is None:
            continue
        empty = df.get_column(column).null_count()
        if empty:
            changes[f"empty {column}: set to the default {value!r}"] += empty
            df = df.with_columns(pl.col(column).cast(dtype).fill_null(pl.lit(value, dtype=dtype)))
    return df
