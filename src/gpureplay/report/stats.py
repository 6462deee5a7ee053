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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import polars as pl

from gpureplay.report.collect import CONFIG_COLUMN, Collection, short_key

#: Name of the scheduler preset taken as the baseline when present.
BASELINE_SCHEDULER = "fifo"

#: Groups that describe the setting (what was replayed on what), never the treatment.
SETTING_GROUPS: tuple[str, ...] = ("trace", "cluster")


@dataclass(frozen=True)
class Metric:
    """A headline metric: its ``summary.parquet`` column and how to show it.

    Parameters
    ----------
    column
        Column of ``SUMMARY_METRICS_SCHEMA``.
    title
        Table header, with the display unit.
    phrase
        How a sentence names it ("p95 wait").
    better
        ``"lower"`` or ``"higher"`` when one direction is an improvement,
        ``None`` for counts that describe the input (no effect is stated).
    scale
        Stored value / scale = shown value (3600: seconds shown as hours).
    """

    column: str
    title: str
    phrase: str
    better: Literal["lower", "higher"] | None
    scale: float = 1.0


#: The metrics of the report's table, in column order. Times are stored in seconds, shown in hours.
HEADLINE_METRICS: tuple[Metric, ...] = (
    Metric("jobs", "jobs", "jobs", None),
    Metric("finished", "finished", "finished jobs", "higher"),
    Metric("deadlocked", "deadlocked", "deadlocked jobs", "lower"),
    Metric("rejected", "rejected", "rejected jobs", "lower"),
    Metric("wait_mean", "mean wait (h)", "mean wait", "lower", 3600.0),
    Metric("wait_p95", "p95 wait (h)", "p95 wait", "lower", 3600.0),
    Metric("jct_mean", "mean JCT (h)", "mean JCT", "lower", 3600.0),
    Metric("jct_p95", "p95 JCT (h)", "p95 JCT", "lower", 3600.0),
    Metric("bounded_slowdown_mean", "mean bounded slowdown", "mean bounded slowdown", "lower"),
    Metric("makespan", "makespan (h)", "makespan", "lower", 3600.0),
    Metric("gpu_allocation_rate", "GPU allocation (%)", "GPU allocation", "higher", 0.01),
    Metric("fragmented_gpus_mean", "fragmented GPUs (mean)", "fragmented GPUs", "lower"),
)

METRICS_BY_COLUMN: dict[str, Metric] = {m.column: m for m in HEADLINE_METRICS}


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
        the interval columns are null when ``n < 2``. Rows follow the order of
        ``collection.configs`` and :data:`HEADLINE_METRICS`.
    """
    columns = [m.column for m in HEADLINE_METRICS]
    values = collection.runs.select(CONFIG_COLUMN, *(pl.col(c).cast(pl.Float64) for c in columns)).unpivot(
        index=CONFIG_COLUMN, variable_name="metric", value_name="value"
    )
    stats = values.group_by(CONFIG_COLUMN, "metric").agg(
        pl.col("value").count().cast(pl.Int64).alias("n"),
        pl.col("value").mean().alias("mean"),
        pl.col("value").std().alias("sd"),
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
    """
    scheduler = [k for k in label_keys if k.startswith("scheduler.")]
    if scheduler:
        return scheduler, [k for k in label_keys if k not in scheduler]
    setting = [k for k in label_keys if k.partition(".")[0] in SETTING_GROUPS]
    return [k for k in label_keys if k not in setting], setting


def _describe(keys: Sequence[str]) -> pl.Expr:
    """A configuration named by ``keys``: a lone group name by its value, else ``key=value`` pairs."""
    if not keys:
        return pl.col(CONFIG_COLUMN)
    if len(keys) == 1 and short_key(keys[0]) != keys[0]:
        return pl.col(keys[0]).fill_null("null")
    parts = [pl.concat_str(pl.lit(f"{short_key(k)}="), pl.col(k).fill_null("null")) for k in keys]
    return pl.concat_str(parts, separator=", ")


def baselines(collection: Collection) -> pl.DataFrame:
    """Each configuration's baseline and the words that name both.

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
        pair = pl.concat_str(pl.lit(f"{short_key(key)}="), pl.col(key).fill_null("null"))
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
    chosen = (
        table.sort(pl.col("_scheduler") != BASELINE_SCHEDULER, "_order", nulls_last=True)
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


def effects(collection: Collection, stats: pl.DataFrame) -> pl.DataFrame:
    """Relative difference of each configuration's mean from its baseline's, per metric.

    Parameters
    ----------
    collection
        The runs.
    stats
        :func:`summarize` of the same collection.

    Returns
    -------
    polars.DataFrame
        ``config``, ``baseline``, ``subject``, ``baseline_subject``, ``setting``,
        ``metric``, ``mean``, ``baseline_mean``, ``relative`` ((mean - base) /
        |base|; null where the baseline is zero or missing), ``better`` (null
        for metrics without a better direction) and ``overlap`` (the two 95%
        intervals overlap; null unless both have one). Baselines' own rows are
        left out.
    """
    lower = {m.column: m.better == "lower" for m in HEADLINE_METRICS if m.better is not None}
    base = stats.select(
        pl.col(CONFIG_COLUMN).alias("baseline"),
        "metric",
        pl.col("mean").alias("baseline_mean"),
        pl.col("low").alias("_base_low"),
        pl.col("high").alias("_base_high"),
    )
    base_mean = pl.col("baseline_mean")
    relative = (
        pl.when(base_mean.is_not_null() & (base_mean != 0.0))
        .then((pl.col("mean") - base_mean) / base_mean.abs())
        .otherwise(None)
    )
    lower_better = pl.col("metric").replace_strict(lower, default=None, return_dtype=pl.Boolean)
    return (
        baselines(collection)
        .filter(pl.col(CONFIG_COLUMN) != pl.col("baseline"))
        .join(stats.select(CONFIG_COLUMN, "metric", "mean", "low", "high"), on=CONFIG_COLUMN, how="inner")
        .join(base, on=["baseline", "metric"], how="left", maintain_order="left")
        .with_columns(relative.alias("relative"))
        .with_columns(
            pl.when(pl.col("relative").is_null() | lower_better.is_null())
            .then(None)
            .when(lower_better)
            .then(pl.col("relative") < 0)
            .otherwise(pl.col("relative") > 0)
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
            "relative",
            "better",
            "overlap",
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


def effect_sentences(table: pl.DataFrame, limit: int = 8, min_relative: float = 0.01) -> list[str]:
    """The largest effects in words, largest first.

    Effects are taken largest first, at first at most one per metric and
    setting and an equal share of ``limit`` per configuration, so neither one
    metric nor one strong configuration fills the list; free places then go to
    the largest effects left. Changes under ``min_relative`` and those without
    a better direction or a defined relative change (zero baseline) are left out.

    Parameters
    ----------
    table
        :func:`effects`.
    limit
        Most sentences returned.
    min_relative
        Smallest relative change worth a sentence (0.01 = 1%).
    """
    ranked = (
        table.filter(pl.col("better").is_not_null() & (pl.col("relative").abs() >= min_relative))
        .with_columns(pl.col("relative").abs().alias("_size"))
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
        metric_info = METRICS_BY_COLUMN[row["metric"]]
        verb = "cuts" if row["relative"] < 0 else "raises"
        judgement = "better" if row["better"] else "worse"
        if row["overlap"]:
            judgement += ", though the 95% intervals overlap"
        sentences.append(
            f"{row['subject']} {verb} {metric_info.phrase} by {format_percent(row['relative'])} "
            f"vs {row['baseline_subject']}{row['setting']} ({judgement})."
        )
    return sentences


__all__ = [
    "BASELINE_SCHEDULER",
    "HEADLINE_METRICS",
    "METRICS_BY_COLUMN",
    "Metric",
    "baselines",
    "comparison_keys",
    "effect_sentences",
    "effects",
    "format_percent",
    "summarize",
    "t_quantile",
]
