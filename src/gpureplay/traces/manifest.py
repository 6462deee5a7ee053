"""The manifest of known public traces (``traces/manifest.toml``).

Each entry says where a trace comes from (repository and commit, or URL), its
license and the paper to cite, which adapter reads it, and its files: the ones
bundled in this repository with their sha256, and the ones too large to bundle
with a download URL (and a sha256 where the upstream publishes one). The
``gpureplay trace list`` and ``gpureplay trace fetch`` commands read it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from gpureplay.errors import InputError, Problem
from gpureplay.paths import bundled_traces_dir

#: Values of an entry's ``format``: the adapter that reads it, or ``nodes`` (a node or
#: topology list, not jobs) or ``none`` (statistics only, nothing to replay).
FORMATS: frozenset[str] = frozenset(
    {"philly", "philly_raw", "itp", "openb", "pai2020", "helios", "generic", "nodes", "none"}
)

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_ENTRY_KEYS = {"title", "origin", "commit", "license", "citation", "format", "rows", "notes", "files"}
_REQUIRED_ENTRY_KEYS = ("title", "origin", "license", "citation", "format", "files")
_FILE_KEYS = {"path", "bundled", "sha256", "size", "url", "upstream_sha256", "note", "members"}
_MEMBER_KEYS = {"member", "path", "sha256"}


@dataclass(frozen=True)
class ArchiveMember:
    """A file to unpack from a downloaded archive.

    ``member`` is its name inside the archive (a unique suffix match such as
    ``Venus/cluster_log.csv`` for ``data/Venus/cluster_log.csv`` is accepted);
    ``path`` is where it goes, relative to ``traces/``.
    """

    member: str
    path: str
    sha256: str | None = None


@dataclass(frozen=True)
class TraceFile:
    """One file of a trace.

    ``path`` is relative to ``traces/``: where a bundled file is, or where a
    download goes. ``sha256`` is of the file exactly as stored or downloaded and
    is ``None`` when no checksum is known (it is never guessed).
    """

    path: str
    bundled: bool
    sha256: str | None = None
    size: int | None = None
    url: str | None = None
    upstream_sha256: str | None = None
    note: str | None = None
    members: tuple[ArchiveMember, ...] = ()


@dataclass(frozen=True)
class TraceEntry:
    """A known public trace."""

    name: str
    title: str
    origin: str
    license: str
    citation: str
    format: str
    files: tuple[TraceFile, ...]
    commit: str | None = None
    rows: int | None = None
    notes: str = ""

    @property
    def bundled(self) -> bool:
        """True when every file of the trace ships with gpureplay."""
        return all(f.bundled for f in self.files)


def manifest_path() -> Path:
    """The repository's ``traces/manifest.toml``."""
    return bundled_traces_dir() / "manifest.toml"


def load_manifest(path: Path | None = None) -> dict[str, TraceEntry]:
    """Read and check the trace manifest.

    Parameters
    ----------
    path
        The manifest to read; by default the repository's ``traces/manifest.toml``.

    Returns
    -------
    dict
        Trace name → :class:`TraceEntry`, in file order.

    Raises
    ------
    FileNotFoundError
        When the manifest is missing (e.g. gpureplay installed without its
        repository checkout).
    InputError
        When it is not valid TOML or an entry breaks the schema described at the
        top of ``manifest.toml``; each problem names the key, e.g.
        ``traces.openb.files[3].sha256``.
    """
    path = Path(path) if path is not None else manifest_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"trace manifest not found at {path}; it ships in the gpureplay repository's traces/ folder"
        )
    source = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise InputError.single(f"not valid TOML: {err}", source) from err
    traces = raw.get("traces")
    if not isinstance(traces, dict) or not traces:
        raise InputError.single("no [traces.NAME] tables", source, column="traces")
    problems: list[Problem] = []
    entries = {name: _entry(name, spec, source, problems) for name, spec in traces.items()}
    if problems:
        raise InputError(problems)
    return entries


def _entry(name: str, spec: Any, source: str, problems: list[Problem]) -> TraceEntry:
    key = f"traces.{name}"
    if not isinstance(spec, dict):
        problems.append(Problem("must be a table", source, column=key))
        spec = {}
    _known_keys(spec, _ENTRY_KEYS, key, source, problems)
    for field in _REQUIRED_ENTRY_KEYS:
        if field not in spec or spec[field] in ("", []):
            problems.append(Problem("missing", source, column=f"{key}.{field}"))
    fmt = _text(spec, "format", key, source, problems)
    if fmt and fmt not in FORMATS:
        problems.append(Problem(f"unknown format {fmt!r}; known: {', '.join(sorted(FORMATS))}", source,
                                column=f"{key}.format"))  # fmt: skip
    rows = spec.get("rows")
    if rows is not None and (not isinstance(rows, int) or isinstance(rows, bool) or rows < 0):
        problems.append(Problem(f"must be a whole number >= 0, not {rows!r}", source, column=f"{key}.rows"))
        rows = None
    raw_files = spec.get("files", [])
    if not isinstance(raw_files, list):
        problems.append(Problem("must be an array of tables", source, column=f"{key}.files"))
        raw_files = []
    files = tuple(_file(name, i, f, source, problems) for i, f in enumerate(raw_files))
    return TraceEntry(
        name=name,
        title=_text(spec, "title", key, source, problems),
        origin=_text(spec, "origin", key, source, problems),
        license=_text(spec, "license", key, source, problems),
        citation=_text(spec, "citation", key, source, problems),
        format=fmt,
        files=files,
        commit=_text(spec, "commit", key, source, problems) or None,
        rows=rows,
        notes=_text(spec, "notes", key, source, problems),
    )


def _file(name: str, index: int, spec: Any, source: str, problems: list[Problem]) -> TraceFile:
    key = f"traces.{name}.files[{index}]"
    if not isinstance(spec, dict):
        problems.append(Problem("must be a table", source, column=key))
        spec = {}
    _known_keys(spec, _FILE_KEYS, key, source, problems)
    path = _relative_path(spec.get("path"), f"{key}.path", source, problems)
    bundled = spec.get("bundled")
    if not isinstance(bundled, bool):
        problems.append(Problem("must be true or false", source, column=f"{key}.bundled"))
        bundled = False
    url = _text(spec, "url", key, source, problems) or None
    if not bundled:
        if url is None:
            problems.append(Problem("a file that is not bundled needs a url", source, column=f"{key}.url"))
        if path and PurePosixPath(path).parts[0] != name:
            # fetch(dest=...) drops this first folder, so it must be the trace's own.
            problems.append(Problem(f"a download must go under {name}/", source, column=f"{key}.path"))
    size = spec.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        problems.append(
            Problem(f"must be a whole number of bytes, not {size!r}", source, column=f"{key}.size")
        )
        size = None
    raw_members = spec.get("members", [])
    if not isinstance(raw_members, list):
        problems.append(Problem("must be an array of tables", source, column=f"{key}.members"))
        raw_members = []
    members = []
    for j, member in enumerate(raw_members):
        mkey = f"{key}.members[{j}]"
        if not isinstance(member, dict):
            problems.append(Problem("must be a table", source, column=mkey))
            continue
        _known_keys(member, _MEMBER_KEYS, mkey, source, problems)
        mpath = _relative_path(member.get("path"), f"{mkey}.path", source, problems)
        if mpath and not bundled and PurePosixPath(mpath).parts[0] != name:
            problems.append(Problem(f"an unpacked file must go under {name}/", source, column=f"{mkey}.path"))
        members.append(
            ArchiveMember(
                member=_text(member, "member", mkey, source, problems),
                path=mpath,
                sha256=_sha256(member, mkey, source, problems),
            )
        )
    return TraceFile(
        path=path,
        bundled=bundled,
        sha256=_sha256(spec, key, source, problems),
        size=size,
        url=url,
        upstream_sha256=_sha256(spec, key, source, problems, field="upstream_sha256"),
        note=_text(spec, "note", key, source, problems) or None,
        members=tuple(members),
    )


def _known_keys(
    spec: Mapping[str, Any], known: set[str], key: str, source: str, problems: list[Problem]
) -> None:
    for extra in sorted(set(spec) - known):
        problems.append(
            Problem(f"unknown key; known: {', '.join(sorted(known))}", source, column=f"{key}.{extra}")
        )


def _text(spec: Mapping[str, Any], field: str, key: str, source: str, problems: list[Problem]) -> str:
    value = spec.get(field, "")
    if not isinstance(value, str):
        problems.append(Problem(f"must be text, not {value!r}", source, column=f"{key}.{field}"))
        return ""
    return value


def _sha256(
    spec: Mapping[str, Any], key: str, source: str, problems: list[Problem], field: str = "sha256"
) -> str | None:
    value = spec.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not _SHA256.match(value):
        problems.append(
            Problem(f"must be 64 lowercase hex digits, not {value!r}", source, column=f"{key}.{field}")
        )
        return None
    return value


def _relative_path(value: Any, key: str, source: str, problems: list[Problem]) -> str:
    if not isinstance(value, str) or not value:
        problems.append(Problem("missing", source, column=key))
        return ""
    pure = PurePosixPath(value)
    if pure.is_absolute() or ".." in pure.parts or "\\" in value:
        problems.append(Problem(f"must be a relative path inside traces/, not {value!r}", source, column=key))
        return ""
    return value
