"""MIG geometry, maximal layouts, mig-parted configs and `gpureplay mig`, against hand-computed answers.

Every expected placement below is worked out by hand from the start-slot table of the MIG User Guide
(table 6, `nvidia-smi mig -lgipp`), written here as memory slices 0..7 of one GPU:

    profile (A100-40GB)   compute  width  allowed starts
    1g.5gb, 1g.5gb+me        1       1     0 1 2 3 4 5 6
    1g.10gb                  1       2     0 2 4 6
    2g.10gb                  2       2     0 2 4
    3g.20gb                  3       4     0 4
    4g.20gb                  4       4     0
    7g.40gb                  7       8     0
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpureplay.cli import main
from gpureplay.cluster.catalog import gpu_model
from gpureplay.errors import InputError
from gpureplay.mig.geometry import (
    Instance,
    MigError,
    MigGeometry,
    MigProfile,
    SliceState,
    fits_slots,
    mig_geometry,
    mig_models,
)
from gpureplay.mig.layouts import Layout, format_layout, maximal_layouts
from gpureplay.mig.parted import (
    check_mig_parted,
    find_placement,
    read_mig_parted,
    standard_configs,
    unplaceable_reason,
)

A100 = mig_geometry("A100-40GB")
EMPTY = SliceState()


def layout(text: str) -> Layout:
    """``"3g.20gb@0 2g.10gb@4"`` -> instances by start."""
    pairs = (word.split("@") for word in text.split())
    return tuple(sorted((Instance(p, int(s)) for p, s in pairs), key=lambda i: i.start))


# --- the catalog's geometry ------------------------------------------------------------------------

# MIG User Guide v580 tables 6-8 (names, memory and compute slices), NVIDIA/mig-parted config-default.yaml
# (the same names per device id). Shapes: memory slices, compute slices, starts.
SHAPES = {
    "1g": (1, 1, (0, 1, 2, 3, 4, 5, 6)),
    "1g+me": (1, 1, (0, 1, 2, 3, 4, 5, 6)),
    "1g-2m": (2, 1, (0, 2, 4, 6)),
    "2g": (2, 2, (0, 2, 4)),
    "3g": (4, 3, (0, 4)),
    "4g": (4, 4, (0,)),
    "7g": (8, 7, (0,)),
}
NAMES = {
    "A100-40GB": ("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "A100-80GB": ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H100-80GB": ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H100-94GB": ("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    "H200-141GB": ("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
}


@pytest.mark.parametrize("model", sorted(NAMES))
def test_catalog_profiles_per_model(model: str) -> None:
    geometry = mig_geometry(model)
    assert (geometry.memory_slices, geometry.compute_slices) == (8, 7)
    got = [(p.name, p.memory_slices, p.compute_slices, p.starts, p.width) for p in geometry.profiles]
    want = [
        (n, *SHAPES[s][:2], SHAPES[s][2], SHAPES[s][0]) for n, s in zip(NAMES[model], SHAPES, strict=True)
    ]
    assert got == want
    assert [p.name for p in geometry.profiles if p.media_extensions] == [NAMES[model][1]]


def test_catalog_models_and_memory() -> None:
    assert set(NAMES) <= set(mig_models())
    assert gpu_model("H100-94GB").memory_mib == 94 * 1024
    assert gpu_model("H100-NVL").name == "H100-94GB"
    # mig-parted config-default.yaml device-filters: A100-40GB 0x20B010DE, H200 0x233510DE / 0x233B10DE.
    assert 0x20B010DE in gpu_model("A100-40GB").pci_ids
    assert set(gpu_model("H200-141GB").pci_ids) == {0x233510DE, 0x233B10DE}


def test_base_profiles() -> None:
    assert [p.name for p in A100.base_profiles] == ["1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
    h200 = mig_geometry("H200")
    assert [p.name for p in h200.base_profiles] == ["1g.18gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"]


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("TPUv9", "unknown GPU model 'TPUv9'; models with MIG: A100-40GB"),
        ("T4", "T4 has no MIG; models with MIG: A100-40GB"),
        ("A30", "A30: its MIG profiles are not in the catalog yet"),
    ],
)
def test_geometry_of_a_model_without_it(model: str, message: str) -> None:
    with pytest.raises(MigError, match=message):
        mig_geometry(model)


# --- placement on one A100-40GB ---------------------------------------------------------------------


def test_4g_then_3g_fit() -> None:
    gpu = A100.place(EMPTY, "4g.20gb", 0)  # slices 0-3, 4 compute
    assert A100.free_starts(gpu, "3g.20gb") == (4,)  # 3g@0 overlaps; 3g@4 takes slices 4-7
    gpu = A100.place(gpu, "3g.20gb", 4)
    assert gpu == SliceState(mask=0b1111_1111, compute_used=7)
    assert all(A100.free_starts(gpu, p) == () for p in NAMES["A100-40GB"])


def test_3g_at_0_then_4g_does_not_fit() -> None:
    gpu = A100.place(EMPTY, "3g.20gb", 0)
    assert A100.free_starts(gpu, "4g.20gb") == ()  # 4g.20gb may only start at 0
    assert A100.problem(gpu, "4g.20gb", 0) == "4g.20gb@0 needs memory slices 0-3 and 0, 1, 2, 3 are in use"
    with pytest.raises(MigError, match=r"A100-40GB: 4g\.20gb@0 needs memory slices 0-3"):
        A100.place(gpu, "4g.20gb", 0)
    # The other 3g still fits at 4, and the driver-order example of the guide (-cgi 9,19,14,19) gives
    # 3g@4, 1g@0, 2g@2, 1g@1.
    assert A100.free_starts(gpu, "3g.20gb") == (4,)
    assert A100.state_of(layout("3g.20gb@4 1g.5gb@0 2g.10gb@2 1g.5gb@1")).compute_used == 7


def test_seven_1g_fit_and_an_eighth_does_not() -> None:
    gpu = EMPTY
    for start in range(7):
        gpu = A100.place(gpu, "1g.5gb", start)
    assert gpu == SliceState(mask=0b0111_1111, compute_used=7)
    # Slice 7 is free, but no 1g profile may start there.
    assert A100.free_starts(gpu, "1g.5gb") == ()
    assert "cannot start at memory slice 7" in (A100.problem(gpu, "1g.5gb", 7) or "")


def test_fragmentation_blocks_3g_with_3_compute_slices_free() -> None:
    # 2g@0, 1g@2, 1g@5: 4 compute slices used, 3 free, but 3g@0 overlaps slice 0-2 and 3g@4 slice 5.
    gpu = A100.state_of(layout("2g.10gb@0 1g.5gb@2 1g.5gb@5"))
    assert gpu.compute_used == 4
    assert A100.free_starts(gpu, "3g.20gb") == ()
    assert A100.problem(gpu, "3g.20gb", 4) == "3g.20gb@4 needs memory slices 4-7 and 5 are in use"


def test_rules_named_in_the_messages() -> None:
    assert A100.problem(EMPTY, "2g.10gb", 1) == (
        "2g.10gb cannot start at memory slice 1 on A100-40GB (allowed: 0, 2, 4)"
    )
    me = A100.place(EMPTY, "1g.5gb+me", 3)
    assert A100.fits(me, "1g.5gb", 4)
    assert A100.problem(me, "1g.5gb+me", 4) == (
        "1g.5gb+me@4 needs the media engines and another +me instance holds them (one per GPU)"
    )
    # Compute: 4g@0 and 2g@4 use 6 of 7; 1g.10gb@6 (1 compute) fits, a second 2g cannot start anywhere.
    gpu = A100.state_of(layout("4g.20gb@0 2g.10gb@4"))
    assert A100.free_starts(gpu, "1g.10gb") == (6,)
    with pytest.raises(
        MigError, match=r"'5g\.25gb' is not a MIG profile of A100-40GB; its profiles: 1g\.5gb"
    ):
        A100.fits(EMPTY, "5g.25gb", 0)


def test_release_gives_back_the_slices() -> None:
    gpu = A100.state_of(layout("1g.5gb+me@0 3g.20gb@4"))
    gpu = A100.release(gpu, "1g.5gb+me", 0)
    assert gpu == SliceState(mask=0b1111_0000, compute_used=3)
    assert A100.fits(gpu, "4g.20gb", 0)
    with pytest.raises(MigError, match=r"no 2g\.10gb@0 to release"):
        A100.release(gpu, "2g.10gb", 0)


PROFILES = {p.name: p for p in A100.profiles}


def naive_fits(used: set[int], compute: int, media: bool, profile: MigProfile, start: int) -> bool:
    """The rule with sets instead of bits: allowed start, disjoint slices, compute <= 7, one +me.

    ``used``, ``compute`` and ``media`` describe the instances already on the GPU.
    """
    return (
        start in profile.starts
        and used.isdisjoint(range(start, start + profile.width))
        and compute + profile.compute_slices <= 7
        and not (media and profile.media_extensions)
    )


def test_fits_slots_agrees_with_the_naive_rule_on_every_reachable_state() -> None:
    # Grow every valid set of instances of all 7 profiles (2,318 non-empty sets); at each, ask every
    # profile at every slot 0..7.
    start_masks = {p.name: sum(1 << s for s in p.starts) for p in A100.profiles}
    seen: set[frozenset[Instance]] = set()
    frontier: list[tuple[list[Instance], SliceState]] = [([], EMPTY)]
    while frontier:
        held, state = frontier.pop()
        used = {s for i in held for s in range(i.start, i.start + PROFILES[i.profile].width)}
        compute = sum(PROFILES[i.profile].compute_slices for i in held)
        media = any(PROFILES[i.profile].media_extensions for i in held)
        for profile in A100.profiles:
            for start in range(8):
                want = naive_fits(used, compute, media, profile, start)
                got = fits_slots(
                    state.mask,
                    state.compute_used,
                    state.media_used,
                    start,
                    profile.width,
                    profile.compute_slices,
                    profile.media_extensions,
                    start_masks[profile.name],
                    8,
                    7,
                )
                assert got == want == (A100.problem(state, profile, start) is None), (held, profile, start)
                if got:
                    grown = [*held, Instance(profile.name, start)]
                    key = frozenset(grown)
                    if key not in seen:
                        seen.add(key)
                        frontier.append((grown, A100.place(state, profile, start)))
    assert len(seen) == 2318


# --- maximal layouts -------------------------------------------------------------------------------

# Hand derivation of the A100-40GB count from the start-slot table (base profiles 1g, 2g, 3g, 4g, 7g):
#   * 7g@0 is a layout of its own: 1.
#   * Otherwise no base instance crosses the boundary between slices 0-3 and 4-7 (2g starts 0/2/4,
#     3g 0/4, 4g 0, 1g one slice), so a layout is a left half times a right half, maximal iff both are.
#   * Left half (slices 0-3): 4g@0 | 3g@0 | each pair {0,1} and {2,3} filled by one 2g or two 1g
#     (a half-filled pair takes one more 1g): 1 + 1 + 2 x 2 = 6.
#   * Right half (slices 4-7): 3g@4 | pair {4,5} as 2g@4 or 1g@4+1g@5, with 1g@6; slice 7 is then left
#     empty because only 3g@4 and 7g cover it: 1 + 2 = 3.
#   * Total: 6 x 3 + 1 = 19 (docs/systems.md, "NVIDIA MIG and mig-parted" finds 19, NVIDIA's count of A100
# combinations).
LEFT = ["4g@0", "3g@0", "2g@0 2g@2", "2g@0 1g@2 1g@3", "1g@0 1g@1 2g@2", "1g@0 1g@1 1g@2 1g@3"]
RIGHT = ["3g@4", "2g@4 1g@6", "1g@4 1g@5 1g@6"]
# With 1g.10gb (two memory slices, starts 0/2/4/6) as well, each pair can also hold one 1g.10gb and
# slices 6-7 can hold 1g.10gb@6 instead of 1g@6: left 1 + 1 + 3 x 3 = 11, right 1 + 3 x 2 = 7,
# total 11 x 7 + 1 = 78.


def named(words: str, model: str) -> str:
    sizes = dict(zip(["1g", "2g", "3g", "4g", "7g"], mig_geometry(model).base_profiles, strict=True))
    return " ".join(f"{sizes[w.split('@')[0]].name}@{w.split('@')[1]}" for w in words.split())


@pytest.mark.parametrize("model", sorted(NAMES))
def test_maximal_layout_count_matches_the_hand_derivation(model: str) -> None:
    found = maximal_layouts(mig_geometry(model))
    expected = {layout(named("7g@0", model))} | {
        layout(named(f"{left} {right}", model)) for left in LEFT for right in RIGHT
    }
    assert len(found) == len(set(found)) == 19
    assert set(found) == expected


def test_a100_layouts_in_order() -> None:
    found = [format_layout(x) for x in maximal_layouts(A100)]
    assert found[:3] == ["7g.40gb@0", "4g.20gb@0 3g.20gb@4", "4g.20gb@0 2g.10gb@4 1g.5gb@6"]
    assert found[-1] == "1g.5gb@0 1g.5gb@1 1g.5gb@2 1g.5gb@3 1g.5gb@4 1g.5gb@5 1g.5gb@6"
    assert "3g.20gb@0 2g.10gb@4 1g.5gb@6" in found
    assert "2g.10gb@0 1g.5gb@2 1g.5gb@3 3g.20gb@4" in found
    # Not maximal: 1g@6 still fits.
    assert "3g.20gb@0 2g.10gb@4" not in found
    assert found == [format_layout(x) for x in maximal_layouts(A100)]


def test_layouts_with_the_two_slice_1g_profile() -> None:
    found = maximal_layouts(A100, ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"])
    assert len(found) == 78
    assert layout("1g.10gb@0 1g.10gb@2 1g.10gb@4 1g.10gb@6") in found


def maximal_multisets(profiles: list[str]) -> set[tuple[tuple[str, int], ...]]:
    """Instance counts that fit on a GPU and take no further instance of ``profiles`` (in any placement)."""
    out = set()
    for found in maximal_layouts(A100, profiles):
        counts = Counter(i.profile for i in found)
        if all(find_placement(A100, counts + Counter({p: 1})) is None for p in profiles):
            out.add(tuple(sorted(counts.items())))
    return out


def test_maximal_multisets_match_the_reference() -> None:
    # docs/systems.md, "NVIDIA MIG and mig-parted": 12 maximal multisets of the 5 base profiles, 28 with
    # profile 15 (1g.10gb).
    base = ["1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
    multisets = maximal_multisets(base)
    assert len(multisets) == 12
    assert (("1g.5gb", 1), ("2g.10gb", 1), ("4g.20gb", 1)) in multisets
    assert (("3g.20gb", 2),) in multisets
    assert len(maximal_multisets([*base, "1g.10gb"])) == 28


# --- placing instance counts (mig-parted) ----------------------------------------------------------


def naive_placeable(counts: dict[str, int]) -> bool:
    """Try every choice of start slots: obviously right, and fast enough for a few hundred cases."""
    wanted = {PROFILES[n]: c for n, c in counts.items() if c}
    if sum(p.compute_slices * c for p, c in wanted.items()) > 7:
        return False
    if sum(c for p, c in wanted.items() if p.media_extensions) > 1:
        return False
    choices = [itertools.combinations(p.starts, c) for p, c in wanted.items()]
    for pick in itertools.product(*choices):
        slices = [
            s for p, starts in zip(wanted, pick, strict=True) for a in starts for s in range(a, a + p.width)
        ]
        if len(slices) == len(set(slices)):
            return True
    return False


def test_find_placement_agrees_with_exhaustive_search() -> None:
    profiles = list(PROFILES.values())
    ranges = [range(A100.max_count(p) + 2) for p in profiles]  # one past the maximum, too
    checked = 0
    for counts in itertools.product(*ranges):
        # Beyond 9 memory slices nothing fits; the cheap bound keeps the loop short.
        if sum(p.width * c for p, c in zip(profiles, counts, strict=True)) > 9:
            continue
        wanted = {p.name: c for p, c in zip(profiles, counts, strict=True)}
        found = find_placement(A100, wanted)
        assert (found is not None) == naive_placeable(wanted), wanted
        if found is not None:
            A100.state_of(found)  # the placement itself is valid
            assert Counter(i.profile for i in found) == Counter({p: c for p, c in wanted.items() if c})
        checked += 1
    assert checked > 200


@pytest.mark.parametrize(
    ("counts", "placement"),
    [
        ({"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}, "2g.10gb@0 1g.5gb@2 1g.5gb@3 3g.20gb@4"),
        ({"4g.20gb": 1, "3g.20gb": 1}, "4g.20gb@0 3g.20gb@4"),
        ({"1g.10gb": 4}, "1g.10gb@0 1g.10gb@2 1g.10gb@4 1g.10gb@6"),
        ({"2g.10gb": 3, "1g.5gb+me": 1}, "2g.10gb@0 2g.10gb@2 2g.10gb@4 1g.5gb+me@6"),
    ],
)
def test_find_placement_examples(counts: dict[str, int], placement: str) -> None:
    assert format_layout(find_placement(A100, counts) or ()) == placement


def test_unplaceable_for_a_geometry_with_clashing_starts() -> None:
    # No catalog geometry has this (on A100/H100/H200 every count within the slice totals and the
    # per-profile maximum can be placed, see test_find_placement_agrees_with_exhaustive_search), so a
    # made-up 4-slice GPU checks the search and the message: "a" may only start at slice 1, "b" (two
    # slices) only at 0, so they always overlap although each fits alone.
    odd = MigGeometry("ODD", 4, 4, (MigProfile("a", 1, 1, (1,), 1), MigProfile("b", 2, 2, (0,), 2)))
    assert find_placement(odd, {"a": 1}) == (Instance("a", 1),)
    assert find_placement(odd, {"b": 1}) == (Instance("b", 0),)
    assert find_placement(odd, {"a": 1, "b": 1}) is None
    assert unplaceable_reason(odd, {"a": 1, "b": 1}) == (
        "no choice of start slots fits them all (allowed starts: a at 1; b at 0)"
    )
    # Compute slices bind when a geometry has fewer of them than its memory slices can hold.
    tight = MigGeometry("TIGHT", 2, 1, (MigProfile("c", 1, 1, (0, 1), 1),))
    gpu = tight.place(EMPTY, "c", 0)
    assert tight.problem(gpu, "c", 1) == "c@1 needs 1 compute slices; 0 of 1 are free"
    assert not tight.fits(gpu, "c", 1)
    assert unplaceable_reason(tight, {"c": 2}) == "at most 1 x c fit on one TIGHT"


# --- mig-parted files ------------------------------------------------------------------------------

GOOD = """\
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-balanced:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
  custom-config:
    - devices: [0, 1, 2, 3]
      mig-enabled: false
    - devices: [4]
      mig-enabled: true
      mig-devices: {"1g.5gb": 7}
    - devices: [5]
      mig-enabled: true
      mig-devices: {"4g.20gb": 1, "3g.20gb": 1}
    - devices: [6]
      mig-enabled: true
      mig-devices: {}
"""


def write(tmp_path: Path, text: str, name: str = "mig.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_good_file_places_every_entry(tmp_path: Path) -> None:
    check = check_mig_parted(read_mig_parted(write(tmp_path, GOOD)), "A100-40GB")
    assert check.problems == [] and check.unchecked == []
    got = {p.entry.key: None if p.instances is None else format_layout(p.instances) for p in check.placements}
    assert got == {
        "mig-configs.all-disabled[0]": None,
        "mig-configs.all-balanced[0]": "2g.10gb@0 1g.5gb@2 1g.5gb@3 3g.20gb@4",
        "mig-configs.custom-config[0]": None,
        "mig-configs.custom-config[1]": " ".join(f"1g.5gb@{s}" for s in range(7)),
        "mig-configs.custom-config[2]": "4g.20gb@0 3g.20gb@4",
        "mig-configs.custom-config[3]": "",
    }


def entry(devices: str, mig_devices: str, extra: str = "") -> str:
    """A file with one config ``cfg``: ``extra`` entries, then one MIG-enabled entry."""
    head = f"version: v1\nmig-configs:\n  cfg:\n{extra}"
    return f"{head}    - devices: {devices}\n      mig-enabled: true\n      mig-devices: {mig_devices}\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            entry("all", '{"1g.5gb": 1, "1g.18gb": 2}'),
            "mig.yaml, key 'mig-configs.cfg[0]': mig-devices '1g.18gb': not a MIG profile of A100-40GB; "
            "its profiles: 1g.5gb, 1g.5gb+me, 1g.10gb",
        ),
        (
            entry("all", '{"4g.20gb": 1, "3g.20gb": 1, "1g.5gb": 1}'),
            "mig.yaml, key 'mig-configs.cfg[0]': mig-devices {4g.20gb: 1, 3g.20gb: 1, 1g.5gb: 1} cannot be "
            "placed on A100-40GB: they need 8 compute slices and A100-40GB has 7",
        ),
        (
            entry("all", '{"1g.5gb": 8}'),
            "mig-devices {1g.5gb: 8} cannot be placed on A100-40GB: at most 7 x 1g.5gb fit on one A100-40GB",
        ),
        (
            entry("all", '{"1g.5gb+me": 2}'),
            "at most 1 x 1g.5gb+me fit on one A100-40GB (one +me instance per GPU)",
        ),
        (
            entry("all", '{"1g.10gb": 4, "1g.5gb": 1}'),
            "they need 9 memory slices and A100-40GB has 8",
        ),
        (entry("all", '{"1c.3g.20gb": 1}'), "compute-instance profiles like 1c.3g.20gb"),
        (entry("[0, 0]", "{}"), "key 'mig-configs.cfg[0]': devices [0, 0] lists a GPU index twice"),
        (entry("[]", "{}"), "devices must be 'all' or a non-empty list of GPU indices (0, 1, ...); found []"),
        (entry("[-1]", "{}"), "found [-1]"),
        (entry("some", "{}"), "found 'some'"),
        (
            entry("[2]", "{}", extra="    - devices: all\n      mig-enabled: false\n"),
            "key 'mig-configs.cfg[1]': selects GPUs that entry 0 (devices all) also selects",
        ),
        (entry("all", '{"1g.5gb": -1}'), "mig-devices '1g.5gb': -1 is not a count"),
        (entry("all", "[1g.5gb]"), "mig-devices must map profile names to counts"),
        (
            "version: v1\nmig-configs:\n  cfg:\n    - devices: all\n      mig-enabled: false\n"
            "      mig-devices: {1g.5gb: 1}\n",
            "mig-devices given while mig-enabled is false",
        ),
        (
            "version: v1\nmig-configs:\n  cfg:\n    - devices: all\n      mig-enabled: true\n",
            "missing required field 'mig-devices' when 'mig-enabled' is true",
        ),
        ("version: v1\nmig-configs:\n  cfg:\n    - mig-enabled: false\n", "missing required field 'devices'"),
        ("version: v2\nmig-configs: {}\n", "key 'version': version must be v1; found 'v2'"),
        ("version: v1\nmig-config: {}\n", "unexpected top-level field(s) mig-config"),
        ("version: v1\nmig-configs:\n  cfg: []\n", "key 'mig-configs.cfg': needs a non-empty list"),
        ("- 1\n- 2\n", "must be a mapping with version and mig-configs"),
        # libyaml's words ("did not find expected ',' or ']'"; the pure-Python loader's "expected ','").
        ("version: v1\nmig-configs:\n  a: [1, 2\n  b: 3\n", "not valid YAML: line 4, column 4: "),
        (
            entry(
                "all",
                "{}",
                extra="    - device-filter: 0x20B010DE\n      devices: [9]\n      mig-enabled: false\n",
            ),
            'device-filter 0x20B010DE must be quoted, "0x20B010DE"',
        ),
        (
            "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n"
            "  a:\n    - devices: all\n      mig-enabled: false\n",
            "line 6: key 'a' appears twice",
        ),
    ],
)
def test_bad_files_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        check = check_mig_parted(read_mig_parted(path), "A100-40GB")
        if check.problems:
            raise InputError(check.problems)
    assert message in str(caught.value)
    assert str(caught.value).startswith(str(path))


FILTERED = """\
version: v1
mig-configs:
  all-balanced:
    - device-filter: ["0x233510DE", "0x233B10DE"]
      devices: all
      mig-enabled: true
      mig-devices: {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}
    - device-filter: ["0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"]
      devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
    - device-filter: "0x20B710DE"
      devices: all
      mig-enabled: true
      mig-devices: {"1g.6gb": 2, "2g.12gb": 1}
  h200-only:
    - device-filter: "0x233510de"
      devices: [0]
      mig-enabled: true
      mig-devices: {"7g.141gb": 1}
"""


def test_device_filters_pick_the_models(tmp_path: Path) -> None:
    parsed = read_mig_parted(write(tmp_path, FILTERED))
    # No --model: the filters name H200-141GB and A100-40GB; the A30 id (0x20B710DE) is not in the catalog.
    check = check_mig_parted(parsed)
    assert check.problems == []
    assert [(p.entry.key, p.model) for p in check.placements] == [
        ("mig-configs.all-balanced[0]", "H200-141GB"),
        ("mig-configs.all-balanced[1]", "A100-40GB"),
        ("mig-configs.h200-only[0]", "H200-141GB"),
    ]
    only_a100 = check_mig_parted(parsed, "A100")
    assert [p.entry.key for p in only_a100.placements] == ["mig-configs.all-balanced[1]"]
    assert only_a100.unchecked == ["h200-only"]


def test_no_model_and_no_filter_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no device-filter names a GPU model of the catalog.*pass --model"):
        check_mig_parted(read_mig_parted(write(tmp_path, GOOD)))
    with pytest.raises(InputError, match="T4 has no MIG"):
        check_mig_parted(read_mig_parted(write(tmp_path, GOOD)), "T4")


# NVIDIA/mig-parted deployments/systemd/config-default.yaml: the all-<profile> counts and all-balanced
# per device family (A100-80GB and H100-80GB share one entry; H100 NVL 94GB; H200 141GB).
CONFIG_DEFAULT = {
    "A100-40GB": ({"1g.5gb": 7, "1g.5gb+me": 1, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1,
                   "7g.40gb": 1}, {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
    "A100-80GB": ({"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1,
                   "7g.80gb": 1}, {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
    "H100-80GB": ({"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1,
                   "7g.80gb": 1}, {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
    "H100-94GB": ({"1g.12gb": 7, "1g.12gb+me": 1, "1g.24gb": 4, "2g.24gb": 3, "3g.47gb": 2, "4g.47gb": 1,
                   "7g.94gb": 1}, {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1}),
    "H200-141GB": ({"1g.18gb": 7, "1g.18gb+me": 1, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1,
                    "7g.141gb": 1}, {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}),
}  # fmt: skip


@pytest.mark.parametrize("model", sorted(CONFIG_DEFAULT))
def test_standard_configs_match_mig_parted(model: str) -> None:
    singles, balanced = CONFIG_DEFAULT[model]
    standard = standard_configs(mig_geometry(model))
    configs = {name: entries[0] for name, entries in standard.configs.items()}
    assert not configs.pop("all-disabled").mig_enabled
    assert configs.pop("all-enabled").mig_devices == ()
    assert dict(configs.pop("all-balanced").mig_devices) == balanced
    assert {name: dict(e.mig_devices) for name, e in configs.items()} == {
        "all-" + p.replace("+", "."): {p: n} for p, n in singles.items()
    }
    check = check_mig_parted(standard, model)
    assert check.problems == [] and len(check.placements) == len(standard.configs)


# --- the command line ------------------------------------------------------------------------------


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_cli_layouts(runner: CliRunner) -> None:
    result = runner.invoke(main, ["mig", "layouts", "A100"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 20
    assert lines[0] == "7g.40gb@0"
    assert "3g.20gb@0 2g.10gb@4 1g.5gb@6" in lines
    assert lines[-1] == (
        "19 maximal layouts of A100-40GB (base profiles 1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb)"
    )


def test_cli_configs_show_what_a_single_strategy_node_advertises(runner: CliRunner) -> None:
    result = runner.invoke(main, ["mig", "configs", "H100"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # H100-80GB: 81920 MiB over 8 memory slices; 3g.40gb holds 4 of them and 3 of the 7 compute slices.
    assert (
        "all-3g.40gb: 2 x 3g.40gb per GPU, 40,960 MiB and 3/7 of the SMs each (product H100-80GB-MIG-3g.40gb)"
        in lines
    )
    assert lines[0] == "all-disabled: whole GPUs (81,920 MiB)"
    assert any(line.startswith("all-balanced: not with the single strategy") for line in lines)
    # Under mixed each profile is a resource; find_placement puts the 3g at 4, so the two 1g go to 2 and 3.
    assert lines[lines.index(next(x for x in lines if x.startswith("all-balanced"))) + 1] == (
        "  mixed: nvidia.com/mig-1g.10gb x 2 (starts 2, 3), nvidia.com/mig-2g.20gb x 1 (starts 0), "
        "nvidia.com/mig-3g.40gb x 1 (starts 4)"
    )
    assert "  dynamic: MIG on, no instance; mig_strategy: dynamic makes one per pod" in lines
    bad = runner.invoke(main, ["mig", "configs", "V100"])
    assert bad.exit_code == 2 and "V100 has no MIG" in bad.output


def test_cli_check_good_file(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(main, ["mig", "check", str(write(tmp_path, GOOD)), "--model", "A100-40GB"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "all-disabled[0] A100-40GB devices all: OK MIG disabled",
        "all-balanced[0] A100-40GB devices all: OK 2g.10gb@0 1g.5gb@2 1g.5gb@3 3g.20gb@4",
        "custom-config[0] A100-40GB devices [0, 1, 2, 3]: OK MIG disabled",
        "custom-config[1] A100-40GB devices [4]: OK " + " ".join(f"1g.5gb@{s}" for s in range(7)),
        "custom-config[2] A100-40GB devices [5]: OK 4g.20gb@0 3g.20gb@4",
        "custom-config[3] A100-40GB devices [6]: OK MIG enabled, no instances",
    ]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["layouts", "TPUv9"], ["unknown GPU model 'TPUv9'", "A100-40GB, A100-80GB"]),
        (["layouts", "V100"], ["V100 has no MIG"]),
        (["check", "{missing}", "--model", "A100-40GB"], ["cannot read the file"]),
        (["check", "{bad_yaml}", "--model", "A100-40GB"], ["not valid YAML: line"]),
        (
            ["check", "{good}", "--model", "H100-80GB"],
            ["mig-devices '1g.5gb': not a MIG profile of H100-80GB"],
        ),
        (["check", "{good}", "--model", "P100"], ["P100 has no MIG"]),
        (["check", "{good}"], ["pass --model"]),
        (["check", "{unplaceable}", "--model", "A100-40GB"], ["'mig-configs.cfg[0]'", "cannot be placed"]),
        (["check", "{bad_devices}", "--model", "A100-40GB"], ["devices must be 'all' or a non-empty list"]),
        # A RecursionError traceback before.
        (["check", "{deep}", "--model", "A100-40GB"], ["deep.yaml: nested deeper than 100 levels"]),
        (["check", "{deep_block}", "--model", "A100-40GB"], ["nested deeper than 100 levels"]),
        (
            ["check", "{good}", "--model", "A100-40GB", "--max-mib", "0.0001"],
            ["more than the 0.0001 MiB cap"],
        ),
    ],
)
def test_cli_bad_input_exits_2(
    runner: CliRunner, tmp_path: Path, args: list[str], fragments: list[str]
) -> None:
    files = {
        "missing": tmp_path / "missing.yaml",
        "bad_yaml": write(tmp_path, "version: v1\nmig-configs: [\n", "bad.yaml"),
        "good": write(tmp_path, GOOD, "good.yaml"),
        "unplaceable": write(tmp_path, entry("all", '{"7g.40gb": 1, "1g.5gb": 1}'), "unplaceable.yaml"),
        "bad_devices": write(tmp_path, entry("[a]", "{}"), "devices.yaml"),
        "deep": write(tmp_path, "[" * 100_000 + "]" * 100_000, "deep.yaml"),
        "deep_block": write(tmp_path, "".join(" " * i + "a:\n" for i in range(200)), "deep_block.yaml"),
    }
    result = runner.invoke(main, ["mig", *(a.format(**files) for a in args)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("gpureplay: error:\n")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr
