"""numba's on-disk cache: a per-user folder by default, and a logged notice whenever kernels compile."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from numba.core.caching import IndexDataCacheFile

from gpureplay.config import compose_config
from gpureplay.engine.jit.config import default_cache_dir, engine_digest
from gpureplay.replay import progress
from gpureplay.replay.progress import COMPILE_ESTIMATES, COMPILE_NOTICE, announce_compilation
from gpureplay.schedulers.policy import QueueModel

REPO = Path(__file__).resolve().parents[1]
#: This engine's cache subfolder under the suite's ``$NUMBA_OPT`` (conftest: 1), which subprocesses inherit.
OWN_FOLDER = f"engine-{engine_digest()}-O{os.environ['NUMBA_OPT']}"


def bare_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user who set nothing: no NUMBA_CACHE_DIR, a home of their own."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "CI")}
    env["HOME"] = str(tmp_path / "home")
    return env


def python(code: str, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_cache_defaults_to_the_users_cache_folder(tmp_path: Path) -> None:
    env = bare_env(tmp_path)
    shown = python(
        """
        import os
        import gpureplay.engine.loop  # any kernel module
        import numba
        print(os.environ["NUMBA_CACHE_DIR"], numba.config.CACHE_DIR, sep="\\n")
        """,
        env,
    )
    expected = str(tmp_path / "home" / ".cache" / "gpureplay" / "numba")
    assert shown.splitlines() == [expected, f"{expected}/{OWN_FOLDER}"]
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    shown = python("import gpureplay.engine.jit.config, os; print(os.environ['NUMBA_CACHE_DIR'])", env)
    assert shown == str(tmp_path / "xdg" / "gpureplay" / "numba")


def test_a_chosen_cache_folder_is_kept_and_numba_imported_first_is_pointed_at_ours(tmp_path: Path) -> None:
    env = {**bare_env(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path / "mine")}
    assert python("import gpureplay.engine.jit.config, numba; print(numba.config.CACHE_DIR)", env) == str(
        tmp_path / "mine" / OWN_FOLDER
    )
    env = bare_env(tmp_path)
    first = python("import numba; import gpureplay.engine.jit.config; print(numba.config.CACHE_DIR)", env)
    assert first == str(default_cache_dir({"HOME": env["HOME"]}) / OWN_FOLDER)


def test_code_of_another_optimisation_level_gets_its_own_folder(tmp_path: Path) -> None:
    # numba's index does not record $NUMBA_OPT: the suite's -O1 code must not be loaded by a benchmark.
    env = {**bare_env(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path / "mine")}
    probe = "import gpureplay.engine.jit.config, numba; print(numba.config.CACHE_DIR)"
    folders = {level: python(probe, {**env, "NUMBA_OPT": level}) for level in ("1", "2", "3")}
    assert folders == {
        "1": str(tmp_path / "mine" / f"engine-{engine_digest()}-O1"),
        "2": str(tmp_path / "mine" / f"engine-{engine_digest()}-O2"),
        "3": str(tmp_path / "mine" / f"engine-{engine_digest()}"),
    }


def test_each_version_of_the_engine_sources_has_its_own_cache_folder(tmp_path: Path) -> None:
    # numba keys a cached kernel on its own file: a kernel in an unchanged file would keep a stale
    # copy of a callee changed in another file. A copy of the engine with one file edited must get
    # another cache folder.
    import shutil

    import gpureplay.engine as engine

    copy = tmp_path / "engine"
    shutil.copytree(Path(engine.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert engine_digest(copy) == engine_digest()
    (copy / "jobs.py").write_text((copy / "jobs.py").read_text() + "\n# an edit\n")
    assert engine_digest(copy) != engine_digest()
    # A file in a wing counts too.
    shutil.copyfile(Path(engine.__file__).parent / "jobs.py", copy / "jobs.py")
    assert engine_digest(copy) == engine_digest()
    kai = copy / "queues" / "kai" / "session.py"
    kai.write_text(kai.read_text() + "\n# an edit\n")
    assert engine_digest(copy) != engine_digest()


def test_kernels_are_known_uncached_until_compiled_and_cached_after(tmp_path: Path) -> None:
    module = tmp_path / "tiny_kernel.py"
    module.write_text(
        textwrap.dedent(
            """
            from gpureplay.engine.jit.config import entry_kernel

            @entry_kernel
            def twice(x: float) -> float:
                return 2.0 * x
            """
        )
    )
    env = {**bare_env(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}
    probe = """
        from gpureplay.engine.jit.config import is_cached
        from tiny_kernel import twice
        before = is_cached(twice)
        twice(1.0)
        print(before, is_cached(twice))
        """
    assert python(probe, env) == "False True"  # first process: compiles
    assert python(probe, env) == "True True"  # second: found in the cache
    assert not list(tmp_path.glob("__pycache__/*.nbi")), "the cache must not go beside the source"


def test_the_compile_notice_is_logged_in_every_mode_with_an_estimate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Issue 43, item 12: a sweep or CI (no terminal) waited minutes in silence; the estimate said "~1 min"
    # where 83-148 s were measured.
    with caplog.at_level(logging.INFO, logger="gpureplay"):
        line = announce_compilation("/x/numba", "kueue")
    assert caplog.messages == [line]
    assert line.startswith(COMPILE_NOTICE) and "5-6 min" in line and "/x/numba" in line
    assert set(COMPILE_ESTIMATES) == {m.name for m in QueueModel}


def test_a_run_that_must_compile_says_so_first(
    tiny_jobs_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import importlib

    from gpureplay.experiment import run_experiment

    simulate_module = importlib.import_module("gpureplay.replay.simulate")
    cfg = compose_config(
        ["trace=csv", f"trace.path={tiny_jobs_csv}", "cluster=homogeneous", "cluster.nodes=1", "debug=true"]
    )
    monkeypatch.setenv("CI", "true")  # no terminal: the line is logged all the same
    monkeypatch.setattr(simulate_module, "kernels_cached", lambda: False)
    with caplog.at_level(logging.INFO, logger="gpureplay"):
        run_experiment(cfg, tmp_path / "cold")
    notices = [m for m in caplog.messages if m.startswith(COMPILE_NOTICE)]
    assert len(notices) == 1 and "2-3 min" in notices[0]
    assert any(m.startswith("kernels ready in") for m in caplog.messages)
    caplog.clear()
    monkeypatch.setattr(simulate_module, "kernels_cached", lambda: True)
    with caplog.at_level(logging.INFO, logger="gpureplay"):
        run_experiment(cfg, tmp_path / "warm")
    assert not [m for m in caplog.messages if m.startswith(COMPILE_NOTICE)]


def test_a_warm_up_that_compiles_after_all_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The entry kernels cached, but not this preset's variant: the warm-up runs long, and a timer says why.
    monkeypatch.setattr(progress, "COMPILE_NOTICE_AFTER", 0.01)
    with caplog.at_level(logging.INFO, logger="gpureplay"):
        with progress.compile_notice(None, "none", cold=False):
            time.sleep(0.3)
        with progress.compile_notice(None, "none", cold=False):
            pass
    assert [m for m in caplog.messages if m.startswith(COMPILE_NOTICE)] == [
        f"{COMPILE_NOTICE} (about 2-3 min on 2 cores)"
    ]


def test_a_replay_without_numba_cache_dir_writes_nothing_into_the_source_tree(
    tiny_jobs_csv: Path, tmp_path: Path
) -> None:
    # The per-user default, pointed (through XDG_CACHE_HOME) at the suite's warm cache so nothing compiles.
    xdg = tmp_path / "xdg"
    (xdg / "gpureplay").mkdir(parents=True)
    (xdg / "gpureplay" / "numba").symlink_to(REPO / ".cache" / "numba", target_is_directory=True)
    env = {**bare_env(tmp_path), "XDG_CACHE_HOME": str(xdg)}
    before = set((REPO / "src").rglob("*.nb[ic]"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpureplay",
            "run",
            "trace=csv",
            f"trace.path={tiny_jobs_csv}",
            "cluster=homogeneous",
            "cluster.nodes=1",
            f"hydra.run.dir={tmp_path / 'out'}",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert set((REPO / "src").rglob("*.nb[ic]")) == before


WRITER = """
import sys, time
import gpureplay.engine.jit.config  # installs the locked save
from numba.core.caching import IndexDataCacheFile

folder, tag, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
cache = IndexDataCacheFile(folder, "kernel", ("stamp", 1))
while time.time() < start:
    pass
for i in range({n}):
    key = (tag, i)
    cache.save(key, (key, bytes(200_000)))
"""


def test_two_processes_saving_one_kernels_cache_at_once_keep_every_entry_its_own(tmp_path: Path) -> None:
    """numba's unlocked save lets two processes take the same data file (numba issue 10128)."""

    n = 60
    code = WRITER.format(n=n)
    start = str(time.time() + 3.0)  # both past their imports, then saving together
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path), tag, start], stderr=subprocess.PIPE, text=True
        )
        for tag in ("a", "b")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    cache = IndexDataCacheFile(str(tmp_path), "kernel", ("stamp", 1))
    for tag in ("a", "b"):
        for i in range(n):
            loaded = cache.load((tag, i))
            held = None if loaded is None else loaded[0]
            assert held == (tag, i), f"entry {(tag, i)} lost or holds {held}"


def test_a_process_that_needs_a_variant_being_compiled_waits_for_it() -> None:
    """compile_once: the lock named after the call's types is held while compiling; a second caller waits."""
    import fcntl
    import threading

    import numpy as np
    from numba import njit

    from gpureplay.engine.jit.compile_once import compiled_for, variant_key
    from gpureplay.engine.jit.config import cache_folder

    def plus_one(x):  # type: ignore[no-untyped-def]
        return x + 1

    dispatcher = njit(cache=False)(plus_one)
    args = (np.zeros(3),)
    folder = cache_folder() / "compiling"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"plus_one-{variant_key(args)}.lock", "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process compiling this variant
        waiter = threading.Thread(target=compiled_for, args=(dispatcher, args))
        waiter.start()
        waiter.join(timeout=1.0)
        assert waiter.is_alive(), "compiled_for went ahead while the variant's lock was held"
        assert not dispatcher.overloads
    waiter.join(timeout=60.0)
    assert not waiter.is_alive()
    assert len(dispatcher.overloads) == 1
    # Ready in this process now: no lock, no second compile.
    with open(folder / f"plus_one-{variant_key(args)}.lock", "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        compiled_for(dispatcher, args)
    # Another variant (a 2-D array) has a lock of its own.
    assert variant_key((np.zeros((2, 2)),)) != variant_key(args)


def test_a_warm_up_moves_on_from_a_variant_being_compiled_elsewhere() -> None:
    """compile_once.without_waiting: a variant whose lock is held raises VariantBusy at once, uncompiled;
    outside the block (or once the lock is free) the same call waits or compiles as usual."""
    import fcntl

    import numpy as np
    from numba import njit

    from gpureplay.engine.jit.compile_once import VariantBusy, compiled_for, variant_key, without_waiting
    from gpureplay.engine.jit.config import cache_folder

    def plus_two(x):  # type: ignore[no-untyped-def]
        return x + 2

    dispatcher = njit(cache=False)(plus_two)
    args = (np.zeros(3),)
    folder = cache_folder() / "compiling"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"plus_two-{variant_key(args)}.lock", "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process compiling this variant
        with without_waiting(), pytest.raises(VariantBusy, match="plus_two"):
            compiled_for(dispatcher, args)
        assert not dispatcher.overloads
    with without_waiting():
        compiled_for(dispatcher, args)  # nobody compiling it: this process does
    assert len(dispatcher.overloads) == 1
