"""YAML inputs (queue manifests, mig-parted configs) read so that no file can exhaust the machine.

A YAML file is read by the readers of :mod:`gpureplay.queues.manifests` and
:mod:`gpureplay.mig.parted` through :func:`read_yaml_files` and
:func:`load_documents`, which refuse, each naming the file:

- a file (or a folder of them, counted together) larger than the size cap
  (:func:`yaml_size_limit`; a run's config key ``max_manifest_mib``, the
  commands' ``--max-mib``): reading 50 MiB of YAML takes minutes and gigabytes,
  and a queue setup is kilobytes;
- nesting deeper than :data:`MAX_DEPTH` (the readers walk documents
  recursively; a file nested 100,000 levels deep was a ``RecursionError``);
- a document that contains itself through an alias (``&a [*a]``), or whose
  aliases multiply it past :data:`MAX_EXPANDED_NODES` nodes (the "billion
  laughs" file, which go-yaml, the YAML library of Kubernetes, refuses as
  "excessive aliasing").

Documents are parsed by libyaml (``yaml.CSafeLoader``) when PyYAML has it,
which is ten times as fast as the pure-Python loader and stops at 1,000 levels
of nesting itself; the pure-Python loader stands in otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from gpureplay.errors import InputError

__all__ = [
    "DEFAULT_MAX_MIB",
    "MAX_DEPTH",
    "MAX_EXPANDED_NODES",
    "YAML_LOADER",
    "load_documents",
    "read_yaml_files",
    "yaml_size_limit",
]

#: Default cap on the YAML read at once, MiB: thousands of ClusterQueues or Queues, read in seconds
#: (libyaml reads about 1 MiB of manifests a second; the pure-Python loader ten times slower).
DEFAULT_MAX_MIB = 8.0

#: Deepest nesting of mappings and lists accepted: a Kubernetes manifest is under ten levels deep, and
#: the readers recurse once or twice per level, well inside Python's recursion limit of 1,000.
MAX_DEPTH = 100

#: Most nodes a document may hold once its aliases are expanded (when they expand it at all).
MAX_EXPANDED_NODES = 1_000_000

#: libyaml's safe loader when PyYAML was built with it, else the pure-Python one.
YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: The cap in MiB, and what raises it (for the message).
_LIMIT: ContextVar[tuple[float, str]] = ContextVar(
    "gpureplay_yaml_limit", default=(DEFAULT_MAX_MIB, "the config key max_manifest_mib")
)


@contextmanager
def yaml_size_limit(mib: float, knob: str) -> Iterator[None]:
    """Cap the YAML read inside the ``with`` block at ``mib`` MiB; ``knob`` says what raises the cap.

    Parameters
    ----------
    mib
        The cap, > 0.
    knob
        Named in the message, e.g. ``"the config key max_manifest_mib"`` or ``"--max-mib"``.
    """
    token = _LIMIT.set((float(mib), knob))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def read_yaml_files(files: Sequence[Path], source: str) -> list[tuple[Path, str]]:
    """The text of each file, once their total size is known to be within the cap.

    Parameters
    ----------
    files
        The files to read.
    source
        What the message names when they are too large (the file, or the folder given).

    Raises
    ------
    InputError
        When the files hold more than the cap (before anything is read), or a file cannot be read.
    """
    mib, knob = _LIMIT.get()
    sizes = []
    for file in files:
        try:
            sizes.append(file.stat().st_size)
        except OSError as err:
            raise InputError.single(f"cannot read the file: {err}", str(file)) from None
    total = sum(sizes)
    if total > mib * 2**20:
        what = "the file holds" if len(files) == 1 else f"its {len(files)} YAML files hold"
        raise InputError.single(
            f"{what} {total / 2**20:.1f} MiB of YAML, more than the {mib:g} MiB cap (YAML reads at about "
            f"1 MiB a second into some 16 times its size of memory, and a queue setup is kilobytes); if it "
            f"is meant, raise {knob}",
            source,
        )
    texts = []
    for file in files:
        try:
            texts.append((file, file.read_text()))
        except (OSError, UnicodeDecodeError) as err:
            raise InputError.single(f"cannot read the file: {err}", str(file)) from None
    return texts


def load_documents(text: str, source: str) -> list[Any]:
    """Every document of a YAML stream (``None`` for an empty one), each checked by :func:`check_shape`.

    Raises
    ------
    InputError
        On text that is not YAML (with its line and column), or a document nested too deeply, that
        contains itself, or whose aliases expand it too far; each names ``source``.
    """
    try:
        documents = list(yaml.load_all(text, Loader=YAML_LOADER))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        reason = getattr(err, "problem", None) or str(err)
        if "maximum nesting depth" in reason:  # libyaml's own limit, 1,000 levels
            raise InputError.single(f"nested deeper than {MAX_DEPTH} levels ({where})", source) from None
        raise InputError.single(f"not valid YAML: {where}{': ' if where else ''}{reason}", source) from None
    except RecursionError:  # the pure-Python loader recurses once per level
        raise InputError.single(f"nested deeper than {MAX_DEPTH} levels", source) from None
    for index, document in enumerate(documents, start=1):
        check_shape(document, f"{source}, document {index}")
    return documents


def check_shape(data: Any, source: str) -> None:
    """Refuse a loaded document nested deeper than :data:`MAX_DEPTH`, that contains itself, or that
    aliases expand past :data:`MAX_EXPANDED_NODES` nodes; iterative, so any depth is walked safely.

    Examples
    --------
    >>> loop = []
    >>> loop.append(loop)
    >>> check_shape(loop, "a.yaml")
    Traceback (most recent call last):
    gpureplay.errors.InputError: a.yaml: an alias makes the document contain itself
    """
    done: dict[int, tuple[int, int]] = {}  # container id -> (depth, nodes once aliases are expanded)
    open_: set[int] = set()
    distinct = 0
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        item, finished = stack.pop()
        if not isinstance(item, dict | list):
            continue
        key = id(item)
        children = list(item.values()) if isinstance(item, dict) else item
        if finished:
            depth, size = 1, 1
            for child in children:
                child_depth, child_size = done.get(id(child), (0, 1))
                depth, size = max(depth, child_depth + 1), size + child_size
            done[key] = (depth, size)
            open_.discard(key)
            if depth > MAX_DEPTH:
                raise InputError.single(f"nested deeper than {MAX_DEPTH} levels", source)
            if size > MAX_EXPANDED_NODES and size > 10 * distinct:
                raise InputError.single(
                    f"aliases expand the document to {size:,} nodes from {distinct:,} (excessive aliasing, "
                    "which go-yaml, the YAML library of Kubernetes, refuses too)",
                    source,
                )
            continue
        if key in done:
            continue
        if key in open_:  # popped again before it was finished: one of its own descendants holds it
            raise InputError.single("an alias makes the document contain itself", source)
        open_.add(key)
        distinct += 1 + len(children)
        stack.append((item, True))
        stack.extend((child, False) for child in children if isinstance(child, dict | list))
