"""Download the trace files too large to bundle, and check them.

``fetch(name)`` looks the trace up in the manifest, downloads each file that
is not bundled (with :mod:`urllib`, following redirects), and unpacks the
archive members the manifest names. Every file is written to a temporary name
in its destination folder and renamed into place only once its sha256 (when
the manifest knows it) matches, so an interrupted or corrupted download never
leaves a file that looks complete.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO

from gpureplay.errors import InputError
from gpureplay.paths import data_roots, resolve_data_path
from gpureplay.traces.manifest import ArchiveMember, TraceEntry, TraceFile, load_manifest, manifest_path

log = logging.getLogger(__name__)

_BLOCK = 1 << 20


class FetchError(RuntimeError):
    """A download could not be made or did not check out; the message says what to do."""


class ChecksumError(FetchError):
    """A downloaded or unpacked file's sha256 or size differs from the manifest's."""


def fetch(
    name: str,
    dest: Path | None = None,
    timeout: float = 30.0,
    *,
    manifest: Mapping[str, TraceEntry] | None = None,
) -> list[Path]:
    """Download (and unpack) the files of a known trace that are not bundled.

    Parameters
    ----------
    name
        A trace name of ``traces/manifest.toml`` (``gpureplay trace list``).
    dest
        Folder for this trace's files. By default they go under the first
        writable data folder (``$GPUREPLAY_DATA``, then the project's
        ``traces/``), at the manifest path, e.g. ``<repo>/traces/pai2020/``,
        where :func:`gpureplay.paths.resolve_data_path` finds them. With
        ``dest``, the manifest path's first folder (the trace name) is replaced
        by ``dest``.
    timeout
        Seconds to wait for the server to answer or send more data.
    manifest
        Entries to use instead of the repository's manifest (tests, mirrors).

    Returns
    -------
    list of Path
        The local path of every file of the trace, in manifest order: bundled
        files where they are, downloads and unpacked members where they were
        written. A file already present with the right checksum is not
        downloaded again.

    Raises
    ------
    InputError
        For a name the manifest does not know.
    FetchError
        When a server cannot be reached (no network, DNS failure, refused,
        timeout) or answers with an HTTP error, or no data folder is writable;
        the message names the URL and where to put a copy made by hand.
    ChecksumError
        When a download or unpacked member does not match its sha256 or size;
        the bad file is removed.
    """
    entries = manifest if manifest is not None else load_manifest()
    entry = entries.get(name)
    if entry is None:
        raise InputError.single(
            f"unknown trace {name!r}; known: {', '.join(entries)}", str(manifest_path()), column="traces"
        )
    if entry.bundled:
        log.info("all files of %s are bundled with gpureplay; nothing to download", name)
        return [resolve_data_path(f.path) for f in entry.files]
    root = Path(dest) if dest is not None else _writable_root()
    paths: list[Path] = []
    for file in entry.files:
        if file.bundled:
            paths.append(resolve_data_path(file.path))
            continue
        archive = _target(file.path, root, dest is not None)
        assert file.url is not None  # load_manifest requires a url for every download
        _download(file, archive, timeout)
        paths.append(archive)
        for member in file.members:
            target = _target(member.path, root, dest is not None)
            _unpack(archive, member, target)
            paths.append(target)
    return paths


def _writable_root() -> Path:
    for root in data_roots():
        if root.is_dir() and os.access(root, os.W_OK):
            return root
    tried = ", ".join(str(r) for r in data_roots())
    raise FetchError(
        f"no writable data folder (tried {tried}); pass dest or set $GPUREPLAY_DATA to a writable folder"
    )


def _target(relative: str, root: Path, strip_first: bool) -> Path:
    parts = PurePosixPath(relative).parts
    return root.joinpath(*(parts[1:] if strip_first else parts))


def _matches(path: Path, sha256: str | None, size: int | None) -> bool:
    """True when ``path`` exists and agrees with every known check (no checks: it exists)."""
    if not path.is_file():
        return False
    if size is not None and path.stat().st_size != size:
        return False
    return sha256 is None or _sha256_of(path) == sha256


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def _unreachable(url: str, reason: object, target: Path) -> FetchError:
    return FetchError(
        f"cannot reach {url}: {reason}; this machine has no network access to it. "
        f"Download it by hand from {url} and place it at {target}"
    )


@contextmanager
def _staged(target: Path) -> Iterator[tuple[IO[bytes], Path]]:
    """A temporary file beside ``target``; removed unless the caller renamed it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out, tmp
    finally:
        tmp.unlink(missing_ok=True)


def _commit(
    tmp: Path, target: Path, digest: str, length: int, sha256: str | None, size: int | None, what: str
) -> None:
    """Rename ``tmp`` to ``target`` if it checks out; otherwise raise (``_staged`` removes ``tmp``)."""
    if sha256 is not None and digest != sha256:
        raise ChecksumError(
            f"checksum mismatch for {what}: expected sha256 {sha256}, got {digest}; "
            f"the file was removed and nothing was written to {target}"
        )
    if size is not None and length != size:
        raise ChecksumError(
            f"size mismatch for {what}: expected {size:,} bytes, got {length:,}; "
            f"the file was removed and nothing was written to {target}"
        )
    os.replace(tmp, target)


def _download(file: TraceFile, target: Path, timeout: float) -> None:
    url = file.url
    assert url is not None
    if _matches(target, file.sha256, file.size):
        log.info("%s is already present and checks out", target)
        return
    log.info("downloading %s to %s", url, target)
    with _staged(target) as (out, tmp):
        digest, length = hashlib.sha256(), 0
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                while block := response.read(_BLOCK):
                    digest.update(block)
                    length += len(block)
                    out.write(block)
        except urllib.error.HTTPError as err:
            raise FetchError(
                f"download of {url} failed: HTTP {err.code} {err.reason}. "
                f"Download it by hand from {url} and place it at {target}"
            ) from err
        except urllib.error.URLError as err:
            raise _unreachable(url, err.reason, target) from err
        except (TimeoutError, ConnectionError, http.client.HTTPException) as err:
            raise _unreachable(url, err, target) from err
        out.close()
        _commit(tmp, target, digest.hexdigest(), length, file.sha256, file.size, url)


def _unpack(archive: Path, member: ArchiveMember, target: Path) -> None:
    if _matches(target, member.sha256, None):
        log.info("%s is already present and checks out", target)
        return
    log.info("unpacking %s from %s to %s", member.member, archive, target)
    what = f"{member.member} in {archive}"
    with _staged(target) as (out, tmp), _open_member(archive, member.member) as src:
        digest, length = hashlib.sha256(), 0
        while block := src.read(_BLOCK):
            digest.update(block)
            length += len(block)
            out.write(block)
        out.close()
        _commit(tmp, target, digest.hexdigest(), length, member.sha256, None, what)


@contextmanager
def _open_member(archive: Path, wanted: str) -> Iterator[IO[bytes]]:
    """Open one regular file of a .zip or tar archive as a byte stream (nothing else is extracted)."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            names = [i.filename for i in zf.infolist() if not i.is_dir()]
            with zf.open(_pick(names, wanted, archive)) as src:
                yield src
        return
    if not tarfile.is_tarfile(archive):
        raise FetchError(f"{archive} is neither a zip nor a tar archive")
    with tarfile.open(archive) as tf:
        names = [m.name for m in tf.getmembers() if m.isfile()]
        stream = tf.extractfile(_pick(names, wanted, archive))
        if stream is None:  # cannot happen for a regular file; keeps the type exact
            raise FetchError(f"{archive}: {wanted!r} is not a regular file")
        with stream:
            yield stream


def _pick(names: list[str], wanted: str, archive: Path) -> str:
    if wanted in names:
        return wanted
    suffix = [n for n in names if n.endswith("/" + wanted.lstrip("/"))]
    if len(suffix) == 1:
        return suffix[0]
    found = ", ".join(names[:10]) + (" ..." if len(names) > 10 else "")
    why = "several files match" if suffix else "no such file"
    raise FetchError(f"{archive}: {why} for {wanted!r}; it holds {found}")
