"""Workload transforms: window, sample, cap, load scaling, and their config checks."""

from __future__ import annotations

import re

import polars as pl
import pytest

from gpureplay.errors import InputError
from gpureplay.workload.transforms import apply_workload


def jobs(n: int = 10) -> pl.DataFrame:
    return pl.DataFrame({"job_id": list(range(n)), "submit_time": [float(10 * i) for i in range(n)]})


def test_window_rebases_at_first_kept_job() -> None:
    out = apply_workload(jobs(), window_start=25.0, window_end=60.0)
    assert out["job_id"].to_list() == [3, 4, 5]
    assert out["submit_time"].to_list() == [0.0, 10.0, 20.0]


def test_load_compresses_arrivals() -> None:
    out = apply_workload(jobs(3), load=2.0)
    assert out["submit_time"].to_list() == [0.0, 5.0, 10.0]


def test_sample_is_seeded() -> None:
    big = jobs(1000)
    a = apply_workload(big, sample_fraction=0.3, seed=1)["job_id"].to_list()
    assert a == apply_workload(big, sample_fraction=0.3, seed=1)["job_id"].to_list()
    assert a != apply_workload(big, sample_fraction=0.3, seed=2)["job_id"].to_list()
    assert 200 < len(a) < 400


def test_max_jobs_keeps_earliest() -> None:
    assert apply_workload(jobs(), max_jobs=2)["job_id"].to_list() == [0, 1]


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"sample_fraction": 0.0}, "workload.sample_fraction"),
        ({"load": -1.0}, "workload.load"),
        ({"max_jobs": 0}, "workload.max_jobs"),
        ({"window_start": 50.0, "window_end": 10.0}, "workload.window_end"),
        ({"window_start": 1e9}, "workload"),
    ],
)
def test_bad_settings_name_the_config_key(kwargs: dict[str, float], key: str) -> None:
    with pytest.raises(InputError, match=re.escape(key)):
        apply_workload(jobs(), **kwargs)  # type: ignore[arg-type]
