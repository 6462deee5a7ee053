"""Across-seed statistics and pairwise effects of a comparison report.

Per configuration and headline metric: the mean over seeds and a two-sided 95%
Student-t interval, ``mean ± t(0.975, n-1) * s / sqrt(n)`` (no interval for a
single seed). Effects: each configuration's relative difference from a
baseline configuration in the same setting, stated in words for the largest
ones ("gang-binpack cuts p95 wait by 41% vs fifo on philly").

Which configurations are compared: when the scheduler varies, schedulers are
compared with each other under the same values of everything else (trace,
load, ...), against ``fifo`` where it is there, as in the scheduling
literature where FIFO is the reference (Gandiva, Tiresias, Themis all report
against it); otherwise the first configuration of each setting is the
baseline. Runs on different traces or clusters are never compared directly.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from functools import lru_cache

import polars as pl

from gpureplay.errors import InputError
from gpureplay.report.collect import CHECKSUM_DIGITS, CHECKSUM_KEYS, CONFIG_COLUMN, Collection, short_key
from gpureplay.report.metrics import (
    ALL_METRICS,
    METRICS_BY_COLUMN,
    WINDOW_PREFIX,
    Metric,
    Scope,
    compared_metrics,
    runs_evicted,
    runs_multi_node,
    runs_multi_queue,
    runs_numa,
    runs_shared,
    runs_with_mig,
)

#: Name of the scheduler preset taken as the baseline when present.
BASELINE_SCHEDULER = "fifo"

#: Groups that describe the setting (what was replayed on what), never the treatment.
SETTING_GROUPS: tuple[str, ...] = ("trace", "cluster")
#: Keys of the setting groups that are choices compared like schedulers (a MIG layout partitions the
#: same cluster), with the value that is their baseline (whole GPUs).
TREATMENT_KEYS: dict[str, str] = {"cluster.mig_layout": "all-disabled"}


def _two_sided_t_cdf(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with integer ``df`` (Abramowitz & Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 1:
        term, total = math.cos(theta), 0.0
        for k in range(1, (df - 1) // 2 + 1):
            total += term
            term *= c2 * (2 * k) / (2 * k + 1)
        return (2.0 / math.pi) * (theta + s * total)
    term, total = 1.0, 0.0
    for k in range(1, df // 2 + 1):
        total += term
        term *= c2 * (2 * k - 1) / (2 * k)
    return s * total


@lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """Quantile ``p`` (> 0.5) of Student's t distribution with ``df`` degrees of freedom.

    Solves the closed-form two-sided CDF for integer ``df`` (Abramowitz &
    Stegun, Handbook of Mathematical Functions, 26.7.3-26.7.4) by bisection, to
    double precision, so the report needs no statistics package.

    Examples
    --------
    >>> [round(t_quantile(0.975, df), 4) for df in (1, 2, 4, 9, 30)]
    [12.7062, 4.3027, 2.7764, 2.2622, 2.0423]
    """
    if not 0.5 < p < 1.0 or df < 1:
        raise ValueError(f"need 0.5 < p < 1 and df >= 1, got p={p}, df={df}")
    target = 2.0 * p - 1.0
    lo, hi = 0.0, 1.0
    while _two_sided_t_cdf(hi, df) < target:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _two_sided_t_cdf(mid, df) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def summarize(collection: Collection, level: float = 0.95) -> pl.DataFrame:
    """Mean and Student-t interval across seeds, per configuration and headline metric.

    Parameters
    ----------
    collection
        The runs (:func:`gpureplay.report.collect.collect`).
    level
        Two-sided confidence level of the interval.

    Returns
    -------
    polars.DataFrame
        ``config``, ``metric``, ``n`` (runs with a value), ``mean``, ``sd``,
        ``half_width``, ``low``, ``high`` in stored units (seconds for times);
        the interval columns are null when ``n < 2``, and all of them when
        some run of the configuration lacks the metric. Rows follow the order of
        ``collection.configs`` and :data:`gpureplay.report.metrics.ALL_METRICS`.
    """
    columns = [m.column for m in ALL_METRICS]
    values = collection.runs.select(CONFIG_COLUMN, *(pl.col(c).cast(pl.Float64) for c in columns)).unpivot(
        index=CONFIG_COLUMN, variable_name="metric", value_name="value"
    )
    # A metric some seeds of a configuration lack (written by an older version) has no mean:
    # the mean of the other seeds would pass for the configuration's.
    complete = pl.col("value").count() == pl.len()
    stats = values.group_by(CONFIG_COLUMN, "metric").agg(
        pl.col("value").count().cast(pl.Int64).alias("n"),
        pl.when(complete).then(pl.col("value").mean()).alias("mean"),
        pl.when(complete).then(pl.col("value").std()).alias("sd"),
    )
    sizes = sorted(int(n) for n in stats.get_column("n").unique().to_list() if n >= 2)
    quantiles = pl.DataFrame(
        {"n": sizes, "t": [t_quantile(0.5 + level / 2.0, n - 1) for n in sizes]},
        schema={"n": pl.Int64, "t": pl.Float64},
    )
    order = collection.configs.select(CONFIG_COLUMN).with_row_index("_config_order")
    half = pl.col("t") * pl.col("sd") / pl.col("n").cast(pl.Float64).sqrt()
    return (
        stats.join(quantiles, on="n", how="left")
        .join(order, on=CONFIG_COLUMN, how="left")
        .with_columns(
            half.alias("half_width"),
            pl.col("metric").replace_strict(columns, list(range(len(columns)))).alias("_metric_order"),
        )
        .with_columns(
            (pl.col("mean") - pl.col("half_width")).alias("low"),
            (pl.col("mean") + pl.col("half_width")).alias("high"),
        )
        .sort("_config_order", "_metric_order")
        .select(CONFIG_COLUMN, "metric", "n", "mean", "sd", "half_width", "low", "high")
    )


def comparison_keys(label_keys: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split the label keys into the treatment (what is compared) and the setting (held equal).

    Examples
    --------
    >>> comparison_keys(["scheduler.name", "workload.load", "trace.name"])
    (['scheduler.name'], ['workload.load', 'trace.name'])
    >>> comparison_keys(["workload.load", "trace.name"])
    (['workload.load'], ['trace.name'])
    >>> comparison_keys(["trace_sha256"])
    ([], ['trace_sha256'])
    >>> comparison_keys(["cluster.mig_layout", "cluster.cpu_milli"])
    (['cluster.mig_layout'], ['cluster.cpu_milli'])
    """
    scheduler = [k for k in label_keys if k.startswith("scheduler.") or k in TREATMENT_KEYS]
    if scheduler:
        return scheduler, [k for k in label_keys if k not in scheduler]
    setting = [k for k in label_keys if k.partition(".")[0] in SETTING_GROUPS or k in CHECKSUM_KEYS]
    return [k for k in label_keys if k not in setting], setting


def _value(key: str) -> pl.Expr:
    value = pl.col(key).fill_null("null")
    return value.str.slice(0, CHECKSUM_DIGITS) if key in CHECKSUM_KEYS else value


def _describe(keys: Sequence[str]) -> pl.Expr:
    """A configuration named by ``keys``: a lone group name by its value, else ``key=value`` pairs."""
    if not keys:
        return pl.col(CONFIG_COLUMN)
    if len(keys) == 1 and short_key(keys[0]) != keys[0]:
        return _value(keys[0])
    parts = [pl.concat_str(pl.lit(f"{short_key(k)}="), _value(k)) for k in keys]
    return pl.concat_str(parts, separator=", ")


def baselines(collection: Collection) -> pl.DataFrame:
    """Each configuration's baseline and the words that name both.

    In each setting the baseline is the configuration matching
    ``collection.baseline`` (the user's ``--baseline``), else the one with
    whole GPUs where MIG layouts are compared, else the ``fifo`` scheduler,
    else the first in report order.

    Returns
    -------
    polars.DataFrame
        ``config``, ``baseline`` (a config label; the baseline's own row points
        to itself), ``subject`` (the configuration named by its treatment
        keys), ``baseline_subject`` and ``setting`` (" on philly", plus the other
        keys held equal: " on philly at workload.load=2.0").
    """
    treatment, setting = comparison_keys(collection.label_keys)
    runs = collection.runs
    scheduler = (
        runs.group_by(CONFIG_COLUMN).agg(pl.col("scheduler.name").first().alias("_scheduler"))
        if "scheduler.name" in runs.columns
        else runs.select(CONFIG_COLUMN).unique().with_columns(pl.lit(None, pl.String).alias("_scheduler"))
    )
    trace: pl.Expr | None = None
    if "trace.name" in setting:
        trace = pl.col("trace.name").fill_null("null")
    elif "trace.name" in collection.common:
        trace = pl.lit(collection.common["trace.name"])
    pairs: list[pl.Expr] = []
    for key in setting:
        if key == "trace.name":
            continue
        pair = pl.concat_str(pl.lit(f"{short_key(key)}="), _value(key))
        if key == "cluster.name" and trace is not None:
            # Philly replayed on Philly's machines reads "on philly"; only another cluster is named.
            pair = pl.when(pl.col(key) != trace).then(pair)
        pairs.append(pair)
    on = pl.concat_str(pl.lit(" on "), trace) if trace is not None else pl.lit("")
    if pairs:
        joined = pl.concat_str(pairs, separator=", ", ignore_nulls=True)
        extra = pl.when(joined != "").then(pl.concat_str(pl.lit(" at "), joined)).otherwise(pl.lit(""))
        setting_text = pl.concat_str(on, extra)
    else:
        setting_text = on
    group = (
        pl.concat_str([pl.col(k).fill_null("null") for k in setting], separator="\x1f")
        if setting
        else pl.lit("")
    )

    table = (
        collection.configs.with_row_index("_order")
        .join(scheduler, on=CONFIG_COLUMN, how="left")
        .with_columns(
            group.alias("_group"),
            _describe(treatment).alias("subject"),
            setting_text.alias("setting"),
        )
    )
    # The baseline: the user's choice, else the baseline scheduler, and whole GPUs where a treatment key
    # is a MIG layout.
    chosen_by_user = [pl.col(k).fill_null("null") != v for k, v in collection.baseline]
    whole = [pl.col(k).fill_null(value) != value for k, value in TREATMENT_KEYS.items() if k in treatment]
    chosen = (
        table.sort(
            *chosen_by_user, *whole, pl.col("_scheduler") != BASELINE_SCHEDULER, "_order", nulls_last=True
        )
        .group_by("_group")
        .agg(
            pl.col(CONFIG_COLUMN).first().alias("baseline"),
            pl.col("subject").first().alias("baseline_subject"),
        )
    )
    return (
        table.join(chosen, on="_group", how="left")
        .sort("_order")
        .select(CONFIG_COLUMN, "baseline", "subject", "baseline_subject", "setting")
    )


def delay_scope(collection: Collection) -> Scope:
    """What sentences compare: ``"window"`` when every run has measurement-window metrics, else ``"run"``.

    Runs written before the measurement window existed have none; mixing their
    whole-run figures with others' window figures would compare different things.
    """
    has = collection.runs.get_column(f"{WINDOW_PREFIX}jobs").is_not_null().all()
    return "window" if has else "run"


def _days_or_hours(seconds: float, days: bool) -> str:
    return f"{seconds / 86400.0:,.2f}" if days else f"{seconds / 3600.0:,.1f}"


def window_bounds(collection: Collection) -> list[str]:
    """The measurement window of each setting in words, e.g. ``"on philly: 0.00 to 9.12 days"``.

    Bounds are seconds from the trace start (``window_start``, ``window_end``);
    where the seeds of a setting differ (a sampled trace), the range of each bound is given.
    """
    runs = collection.runs
    if runs.get_column("window_start").is_null().all():
        return []
    settings = baselines(collection).select(CONFIG_COLUMN, "setting")
    table = (
        runs.join(settings, on=CONFIG_COLUMN, how="left")
        .group_by("setting", maintain_order=True)
        .agg(
            pl.col("window_start").min().alias("s0"),
            pl.col("window_start").max().alias("s1"),
            pl.col("window_end").min().alias("e0"),
            pl.col("window_end").max().alias("e1"),
        )
    )
    lines: list[str] = []
    for setting, s0, s1, e0, e1 in table.iter_rows():
        if e1 is None:
            continue
        days = float(e1) > 3 * 86400.0
        unit = "days" if days else "h"

        def bound(low: float | None, high: float | None, days: bool = days) -> str:
            if low is None or high is None:
                return "n/a"
            a, b = _days_or_hours(low, days), _days_or_hours(high, days)
            return a if a == b else f"{a}–{b}"

        where = setting.strip() if setting else ""
        lines.append(f"{where + ': ' if where else ''}{bound(s0, s1)} to {bound(e0, e1)} {unit}")
    return lines


def effects(collection: Collection, stats: pl.DataFrame, scope: Scope | None = None) -> pl.DataFrame:
    """Difference of each configuration's mean from its baseline's, per compared metric.

    Parameters
    ----------
    collection
        The runs.
    stats
        :func:`summarize` of the same collection.
    scope
        Which delay metrics to compare (default: :func:`delay_scope`).

    Returns
    -------
    polars.DataFrame
        ``config``, ``baseline``, ``subject``, ``baseline_subject``, ``setting``,
        ``metric``, ``mean``, ``baseline_mean``, ``change`` (mean - base),
        ``relative`` (change / |base|; null where the baseline is zero or
        missing), ``better`` (null for metrics without a better direction, for
        no change, and for a change from zero smaller than the metric's
        ``min_change``), ``overlap`` (the two 95% intervals overlap; null
        unless both have one) and ``censored`` / ``baseline_censored`` (mean
        count of censored values, null for metrics without censoring).
        Baselines' own rows are left out.
    """
    runs = collection.runs
    metrics = compared_metrics(
        scope or delay_scope(collection),
        runs_evicted(runs),
        runs_shared(runs),
        runs_with_mig(runs),
        runs_multi_node(runs),
        runs_numa(runs),
        runs_multi_queue(runs),
    )
    lower = {m.column: m.better == "lower" for m in metrics}
    floor = {m.column: m.min_change for m in metrics}
    censored_of = {m.column: m.censored for m in metrics if m.censored is not None}
    base = stats.select(
        pl.col(CONFIG_COLUMN).alias("baseline"),
        "metric",
        pl.col("mean").alias("baseline_mean"),
        pl.col("low").alias("_base_low"),
        pl.col("high").alias("_base_high"),
    )
    counts = stats.filter(pl.col("metric").is_in(list(set(censored_of.values())))).select(
        CONFIG_COLUMN, pl.col("metric").alias("_censored_metric"), pl.col("mean").alias("censored")
    )
    base_counts = counts.select(
        pl.col(CONFIG_COLUMN).alias("baseline"),
        "_censored_metric",
        pl.col("censored").alias("baseline_censored"),
    )
    base_mean = pl.col("baseline_mean")
    change = pl.col("mean") - base_mean
    relative = pl.when(base_mean.is_not_null() & (base_mean != 0.0)).then(change / base_mean.abs())
    lower_better = pl.col("metric").replace_strict(lower, default=None, return_dtype=pl.Boolean)
    min_change = pl.col("metric").replace_strict(floor, default=0.0, return_dtype=pl.Float64)
    direction = pl.when(lower_better).then(pl.col("change") < 0).otherwise(pl.col("change") > 0)
    stated = (
        pl.when(pl.col("relative").is_not_null())
        .then(pl.col("relative") != 0.0)
        .otherwise(pl.col("change").abs() >= pl.max_horizontal(min_change, pl.lit(1e-12)))
    )
    return (
        baselines(collection)
        .filter(pl.col(CONFIG_COLUMN) != pl.col("baseline"))
        .join(
            stats.filter(pl.col("metric").is_in(list(lower))).select(
                CONFIG_COLUMN, "metric", "mean", "low", "high"
            ),
            on=CONFIG_COLUMN,
            how="inner",
        )
        .join(base, on=["baseline", "metric"], how="left", maintain_order="left")
        .with_columns(
            change.alias("change"),
            relative.alias("relative"),
            pl.col("metric")
            .replace_strict(censored_of, default=None, return_dtype=pl.String)
            .alias("_censored_metric"),
        )
        .join(counts, on=[CONFIG_COLUMN, "_censored_metric"], how="left", maintain_order="left")
        .join(base_counts, on=["baseline", "_censored_metric"], how="left", maintain_order="left")
        .with_columns(
            pl.when(pl.col("change").is_null() | lower_better.is_null() | ~stated)
            .then(None)
            .otherwise(direction)
            .alias("better"),
            ((pl.col("low") <= pl.col("_base_high")) & (pl.col("_base_low") <= pl.col("high"))).alias(
                "overlap"
            ),
        )
        .select(
            CONFIG_COLUMN,
            "baseline",
            "subject",
            "baseline_subject",
            "setting",
            "metric",
            "mean",
            "baseline_mean",
            "change",
            "relative",
            "better",
            "overlap",
            "censored",
            "baseline_censored",
        )
    )


def format_percent(fraction: float) -> str:
    """A relative change as a short percentage (one decimal below 10% and above 99%).

    A cut of 99.9% is not printed as "100%", which would read as "to zero".

    Examples
    --------
    >>> format_percent(0.4137), format_percent(-0.042), format_percent(12.5), format_percent(-0.9991)
    ('41%', '4.2%', '1,250%', '99.9%')
    """
    pct = abs(fraction) * 100.0
    if 99.0 < pct < 100.0:
        return f"{min(pct, 99.9):.1f}%"
    return f"{pct:,.0f}%" if round(pct, 1) >= 10.0 else f"{pct:.1f}%"


def format_value(metric: Metric, value: float) -> str:
    """A metric's value in display units with three significant digits and its unit.

    Examples
    --------
    >>> from gpureplay.report.metrics import METRICS_BY_COLUMN
    >>> m = METRICS_BY_COLUMN
    >>> format_value(m["deadlocked"], 179.0), format_value(m["wait_mean"], 5400.0)
    ('179', '1.50 h')
    >>> format_value(METRICS_BY_COLUMN["gpu_allocation_rate"], 0.2345)
    '23.4%'
    """
    shown = value / metric.scale
    if metric.count and shown == round(shown):
        text = f"{shown:,.0f}"
    else:
        size = abs(shown)
        decimals = 0 if size == 0.0 or size >= 100.0 else max(0, min(4, 2 - math.floor(math.log10(size))))
        text = f"{shown:,.{decimals}f}"
    if metric.scale == 3600.0:
        return f"{text} h"
    return f"{text}%" if metric.scale == 0.01 else text


def format_count(value: float) -> str:
    """A mean count of jobs: whole when it is, else one decimal (seeds disagree).

    Examples
    --------
    >>> format_count(312.0), format_count(2.5)
    ('312', '2.5')
    """
    return f"{value:,.0f}" if value == round(value) else f"{value:,.1f}"


def _judgement(row: dict[str, object], metric: Metric) -> str:
    better = bool(row["better"])
    what = "waits" if "wait" in metric.family else "JCTs"
    mine, theirs = row["censored"], row["baseline_censored"]
    text = "better" if better else "worse"
    if isinstance(mine, float) and isinstance(theirs, float) and round(mine, 1) != round(theirs, 1):
        counted = (
            f"{format_count(mine)} censored {what} vs {format_count(theirs)} for {row['baseline_subject']}"
        )
        # A censored value is a lower bound: more of them can make a starving configuration look faster.
        text = f"better on paper only: {counted}" if better and mine > theirs else f"{text}; {counted}"
    if row["overlap"]:
        text += ", though the 95% intervals overlap"
    return text


def effect_sentences(
    table: pl.DataFrame, limit: int = 8, min_relative: float = 0.01, scope: Scope = "window"
) -> list[str]:
    """The largest effects in words, largest first.

    Effects are taken largest first, at first at most one per metric and
    setting and an equal share of ``limit`` per configuration, so neither one
    metric nor one strong configuration fills the list; free places then go to
    the largest effects left. Changes under ``min_relative`` and those without
    a better direction are left out. A change from a zero baseline (0 -> 179
    deadlocked jobs) has no relative size: it is stated in absolute terms, when
    it reaches the metric's ``min_change``, and ranks first for job counts (jobs
    that starve where the baseline's did not), as a 50% change otherwise. Where the two
    configurations have different numbers of censored values (jobs that never
    started or finished), the sentence says so, and a "better" figure backed by
    more censored values is called "better on paper only".

    Parameters
    ----------
    table
        :func:`effects`.
    limit
        Most sentences returned.
    min_relative
        Smallest relative change worth a sentence (0.01 = 1%).
    scope
        The scope ``table`` compares delays over: whole-run delay metrics are
        called "whole-run ..." when it is ``"window"`` (they are not then compared).
    """
    # A change from zero has no relative size. Jobs that start to starve or deadlock where the
    # baseline had none rank first; other changes from zero (fragmentation from 0 to 6) rank
    # like a 50% change: among the large effects, not above them all.
    counts = [m.column for m in METRICS_BY_COLUMN.values() if m.count]
    from_zero = pl.when(pl.col("metric").is_in(counts)).then(float("inf")).otherwise(0.5)
    size = pl.when(pl.col("relative").is_null()).then(from_zero).otherwise(pl.col("relative").abs())
    ranked = (
        table.filter(
            pl.col("better").is_not_null()
            & (pl.col("relative").is_null() | (pl.col("relative").abs() >= min_relative))
        )
        .with_columns(size.alias("_size"))
        .sort("_size", descending=True, maintain_order=True)
        .with_row_index("_rank")
    )
    compared = max(ranked.get_column(CONFIG_COLUMN).n_unique(), 1)
    share = max(1, limit // compared)
    chosen: list[int] = []
    seen: set[tuple[str, str]] = set()
    per_config: dict[str, int] = {}
    # The table holds one row per configuration and metric (tens of rows), not trace rows.
    rows = ranked.select("_rank", CONFIG_COLUMN, "metric", "setting").iter_rows()
    for rank, config, metric, setting in rows:
        if len(chosen) < limit and (metric, setting) not in seen and per_config.get(config, 0) < share:
            chosen.append(rank)
            seen.add((metric, setting))
            per_config[config] = per_config.get(config, 0) + 1
    rest = [r for r in range(ranked.height) if r not in set(chosen)]
    chosen = sorted(chosen + rest[: max(0, limit - len(chosen))])

    sentences: list[str] = []
    for row in ranked.filter(pl.col("_rank").is_in(chosen)).iter_rows(named=True):
        metric = METRICS_BY_COLUMN[row["metric"]]
        phrase = metric.phrase
        if (
            scope == "window"
            and metric.scope == "run"
            and f"{WINDOW_PREFIX}{metric.column}" in METRICS_BY_COLUMN
        ):
            phrase = f"whole-run {phrase}"
        verb = "cuts" if row["change"] < 0 else "raises"
        if row["relative"] is None:
            amount = (
                f"from {format_value(metric, row['baseline_mean'])} to {format_value(metric, row['mean'])}"
            )
        else:
            amount = f"by {format_percent(row['relative'])}"
        sentences.append(
            f"{row['subject']} {verb} {phrase} {amount} vs {row['baseline_subject']}{row['setting']} "
            f"({_judgement(row, metric)})."
        )
    return sentences


__all__ = [
    "BASELINE_SCHEDULER",
    "baselines",
    "comparison_keys",
    "delay_scope",
    "effect_sentences",
    "effects",
    "format_count",
    "format_percent",
    "format_value",
    "summarize",
    "t_quantile",
    "window_bounds",
]


def choose_baseline(collection: Collection, chosen: Sequence[tuple[str, str]]) -> Collection:
    """``collection`` with the user's baseline (``KEY=VALUE`` pairs), after checking it names a configuration.

    Raises
    ------
    gpureplay.errors.InputError
        When a key does not vary across the configurations (a label key, as
    ``scheduler.name`` or as the labels write it, ``scheduler``), or
        when no configuration has all the given values (the message lists the
        values each key takes).
    """
    configs = collection.configs
    # A key as the labels write it (``scheduler`` for ``scheduler.name``) names the same key.
    by_label = {short_key(k): k for k in collection.label_keys} | {k: k for k in collection.label_keys}
    resolved: list[tuple[str, str]] = []
    for key, value in chosen:
        if key not in by_label:
            varying = ", ".join(short_key(k) for k in collection.label_keys) or "none"
            raise InputError.single(
                f"{key!r} is not a key that differs between these runs' configurations "
                f"(those that do: {varying})",
                "report --baseline",
            )
        resolved.append((by_label[key], value))
    chosen = resolved
    match = configs.filter(*[pl.col(k).fill_null("null") == v for k, v in chosen]) if chosen else configs
    if match.is_empty():
        values = "; ".join(
            f"{k}: {', '.join(sorted(configs[k].fill_null('null').unique().to_list()))}" for k, _ in chosen
        )
        wanted = ",".join(f"{k}={v}" for k, v in chosen)
        message = f"no configuration has {wanted} (values found: {values})"
        raise InputError.single(message, "report --baseline")
    return dataclasses.replace(collection, baseline=tuple(chosen))
