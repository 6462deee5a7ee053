"""Soak the differential and property tests with fresh random draws for as long as they are given.

``make soak`` (``SOAK_SECONDS``, default 3600; ``SOAK_SCALE``, default 5) runs rounds of the generated-case
tests until the time is spent. Each round picks a new seed, passes it to Hypothesis
(``--hypothesis-seed``) and sets ``GPUREPLAY_SOAK`` so every test draws ``SOAK_SCALE`` times its CI
examples from that seed (:mod:`tests.reference.draws`). The first failing round stops the soak and prints
the command that replays it; a clean soak prints how long it ran and how many rounds it took.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: The test files that compare the engine with the reference, or check a property, on generated cases.
SOAKED = (
    "tests/test_differential.py",
    "tests/test_metrics.py",
    "tests/test_progress.py",
    "tests/test_sharing.py",
    "tests/test_tas.py",
    "tests/test_tas_kai_volcano.py",
    "tests/test_topology_manager.py",
    "tests/test_packing.py",
)


def round_command(seed: int, workers: str, files: tuple[str, ...]) -> list[str]:
    """The pytest command of one soak round (only the generated-case tests: ``-k`` keeps hand cases out).

    Examples
    --------
    >>> round_command(7, "0", ("tests/test_metrics.py",))[-2:]
    ['--hypothesis-seed=7', 'tests/test_metrics.py']
    """
    quiet = ["-q", "-x", "-n", workers, "-p", "no:cacheprovider"]
    return [sys.executable, "-m", "pytest", *quiet, f"--hypothesis-seed={seed}", *files]


def main(argv: list[str] | None = None) -> int:
    """Run rounds until ``--seconds`` are spent or one fails; the exit code is the failing round's."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 3600)))
    parser.add_argument("--scale", type=int, default=int(os.environ.get("SOAK_SCALE", 5)))
    parser.add_argument("--workers", default=os.environ.get("TEST_WORKERS", "auto"))
    parser.add_argument("files", nargs="*", default=list(SOAKED))
    args = parser.parse_args(argv)
    if args.scale < 1 or args.seconds <= 0:
        parser.error("--scale must be >= 1 and --seconds > 0")
    cases = REPO / ".cache" / "soak"
    env = {**os.environ, "GPUREPLAY_SOAK": str(args.scale), "GPUREPLAY_CASE_DIR": str(cases)}
    began = time.monotonic()
    rounds = 0
    while time.monotonic() - began < args.seconds:
        seed = secrets.randbits(64)
        command = round_command(seed, args.workers, tuple(args.files))
        print(f"soak round {rounds + 1}: seed {seed}", flush=True)
        result = subprocess.run(command, cwd=REPO, env=env, check=False)
        if result.returncode != 0:
            shown = " ".join(command[1:])
            print(f"soak: round {rounds + 1} failed; replay: GPUREPLAY_SOAK={args.scale} python {shown}")
            print(f"soak: disagreeing cases are saved whole under {cases} (test_differential.save_case)")
            return result.returncode
        rounds += 1
    spent = time.monotonic() - began
    print(f"soak: clean for {spent:.0f} s, {rounds} rounds at {args.scale}x the CI examples")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
