"""One run at a time per database.

A run reads stored state before it stores anything (`import-day`: the latest completed run
and its snapshot; `reconcile_database`: the raw tables) and syncs the exception queue last.
Two runs at once on one database each build on the state before the other: two `import-day`
processes started together both carried run N forward, and the one that finished last
became the latest run without the other's day in its outcomes (3,084 outcomes where a full
run over the stored tables gives 3,090). So every command that stores a run holds this
lock from before it reads stored state until its run is synced (core.pipeline,
core.streamed), and so do `import`, the app's upload and the Razorpay sync while they store
raw rows, so that none lands inside a run. Webhooks do not wait for it: a run records the
last import it read (runs.through_import_id), so rows stored during a run never count as
reconciled by it; the next day's run is then a full one. The cold start holds it from its
state read to its publish (core.bootstrap).

SQLite: `flock` on `<database>.run.lock` beside the file. A BSD lock belongs to the open
file, not to the process, so it neither disturbs nor is disturbed by SQLite's own POSIX
locks on the database, two threads of one process exclude each other, and the kernel drops
it when its holder dies. The holder writes who it is into the file for the message a
waiting run shows. PostgreSQL: a session advisory lock on the run's connection (dropped
with the session). Re-entrant on the thread that holds it, so a command may take it before
the pipeline function it calls takes it again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import json
import os
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from core.db.backend import is_postgres, seconds_setting
from core.errors import RefusedError, StorageError

# The key of the run lock on PostgreSQL (an arbitrary constant, "RRRUN" in ASCII; distinct
# from core.db.backend.WRITE_LOCK, which every writing transaction takes).
RUN_LOCK_KEY = 0x52_5252_554E
# How long a run waits for the one in progress before it gives up (seconds), unless the
# environment says otherwise: a daily import queued behind another finishes after it.
RUN_WAIT_ENV = "RAZORRECON_RUN_WAIT_S"
DEFAULT_RUN_WAIT_S = 600.0
POLL_SECONDS = 0.2

P = ParamSpec("P")
R = TypeVar("R")
_held: dict[tuple[int, str], int] = {}  # (thread id, database) -> depth
_guard = threading.Lock()


class RunInProgressError(RefusedError):
    """Another run is storing into this database; nothing was written by this one."""


def run_wait_seconds() -> float:
    """RAZORRECON_RUN_WAIT_S, else DEFAULT_RUN_WAIT_S (a bad value is refused, not guessed)."""
    return seconds_setting(RUN_WAIT_ENV, DEFAULT_RUN_WAIT_S)


def shown_as_progress(report: Callable[[float, str], None]) -> Callable[[str], None]:
    """`on_wait` for a progress bar (the app's, the cold start's): the wait as its message."""
    return lambda message: report(0.0, message[0].upper() + message[1:])


def say_waiting(message: str) -> None:
    """`on_wait` for a command line: the wait said on standard error, once."""
    print(f"note: {message}", file=sys.stderr, flush=True)


def database_file(conn: sqlite3.Connection) -> str | None:
    """The SQLite file `conn` opened, None for an in-memory or temporary database."""
    row = conn.execute("PRAGMA database_list").fetchone()
    path = str(row[2] or "") if row is not None else ""
    return path or None


def lock_file(database: str) -> Path:
    return Path(f"{database}.run.lock")


@contextlib.contextmanager
def run_lock(
    conn: sqlite3.Connection,
    what: str,
    *,
    wait_s: float | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold the database's run lock for the block (`what`: the command, for others'
    messages). Waits up to `wait_s` (default `run_wait_seconds()`) for a run in progress,
    calling `on_wait` once with who holds it; then RunInProgressError."""
    key = _database_key(conn)
    me = (threading.get_ident(), key)
    with _guard:
        depth = _held.get(me, 0)
        if depth:
            _held[me] = depth + 1
    if depth:
        try:
            yield
        finally:
            with _guard:
                _held[me] -= 1
        return
    limit = run_wait_seconds() if wait_s is None else wait_s
    with _acquired(conn, what, limit, on_wait):
        with _guard:
            _held[me] = 1
        try:
            yield
        finally:
            with _guard:
                del _held[me]


def holds_run_lock(conn: sqlite3.Connection) -> bool:
    """Whether this thread holds the run lock of `conn`'s database."""
    with _guard:
        return _held.get((threading.get_ident(), _database_key(conn)), 0) > 0


def database_key(conn: sqlite3.Connection) -> str:
    """Which database `conn` opened, as a key for in-process bookkeeping: the SQLite file, the
    PostgreSQL URL, or the connection itself for an in-memory database."""
    return _database_key(conn)


def _database_key(conn: sqlite3.Connection) -> str:
    if is_postgres(conn):
        return f"postgresql:{getattr(conn, 'url', '')}"
    database = database_file(conn)
    return database if database is not None else f"memory:{id(conn)}"


@contextlib.contextmanager
def _acquired(
    conn: sqlite3.Connection, what: str, wait_s: float, on_wait: Callable[[str], None] | None
) -> Iterator[None]:
    if is_postgres(conn):
        with _postgres_lock(conn, wait_s, on_wait):
            yield
        return
    database = database_file(conn)
    if database is None:  # nothing else can open an in-memory database
        yield
        return
    with _file_lock(database, what, wait_s, on_wait):
        yield


@contextlib.contextmanager
def _file_lock(
    database: str, what: str, wait_s: float, on_wait: Callable[[str], None] | None
) -> Iterator[None]:
    path = lock_file(database)
    try:
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the whole block
    except OSError as error:
        raise StorageError(f"could not open the run lock {path}: {error}") from error
    try:
        _wait(lambda: _try_flock(handle.fileno()), lambda: _holder(path), database, wait_s, on_wait)
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(_me(what)))
            handle.flush()
            yield
        finally:
            with contextlib.suppress(OSError):
                handle.seek(0)
                handle.truncate()
                handle.flush()
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def _postgres_lock(
    conn: sqlite3.Connection, wait_s: float, on_wait: Callable[[str], None] | None
) -> Iterator[None]:
    def attempt() -> bool:
        row = conn.execute("SELECT pg_try_advisory_lock(?)", (RUN_LOCK_KEY,)).fetchone()
        return bool(row[0])

    def holder() -> str:
        row = conn.execute(
            "SELECT a.pid, a.backend_start"
            " FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted"
            # pg_locks holds every database's locks: another database's run is not ours.
            " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND ((l.classid::bigint << 32) | l.objid::bigint) = ?",
            (RUN_LOCK_KEY,),
        ).fetchone()
        if row is None:
            return "another run"
        since = f"{row[1]:%Y-%m-%d %H:%M:%S %Z}"
        return f"another run (PostgreSQL session {row[0]}, connected since {since})"

    _wait(attempt, holder, "this database", wait_s, on_wait)
    try:
        yield
    finally:
        # A session that cannot answer any more drops the lock with itself.
        with contextlib.suppress(sqlite3.Error):
            conn.execute("SELECT pg_advisory_unlock(?)", (RUN_LOCK_KEY,)).fetchone()


def _wait(
    attempt: Callable[[], bool],
    holder: Callable[[], str],
    where: str,
    wait_s: float,
    on_wait: Callable[[str], None] | None,
) -> None:
    """Call `attempt` until it takes the lock, for at most `wait_s` seconds."""
    if attempt():
        return
    who = holder()
    if on_wait is not None:
        on_wait(f"waiting for {who} to finish storing into {where}")
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        if attempt():
            return
    raise RunInProgressError(
        f"{who} is storing into {where}; this run waited {wait_s:g} s and wrote nothing."
        f" Run it again when that one has finished ({RUN_WAIT_ENV} sets the wait)"
    )


def _me(what: str) -> dict[str, object]:
    return {
        "command": what,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }


def _holder(path: Path) -> str:
    """Who holds the lock, as its holder wrote it (nothing yet: 'another run')."""
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
        who = f"{data['command']}, pid {data['pid']} on {data['host']}, since {data['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another run"
    return f"another run ({who})"


def holding_run_lock(
    what: str,
) -> Callable[
    [Callable[Concatenate[sqlite3.Connection, P], R]],
    Callable[Concatenate[sqlite3.Connection, P], R],
]:
    """Decorate a function whose first argument is the house connection: it runs holding
    `run_lock(conn, what)` (a no-op when its caller holds it already)."""

    def decorate(
        function: Callable[Concatenate[sqlite3.Connection, P], R],
    ) -> Callable[Concatenate[sqlite3.Connection, P], R]:
        @functools.wraps(function)
        def locked(conn: sqlite3.Connection, /, *args: P.args, **kwargs: P.kwargs) -> R:
            with run_lock(conn, what):
                return function(conn, *args, **kwargs)

        return locked

    return decorate
