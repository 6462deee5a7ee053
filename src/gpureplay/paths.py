"""Where bundled data lives and how a trace or node-list path is resolved."""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable naming extra folders (``:``-separated) to search for trace files.
DATA_PATH_ENV = "GPUREPLAY_DATA"

_REPO_ROOT = Path(__file__).resolve().parents[2]

#: Where an installed gpureplay keeps the bundled traces: the repository's ``traces/`` folder ships in
#: the wheel as the package ``gpureplay.bundled_traces`` (pyproject.toml), beside this module.
_PACKAGED_TRACES = Path(__file__).resolve().parent / "bundled_traces"


def _checkout() -> Path | None:
    """The repository this module runs from (an editable install or the source tree), or None."""
    return (
        _REPO_ROOT if (_REPO_ROOT / "pyproject.toml").is_file() and (_REPO_ROOT / "traces").is_dir() else None
    )


def bundled_traces_dir() -> Path:
    """The bundled traces and ``manifest.toml``: the checkout's ``traces/``, or an installed copy."""
    checkout = _checkout()
    return checkout / "traces" if checkout is not None else _PACKAGED_TRACES


def data_roots() -> list[Path]:
    """Folders searched, in order, for a relative trace or node-list path.

    1. each folder in ``$GPUREPLAY_DATA``;
    2. the bundled traces (:func:`bundled_traces_dir`);
    3. ``../shared/traces`` beside the checkout (the team's full copy), when running from one.
    """
    roots = [Path(p) for p in os.environ.get(DATA_PATH_ENV, "").split(os.pathsep) if p]
    roots.append(bundled_traces_dir())
    checkout = _checkout()
    if checkout is not None:
        roots.append(checkout.parent / "shared" / "traces")
    return roots


def resolve_data_path(path: str | Path, what: str = "file") -> Path:
    """Return an existing file for ``path``: absolute, relative to the cwd, or under a data root.

    Parameters
    ----------
    path
        The path as given.
    what
        What the file is, for the message (``"trace file"``, ``"node list"``, ``"topology file"``).

    Raises
    ------
    FileNotFoundError
        Listing every place that was searched (the current directory first),
        or saying that the path names a folder.
    """
    candidate = Path(path).expanduser()
    if candidate.is_absolute() or candidate.exists():
        if candidate.is_dir():
            raise FileNotFoundError(f"{candidate} is a folder; a trace or node list is a file")
        if candidate.exists():
            return candidate
        raise FileNotFoundError(f"{what} not found: {candidate}")
    tried = [f"{Path.cwd() / candidate} (the current directory)"]
    for root in data_roots():
        full = root / candidate
        if full.is_file():
            return full
        tried.append(str(full) + (" (a folder)" if full.is_dir() else ""))
    raise FileNotFoundError(
        f"{what} {str(path)!r} not found; looked in: {', '.join(tried)}. "
        f"Set ${DATA_PATH_ENV} or run `gpureplay trace fetch NAME` for traces too large to bundle."
    )
