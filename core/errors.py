"""One error base class for the whole domain.

Errors are raised (or returned as values by validators) inside `core` and translated into an
exit code by the CLI or into `st.error` by the app, and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_FAILED_CHECK = 1
EXIT_BAD_INPUT = 2
EXIT_REFUSED = 3
EXIT_STORAGE = 4
MAX_PROBLEMS_SHOWN = 20


@dataclass(frozen=True)
class Problem:
    """One defect in an input file, pointing at the exact cell.

    file: the file's name as the user gave it; line: 1-based physical line (0 when the
    whole file is at fault); column: the column's name or 1-based number ("" for a
    whole line); message: what is wrong, in plain words.

    Printed `file:line:column: message`; with no line (0) `file: column: message`, or
    `file: message` for the whole file (a missing or duplicated file, a folder that is not
    one): no line or column is invented.
    """

    file: str
    line: int
    column: str
    message: str

    @property
    def whole_file(self) -> bool:
        return self.line == 0 and not self.column

    def __str__(self) -> str:
        if self.line == 0:
            where = f"{self.file}: {self.column}" if self.column else self.file
            return f"{where}: {self.message}"
        return f"{self.file}:{self.line}:{self.column}: {self.message}"

    def as_row(self) -> dict[str, str]:
        """For a table of problems: line and column are blank for the whole file."""
        return {
            "file": self.file,
            "line": "" if self.line == 0 else str(self.line),
            "column": self.column,
            "message": self.message,
        }


class RazorReconError(Exception):
    """Base of every error the domain raises on purpose. `exit_code` is for the CLI."""

    exit_code: int = EXIT_BAD_INPUT


class InputError(RazorReconError):
    """Bad input: one or more problems, each naming file, line and column. Nothing written."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__(format_problems(self.problems))


class ConfigError(RazorReconError):
    """A setting (environment variable, parameter) is missing or invalid."""

    exit_code = EXIT_BAD_INPUT


class RefusedError(RazorReconError):
    """A well-formed request that the rules refuse (stale version, conflicting request id)."""

    exit_code = EXIT_REFUSED


class OlderRowsError(RefusedError):
    """An import would move stored rows backwards in their lifecycle (a status back, an
    amount that only grows lowered: an older file, core.ingest.lifecycle): refused, nothing
    written. problems: the moves shown, each by file, line and column; total: how many in
    all."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...], total: int) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.total = total
        text = format_problems(self.problems)
        if total > len(self.problems):
            text += f"\n... {total} row(s) in all would move back"
        super().__init__(text)


class DatabaseBusyError(RefusedError):
    """Another process held the database's write lock (on PostgreSQL another session a lock)
    for longer than the busy timeout (core.db.backend.busy_timeout_ms, PostgreSQL's
    lock_timeout on our sessions); the transaction that waited was rolled back.
    database: the database as messages name it (a URL without its password); waited: the
    wait, as text ('30 s'); postgres: whether it is a PostgreSQL database."""

    def __init__(
        self, message: str, *, database: str = "", waited: str = "", postgres: bool = False
    ) -> None:
        super().__init__(message)
        self.database = database
        self.waited = waited
        self.postgres = postgres


class StorageError(RazorReconError):
    """A file the work needs could not be written (disk full, no permission). Nothing was
    stored: the database is as it was."""

    exit_code = EXIT_STORAGE


class DatabaseUnreachableError(StorageError):
    """The database could not be reached: PostgreSQL refused or dropped the connection
    (the server down, restarting, unreachable), or a SQLite file could not be opened.
    database: the database as messages name it (a URL without its password); reason: a
    short reason ('connection refused'); midway: the connection broke while the work was
    under way (its transaction rolled back by the server, unless it broke during COMMIT),
    rather than before anything was sent."""

    def __init__(
        self, message: str, *, database: str = "", reason: str = "", midway: bool = False
    ) -> None:
        super().__init__(message)
        self.database = database
        self.reason = reason
        self.midway = midway


class RunNotSyncedError(RazorReconError):
    """A run was stored (completed) and then its exception sync failed: the run stands, the
    queue still shows the run synced before it (core.review.sync.unsynced_run). Exits as
    the sync's own error did."""

    def __init__(self, run_id: int, cause: RazorReconError, database: str | None) -> None:
        self.run_id = run_id
        self.exit_code = cause.exit_code
        where = database or "the database"
        super().__init__(
            f"the exception queue was not synced with run {run_id}: {cause}. Run {run_id} "
            f"itself is stored (completed); once that is fixed, `python -m core exceptions "
            f"sync --db {where}` (or the next run) syncs the queue with it"
        )


class NotFoundError(RazorReconError):
    """A named record does not exist."""

    exit_code = EXIT_BAD_INPUT


def format_problems(problems: tuple[Problem, ...] | list[Problem]) -> str:
    """One line per problem, at most MAX_PROBLEMS_SHOWN, then a count of the rest."""
    lines = [str(p) for p in problems[:MAX_PROBLEMS_SHOWN]]
    rest = len(problems) - MAX_PROBLEMS_SHOWN
    if rest > 0:
        lines.append(f"... and {rest} more problem(s)")
    return "\n".join(lines)
