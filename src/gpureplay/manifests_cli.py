"""The ``gpureplay manifests`` commands: ``check PATH``.

Thin like ``cli.py``: the command reads the manifests with
:mod:`gpureplay.queues.manifests` and prints what it understood. Bad input prints
``gpureplay: error:`` and the message to stderr and exits with status 2.
"""

from __future__ import annotations

import click

from gpureplay.errors import InputError
from gpureplay.errors import exit_with as _fail
from gpureplay.yaml_input import DEFAULT_MAX_MIB, yaml_size_limit


@click.group("manifests")
def manifests() -> None:
    """Kubernetes queue manifests (Kueue, Volcano, KAI, PriorityClass) as the replay reads them."""


@manifests.command("check")
@click.argument("path", type=str)
@click.option(
    "--max-mib",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_MAX_MIB,
    show_default=True,
    help="Most YAML to read, MiB (all files of a folder together).",
)
def manifests_check(path: str, max_mib: float) -> None:
    """Read PATH (a YAML file or a folder of them) and print the queue tree it describes.

    Prints each queue under its parent (Kueue cohort, Volcano parent, KAI parentQueue)
    with its quotas, weights and limits, then the fields read past because they do not
    change scheduling. Exits with status 2, naming file, document and field, on an
    unknown kind, a field that changes scheduling but is not modelled, a dangling
    reference, a cycle, a bad amount, bad YAML, YAML nested too deeply or larger than
    --max-mib, a file with no document, or queues of two models mixed.
    """
    from gpureplay.queues.manifests import read_manifests
    from gpureplay.queues.tree import describe_tree

    try:
        with yaml_size_limit(max_mib, "--max-mib"):
            found = read_manifests(path)
    except InputError as err:
        _fail(err)
    for line in describe_tree(found.tree):
        click.echo(line)
    if found.ignored:
        click.echo(f"ignored ({len(found.ignored)} fields that do not change scheduling):")
        for item in found.ignored:
            click.echo(f"  {item}")
