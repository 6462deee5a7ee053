"""Render a comparison report as Markdown (figures linked) and self-contained HTML.

The HTML page needs nothing but itself: CSS is inline, figures are embedded as
base64 PNG data URIs, there is no script and no URL, so it opens the same
offline, attached to a mail, or from a CI artifact.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from gpureplay.report.collect import CONFIG_COLUMN, Collection
from gpureplay.report.figures import FigureFile
from gpureplay.report.folders import LeftOut, counts
from gpureplay.report.metrics import (
    MIG_METRIC_COLUMNS,
    NUMA_METRICS,
    OUTCOME_METRICS,
    PREEMPTION_METRICS,
    QUEUE_METRICS,
    RUN_METRICS,
    SHARING_METRICS,
    TOPOLOGY_METRICS,
    USAGE_METRICS,
    WINDOW_METRICS,
    Metric,
    Scope,
    compared_metrics,
    runs_evicted,
    runs_multi_node,
    runs_multi_queue,
    runs_numa,
    runs_priced,
    runs_shared,
    runs_with_mig,
    runs_with_usage,
)
from gpureplay.report.published_queueing import comparable_runs, philly_queueing
from gpureplay.report.queue_waits import longest_waits, why
from gpureplay.report.stats import format_count, format_value

#: Constant config keys worth naming in the report's opening line, when present.
SETTING_KEYS: tuple[str, ...] = (
    "trace.name",
    "cluster.name",
    "scheduler.name",
    "workload.name",
    "workload.load",
    "sample_interval",
    "horizon",
)

#: What a cell shows when the runs have no value for it (an older version did not write it).
NOT_AVAILABLE = "n/a"

#: Smallest relative change coloured better/worse in the HTML change table (as for sentences).
COLOUR_THRESHOLD = 0.01

#: Names of the two scopes in the headline table.
SCOPE_NAMES: dict[Scope, str] = {"window": "window", "run": "whole run"}


@dataclass(frozen=True)
class ReportData:
    """Everything a report shows.

    Attributes
    ----------
    inputs
        The folders the report was built from, as given.
    collection
        The runs (:func:`gpureplay.report.collect.collect`).
    stats
        :func:`gpureplay.report.stats.summarize`.
    effects
        :func:`gpureplay.report.stats.effects`.
    sentences
        :func:`gpureplay.report.stats.effect_sentences`.
    scope
        What the sentences and the change table compare (:func:`gpureplay.report.stats.delay_scope`).
    windows
        The measurement window of each setting in words (:func:`gpureplay.report.stats.window_bounds`).
    figures
        Saved figures, in the order shown.
    figure_notes
        Figures not drawn and why ("Wait time CDF: no job waited in any run.").
    """

    inputs: tuple[str, ...]
    collection: Collection
    stats: pl.DataFrame
    effects: pl.DataFrame
    sentences: list[str]
    scope: Scope = "window"
    windows: list[str] = field(default_factory=list)
    figures: list[FigureFile] = field(default_factory=list)
    figure_notes: list[str] = field(default_factory=list)
    title: str = "gpureplay comparison report"
    #: Further sections, already rendered (the packing runs'), shown before the run list.
    extra_markdown: list[str] = field(default_factory=list)
    extra_html: list[str] = field(default_factory=list)


def significant_decimals(value: float, digits: int = 3) -> int:
    """Decimals that show ``value`` with ``digits`` significant digits (none from 100 up, at most 4).

    Examples
    --------
    >>> [significant_decimals(v) for v in (1234.0, 12.3, 1.5, 0.625, 0.0123, 0.0)]
    [0, 1, 2, 3, 4, 0]
    """
    size = abs(value)
    if size == 0.0 or size >= 100.0 or not math.isfinite(size):
        return 0
    return max(0, min(4, digits - 1 - math.floor(math.log10(size))))


def format_cell(
    metric: Metric, n: int, mean: float | None, half_width: float | None, censored: float | None = None
) -> str:
    """A table cell: ``mean ± half-width`` in display units, then the censored count when there are any.

    The mean alone for one seed or agreeing seeds; "n/a" where the runs have
    no value (an older version did not write the metric).

    Examples
    --------
    >>> from gpureplay.report.metrics import METRICS_BY_COLUMN as M
    >>> format_cell(M["wait_p95"], 2, 5400.0, 22871.17)
    '1.50 ± 6.35'
    >>> format_cell(M["finished"], 1, 97.0, None), format_cell(M["jobs"], 2, 40.0, 0.0)
    ('97', '40')
    >>> format_cell(M["wait_mean"], 1, 30600.0, None, 312.0)
    '8.50 (312 censored)'
    >>> format_cell(M["window_wait_mean"], 1, None, None)
    'n/a'
    """
    if mean is None or not math.isfinite(mean):
        return NOT_AVAILABLE
    shown = mean / metric.scale
    decimals = 0 if metric.count and shown == round(shown) else significant_decimals(shown)
    text = f"{shown:,.{decimals}f}"
    # Seeds that agree give a zero-width interval: the bare mean says the same in less room.
    if n >= 2 and half_width is not None and math.isfinite(half_width) and half_width != 0.0:
        text += f" ± {half_width / metric.scale:,.{decimals}f}"
    if censored is not None and censored > 0:
        text += f" ({format_count(censored)} censored)"
    return text


def format_change(metric: Metric, relative: float | None, change: float | None) -> str:
    """A change from the baseline: relative in percent, or absolute when the baseline is zero.

    Examples
    --------
    >>> from gpureplay.report.metrics import METRICS_BY_COLUMN as M
    >>> format_change(M["wait_p95"], -0.4137, -10.0), format_change(M["wait_p95"], 0.05, 1.0)
    ('−41.4%', '+5.0%')
    >>> format_change(M["deadlocked"], None, 179.0), format_change(M["deadlocked"], None, 0.0)
    ('+179 (from 0)', '0')
    >>> format_change(M["wait_p95"], 1e-12, 1e-9), format_change(M["wait_p95"], None, None)
    ('0%', 'n/a')
    """
    if change is None or not math.isfinite(change):
        return NOT_AVAILABLE
    if relative is None or not math.isfinite(relative):
        # A zero baseline has no relative change: 0 -> 0 and 0 -> 179 must not read alike.
        if change == 0.0:
            return "0"
        return f"{'−' if change < 0 else '+'}{format_value(metric, abs(change))} (from 0)"
    pct = relative * 100.0
    if round(pct, 1) == 0.0:
        # Float noise between equal runs (1e-12) would otherwise read "+0.0%".
        return "0%"
    return f"{'−' if pct < 0 else '+'}{abs(pct):,.1f}%"


@dataclass(frozen=True)
class Table:
    """A table to render: header, rows of (text, HTML class) cells, Markdown alignment per column."""

    header: list[str]
    rows: list[list[tuple[str, str]]]
    align: list[str]
    row_classes: list[str] = field(default_factory=list)


def _cells(data: ReportData) -> dict[tuple[str, str], tuple[int, float | None, float | None]]:
    return {
        (c, m): (n, mean, half)
        for c, m, n, mean, half in data.stats.select(
            CONFIG_COLUMN, "metric", "n", "mean", "half_width"
        ).iter_rows()
    }


def _cell(
    cells: dict[tuple[str, str], tuple[int, float | None, float | None]],
    config: str,
    metric: Metric,
    runs: int,
) -> str:
    n, mean, half = cells.get((config, metric.column), (0, None, None))
    if n < runs:
        # Some seeds lack the metric (written by an older version): a mean of the others would
        # pass for the configuration's.
        return NOT_AVAILABLE
    censored = cells.get((config, metric.censored), (0, None, None))[1] if metric.censored else None
    return format_cell(metric, n, mean, half, censored)


def has_window(data: ReportData) -> bool:
    """True when some run has measurement-window metrics (older runs have none)."""
    return bool(data.collection.runs.get_column("window_jobs").is_not_null().any())


def headline_table(data: ReportData) -> Table:
    """Delays and allocation per configuration: a window row and a whole-run row each.

    The window row is left out when no run has window metrics (all written by an older version).
    """
    cells = _cells(data)
    scopes: list[tuple[Scope, tuple[Metric, ...]]] = [("run", RUN_METRICS)]
    if has_window(data):
        scopes.insert(0, ("window", WINDOW_METRICS))
    header = ["configuration", "seeds", "over", *(m.title for m in RUN_METRICS)]
    rows: list[list[tuple[str, str]]] = []
    classes: list[str] = []
    for config, runs in data.collection.configs.select(CONFIG_COLUMN, "runs").iter_rows():
        for i, (scope, metrics) in enumerate(scopes):
            rows.append(
                [
                    (config, ""),
                    (str(runs), "num"),
                    (SCOPE_NAMES[scope], "scope"),
                    *((_cell(cells, config, m, runs), "num") for m in metrics),
                ]
            )
            classes.append("scope-window" if i == 0 else "")
    return Table(header, rows, [":---", "---:", ":---", *(["---:"] * len(RUN_METRICS))], classes)


def outcome_table(data: ReportData) -> Table:
    """What became of the jobs per configuration, and whole-run makespan and fragmentation."""
    cells = _cells(data)
    header = ["configuration", "seeds", *(m.title for m in OUTCOME_METRICS)]
    rows = [
        [(config, ""), (str(runs), "num"), *((_cell(cells, config, m, runs), "num") for m in OUTCOME_METRICS)]
        for config, runs in data.collection.configs.select(CONFIG_COLUMN, "runs").iter_rows()
    ]
    return Table(header, rows, [":---", *(["---:"] * (len(header) - 1))])


def has_preemption(data: ReportData) -> bool:
    """True when some run evicted a job (the preemption tables are shown then)."""
    return runs_evicted(data.collection.runs)


def preemption_table(data: ReportData) -> Table:
    """Evictions and what they cost per configuration (whole run, mean over seeds)."""
    return _metrics_table(data, PREEMPTION_METRICS)


def has_sharing(data: ReportData) -> bool:
    """True when some run shared GPUs by replicas (the sharing table is shown then)."""
    return runs_shared(data.collection.runs)


def sharing_table(data: ReportData) -> Table:
    """What time-slicing / MPS / MIG cost per configuration: jobs slowed, slowdown, run time added.

    The MIG columns only when some run had MIG instances.
    """
    mig = runs_with_mig(data.collection.runs)
    shown = tuple(m for m in SHARING_METRICS if mig or m.column not in MIG_METRIC_COLUMNS)
    return _metrics_table(data, shown)


def has_topology(data: ReportData) -> bool:
    """True when some run placed a job on more than one node (the topology table is shown then)."""
    return runs_multi_node(data.collection.runs)


def has_numa(data: ReportData) -> bool:
    """True when some run ran a kubelet Topology Manager policy (the NUMA table is shown then)."""
    return runs_numa(data.collection.runs)


def has_usage(data: ReportData) -> bool:
    """True when some run has the GPU usage columns (the "What the GPUs did" table is shown then)."""
    return runs_with_usage(data.collection.runs)


def usage_table(data: ReportData) -> Table:
    """Allocated against busy, idle GPU-hours and alerts, energy and cost per configuration."""
    return _metrics_table(data, USAGE_METRICS)


def usage_note(data: ReportData) -> str:
    """The usage table's note: its definitions, and "no prices given" when no run had prices."""
    prices = (
        "cost = node-hours x cluster.prices"
        if runs_priced(data.collection.runs)
        else "cost: no prices given (cluster.prices is empty), so the cost columns are n/a"
    )
    return _USAGE_NOTE + " " + prices + "."


def has_queues(data: ReportData) -> bool:
    """True when some run admitted jobs of more than one queue (the queue table is shown then)."""
    return runs_multi_queue(data.collection.runs)


def queue_table(data: ReportData) -> Table:
    """Queues with admitted jobs, Jain's index of their mean slowdowns, the worst queue's mean wait."""
    return _metrics_table(data, QUEUE_METRICS)


def waits_table(data: ReportData) -> Table:
    """The queues that wait longest in each configuration, with what held them (:mod:`queue_waits`)."""
    rows = []
    for row in longest_waits(data.collection).iter_rows(named=True):
        quota = row["quota_share"]
        at_quota = row["at_quota"]
        rows.append(
            [
                (str(row[CONFIG_COLUMN]), ""),
                (str(row["queue"]), ""),
                (format_count(row["admitted"]), "num"),
                (f"{row['wait_mean'] / 3600.0:,.2f}", "num"),
                (_percent(row["demand_share"]), "num"),
                (_percent(quota), "num"),
                (_percent(at_quota), "num"),
                (format_count(row["preemptions"]), "num"),
                (why(row), ""),
            ]
        )
    header = [
        "configuration",
        "queue",
        "jobs",
        "mean wait (h)",
        "GPU-time asked",
        "quota share",
        "waiting at quota",
        "evictions",
        "what it waits for",
    ]
    return Table(header, rows, [":---", ":---", "---:", "---:", "---:", "---:", "---:", "---:", ":---"])


def _percent(value: float | None) -> str:
    if value is None or math.isnan(value):
        return NOT_AVAILABLE
    return f"{100.0 * value:.1f}%"


def has_real_queueing(data: ReportData) -> bool:
    """True when some run replays the Philly trace unscaled (the real-cluster comparison is shown then)."""
    return comparable_runs(data.collection.runs).height > 0


def real_queueing_table(data: ReportData) -> Table:
    """Mean and median wait of each unscaled Philly configuration, and the real cluster's (seconds)."""
    runs = comparable_runs(data.collection.runs)
    means = runs.group_by(CONFIG_COLUMN, maintain_order=True).agg(
        pl.len().alias("seeds"),
        pl.col("wait_mean").mean(),
        pl.col("wait_median").mean(),
        pl.col("jobs").mean(),
    )
    order = {c: i for i, c in enumerate(data.collection.configs[CONFIG_COLUMN].to_list())}
    rows = [
        [
            (str(config), ""),
            (str(seeds), "num"),
            (_seconds(mean), "num"),
            (_seconds(median), "num"),
            (format_count(jobs) if jobs is not None else NOT_AVAILABLE, "num"),
        ]
        for config, seeds, mean, median, jobs in sorted(means.iter_rows(), key=lambda r: order.get(r[0], 0))
    ]
    real = philly_queueing()
    rows.append(
        [
            (f"{real.cluster}, real cluster: {real.source}", ""),
            ("", "num"),
            (_seconds(real.mean_s), "num"),
            (_seconds(real.median_s), "num"),
            (format_count(real.gpu_jobs), "num"),
        ]
    )
    header = ["configuration", "seeds", "mean wait (s)", "median wait (s)", "jobs"]
    return Table(header, rows, [":---", "---:", "---:", "---:", "---:"])


def _seconds(value: float | None) -> str:
    if value is None or math.isnan(value):
        return NOT_AVAILABLE
    return f"{value:,.0f}"


def numa_table(data: ReportData) -> Table:
    """Kubelet admission failures, the jobs they hit, failed past backoffLimit and rejected at arrival."""
    return _metrics_table(data, NUMA_METRICS)


def topology_table(data: ReportData) -> Table:
    """Where multi-node jobs ran (one NVLink domain, rack, spine) and the GPU-hours spreading cost."""
    return _metrics_table(data, TOPOLOGY_METRICS)


def _metrics_table(data: ReportData, metrics: tuple[Metric, ...]) -> Table:
    """One row per configuration: seeds and ``metrics`` (whole run, mean over seeds)."""
    cells = _cells(data)
    header = ["configuration", "seeds", *(m.title for m in metrics)]
    rows = [
        [
            (config, ""),
            (str(runs), "num"),
            *((_cell(cells, config, m, runs), "num") for m in metrics),
        ]
        for config, runs in data.collection.configs.select(CONFIG_COLUMN, "runs").iter_rows()
    ]
    return Table(header, rows, [":---", *(["---:"] * (len(header) - 1))])


def priority_table(data: ReportData) -> Table:
    """Per configuration and priority (class), what the jobs waited and lost: who pays for preemption.

    Waits count every admitted job, a job that never started censored at its
    run's end (as the headline metrics do); pending time adds every requeue
    after an eviction. Means over the jobs of all seeds; job counts per seed.
    """
    runs = data.collection.runs.select(pl.col("run").cast(pl.String), "span_end")
    jobs = (
        data.collection.jobs.with_columns(
            pl.col("run").cast(pl.String), pl.col(CONFIG_COLUMN).cast(pl.String)
        )
        .filter(pl.col("state") != "rejected")
        .join(runs.lazy(), on="run", how="left")
        .filter(pl.col("submit_time") <= pl.col("span_end"))
        .with_columns(
            pl.coalesce(pl.col("priority_class"), pl.col("priority").cast(pl.String)).alias("_class"),
            pl.coalesce(pl.col("wait_time"), pl.col("span_end") - pl.col("submit_time")).alias("_wait"),
        )
        .group_by(CONFIG_COLUMN, "_class")
        .agg(
            (pl.len() / pl.col("run").n_unique()).alias("jobs"),
            pl.col("priority").max().alias("priority"),
            (pl.col("_wait").mean() / 3600.0).alias("wait"),
            (pl.col("pending_time").mean() / 3600.0).alias("pending"),
            pl.col("preemptions").cast(pl.Float64).mean().alias("evictions"),
            (pl.col("lost_gpu_seconds").sum() / 3600.0 / pl.col("run").n_unique()).alias("lost"),
        )
        .collect()
    )
    order = {c: i for i, c in enumerate(data.collection.configs.get_column(CONFIG_COLUMN).to_list())}
    jobs = jobs.with_columns(
        pl.col(CONFIG_COLUMN).replace_strict(order, default=len(order)).alias("_o")
    ).sort("_o", "priority", descending=[False, True])
    header = [
        "configuration",
        "priority class",
        "jobs",
        "mean wait (h)",
        "mean pending, requeues incl. (h)",
        "evictions per job",
        "lost GPU-hours",
    ]
    rows = [
        [
            (row[CONFIG_COLUMN], ""),
            (str(row["_class"]), ""),
            (format_count(row["jobs"]), "num"),
            *((_number(row[k]), "num") for k in ("wait", "pending", "evictions", "lost")),
        ]
        for row in jobs.iter_rows(named=True)
    ]
    return Table(header, rows, [":---", ":---", *(["---:"] * 5)])


def _number(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return NOT_AVAILABLE
    return f"{value:.{significant_decimals(value)}f}"


def change_table(data: ReportData) -> Table:
    """Change of each configuration's means from its baseline's, coloured better/worse in HTML."""
    metrics = compared_metrics(
        data.scope,
        has_preemption(data),
        has_sharing(data),
        runs_with_mig(data.collection.runs),
        has_topology(data),
        has_numa(data),
        has_queues(data),
    )
    found = {
        (c, m): (rel, change, better)
        for c, m, rel, change, better in data.effects.select(
            CONFIG_COLUMN, "metric", "relative", "change", "better"
        ).iter_rows()
    }
    pairs = data.effects.select(CONFIG_COLUMN, "baseline").unique(maintain_order=True).iter_rows()
    where = f", {SCOPE_NAMES[data.scope]}"
    header = [
        "configuration",
        "baseline",
        *(
            f"{m.phrase}{where if m.column in {x.column for x in (*WINDOW_METRICS, *RUN_METRICS)} else ''} "
            f"({'↓' if m.better == 'lower' else '↑'} better)"
            for m in metrics
        ),
    ]
    rows: list[list[tuple[str, str]]] = []
    for config, baseline in pairs:
        row: list[tuple[str, str]] = [(config, ""), (baseline, "")]
        for m in metrics:
            rel, change, better = found.get((config, m.column), (None, None, None))
            # Colour only changes a sentence could state, not noise a reader would over-read.
            marked = better is not None and (rel is None or abs(rel) >= COLOUR_THRESHOLD)
            tone = "" if not marked else " better" if better else " worse"
            row.append((format_change(m, rel, change), "num" + tone))
        rows.append(row)
    return Table(header, rows, [":---", ":---", *(["---:"] * len(metrics))])


def _settings(collection: Collection) -> str:
    pairs = [f"{k}={collection.common[k]}" for k in SETTING_KEYS if k in collection.common]
    return ", ".join(pairs)


def _summary_line(data: ReportData) -> str:
    runs, configs = data.collection.runs.height, data.collection.configs.height
    text = f"{runs} run(s) in {configs} configuration(s)"
    if data.collection.label_keys:
        text += ", differing in " + ", ".join(data.collection.label_keys)
    settings = _settings(data.collection)
    if settings:
        text += f"; same for all: {settings}"
    text += "."
    if data.collection.left_out:
        text += (
            f" {len(data.collection.left_out)} run folder(s) left out ({counts(data.collection.left_out)}): "
            "see “Runs left out”."
        )
    return text


_INTERVAL_NOTE = (
    "Each cell is the mean over seeds ± the half-width of the two-sided 95% Student-t interval "
    "(no ± for a single seed or when all seeds agree). Times in hours; n/a: not in these runs' "
    "results (written by an older version)."
)

_PREEMPTION_NOTE = (
    "Evictions by priority preemption and what they cost, over the whole run (mean over seeds): GPU-hours "
    "lost to work rolled back to the last checkpoint, restart overheads and termination grace periods; "
    "goodput = useful GPU-time / allocated GPU-time; pending time counts every requeue after an eviction."
)

_SHARING_NOTE = (
    "Time-slicing and MPS advertise each GPU as several devices (replicas), MIG as its instances; GPU "
    "allocation counts devices. What sharing costs is run time: a job's sharing slowdown = (work + time "
    "added) / work, over the jobs that ran (1 = never slowed); run time added = the sum over jobs of the "
    "time their runs were stretched; MIG slices stranded = the MIG GPUs' compute slices no job can ever "
    "use (static layouts), or the timeline's mean share of MIG memory slices no instance the workload asks "
    "could take (instances made per pod, mixed layouts; a GPU being re-partitioned counts whole); "
    "re-partitionings = idle MIG GPUs given a new config, each serving no pod for the downtime (whole run, "
    "mean over seeds; docs/engine/devices.md, GPU sharing by replicas, MIG instances, Slice-mask MIG, "
    "Re-partitioning idle GPUs)."
)

_USAGE_NOTE = (
    "What the GPUs did, not only what was allocated (whole run, mean over seeds; docs/results.md, What the "
    "GPUs did): GPUs busy = usage x GPUs x time over the cluster's GPU-time, each job's usage being "
    "its trace's gpu_util or workload.utilization (the model idle-resource reclaim reads); allocated but "
    "idle = GPU-hours held less busy GPU-hours; idle alerts = allocations under idle_alert.threshold busy "
    "for longer than idle_alert.window (the DCGM 'under 20% busy for 30 minutes' rule), and the GPU-hours "
    "held while one fired; GPU energy and mean power from each model's catalog idle and TDP power, linear "
    "in usage (n/a: a model without figures);"
)

_TOPOLOGY_NOTE = (
    "Jobs whose pods ran on more than one node (when their last attempt started), the share of them whose "
    "pods stayed within one NVLink domain, rack or spine, and the GPU-hours spreading added to runs: a job "
    "spanning several domains of a level runs at that level's scheduler.spread_rate factor (1: no cost) for "
    "the attempt, and the mean wait of the jobs of more than one pod, the ones a topology-aware scheduler "
    "keeps together (whole run, censored, mean over seeds; docs/engine/placement.md, What spreading costs, "
    "Kueue TAS, KAI topology, Volcano HyperNodes)."
)

_NUMA_NOTE = (
    "The kubelet Topology Manager admits a pod only if its policy accepts the NUMA alignment its GPUs (and "
    "exclusive CPUs) can get on the node the scheduler chose; a rejection (TopologyAffinityError) sends the "
    "job back to its Job controller, which retries after a back-off (10 s doubling, at most 10 min) and "
    "fails the job past scheduler.backoff_limit. A NUMA-aware scheduler (NodeResourceTopologyMatch) filters "
    "nodes instead and rejects at arrival the jobs no NUMA node can hold. Waits and JCTs leave failed and "
    "rejected jobs out: a policy that fails the big jobs lightens the load for the rest, so read its "
    "shorter waits beside the jobs it lost (whole run, mean over seeds; docs/engine/placement.md, Kubelet "
    "Topology Manager)."
)

_QUEUE_NOTE = (
    "Each job's queue is its tenant (the trace's queue column: Philly VCs, ...). Jain's index of the "
    "queues' mean bounded slowdowns is 1 when every queue's jobs are slowed alike and 1/n when one of n "
    "queues bears it all; the worst queue's mean wait names the tenant that waits longest. Both count the "
    "queues holding at least 1% of the admitted jobs, so a tenant of one or two jobs cannot decide them "
    "(whole run, mean over seeds; every queue's figures are in its run's queue_summary.parquet). Finish-time "
    "fairness (Themis, NSDI'20) is a job's JCT over the JCT it would have on an even share of the cluster "
    "among the jobs it contended with (Gavel's isolated allocation; gpureplay.results.finish_time_fairness): "
    "above 1 the job fared worse than on its fair share; the worst queue's mean treats the queues as "
    "Themis's apps."
)

_WAITS_NOTE = (
    "The queues with the longest mean wait in each configuration (at least 1% of the admitted jobs and a "
    "mean wait of a minute or more; mean over seeds) and what held them. GPU-time asked: the queue's share "
    "of the GPU-time its jobs request (GPUs x trace duration); quota share: its share of the queues' nominal "
    "quotas (Volcano: deserved shares). Waiting at quota: of its pending jobs counted at every timeline "
    "sample, the part seen while its quota had no room left for its smallest job (borrowing from the cohort "
    "included): those jobs wait for quota, which only finishing jobs or reclaim free. The rest waited below "
    "quota, for free GPUs or a placement for the whole gang: the cluster's allocated share then, the GPUs "
    "other queues held above their own quotas (borrowed, or kept after a deserved share fell) that reclaim "
    "could have freed, and the queue's mean job size beside all queues' tell which. Evictions: what "
    "preemption or reclaim took from the queue's jobs (docs: gpureplay.report.queue_waits)."
)

_REAL_QUEUEING_NOTE = (
    "The runs that replay the Philly trace at its own arrival rate (no load factor, sample or window), "
    "beside the queueing delays measured on the real cluster (AcmeTrace cluster summary, Hu et al., NSDI "
    "2024). The real figures cover every GPU job Philly ran, failed and killed ones included, under its "
    "own scheduler (YARN with per-VC quotas and locality rules); the replay's job table holds the jobs "
    "the Pollux authors kept, on the machine list given, and a job that never started counts its wait up "
    "to the run's end (mean over seeds)."
)

_PRIORITY_NOTE = (
    "By priority class: who waits and who pays. Waits count every admitted job (censored at the run's end "
    "when it never started); job counts and lost GPU-hours per seed."
)

_CENSORING_NOTE = (
    "Waits and JCTs count every admitted job: a job that never started (or never finished) is censored, "
    "counted up to the end of the run, so its value is a lower bound; “(312 censored)” beside a figure "
    "says how many such values it holds."
)


def _scope_note(data: ReportData) -> str:
    window = (
        "Window: the measurement window (by default the jobs submitted between the first and the last "
        "arrival, with GPU allocation over that interval; warm-up and drain tail left out)"
    )
    if data.windows:
        window += " — " + "; ".join(data.windows)
    return f"{window}. Whole run: every job, from the first arrival to the end of the run."


def _sentence_intro(data: ReportData) -> str:
    if data.scope == "window":
        text = "Delays and GPU allocation are compared over the measurement window"
        if data.windows:
            text += " (" + "; ".join(data.windows) + ")"
        return text + "; job counts, makespan and fragmentation over the whole run."
    return (
        "Compared over the whole run: some of these runs were written by an older version "
        "without measurement-window metrics."
    )


def _no_effects(data: ReportData) -> str:
    if data.collection.configs.height < 2:
        return "Only one configuration: nothing to compare."
    if data.effects.height == 0:
        return "No two configurations share a trace and setting to compare."
    return "No configuration differs from its baseline by 1% or more in a headline metric."


def _left_out_lines(left_out: Sequence[LeftOut]) -> list[tuple[str, str, str]]:
    return [(str(item.folder), item.kind, item.reason) for item in left_out]


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _md_table(table: Table) -> list[str]:
    out = ["| " + " | ".join(table.header) + " |", "|" + "|".join(table.align) + "|"]
    out += ["| " + " | ".join(_md_escape(text) for text, _ in row) + " |" for row in table.rows]
    return out


def render_markdown(data: ReportData) -> str:
    """The report as Markdown, linking figures by file name (they sit next to it)."""
    out = [f"# {data.title}", "", _summary_line(data), ""]
    out += ["Inputs: " + ", ".join(f"`{p}`" for p in data.inputs), ""]
    out += ["## Largest differences", "", _sentence_intro(data), ""]
    out += [f"- {s}" for s in data.sentences] if data.sentences else [_no_effects(data)]
    out += ["", "## Headline metrics", "", _scope_note(data), "", _CENSORING_NOTE, "", _INTERVAL_NOTE, ""]
    out += _md_table(headline_table(data))
    out += ["", "## Job outcomes", "", "Over the whole run; mean over seeds.", ""]
    out += _md_table(outcome_table(data))
    if has_preemption(data):
        out += ["", "## Preemption", "", _PREEMPTION_NOTE, ""]
        out += _md_table(preemption_table(data))
        out += ["", _PRIORITY_NOTE, ""]
        out += _md_table(priority_table(data))
    if has_sharing(data):
        out += ["", "## GPU sharing: replicas and MIG instances", "", _SHARING_NOTE, ""]
        out += _md_table(sharing_table(data))
    if has_usage(data):
        out += ["", "## What the GPUs did: busy, idle, energy and cost", "", usage_note(data), ""]
        out += _md_table(usage_table(data))
    if has_topology(data):
        out += ["", "## Topology: where multi-node jobs ran", "", _TOPOLOGY_NOTE, ""]
        out += _md_table(topology_table(data))
    if has_numa(data):
        out += ["", "## NUMA alignment: kubelet admission", "", _NUMA_NOTE, ""]
        out += _md_table(numa_table(data))
    if has_queues(data):
        out += ["", "## Queues: fairness across tenants", "", _QUEUE_NOTE, ""]
        out += _md_table(queue_table(data))
        waits = waits_table(data)
        if waits.rows:
            out += ["", "### Which queues wait longest, and why", "", _WAITS_NOTE, ""]
            out += _md_table(waits)
    if has_real_queueing(data):
        out += ["", "## Queueing delay beside the real Philly cluster", "", _REAL_QUEUEING_NOTE, ""]
        out += _md_table(real_queueing_table(data))
    change = change_table(data)
    if change.rows:
        out += [
            "",
            "## Change vs baseline",
            "",
            "Relative difference of the means from the baseline; from a zero baseline, the absolute change.",
            "",
        ]
        out += _md_table(change)
    if data.figures or data.figure_notes:
        out += ["", "## Figures", ""]
        for fig in data.figures:
            out += [f"### {fig.title}", "", f"![{fig.title}]({fig.path.name})", "", fig.caption, ""]
        out += [f"- {note}" for note in data.figure_notes]
    if data.extra_markdown:
        out += ["", *data.extra_markdown]
    out += ["", "## Runs", ""]
    for config, runs in _runs_by_config(data):
        out.append(f"- {_md_escape(config)}: " + ", ".join(f"`{r}`" for r in runs))
    if data.collection.left_out:
        out += ["", "## Runs left out", "", "Run folders under the inputs that this report does not use:", ""]
        out += [
            f"- `{folder}`: {kind}: {reason}"
            for folder, kind, reason in _left_out_lines(data.collection.left_out)
        ]
    if data.collection.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in data.collection.notes]
    return "\n".join(out).rstrip() + "\n"


def _runs_by_config(data: ReportData) -> list[tuple[str, list[str]]]:
    grouped = data.collection.runs.group_by(CONFIG_COLUMN, maintain_order=True).agg(pl.col("run"))
    runs = dict(grouped.iter_rows())
    return [(c, list(runs.get(c, []))) for c in data.collection.configs.get_column(CONFIG_COLUMN).to_list()]


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 2rem auto; max-width: 1240px; padding: 0 1rem; color: #1d2330; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .3rem; }
h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #d8dde6; padding-bottom: .2rem; }
h3 { font-size: 1.05rem; }
.lede { color: #3d4659; }
code { background: #f1f3f7; padding: 0 .25rem; border-radius: 3px; font-size: .9em; }
ul.effects li { margin: .25rem 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: .88rem; margin: .5rem 0; }
th, td { border: 1px solid #d8dde6; padding: .3rem .5rem; }
th { background: #eef1f6; text-align: center; vertical-align: bottom; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #f8f9fb; }
tr.scope-window td { border-top: 2px solid #c4cad6; }
td.scope { color: #4a5467; white-space: nowrap; }
td.better { color: #11643a; background: #e6f4ea; }
td.worse { color: #8a1c1c; background: #fbeaea; }
figure { margin: 1rem 0 2rem; }
figure img { max-width: 100%; height: auto; border: 1px solid #e3e6ec; }
figcaption { color: #4a5467; font-size: .9rem; }
.note { color: #4a5467; font-size: .9rem; }
details { margin: .5rem 0; }
.leftout { background: #fff7e6; border: 1px solid #f0d9a8; padding: .5rem 1rem; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _data_uri(fig: FigureFile) -> str:
    return "data:image/png;base64," + base64.b64encode(fig.path.read_bytes()).decode("ascii")


def _html_table(table: Table) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in table.header)
    classes = table.row_classes or [""] * len(table.rows)
    body = "".join(
        (f'<tr class="{row_class}">' if row_class else "<tr>")
        + "".join(
            f'<td class="{cls}">{_e(text)}</td>' if cls else f"<td>{_e(text)}</td>" for text, cls in row
        )
        + "</tr>"
        for row, row_class in zip(table.rows, classes, strict=True)
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def render_html(data: ReportData) -> str:
    """The report as one self-contained HTML page (inline CSS, figures as data URIs, no script)."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # An empty data icon stops the browser from asking for /favicon.ico.
        '<link rel="icon" href="data:,">',
        f"<title>{_e(data.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(data.title)}</h1>",
        f'<p class="lede">{_e(_summary_line(data))}</p>',
        '<p class="note">Inputs: ' + ", ".join(f"<code>{_e(p)}</code>" for p in data.inputs) + "</p>",
        "<h2>Largest differences</h2>",
        f'<p class="note">{_e(_sentence_intro(data))}</p>',
    ]
    if data.sentences:
        parts.append('<ul class="effects">' + "".join(f"<li>{_e(s)}</li>" for s in data.sentences) + "</ul>")
    else:
        parts.append(f"<p>{_e(_no_effects(data))}</p>")
    parts += [
        "<h2>Headline metrics</h2>",
        f'<p class="note">{_e(_scope_note(data))}</p>',
        f'<p class="note">{_e(_CENSORING_NOTE)}</p>',
        f'<p class="note">{_e(_INTERVAL_NOTE)}</p>',
        _html_table(headline_table(data)),
        "<h2>Job outcomes</h2>",
        '<p class="note">Over the whole run; mean over seeds.</p>',
        _html_table(outcome_table(data)),
    ]
    if has_preemption(data):
        parts += [
            "<h2>Preemption</h2>",
            f'<p class="note">{_e(_PREEMPTION_NOTE)}</p>',
            _html_table(preemption_table(data)),
            f'<p class="note">{_e(_PRIORITY_NOTE)}</p>',
            _html_table(priority_table(data)),
        ]
    if has_sharing(data):
        parts += [
            "<h2>GPU sharing: replicas and MIG instances</h2>",
            f'<p class="note">{_e(_SHARING_NOTE)}</p>',
            _html_table(sharing_table(data)),
        ]
    if has_usage(data):
        parts += [
            "<h2>What the GPUs did: busy, idle, energy and cost</h2>",
            f'<p class="note">{_e(usage_note(data))}</p>',
            _html_table(usage_table(data)),
        ]
    if has_topology(data):
        parts += [
            "<h2>Topology: where multi-node jobs ran</h2>",
            f'<p class="note">{_e(_TOPOLOGY_NOTE)}</p>',
            _html_table(topology_table(data)),
        ]
    if has_numa(data):
        parts += [
            "<h2>NUMA alignment: kubelet admission</h2>",
            f'<p class="note">{_e(_NUMA_NOTE)}</p>',
            _html_table(numa_table(data)),
        ]
    if has_queues(data):
        parts += [
            "<h2>Queues: fairness across tenants</h2>",
            f'<p class="note">{_e(_QUEUE_NOTE)}</p>',
            _html_table(queue_table(data)),
        ]
        waits = waits_table(data)
        if waits.rows:
            parts += [
                "<h3>Which queues wait longest, and why</h3>",
                f'<p class="note">{_e(_WAITS_NOTE)}</p>',
                _html_table(waits),
            ]
    if has_real_queueing(data):
        parts += [
            "<h2>Queueing delay beside the real Philly cluster</h2>",
            f'<p class="note">{_e(_REAL_QUEUEING_NOTE)}</p>',
            _html_table(real_queueing_table(data)),
        ]
    change = change_table(data)
    if change.rows:
        parts += [
            "<h2>Change vs baseline</h2>",
            '<p class="note">Relative difference of the means from the baseline; from a zero baseline, '
            "the absolute change. Green is better, red worse.</p>",
            _html_table(change),
        ]
    if data.figures or data.figure_notes:
        parts.append("<h2>Figures</h2>")
        for fig in data.figures:
            parts.append(
                f"<figure><h3>{_e(fig.title)}</h3>"
                f'<img src="{_data_uri(fig)}" alt="{_e(fig.title)}">'
                f"<figcaption>{_e(fig.caption)}</figcaption></figure>"
            )
        if data.figure_notes:
            parts.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in data.figure_notes) + "</ul>")
    parts += data.extra_html
    parts.append("<h2>Runs</h2>")
    for config, runs in _runs_by_config(data):
        items = "".join(f"<li><code>{_e(r)}</code></li>" for r in runs)
        parts.append(
            f"<details><summary>{_e(config)} ({len(runs)} run(s))</summary><ul>{items}</ul></details>"
        )
    common = "".join(
        f"<li><code>{_e(k)}={_e(v)}</code></li>" for k, v in sorted(data.collection.common.items())
    )
    if common:
        parts.append(f"<details><summary>Settings shared by all runs</summary><ul>{common}</ul></details>")
    if data.collection.left_out:
        items = "".join(
            f"<li><code>{_e(folder)}</code>: <strong>{_e(kind)}</strong>: {_e(reason)}</li>"
            for folder, kind, reason in _left_out_lines(data.collection.left_out)
        )
        parts.append(
            '<h2>Runs left out</h2><div class="leftout"><p>Run folders under the inputs that this report '
            f"does not use:</p><ul>{items}</ul></div>"
        )
    if data.collection.notes:
        parts.append(
            "<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in data.collection.notes) + "</ul>"
        )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


__all__ = [
    "NOT_AVAILABLE",
    "ReportData",
    "Table",
    "change_table",
    "format_cell",
    "format_change",
    "has_numa",
    "has_preemption",
    "has_queues",
    "has_sharing",
    "has_topology",
    "has_window",
    "headline_table",
    "numa_table",
    "outcome_table",
    "preemption_table",
    "priority_table",
    "queue_table",
    "render_html",
    "render_markdown",
    "sharing_table",
    "significant_decimals",
    "topology_table",
    "waits_table",
]
