"""The trace manifest (traces/manifest.toml) and ``fetch``: checksums, metadata, downloads offline."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from gpureplay.errors import InputError
from gpureplay.paths import bundled_traces_dir
from gpureplay.traces.fetch import ChecksumError, FetchError, fetch
from gpureplay.traces.manifest import FORMATS, ArchiveMember, TraceEntry, TraceFile, load_manifest

TRACES = bundled_traces_dir()
EXPECTED = {
    "philly", "philly_raw", "itp_raw", "itp_elasticflow", "openb", "pai2020", "helios", "dlrm",
    "spot_gpu_nodes", "crux_topology", "acme_summary", "tiresias_yarn_gputime",
}  # fmt: skip


@pytest.fixture(scope="module")
def manifest() -> dict[str, TraceEntry]:
    return load_manifest()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _entry(*files: TraceFile, name: str = "demo") -> dict[str, TraceEntry]:
    entry = TraceEntry(name=name, title="demo", origin="test", license="CC0", citation="none", format="none",
                       files=files)  # fmt: skip
    return {name: entry}


def test_every_known_public_trace_is_listed(manifest: dict[str, TraceEntry]) -> None:
    assert set(manifest) == EXPECTED


def test_every_entry_says_where_it_comes_from(manifest: dict[str, TraceEntry]) -> None:
    for entry in manifest.values():
        assert entry.license.strip() and entry.citation.strip() and entry.origin.startswith("https://")
        assert entry.format in FORMATS and entry.files
        for file in entry.files:
            if not file.bundled:
                assert file.url is not None and file.url.startswith("https://")
                assert file.path.startswith(f"{entry.name}/")


def test_bundled_checksums_match_the_files_on_disk(manifest: dict[str, TraceEntry]) -> None:
    bundled = [f for e in manifest.values() for f in e.files if f.bundled]
    assert len(bundled) > 60
    for file in bundled:
        data = (TRACES / file.path).read_bytes()
        assert file.sha256 == _sha256(data), file.path
        assert file.size == len(data), file.path


def test_every_bundled_data_file_is_in_the_manifest(manifest: dict[str, TraceEntry]) -> None:
    listed = {f.path for e in manifest.values() for f in e.files if f.bundled}
    on_disk = {
        p.relative_to(TRACES).as_posix()
        for p in TRACES.rglob("*")
        if p.is_file() and p.suffix not in (".md", ".toml")
    }
    assert on_disk == listed


def test_published_checksums_are_kept(manifest: dict[str, TraceEntry]) -> None:
    pai = {f.path: f for f in manifest["pai2020"].files}
    assert pai["pai2020/pai_task_table.tar.gz"].sha256 == (
        "cd1d6dc3215d2a8607ccf6b6dd952b5db776df86926c73259fea7c1499ac40e5"
    )
    assert pai["pai2020/pai_job_table.tar.gz"].members[0].path == "pai2020/pai_job_table.csv"
    (raw,) = manifest["philly_raw"].files
    assert (raw.size, raw.members[0].path) == (1_055_988_361, "philly_raw/cluster_job_log")
    (helios,) = manifest["helios"].files
    assert helios.sha256 is None  # no checksum is published for data.zip: left out, not guessed
    assert manifest["openb"].bundled and not manifest["pai2020"].bundled


def test_fetch_from_a_file_url_checks_the_checksum(tmp_path: Path) -> None:
    payload = b"job_id,submit_time\n1,0\n"
    upstream = tmp_path / "upstream.csv"
    upstream.write_bytes(payload)
    good = TraceFile(path="demo/jobs.csv", bundled=False, url=upstream.as_uri(), sha256=_sha256(payload),
                     size=len(payload))  # fmt: skip
    dest = tmp_path / "dest"
    (path,) = fetch("demo", dest, manifest=_entry(good))
    assert path == dest / "jobs.csv" and path.read_bytes() == payload
    upstream.unlink()  # present and checked: not downloaded again
    assert fetch("demo", dest, manifest=_entry(good)) == [path]

    upstream.write_bytes(payload)
    bad = dataclasses.replace(good, path="demo/bad.csv", sha256="0" * 64)
    with pytest.raises(ChecksumError, match="checksum mismatch"):
        fetch("demo", dest, manifest=_entry(bad))
    assert sorted(p.name for p in dest.iterdir()) == ["jobs.csv"]  # no bad file, no temporary left


def test_fetch_default_destination_is_the_first_writable_data_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream = tmp_path / "u.csv"
    upstream.write_bytes(b"x\n")
    monkeypatch.setenv("GPUREPLAY_DATA", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    file = TraceFile(path="demo/sub/u.csv", bundled=False, url=upstream.as_uri())
    assert fetch("demo", manifest=_entry(file)) == [tmp_path / "data" / "demo" / "sub" / "u.csv"]


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_fetch_unpacks_named_archive_members(tmp_path: Path, kind: str) -> None:
    inner = b"a,b\n1,2\n"
    archive = tmp_path / f"upstream.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("data/Venus/cluster_log.csv", inner)
            zf.writestr("data/Earth/cluster_log.csv", b"other\n")
    else:
        with tarfile.open(archive, "w:gz") as tf:
            info = tarfile.TarInfo("data/Venus/cluster_log.csv")
            info.size = len(inner)
            tf.addfile(info, io.BytesIO(inner))
    member = ArchiveMember(member="Venus/cluster_log.csv", path="demo/venus/log.csv", sha256=_sha256(inner))
    file = TraceFile(path=f"demo/data.{kind}", bundled=False, url=archive.as_uri(), members=(member,))
    paths = fetch("demo", tmp_path / "out", manifest=_entry(file))
    assert paths == [tmp_path / "out" / f"data.{kind}", tmp_path / "out" / "venus" / "log.csv"]
    assert paths[1].read_bytes() == inner

    wrong = dataclasses.replace(member, path="demo/venus/bad.csv", sha256="f" * 64)
    with pytest.raises(ChecksumError):
        fetch("demo", tmp_path / "out", manifest=_entry(dataclasses.replace(file, members=(wrong,))))
    assert not (tmp_path / "out" / "venus" / "bad.csv").exists()
    missing = dataclasses.replace(member, member="Mars/cluster_log.csv", path="demo/mars.csv")
    with pytest.raises(FetchError, match="no such file"):
        fetch("demo", tmp_path / "out", manifest=_entry(dataclasses.replace(file, members=(missing,))))


def test_fetch_without_network_says_what_to_do(tmp_path: Path) -> None:
    # Port 9 (discard) on the loopback interface: refused at once, nothing leaves the machine.
    url = "http://127.0.0.1:9/trace.csv"
    file = TraceFile(path="demo/trace.csv", bundled=False, url=url)
    with pytest.raises(FetchError) as err:
        fetch("demo", tmp_path, timeout=5.0, manifest=_entry(file))
    message = str(err.value)
    assert message.startswith(f"cannot reach {url}: ")
    assert "this machine has no network access to it. " in message
    assert message.endswith(f"Download it by hand from {url} and place it at {tmp_path / 'trace.csv'}")
    assert list(tmp_path.iterdir()) == []


def test_fetch_of_a_bundled_trace_returns_its_files(manifest: dict[str, TraceEntry]) -> None:
    paths = fetch("openb")
    assert len(paths) == len(manifest["openb"].files)
    assert all(p.is_file() for p in paths)
    with pytest.raises(InputError, match="unknown trace 'nope'"):
        fetch("nope")


def test_load_manifest_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="trace manifest not found"):
        load_manifest(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[traces.x\n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_manifest(broken)
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[traces.x]\ntitle = "t"\norigin = "o"\ncitation = "c"\nformat = "csvish"\n'
        '[[traces.x.files]]\npath = "elsewhere/f.csv"\nbundled = false\nsha256 = "abc"\ncolour = 1\n'
    )
    with pytest.raises(InputError) as err:
        load_manifest(bad)
    columns = {p.column for p in err.value.problems}
    assert columns == {
        "traces.x.license", "traces.x.format", "traces.x.files[0].url", "traces.x.files[0].path",
        "traces.x.files[0].sha256", "traces.x.files[0].colour",
    }  # fmt: skip
