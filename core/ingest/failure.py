"""The one failure every reader raises when a file cannot be read at all.

Its own module so that the readers (`core.ingest.readers`) and the spreadsheet reader
(`core.ingest.sheets`) can both raise it without importing each other in a circle;
`core.ingest.readers.ReadFailure` stays its public name.
"""

from __future__ import annotations

from core.errors import Problem


class ReadFailure(Exception):
    """The file could not be read at all; carries the problems found."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems
