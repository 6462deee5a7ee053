"""Finish-time fairness (Themis): hand-computed rho of jobs and the run's figures.

The rule is gpureplay.results.finish_time_fairness (Gavel's isolated allocation: every active job gets the
same fraction ``min(1, devices / devices asked by all active jobs)`` of its request).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from gpureplay.results.finish_time_fairness import fairness_figures, finish_time_fairness, mean_demand


def admitted(rows: list[tuple[float, float, float, float]]) -> pl.DataFrame:
    """``(submit, jct, gpus, duration)`` rows as :func:`admitted_jobs` gives them."""
    submit, jct, gpus, duration = zip(*rows, strict=True)
    return pl.DataFrame({"submit_time": submit, "jct_c": jct, "gpus": gpus, "duration": duration})


def test_fifo_behind_a_whole_cluster_job_is_unfair_to_the_second() -> None:
    """Two 4-GPU jobs of 100 s on 4 GPUs, both at 0; FIFO runs A (0-100) then B (100-200).

    A saw 8 GPUs asked all its life: its share is 1/2, isolated JCT 200, rho 0.5. B saw 8 (0-100) then 4
    (100-200): mean 6, share 2/3, isolated JCT 150, rho = 200 / 150. A 0-GPU job has no share: null.
    """
    jobs = admitted([(0.0, 100.0, 4.0, 100.0), (0.0, 200.0, 4.0, 100.0), (0.0, 50.0, 0.0, 50.0)])
    rho = finish_time_fairness(jobs, 4)
    assert rho.to_list()[:2] == pytest.approx([0.5, 200.0 / 150.0])
    assert rho[2] is None
    assert fairness_figures(rho) == pytest.approx({"ftf_max": 200.0 / 150.0, "ftf_unfair_share": 0.5})


def test_a_job_alone_on_a_big_enough_cluster_is_at_one_when_it_starts_at_once() -> None:
    """Nothing else asks: its share is its whole request, so rho is its JCT over its run time (10 s floor)."""
    rho = finish_time_fairness(admitted([(5.0, 60.0, 2.0, 60.0), (100.0, 12.0, 1.0, 4.0)]), 8)
    assert rho.to_list() == pytest.approx([1.0, 12.0 / 10.0])


def test_the_mean_demand_is_exact_on_the_step_function() -> None:
    """Against a fine numerical integral on random jobs (ties and zero-length jobs included)."""
    rng = np.random.default_rng(3)
    submit = np.round(rng.uniform(0, 50, 40))
    finish = submit + np.round(rng.exponential(20, 40)) * (rng.uniform(size=40) > 0.1)
    asked = rng.integers(1, 9, 40).astype(float)
    got = mean_demand(submit, finish, asked)
    grid = np.arange(0.0, 400.0, 0.01) + 0.005
    level = ((grid[:, None] >= submit) & (grid[:, None] < finish)) @ asked
    for j in range(40):
        if finish[j] > submit[j]:
            inside = (grid >= submit[j]) & (grid < finish[j])
            assert got[j] == pytest.approx(level[inside].mean(), rel=1e-3)
        else:  # a zero-length job: the demand of the jobs active just after that instant
            active = (submit <= submit[j]) & (finish > submit[j])
            assert got[j] == asked[active].sum()


def test_no_devices_gives_nulls() -> None:
    assert finish_time_fairness(admitted([(0.0, 10.0, 1.0, 10.0)]), 0).to_list() == [None]
    assert fairness_figures(pl.Series("ftf", [None], dtype=pl.Float64)) == {
        "ftf_max": None,
        "ftf_unfair_share": None,
    }
