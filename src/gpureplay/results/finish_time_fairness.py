"""Finish-time fairness (Themis, Mahajan et al., NSDI 2020): each job's JCT against its JCT on a fair share.

``rho_j = T_shared / T_isolated``: ``T_shared`` is the job's JCT in the replay (censored at the run's end
as the other figures are); ``T_isolated`` is the time it would take on its share of a cluster divided
evenly among the jobs contending with it. The share is Gavel's isolated allocation
(stanford-futuredata/gavel ``scheduler/policies/finish_time_fairness.py``: the max-min fair allocation
of the cluster among the active jobs, each weighted by the devices it asks for): every active job gets
the same fraction ``x = min(1, G / D)`` of the devices it requests, with ``G`` the cluster's devices and
``D`` the devices all active jobs request. A job active from its submission to its finish sees a
changing ``D``; the replay takes its mean over that interval, ``D_j``, so

    T_isolated_j = max(duration_j, tau) / min(1, G / D_j),    rho_j = JCT_j / T_isolated_j

(``tau`` = 10 s, the bounded slowdown's floor, so that a job of a few seconds cannot decide the
maximum). ``rho <= 1``: the job fared at least as well as on its fair share; Themis minimises the
largest ``rho``, and the reference (docs/systems.md, "Research simulators") reports the maximum and the share
of jobs
with ``rho > 1``. A job is *active* from its submission until it finishes (or the run ends), pending,
running or requeued. Jobs that ask for no device have no share to compare with: their ``rho`` is null.
"""

from __future__ import annotations

import numpy as np
import polars as pl

#: Floor of a job's isolated run time, seconds (the bounded slowdown's tau).
TAU = 10.0


def mean_demand(submit: np.ndarray, finish: np.ndarray, devices: np.ndarray) -> np.ndarray:
    """Each job's mean over ``[submit, finish)`` of the devices every job active then requests.

    A job is active on ``[submit, finish)``; where ``finish == submit`` the demand of the jobs active
    just after that instant is returned (a job whose JCT is 0 has rho 0 whatever it is).

    Examples
    --------
    >>> mean_demand(np.array([0.0, 5.0]), np.array([10.0, 15.0]), np.array([2.0, 4.0]))
    array([4., 5.])
    """
    times = np.concatenate([submit, finish])
    steps = np.concatenate([devices, -devices])
    order = np.argsort(times, kind="stable")
    points, first = np.unique(times[order], return_index=True)
    level = np.cumsum(steps[order])
    # The demand after every event at a point: the running sum at the last event of that point.
    last = np.append(first[1:], len(order)) - 1
    after = level[last]
    integral = np.concatenate([[0.0], np.cumsum(after[:-1] * np.diff(points))])
    at_submit = np.searchsorted(points, submit)
    at_finish = np.searchsorted(points, finish)
    span = finish - submit
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (integral[at_finish] - integral[at_submit]) / span
    found: np.ndarray = np.where(span > 0, mean, after[at_submit])
    return found


def finish_time_fairness(admitted: pl.DataFrame, devices: int) -> pl.Series:
    """``rho`` of every row of ``admitted`` (:func:`gpureplay.results.metrics.admitted_jobs`), named ``ftf``.

    ``devices``: the cluster's ``nvidia.com/gpu`` devices. Null for jobs asking no device, and for every
    job when the cluster has none.
    """
    if admitted.height == 0 or devices <= 0:
        return pl.Series("ftf", [None] * admitted.height, dtype=pl.Float64)
    submit = admitted["submit_time"].to_numpy().astype(np.float64)
    finish = submit + admitted["jct_c"].to_numpy().astype(np.float64)
    asked = admitted["gpus"].fill_null(0.0).to_numpy().astype(np.float64)
    demand = mean_demand(submit, finish, asked)
    with np.errstate(divide="ignore", invalid="ignore"):  # jobs asking nothing: nulled below
        share = np.minimum(1.0, devices / np.maximum(demand, asked))
        isolated = np.maximum(admitted["duration"].to_numpy().astype(np.float64), TAU) / share
        rho = (finish - submit) / isolated
    return pl.Series("ftf", np.where(asked > 0, rho, np.nan)).fill_nan(None)


def fairness_figures(ftf: pl.Series) -> dict[str, float | None]:
    """``ftf_max`` and ``ftf_unfair_share`` (jobs with ``rho > 1``) of :func:`finish_time_fairness`."""
    known = ftf.drop_nulls()
    if known.len() == 0:
        return {"ftf_max": None, "ftf_unfair_share": None}
    return {"ftf_max": float(known.max()), "ftf_unfair_share": float((known > 1.0).mean())}  # type: ignore[arg-type]


__all__ = ["TAU", "fairness_figures", "finish_time_fairness", "mean_demand"]
