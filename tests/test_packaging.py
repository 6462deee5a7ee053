"""Packaging: the top-level conf/ and traces/ trees ship inside the wheel, and an installed gpureplay finds
them: its configs, `trace list`, and the default trace and cluster (Philly), from any folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def listed_packages() -> set[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"]["gpureplay.conf"] == "conf"
    return set(config["packages"])


def test_conf_tree_is_at_the_repository_top_level() -> None:
    assert (REPO / "conf" / "config.yaml").is_file()
    assert not (REPO / "src" / "gpureplay" / "conf").exists()


def test_every_package_folder_is_listed_in_pyproject() -> None:
    found = {"gpureplay.conf"}
    for folder in (REPO / "src" / "gpureplay").rglob("*"):
        if folder.is_dir() and folder.name != "__pycache__" and any(folder.glob("*.py")):
            found.add(".".join(folder.relative_to(REPO / "src").parts))
    found.add("gpureplay")
    for folder in (REPO / "conf").rglob("*"):
        if folder.is_dir() and folder.name != "__pycache__":
            found.add(".".join(("gpureplay", "conf", *folder.relative_to(REPO / "conf").parts)))
    for folder in (REPO / "traces").rglob("*"):  # the bundled traces; a folder named like raw-traces is data
        parts = folder.relative_to(REPO / "traces").parts
        if folder.is_dir() and all(part.isidentifier() for part in parts) and tracked(folder):
            found.add(".".join(("gpureplay", "bundled_traces", *parts)))
    found.add("gpureplay.bundled_traces")
    for folder in (REPO / "src" / "hydra_plugins").iterdir():  # a namespace package: its plugins only
        if folder.is_dir() and folder.name != "__pycache__":
            found.add(f"hydra_plugins.{folder.name}")
    assert found == listed_packages()
    for package in found - {"gpureplay.conf"}:
        if package.startswith(("gpureplay.conf.", "gpureplay.bundled_traces")):
            continue
        init = REPO / "src" / Path(*package.split(".")) / "__init__.py"
        assert init.is_file(), f"{package} has no __init__.py"


def tracked(folder: Path) -> bool:
    """Whether git tracks a file under ``folder`` (a fetched trace's folder is not part of the package)."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", str(folder.relative_to(REPO))], capture_output=True, text=True
    )
    return listed.returncode != 0 or bool(listed.stdout.strip())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the source files: an in-tree build reuses build/, whose stale
    files (from an older tree) would end up in the wheel and hide what the packaging leaves out."""
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source")
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--quiet", "-w", str(out)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("gpureplay-*.whl")
    return built


@pytest.mark.slow
def test_wheel_carries_every_config_and_module(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for yaml in (REPO / "conf").rglob("*.yaml"):
        assert f"gpureplay/conf/{yaml.relative_to(REPO / 'conf').as_posix()}" in names, yaml
    for module in (REPO / "src").rglob("*.py"):
        assert module.relative_to(REPO / "src").as_posix() in names, module


@pytest.mark.slow
def test_wheel_carries_the_bundled_traces_with_their_attribution(wheel: Path) -> None:
    # Every file the trace manifest marks bundled, with the README, manifest, SOURCE.md and LICENSE files
    # that carry their attribution and licenses; nothing fetched (a fetched PAI table is hundreds of MB).
    from gpureplay.traces.manifest import load_manifest

    prefix = "gpureplay/bundled_traces/"
    names = {n.removeprefix(prefix) for n in zipfile.ZipFile(wheel).namelist() if n.startswith(prefix)}
    bundled = {f.path for entry in load_manifest().values() for f in entry.files if f.bundled}
    notes = {"README.md", "manifest.toml", "itp/LICENSE"} | {
        p.relative_to(REPO / "traces").as_posix() for p in (REPO / "traces").glob("*/SOURCE.md")
    }
    assert names == bundled | notes
    assert wheel.stat().st_size < 12 * 2**20


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """A fresh venv with the wheel installed (no editable hook), its site-packages, and an environment
    without this checkout's paths. Its dependencies come from this test's environment through a .pth line,
    so the test needs no package index."""
    tmp_path = tmp_path_factory.mktemp("installed")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # Every site-packages folder this interpreter imports from: a venv may reach its dependencies through a
    # .pth line of its own (a git worktree's venv over the main checkout's), which a .pth line does not chain.
    deps = dict.fromkeys(
        [sysconfig.get_paths()["purelib"], *(p for p in sys.path if p.endswith("site-packages"))]
    )
    (Path(site) / "_deps.pth").write_text("".join(f"{p}\n" for p in deps))
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR", "GPUREPLAY_DATA")
    }
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return env_dir, Path(site), env


@pytest.mark.slow
def test_installed_wheel_lists_and_reads_its_bundled_traces_from_any_folder(
    installed: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    # `trace list` said "trace manifest not found", and the default config (trace=philly) failed.
    env_dir, site, env = installed
    script = env_dir / "bin" / "gpureplay"
    listed = subprocess.run(
        [str(script), "trace", "list"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    philly = next(line for line in listed.stdout.splitlines() if line.startswith("philly "))
    assert "82,247" in philly and " yes " in philly
    inspected = subprocess.run(
        [str(script), "trace", "inspect", "openb"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert inspected.returncode == 0, inspected.stderr
    assert (
        "jobs:        8,152" in inspected.stdout
        and str(site / "gpureplay" / "bundled_traces") in inspected.stdout
    )
    # What `gpureplay run` reads with the default config, up to the replay (whose kernels would compile for
    # minutes in a fresh environment): the Philly trace and machine list, from the installed package.
    read = (
        "from gpureplay.config import compose_config; from gpureplay.experiment import prepare_inputs; "
        "i = prepare_inputs(compose_config(['workload.max_jobs=100'])); "
        "print(i.trace.source, i.jobs.height, i.cluster.nodes.height, i.cluster.source)"
    )
    proc = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c", read], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    source, jobs, nodes, _ = proc.stdout.split(maxsplit=3)
    assert source == str(site / "gpureplay" / "bundled_traces" / "philly" / "philly_jobs_pollux.csv.gz")
    assert (int(jobs), int(nodes)) == (100, 552)


@pytest.mark.slow
def test_installed_wheel_finds_its_config_outside_the_checkout(
    installed: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    env_dir, site, env = installed
    python = env_dir / "bin" / "python"
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = subprocess.run(
        [str(python), "-c", "import gpureplay.app, gpureplay.conf; print(gpureplay.conf.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip().startswith(str(site)), where.stdout
    script = env_dir / "bin" / "gpureplay"
    proc = subprocess.run(
        [str(script), "run", "--cfg", "job", "scheduler=fifo", "cluster=homogeneous"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "name: fifo" in proc.stdout and "gpus_per_node: 8" in proc.stdout
    helped = subprocess.run([str(script), "run", "--help"], cwd=work, env=env, capture_output=True, text=True)
    assert helped.returncode == 0 and "gang-binpack" in helped.stdout and "schedulers-traces" in helped.stdout
    # The sweep launcher sits in Hydra's plugin namespace, where Hydra's own scan finds it.
    scan = (
        "from hydra.core.plugins import Plugins; from hydra.plugins.launcher import Launcher; "
        "print(sorted(f'{c.__module__}.{c.__name__}' for c in Plugins.instance().discover(Launcher)))"
    )
    plugins = subprocess.run([str(python), "-c", scan], cwd=work, env=env, capture_output=True, text=True)
    assert "hydra_plugins.gpureplay_launcher.local_launcher.GpureplayJoblibLauncher" in plugins.stdout, (
        plugins
    )
    # Bad config from an installed package: the same short message, no traceback.
    bad = subprocess.run(
        [str(script), "run", "scheduler=fiffo"], cwd=work, env=env, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "did you mean 'fifo'" in bad.stderr and "Traceback" not in bad.stderr
