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


def test_each_transform_says_how_many_jobs_it_kept(caplog: pytest.LogCaptureFixture) -> None:
    # A window that keeps 1 job of many (a window in the wrong unit) said nothing of the window.
    with caplog.at_level("INFO", logger="gpureplay.workload.transforms"):
        apply_workload(jobs(), window_start=85.0, window_end=1e9, max_jobs=5)
    assert "workload: window [85, 1e+09) s kept 1 of 10 jobs" in caplog.messages
    assert "workload: max_jobs 5 kept 1 of 1 jobs" in caplog.messages


def test_an_empty_window_names_its_key_and_where_the_jobs_are() -> None:
    with pytest.raises(InputError) as err:
        apply_workload(jobs(), window_start=1e9)
    assert str(err.value) == (
        "config key 'workload.window_start': the window [1e+09, -) s keeps none of the 10 jobs "
        "(submitted from 0 to 90 s)"
    )


def test_a_load_that_spreads_arrivals_beyond_float64_seconds_is_refused() -> None:
    with pytest.raises(InputError) as err:
        apply_workload(jobs(), load=1e-15)
    assert str(err.value).startswith("config key 'workload.load': 1e-15 spreads the arrivals until 9e+16 s")
