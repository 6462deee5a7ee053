"""Errors raised on bad input, each naming where the problem is.

Every user-facing failure (a bad trace row, a bad node list, a bad config
value) is an :class:`InputError`. The CLI prints its message to stderr and
exits non-zero; nothing else catches it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One problem in an input: what is wrong and where.

    Parameters
    ----------
    message
        What is wrong, e.g. ``"negative value -3.0"``.
    source
        The file (or config key) the bad value came from.
    row
        1-based data row of the raw file (the header is not counted), or
        ``None`` when the problem is not tied to a row.
    column
        The raw or canonical column name, or ``None``.
    """

    message: str
    source: str
    row: int | None = None
    column: str | None = None

    def __str__(self) -> str:
        where = [self.source]
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
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

    @classmethod
    def single(
        cls, message: str, source: str, row: int | None = None, column: str | None = None
    ) -> InputError:
        """Build an error holding a single problem."""
        return cls([Problem(message, source, row, column)])
