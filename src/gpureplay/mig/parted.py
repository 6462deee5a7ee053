"""mig-parted style MIG configs: read them, check them against a model's geometry, build the standard ones.

The format is NVIDIA mig-parted's ``version: v1`` spec::

    version: v1
    mig-configs:
      all-balanced:
        - device-filter: ["0x20B010DE"]     # optional: PCI device ids the entry applies to
          devices: all                      # or a list of GPU indices, e.g. [0, 1]
          mig-enabled: true
          mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}

A config is a list of device entries; each entry gives the MIG mode and the
instance counts of the GPUs it selects. mig-parted creates the instances and
lets the driver choose their slots, so counts are valid iff some choice of
start slots fits them all; :func:`find_placement` searches for one.

Examples
--------
>>> from gpureplay.mig.geometry import mig_geometry
>>> from gpureplay.mig.layouts import format_layout
>>> a100 = mig_geometry("A100-40GB")
>>> format_layout(find_placement(a100, {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}) or ())
'2g.10gb@0 1g.5gb@2 1g.5gb@3 3g.20gb@4'
>>> find_placement(a100, {"4g.20gb": 1, "3g.20gb": 1, "1g.5gb": 1}) is None
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from gpureplay.cluster.catalog import gpu_models
from gpureplay.errors import InputError, Problem
from gpureplay.mig.geometry import Instance, MigError, MigGeometry, SliceState, mig_geometry, mig_models
from gpureplay.yaml_input import YAML_LOADER, load_documents, read_yaml_files

__all__ = [
    "DeviceEntry",
    "EntryPlacement",
    "MigPartedCheck",
    "MigPartedFile",
    "check_entry",
    "check_mig_parted",
    "find_placement",
    "parse_mig_parted",
    "read_mig_parted",
    "standard_configs",
    "unplaceable_reason",
]

_TOP_KEYS = ("version", "mig-configs")
_ENTRY_KEYS = ("device-filter", "devices", "mig-enabled", "mig-devices")


@dataclass(frozen=True)
class DeviceEntry:
    """One device entry of a mig-parted config.

    Parameters
    ----------
    config
        Name of the config it belongs to (``all-balanced``).
    index
        0-based position in the config's list.
    devices
        GPU indices it selects, or ``None`` for ``devices: all``.
    mig_enabled
        ``mig-enabled``.
    mig_devices
        ``(profile, count)`` pairs in file order (``mig-devices``).
    device_filter
        PCI device ids it applies to; empty means every GPU.
    """

    config: str
    index: int
    devices: tuple[int, ...] | None
    mig_enabled: bool
    mig_devices: tuple[tuple[str, int], ...] = ()
    device_filter: tuple[int, ...] = ()

    @property
    def key(self) -> str:
        """Where the entry is in the file, e.g. ``mig-configs.all-balanced[0]``."""
        return f"mig-configs.{self.config}[{self.index}]"

    def devices_text(self) -> str:
        """``all`` or the index list as written, e.g. ``[0, 1]``."""
        return "all" if self.devices is None else "[" + ", ".join(map(str, self.devices)) + "]"

    def applies_to(self, pci_ids: Sequence[int]) -> bool:
        """Whether the device-filter selects a GPU with one of ``pci_ids`` (no filter: every GPU).

        Notes
        -----
        mig-parted ``api/spec/v1/helpers.go`` ``MatchesDeviceFilter``.
        """
        return not self.device_filter or any(i in self.device_filter for i in pci_ids)


@dataclass(frozen=True)
class MigPartedFile:
    """A parsed mig-parted config file: config name -> its device entries, in file order."""

    source: str
    configs: dict[str, tuple[DeviceEntry, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class EntryPlacement:
    """A device entry that is valid on ``model``, with the placement found for it.

    ``instances`` is ``None`` when the entry disables MIG and ``()`` when it
    enables MIG with no instances.
    """

    entry: DeviceEntry
    model: str
    instances: tuple[Instance, ...] | None


def _hex_id(value: object) -> int | None:
    # mig-parted types.NewDeviceIDFromString parses "0x20B010DE"-style strings; YAML would read an
    # unquoted 0x20B010DE as an int, which mig-parted's JSON round trip rejects, so only strings pass.
    if not isinstance(value, str):
        return None
    try:
        return int(value, 16)
    except ValueError:
        return None


def _entry(config: str, index: int, raw: object, problems: list[Problem], source: str) -> DeviceEntry | None:
    key = f"mig-configs.{config}[{index}]"

    def bad(message: str) -> None:
        problems.append(Problem(message, source, key=key))

    if not isinstance(raw, dict):
        bad(f"a device entry must be a mapping with {', '.join(_ENTRY_KEYS)}")
        return None
    unknown = [str(k) for k in raw if k not in _ENTRY_KEYS]
    if unknown:
        bad(f"unexpected field(s) {', '.join(unknown)}; a device entry has {', '.join(_ENTRY_KEYS)}")
    for required in ("devices", "mig-enabled"):
        if required not in raw:
            bad(f"missing required field {required!r}")
    ok = not unknown and "devices" in raw and "mig-enabled" in raw

    devices: tuple[int, ...] | None = None
    given = raw.get("devices")
    if given == "all":
        devices = None
    elif isinstance(given, list) and given and all(type(d) is int and d >= 0 for d in given):
        devices = tuple(given)
        if len(set(devices)) != len(devices):
            bad(f"devices {given} lists a GPU index twice")
            ok = False
    elif "devices" in raw:
        bad(f"devices must be 'all' or a non-empty list of GPU indices (0, 1, ...); found {given!r}")
        ok = False

    enabled = raw.get("mig-enabled")
    if "mig-enabled" in raw and not isinstance(enabled, bool):
        bad(f"mig-enabled must be true or false; found {enabled!r}")
        ok = False

    counts: list[tuple[str, int]] = []
    mig_devices = raw.get("mig-devices")
    if mig_devices is None and enabled is True:
        bad("missing required field 'mig-devices' when 'mig-enabled' is true (write {} for none)")
        ok = False
    elif mig_devices is not None and not isinstance(mig_devices, dict):
        bad(f"mig-devices must map profile names to counts; found {mig_devices!r}")
        ok = False
    elif isinstance(mig_devices, dict):
        for profile, count in mig_devices.items():
            if not isinstance(profile, str) or type(count) is not int or count < 0:
                bad(f"mig-devices {profile!r}: {count!r} is not a count (an integer >= 0)")
                ok = False
            else:
                counts.append((profile, count))
        if enabled is False and mig_devices:
            bad("mig-devices given while mig-enabled is false")
            ok = False

    filters: list[int] = []
    raw_filter = raw.get("device-filter")
    if raw_filter is not None:
        items = raw_filter if isinstance(raw_filter, list) else [raw_filter]
        for item in items:
            parsed = _hex_id(item)
            if isinstance(item, int) and not isinstance(item, bool):
                bad(f'device-filter 0x{item:08X} must be quoted, "0x{item:08X}" (YAML reads it as a number)')
                ok = False
            elif parsed is None:
                bad(f'device-filter {item!r} is not a quoted PCI device id such as "0x20B010DE"')
                ok = False
            else:
                filters.append(parsed)

    if not ok:
        return None
    return DeviceEntry(config, index, devices, bool(enabled), tuple(counts), tuple(filters))


def _overlaps(a: DeviceEntry, b: DeviceEntry) -> bool:
    filters = not a.device_filter or not b.device_filter or bool(set(a.device_filter) & set(b.device_filter))
    devices = a.devices is None or b.devices is None or bool(set(a.devices) & set(b.devices))
    return filters and devices


def parse_mig_parted(data: object, source: str) -> MigPartedFile:
    """Check the structure of a loaded mig-parted document and return its configs.

    Parameters
    ----------
    data
        The YAML document as Python objects (``yaml.safe_load``).
    source
        The file name, used in error messages.

    Raises
    ------
    InputError
        Listing every structural problem, each naming the file and the entry
        (``mig-configs.<config>[<index>]``).

    Notes
    -----
    The rules are mig-parted's ``api/spec/v1/spec.go``: ``version`` must be
    ``v1``; no other top-level field than ``mig-configs``, which needs at least
    one config, each with at least one entry; an entry needs ``devices``
    (``all`` or GPU indices) and ``mig-enabled``; ``mig-devices`` is required
    when MIG is enabled and must be empty when it is not. Two further checks
    mig-parted does not make: an empty or repeated index list, and two entries
    of a config that can select the same GPU (mig-parted's
    ``WalkSelectedMigConfigForEachGPU`` would configure that GPU twice, the
    later entry winning).
    """
    problems: list[Problem] = []
    if not isinstance(data, dict):
        raise InputError.single("a mig-parted config must be a mapping with version and mig-configs", source)
    unknown = [str(k) for k in data if k not in _TOP_KEYS]
    if unknown:
        problems.append(Problem(f"unexpected top-level field(s) {', '.join(unknown)}", source))
    if data.get("version") != "v1":
        problems.append(Problem(f"version must be v1; found {data.get('version')!r}", source, key="version"))
    raw_configs = data.get("mig-configs")
    if not isinstance(raw_configs, dict) or not raw_configs:
        problems.append(Problem("needs at least one named config", source, key="mig-configs"))
        raise InputError(problems)
    configs: dict[str, tuple[DeviceEntry, ...]] = {}
    for name, raw_entries in raw_configs.items():
        if not isinstance(raw_entries, list) or not raw_entries:
            key = f"mig-configs.{name}"
            problems.append(Problem("needs a non-empty list of device entries", source, key=key))
            continue
        entries = [_entry(str(name), i, raw, problems, source) for i, raw in enumerate(raw_entries)]
        kept = tuple(e for e in entries if e is not None)
        for later, b in enumerate(kept):
            for a in kept[:later]:
                if _overlaps(a, b):
                    problems.append(
                        Problem(
                            f"selects GPUs that entry {a.index} (devices {a.devices_text()}) also selects",
                            source,
                            key=b.key,
                        )
                    )
        configs[str(name)] = kept
    if problems:
        raise InputError(problems)
    return MigPartedFile(source, configs)


def _duplicate_key(node: Any) -> tuple[str, int] | None:
    # PyYAML keeps the last of two equal keys silently; a repeated config name would hide a config.
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    return str(key.value), int(key.start_mark.line) + 1
                seen.add(key.value)
            found = _duplicate_key(value)
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            found = _duplicate_key(item)
            if found:
                return found
    return None


def read_mig_parted(path: str | Path) -> MigPartedFile:
    """Read and structurally check a mig-parted config file (see :func:`parse_mig_parted`).

    Raises
    ------
    InputError
        When the file cannot be read, is not valid YAML (the message gives the
        line), is larger than the size cap or nested too deeply
        (:mod:`gpureplay.yaml_input`), repeats a key, or breaks the spec.
    """
    source = str(path)
    ((_, text),) = read_yaml_files([Path(path)], source)
    documents = load_documents(text, source)  # refuses YAML too large, too deep or aliased too far
    if len(documents) > 1:
        raise InputError.single(
            f"not valid YAML for a mig-parted config: one document expected, found {len(documents)}", source
        )
    data = documents[0] if documents else None
    duplicate = _duplicate_key(yaml.compose(text, Loader=YAML_LOADER))
    if duplicate is not None:
        raise InputError.single(f"line {duplicate[1]}: key {duplicate[0]!r} appears twice", source)
    return parse_mig_parted(data, source)


def find_placement(geometry: MigGeometry, counts: Mapping[str, int]) -> tuple[Instance, ...] | None:
    """A choice of start slots that fits ``counts`` instances on one empty GPU, or ``None`` if none does.

    Parameters
    ----------
    geometry
        The GPU model's geometry.
    counts
        Profile name -> number of instances (mig-parted ``mig-devices``).

    Returns
    -------
    tuple of Instance or None
        The instances by start slot. Profiles are placed widest first, each at
        its lowest start that still lets the rest fit (backtracking over every
        choice), so the answer is deterministic and ``None`` means no placement
        exists.

    Raises
    ------
    MigError
        When a profile is not one of the model's.

    Notes
    -----
    mig-parted (``pkg/mig/config/config.go``) creates the instances with the
    driver's slot choice and retries other creation orders until one works, so
    a config is valid iff some placement exists (docs/systems.md, "NVIDIA MIG and mig-parted").
    """
    wanted = [geometry.profile(name) for name, count in counts.items() for _ in range(count)]
    # Cheap necessary conditions first: they also bound the search depth for absurd counts.
    if sum(p.width for p in wanted) > geometry.memory_slices:
        return None
    if sum(p.compute_slices for p in wanted) > geometry.compute_slices:
        return None
    wanted.sort(key=lambda p: (-p.width, -p.compute_slices, p.name))

    def search(i: int, state: SliceState, previous_start: int) -> tuple[Instance, ...] | None:
        if i == len(wanted):
            return ()
        profile = wanted[i]
        # Instances of one profile are interchangeable: taking their starts in increasing order
        # visits each set of slots once.
        lowest = previous_start + 1 if i > 0 and wanted[i - 1] is profile else 0
        for start in profile.starts:
            if start >= lowest and geometry.fits(state, profile, start):
                rest = search(i + 1, geometry.place(state, profile, start), start)
                if rest is not None:
                    return (Instance(profile.name, start), *rest)
        return None

    found = search(0, SliceState(), -1)
    return None if found is None else tuple(sorted(found, key=lambda x: (x.start, x.profile)))


def unplaceable_reason(geometry: MigGeometry, counts: Mapping[str, int]) -> str:
    """Why ``counts`` cannot be placed on one GPU of ``geometry``, in words (for error messages)."""
    for name, count in counts.items():
        most = geometry.max_count(name)
        if count > most:
            extra = " (one +me instance per GPU)" if geometry.profile(name).media_extensions else ""
            return f"at most {most} x {name} fit on one {geometry.model}{extra}"
    compute = sum(geometry.profile(n).compute_slices * c for n, c in counts.items())
    if compute > geometry.compute_slices:
        return f"they need {compute} compute slices and {geometry.model} has {geometry.compute_slices}"
    memory = sum(geometry.profile(n).width * c for n, c in counts.items())
    if memory > geometry.memory_slices:
        return f"they need {memory} memory slices and {geometry.model} has {geometry.memory_slices}"
    starts = "; ".join(
        f"{n} at {', '.join(map(str, geometry.profile(n).starts))}" for n, c in counts.items() if c
    )
    return f"no choice of start slots fits them all (allowed starts: {starts})"


def _counts_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name}: {count}" for name, count in counts.items())


def _unknown_profile(name: str, geometry: MigGeometry) -> str:
    known = ", ".join(p.name for p in geometry.profiles)
    hint = ""
    if re.fullmatch(r"\d+c\.\d+g\.\d+gb(\+\w+)?", name):
        hint = " (compute-instance profiles like 1c.3g.20gb, which split a GPU instance, are not modelled)"
    return f"mig-devices {name!r}: not a MIG profile of {geometry.model}{hint}; its profiles: {known}"


def check_entry(entry: DeviceEntry, geometry: MigGeometry, source: str) -> EntryPlacement:
    """Check one device entry against ``geometry`` and find its placement.

    Raises
    ------
    InputError
        Naming the file, config, entry index and profile: an unknown profile,
        or counts no placement fits.
    """
    if not entry.mig_enabled:
        return EntryPlacement(entry, geometry.model, None)
    counts = {name: count for name, count in entry.mig_devices if count > 0}
    problems = [
        Problem(_unknown_profile(name, geometry), source, key=entry.key)
        for name in counts
        if name not in {p.name for p in geometry.profiles}
    ]
    if problems:
        raise InputError(problems)
    placement = find_placement(geometry, counts)
    if placement is None:
        message = (
            f"mig-devices {{{_counts_text(counts)}}} cannot be placed on {geometry.model}: "
            f"{unplaceable_reason(geometry, counts)}"
        )
        raise InputError.single(message, source, key=entry.key)
    return EntryPlacement(entry, geometry.model, placement)


@dataclass(frozen=True)
class MigPartedCheck:
    """The outcome of :func:`check_mig_parted`.

    Parameters
    ----------
    placements
        Valid entries with their placement, per model checked, in file order.
    problems
        Every problem found: unknown profiles, counts that cannot be placed.
    unchecked
        Configs none of whose entries applies to a checked model (device-filter).
    """

    placements: list[EntryPlacement]
    problems: list[Problem]
    unchecked: list[str]


def check_mig_parted(parsed: MigPartedFile, model: str | None = None) -> MigPartedCheck:
    """Check every config of ``parsed`` against one model, or against the models its device-filters name.

    Parameters
    ----------
    parsed
        From :func:`read_mig_parted`.
    model
        A catalog model (or alias) to check every entry against; entries whose
        device-filter excludes it are skipped. ``None``: check each entry
        against every catalog model that some device-filter of the file names
        (by PCI id), honouring each entry's own filter.

    Returns
    -------
    MigPartedCheck
        Placements of the valid entries, the problems, and the configs not checked.

    Raises
    ------
    InputError
        When ``model`` is not a MIG model of the catalog, or when ``model`` is
        ``None`` and no device-filter names a catalog model.
    """
    if model is not None:
        try:
            geometries = [mig_geometry(model)]
        except MigError as err:
            raise InputError.single(str(err), parsed.source) from None
    else:
        named = {i for entries in parsed.configs.values() for e in entries for i in e.device_filter}
        catalog = gpu_models()
        geometries = [mig_geometry(m) for m in mig_models() if named & set(catalog[m].pci_ids)]
        if not geometries:
            raise InputError.single(
                "no device-filter names a GPU model of the catalog, so there is no model to check "
                f"against: pass --model (models with MIG: {', '.join(mig_models())})",
                parsed.source,
            )
    result = MigPartedCheck([], [], [])
    catalog = gpu_models()
    for name, entries in parsed.configs.items():
        applied = False
        for entry in entries:
            for geometry in geometries:
                if not entry.applies_to(catalog[geometry.model].pci_ids):
                    continue
                applied = True
                try:
                    result.placements.append(check_entry(entry, geometry, parsed.source))
                except InputError as err:
                    result.problems.extend(err.problems)
        if not applied:
            result.unchecked.append(name)
    return result


def standard_configs(geometry: MigGeometry) -> MigPartedFile:
    """The configs mig-parted generates for a model: all-disabled, all-enabled, all-<profile>, all-balanced.

    Examples
    --------
    >>> from gpureplay.mig.geometry import mig_geometry
    >>> configs = standard_configs(mig_geometry("A100-40GB")).configs
    >>> [(c, dict(e[0].mig_devices)) for c, e in configs.items() if c.startswith("all-1g")]
    [('all-1g.5gb', {'1g.5gb': 7}), ('all-1g.5gb.me', {'1g.5gb+me': 1}), ('all-1g.10gb', {'1g.10gb': 4})]
    >>> dict(configs["all-balanced"][0].mig_devices)
    {'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}

    Notes
    -----
    mig-parted ``pkg/mig/builder/builder.go``: ``all-disabled``, ``all-enabled``
    (MIG on, no instances), and per profile ``all-<profile>`` (``+`` written
    ``.``) with the profile's max instance count; ``pkg/mig/builder/balanced.go``:
    ``all-balanced`` = 2 x 1g + 1 x 2g + 1 x 3g of the base profiles on a
    7-compute-slice GPU (2 x 1g + 1 x 2g on a 4-slice one). The counts agree
    with ``deployments/systemd/config-default.yaml`` for every model of the
    catalog (checked in tests/test_mig.py).
    """
    source = f"mig-parted standard configs for {geometry.model}"

    def one(name: str, enabled: bool, counts: tuple[tuple[str, int], ...]) -> tuple[DeviceEntry, ...]:
        return (DeviceEntry(name, 0, None, enabled, counts),)

    configs = {
        "all-disabled": one("all-disabled", False, ()),
        "all-enabled": one("all-enabled", True, ()),
    }
    for profile in geometry.profiles:
        name = "all-" + profile.name.replace("+", ".")
        configs[name] = one(name, True, ((profile.name, geometry.max_count(profile)),))
    formula = {7: {1: 2, 2: 1, 3: 1}, 4: {1: 2, 2: 1}}.get(geometry.compute_slices)
    by_compute = {p.compute_slices: p.name for p in geometry.base_profiles}
    if formula is not None and all(g in by_compute for g in formula):
        balanced = tuple((by_compute[g], n) for g, n in formula.items())
        configs["all-balanced"] = one("all-balanced", True, balanced)
    return MigPartedFile(source, configs)
