"""Every ``gpureplay run`` the README and the docs show runs as written: its config composes, its inputs pass.

Each command is read off README.md and the pages of ``docs/`` (fenced ``bash`` blocks, indented code and
inline code; a span with a placeholder, ``<overrides>`` or ``OVERRIDES``, is a pattern, and one with a flag
such as ``--help`` or ``--cfg job`` prints rather than replays: both are left out), composed as
``gpureplay run`` composes it, and put through every check a run makes before its kernels compile
(:func:`gpureplay.config_check.check_config`, :func:`gpureplay.experiment.check_inputs`: trace, workload,
cluster, MIG layouts, manifests against the cluster). A multirun (``-m``) is checked on points that between
them take every swept value. The replays themselves are covered elsewhere (the declared sweeps in
``test_sweep_examples.py``, the presets in the differential tests); this file catches the example that
cannot start, such as a manifest set whose flavor selects GPU models the default cluster lacks.

Files a command names that a user brings (``trace.path=jobs.csv``) are listed in :data:`USER_FILES`, with
what the test gives in their place.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_module
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from gpureplay.config import register_configs
from gpureplay.config_check import check_config
from gpureplay.experiment import check_inputs, load_trace_of
from gpureplay.traces.adapted import AdaptedTrace

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: The documentation site's pages (mkdocs.yml); the README's manual moved there.
DOCS = REPO / "docs"

#: Traces loaded so far (many commands replay the same one), by their config.
_TRACES: dict[str, AdaptedTrace] = {}

#: Files the README's commands name that the user brings: the README says so beside each command.
USER_FILES = ("jobs.csv",)


def readme_commands(text: str) -> list[str]:
    """The ``gpureplay run`` commands of a README: lines of ``bash`` blocks and inline code spans.

    Examples
    --------
    >>> block = "```bash\\n.venv/bin/gpureplay run a=1 \\\\\\n    b=2   # note\\n```\\n"
    >>> readme_commands(block + "or `gpureplay run\\nc=3`, or\\n\\n    gpureplay run d=4\\n")
    ['gpureplay run a=1 b=2', 'gpureplay run d=4', 'gpureplay run c=3']
    """
    found = []
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0].endswith("gpureplay") and words[1:2] == ["run"]:
                found.append(" ".join(["gpureplay", *words[1:]]))
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    # Indented code blocks: four spaces, then the command.
    indented = r"^    (?:\.venv/bin/)?(gpureplay run .*)$"
    for line in re.findall(indented, prose, flags=re.M):
        found.append(" ".join(shlex.split(line, comments=True)))
    prose = re.sub(indented, "", prose, flags=re.M)
    for span in re.findall(r"`([^`]+)`", prose):
        words = span.split()
        if words[:2] == ["gpureplay", "run"]:
            found.append(" ".join(words))
    return found


def points(overrides: list[str]) -> list[list[str]]:
    """Override lists covering a multirun: every swept value appears in at least one of them.

    A declared grid (``sweep=NAME``) adds its ``hydra.sweeper.params``; the command line wins over it.
    """
    parser = OverridesParser.create()
    parsed = parser.parse_overrides(overrides)
    fixed = [o.input_line for o in parsed if not o.is_sweep_override()]
    swept = {
        o.key_or_group: [str(v) for v in o.sweep_string_iterator()] for o in parsed if o.is_sweep_override()
    }
    declared = compose("config", overrides=fixed, return_hydra_config=True).hydra.sweeper.params or {}
    for key, values in declared.items():
        if not any(o.key_or_group == key for o in parsed):
            override = parser.parse_override(f"{key}={values}")
            if override.is_sweep_override():
                swept[key] = [str(v) for v in override.sweep_string_iterator()]
            else:
                fixed.append(override.input_line)
    widest = max((len(v) for v in swept.values()), default=1)
    return [fixed + [f"{k}={v[i % len(v)]}" for k, v in swept.items()] for i in range(widest)]


def documented_commands() -> list[str]:
    """The ``gpureplay run`` commands of README.md and every page under ``docs/``, each once."""
    texts = [README.read_text()] + [p.read_text() for p in sorted(DOCS.rglob("*.md"))]
    commands = [c for text in texts for c in readme_commands(text) if is_replay(c)]
    return list(dict.fromkeys(commands))


def is_replay(command: str) -> bool:
    """Whether ``command`` replays: its words after ``gpureplay run`` are ``-m`` and ``key=value`` overrides.

    Examples
    --------
    >>> commands = ["gpureplay run -m seed=1,2", "gpureplay run OVERRIDES", "gpureplay run --help"]
    >>> [is_replay(c) for c in commands]
    [True, False, False]
    """
    return all(w == "-m" or ("=" in w and "<" not in w) for w in command.split()[2:])


def run_commands() -> list[tuple[str, list[str]]]:
    """``(command, overrides)`` of each documented run (hydra.* overrides dropped: they only place it)."""
    found = []
    for command in documented_commands():
        args = [a for a in command.split()[2:] if not a.startswith("hydra.")]
        found.append((command, args))
    return found


@pytest.fixture(scope="module", autouse=True)
def hydra_context() -> Iterator[None]:
    register_configs()
    with initialize_config_module(config_module="gpureplay.conf", version_base="1.3"):
        yield


@pytest.fixture(scope="module")
def user_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """What a user would bring for :data:`USER_FILES`: a small canonical trace."""
    folder = tmp_path_factory.mktemp("user")
    jobs = folder / "jobs.csv"
    pl.DataFrame(
        {"job_id": [1, 2], "submit_time": [0.0, 5.0], "duration": [60.0, 30.0], "num_pods": [1, 2]}
        | {"gpu_milli": [1000, 4000]}
    ).write_csv(jobs)
    return {"jobs.csv": jobs}


def test_the_readme_and_the_docs_show_runs() -> None:
    commands = [c for c, _ in run_commands()]
    assert len(commands) >= 20, commands
    assert any(" -m " in c for c in commands)
    # The README's five-minute tour: one run and one sweep at least.
    tour = readme_commands(README.read_text())
    assert len(tour) >= 2 and any(" -m " in c for c in tour), tour


@pytest.mark.slow
@pytest.mark.parametrize(("command", "args"), run_commands(), ids=[c for c, _ in run_commands()])
def test_every_readme_run_passes_its_checks(
    command: str, args: list[str], user_files: dict[str, Path]
) -> None:
    multirun = "-m" in args
    overrides = [a for a in args if a != "-m"]
    for name, path in user_files.items():
        overrides = [o.replace(f"={name}", f"={path}") for o in overrides]
    for point in points(overrides) if multirun else [overrides]:
        cfg = compose("config", overrides=point)
        check_config(cfg)
        key = OmegaConf.to_yaml(cfg.trace, resolve=True) + f"seed={cfg.seed} max_time={cfg.max_time}"
        if key not in _TRACES:
            _TRACES[key] = load_trace_of(cfg)
        inputs = check_inputs(cfg, _TRACES[key])
        assert inputs.jobs.height > 0, (command, point)
        assert OmegaConf.select(cfg, "scheduler.name"), (command, point)


def test_the_docs_name_every_optional_trace_column_and_the_checkpoint_default() -> None:
    from gpureplay.traces.schema import JOB_DEFAULTS

    # The table moved from the README to the Inputs page of the docs site.
    text = (DOCS / "inputs.md").read_text()
    table = text[text.index("Optional columns") :]
    missing = [c for c in JOB_DEFAULTS if f"`{c}`" not in table]
    assert not missing, f"docs/inputs.md's optional-column table lacks {missing}"
    assert "`workload.checkpoint.interval` (default **0**" in text


def test_the_readme_cites_only_files_the_repository_has() -> None:
    # The run's own outputs (report.md) are written, not shipped.
    cited = set(re.findall(r"[\w./-]+\.md\b", README.read_text())) - {"report.md"}
    missing = sorted(c for c in cited if not (REPO / c).is_file())
    assert not missing, f"README cites {missing}, which the repository does not have"
