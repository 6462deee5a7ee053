"""The ``gpureplay mig`` commands: ``layouts MODEL``, ``check LAYOUT_FILE`` and ``configs MODEL``.

Thin like ``cli.py``: each command parses its arguments and calls
:mod:`gpureplay.mig`. Bad input prints ``gpureplay: error:`` and the message to
stderr and exits with status 2, as ``cli.py`` does.
"""

from __future__ import annotations

from pathlib import Path

import click

from gpureplay.errors import InputError
from gpureplay.errors import exit_with as _fail
from gpureplay.yaml_input import DEFAULT_MAX_MIB, yaml_size_limit


@click.group("mig")
def mig() -> None:
    """MIG geometry from the GPU catalog: maximal layouts and mig-parted config checks."""


@mig.command("layouts")
@click.argument("model")
def mig_layouts(model: str) -> None:
    """Print every maximal layout of MODEL's base MIG profiles, one per line, then their count.

    A layout is a set of instances written profile@start (start = first memory
    slice); maximal means no further base-profile instance fits. MODEL is a
    catalog name or alias, e.g. A100-40GB, H100-80GB, H200.
    """
    from gpureplay.mig.geometry import MigError, mig_geometry
    from gpureplay.mig.layouts import format_layout, maximal_layouts

    try:
        geometry = mig_geometry(model)
    except MigError as err:
        _fail(err)
    found = maximal_layouts(geometry)
    for layout in found:
        click.echo(format_layout(layout))
    base = ", ".join(p.name for p in geometry.base_profiles)
    click.echo(f"{len(found)} maximal layouts of {geometry.model} (base profiles {base})")


@mig.command("check")
@click.argument("layout_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--model",
    default=None,
    help="GPU model to check every config against (catalog name or alias). "
    "Default: the models the file's device-filters name by PCI id.",
)
@click.option(
    "--max-mib",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_MAX_MIB,
    show_default=True,
    help="Largest file to read, MiB.",
)
def mig_check(layout_file: Path, model: str | None, max_mib: float) -> None:
    """Validate a mig-parted config file against the MIG geometry of the catalog.

    Prints each device entry that is valid with the placement found for it
    (config[entry] model devices: profile@start ...). Exits with status 2 and
    names the config, entry and profile for an unknown profile, counts that no
    placement fits, a bad device list, or a file that is not a mig-parted config.
    """
    from gpureplay.mig.layouts import format_layout
    from gpureplay.mig.parted import check_mig_parted, read_mig_parted

    try:
        with yaml_size_limit(max_mib, "--max-mib"):
            parsed = read_mig_parted(layout_file)
        result = check_mig_parted(parsed, model)
    except InputError as err:
        _fail(err)
    for found in result.placements:
        entry = found.entry
        if found.instances is None:
            what = "MIG disabled"
        else:
            what = format_layout(found.instances) or "MIG enabled, no instances"
        click.echo(f"{entry.config}[{entry.index}] {found.model} devices {entry.devices_text()}: OK {what}")
    for name in result.unchecked:
        click.echo(f"{name}: not checked, no entry's device-filter selects the model(s) checked")
    if result.problems:
        _fail(InputError(result.problems, shown=len(result.problems)))


@mig.command("configs")
@click.argument("model")
def mig_configs(model: str) -> None:
    """Print MODEL's mig-parted configs (what cluster.mig_layout names) and what each node advertises.

    Under the device plugin's single strategy (scheduler.mig_strategy: single) a
    config of one profile makes every GPU its instances, each one nvidia.com/gpu
    with the instance's memory and share of the SMs; the others are refused
    there, with the reason printed. Under the mixed strategy each profile is
    its own resource (the instances' start slots are printed); under dynamic
    (HAMi) all-enabled GPUs get an instance made per pod.
    """
    from gpureplay.cluster.catalog import gpu_model
    from gpureplay.mig.devices import single_strategy_devices
    from gpureplay.mig.geometry import MigError, mig_geometry
    from gpureplay.mig.parted import find_placement, standard_configs

    try:
        geometry = mig_geometry(model)
    except MigError as err:
        _fail(err)
    memory = gpu_model(geometry.model).memory_mib
    for name, entries in standard_configs(geometry).configs.items():
        try:
            devices = single_strategy_devices(geometry.model, name, memory)
        except MigError as err:
            click.echo(f"{name}: not with the single strategy: {err}")
        else:
            if devices is None:
                click.echo(f"{name}: whole GPUs ({memory:,} MiB)")
                continue
            click.echo(
                f"{name}: {devices.per_gpu} x {devices.profile} per GPU, {devices.memory_mib:,} MiB and "
                f"{devices.compute_slices}/{devices.gpu_compute_slices} of the SMs each "
                f"(product {devices.product})"
            )
        counts = {p: c for p, c in entries[0].mig_devices if c > 0}
        if not counts:
            click.echo("  dynamic: MIG on, no instance; mig_strategy: dynamic makes one per pod")
            continue
        placed = find_placement(geometry, counts) or ()
        resources = ", ".join(
            f"nvidia.com/mig-{p} x {c} (starts {', '.join(str(i.start) for i in placed if i.profile == p)})"
            for p, c in counts.items()
        )
        click.echo(f"  mixed: {resources}")
