"""The GPU catalog covers every model the real traces and node lists name, with the right facts."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from gpureplay.cluster.catalog import alias_table, canonical_model, gpu_model, gpu_models, mig_profiles
from gpureplay.paths import resolve_data_path

BUNDLED = Path(__file__).resolve().parents[1] / "traces"


def _models_in_bundled_files() -> set[str]:
    """Every GPU model spelling in the bundled node lists and job traces (and the spot list when present)."""
    traces = BUNDLED
    names: set[str] = set()
    for node_list in (traces / "openb").glob("openb_node_list_*.csv.gz"):
        names |= set(pl.read_csv(node_list, infer_schema=False)["model"].drop_nulls())
    for pod_list in (traces / "openb").glob("openb_pod_list_*.csv.gz"):
        pods = pl.read_csv(pod_list, infer_schema=False)
        if "gpu_spec" in pods.columns:
            names |= set(pods["gpu_spec"].drop_nulls().str.split("|").explode().drop_nulls())
    pai = pl.read_csv(
        traces / "pai2020" / "pai_machine_spec.csv.gz",
        has_header=False,
        infer_schema=False,
        new_columns=["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"],
    )
    names |= set(pai["gpu_type"]) - {"CPU"}
    philly = pl.read_csv(traces / "philly" / "cluster_machine_list.csv.gz", infer_schema=False)
    names |= set(philly[" single GPU mem"].str.strip_chars())
    try:
        spot = resolve_data_path("alibaba-v2026-spot-gpu/node_info_df.csv.gz")
    except FileNotFoundError:
        pass
    else:
        names |= set(pl.read_csv(spot, infer_schema=False)["gpu_model"])
    return {n for n in names if n.strip()}


def test_catalog_covers_every_model_in_the_traces() -> None:
    names = _models_in_bundled_files()
    # The bundled files name at least these (openb, PAI, Philly).
    assert {"G2", "G3", "T4", "P100", "V100M16", "V100M32", "A10", "MISC", "V100", "12GB", "24GB"} <= names
    unknown = sorted(n for n in names if canonical_model(n) is None)
    assert unknown == []


def test_catalog_has_current_data_centre_parts() -> None:
    assert {"A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"} <= set(gpu_models())


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("V100M32", "V100-32GB"),
        ("V100M16", "V100"),
        ("v100m16", "V100"),
        ("A100-SXM4-80GB", "A100-80GB"),
        ("A800-SXM4-80GB", "A800-80GB"),
        (" H100 ", "H100-80GB"),
        ("H200", "H200-141GB"),
        ("12GB", "PHILLY-12GB"),
        ("24GB", "PHILLY-24GB"),
        ("GPU-series-2", "GPU-series-2"),
    ],
)
def test_aliases_resolve(spelling: str, canonical: str) -> None:
    assert canonical_model(spelling) == canonical
    assert gpu_model(spelling).name == canonical


def test_alias_table_maps_every_model_to_itself() -> None:
    table = alias_table()
    for name in gpu_models():
        assert table[name.casefold()] == name


# MIG User Guide table 6 (A100-40GB): profile -> (memory slices, compute slices, allowed starts).
A100_MIG = {
    "1g": (1, 1, (0, 1, 2, 3, 4, 5, 6)),
    "1g+me": (1, 1, (0, 1, 2, 3, 4, 5, 6)),
    "1g-2m": (2, 1, (0, 2, 4, 6)),
    "2g": (2, 2, (0, 2, 4)),
    "3g": (4, 3, (0, 4)),
    "4g": (4, 4, (0,)),
    "7g": (8, 7, (0,)),
}


@pytest.mark.parametrize("model", ["A100-40GB", "A100-80GB", "H100-80GB"])
def test_mig_start_tables(model: str) -> None:
    profiles = mig_profiles(model)
    assert {p.name: (p.memory_slices, p.compute_slices, p.starts) for p in profiles.values()} == A100_MIG
    # Every placement fits in the 8 memory slices.
    assert all(max(p.starts) + p.memory_slices <= 8 for p in profiles.values())


def test_models_without_mig() -> None:
    assert mig_profiles("T4") == {}
    assert mig_profiles("V100M32") == {}


@pytest.mark.parametrize(
    ("model", "mib", "nvlink"),
    [
        ("A100-40GB", 40 * 1024, 8),
        ("A100-80GB", 80 * 1024, 8),
        ("H100-80GB", 80 * 1024, 8),
        ("H200-141GB", 141 * 1024, 8),
        ("V100-32GB", 32 * 1024, 8),
        ("V100", 16 * 1024, 8),
        ("T4", 16 * 1024, 1),
        ("A10", 24 * 1024, 1),
        ("P100", 16 * 1024, 1),
        ("PHILLY-12GB", 12 * 1024, 1),
        ("PHILLY-24GB", 24 * 1024, 1),
        ("GB200-186GB", 186 * 1024, 72),
    ],
)
def test_memory_and_nvlink_figures(model: str, mib: int, nvlink: int) -> None:
    entry = gpu_model(model)
    assert (entry.memory_mib, entry.nvlink_size) == (mib, nvlink)


def test_unknown_model_message_lists_known_models() -> None:
    assert canonical_model("TPUv4") is None
    with pytest.raises(KeyError, match=r"unknown GPU model 'TPUv4'; known models: .*A100-80GB.*H200-141GB"):
        gpu_model("TPUv4")
