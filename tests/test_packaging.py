"""Packaging: the top-level conf/ tree ships inside the wheel, and an installed gpureplay finds it."""

from __future__ import annotations

import os
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
    assert found == listed_packages()
    for package in found - {"gpureplay.conf"}:
        if package.startswith("gpureplay.conf."):
            continue
        init = REPO / "src" / Path(*package.split(".")) / "__init__.py"
        assert init.is_file(), f"{package} has no __init__.py"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--quiet", "-w", str(out)],
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
def test_installed_wheel_finds_its_config_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    # A fresh venv with the wheel installed (no editable hook). Its dependencies come from this test's
    # environment through a .pth line, so the test needs no package index.
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
    (Path(site) / "_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    where = subprocess.run(
        [str(python), "-c", "import gpureplay.app, gpureplay.conf; print(gpureplay.conf.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip().startswith(site), where.stdout
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
