"""Errors raised on bad input, each naming where the problem is.

Every user-facing failure (a bad trace row, a bad node list, a bad config
value) is an :class:`InputError`. The CLI prints its message to stderr and
exits non-zero; nothing else catches it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from typing import NoReturn

#: ``Problem.source`` of a bad value in the run configuration (as opposed to a file).
CONFIG = "config"
#: ``Problem.source`` of a bad value in the jobs table being replayed, found where the trace file is not
#: known; its ``row`` is the file's (``source_row``), and :meth:`InputError.in_file` names the file.
JOBS = "jobs"


@dataclass(frozen=True)
class Problem:
    """One problem in an input: what is wrong and where.

    Parameters
    ----------
    message
        What is wrong, e.g. ``"negative value -3.0"``.
    source
        The file the bad value came from, or ``"config"`` for a config value.
    row
        1-based data row of the raw file (the header is not counted), or
        ``None`` when the problem is not tied to a row.
    column
        The raw or canonical column name, or ``None``.
    key
        The dotted config key (``cluster.nodes``) of a bad config value, or
        ``None``. A problem with a key reads ``config key 'cluster.nodes': ...``.

    Examples
    --------
    >>> str(Problem("negative value -3.0", "jobs.csv", row=2, column="duration"))
    "jobs.csv, row 2, column 'duration': negative value -3.0"
    >>> str(Problem("must be >= 1 (found 0)", "config", key="cluster.nodes"))
    "config key 'cluster.nodes': must be >= 1 (found 0)"
    """

    message: str
    source: str = CONFIG
    row: int | None = None
    column: str | None = None
    key: str | None = None

    def __str__(self) -> str:
        key = self.key
        if key is None and self.source == CONFIG and self.column is not None:
            key = self.column  # a config value named the old way (column=): it is a key all the same
        if key is not None:
            where = [f"config key {key!r}" if self.source == CONFIG else f"{self.source}, key {key!r}"]
        else:
            where = [self.source]
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None and key is None:
            where.append(f"column {self.column!r}")
        return f"{', '.join(where)}: {self.message}"


@dataclass
class InputError(ValueError):
    """Bad input: one or more :class:`Problem` found while reading it.

    The message lists the first ``shown`` problems and says how many more
    there are, so a trace with a million bad rows still gives a short error.
    """

    problems: list[Problem] = field(default_factory=list)
    total: int | None = None
    shown: int = 10

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        total = self.total if self.total is not None else len(self.problems)
        lines = [str(p) for p in self.problems[: self.shown]]
        if total > len(lines):
            lines.append(f"... and {total - len(lines)} more problem(s)")
        return "\n".join(lines)

    def __reduce__(self) -> tuple[type[InputError], tuple[list[Problem], int | None, int]]:
        # Exceptions pickle their args by default (here the message), which would not rebuild the
        # problems; sweep workers send errors back to the parent process.
        return (type(self), (self.problems, self.total, self.shown))

    def in_file(self, path: str) -> InputError:
        """The same problems, those of the jobs table at a row (:data:`JOBS`) named by the trace file.

        Examples
        --------
        >>> err = InputError.single("queue 'x' names no ClusterQueue", JOBS, row=3, column="queue")
        >>> str(err.in_file("trace.csv"))
        "trace.csv, row 3, column 'queue': queue 'x' names no ClusterQueue"
        """
        problems = [
            replace(p, source=path) if p.source == JOBS and p.row is not None else p for p in self.problems
        ]
        return InputError(problems, self.total, self.shown)

    @classmethod
    def single(
        cls,
        message: str,
        source: str,
        row: int | None = None,
        column: str | None = None,
        key: str | None = None,
    ) -> InputError:
        """Build an error holding a single problem."""
        return cls([Problem(message, source, row, column, key)])

    @classmethod
    def config(cls, message: str, key: str) -> InputError:
        """Build an error about the config value at ``key`` (``config key 'cluster.nodes': ...``)."""
        return cls([Problem(message, CONFIG, key=key)])


def exit_with(err: Exception | str) -> NoReturn:
    """Print ``gpureplay: error:`` and ``err`` to stderr, exit with status 2 (any command's bad input)."""
    import click

    click.echo(f"gpureplay: error:\n{err}", err=True)
    sys.exit(2)
