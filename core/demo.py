"""The hosted demo (RAZORRECON_DEMO=1): every visitor works on a private copy.

A sandbox is a copy of the benchmark database (one `sqlite3.Connection.backup`, a
consistent snapshot even while others read it) in a private temporary folder (mode 0700),
with one persona per role added. Nothing a visitor does reaches the shared database or
another visitor's copy; `reset_sandbox` restores the copy from the shared database.

Copies are bounded (anyone can open sessions): at most RAZORRECON_DEMO_MAX_SANDBOXES live
at once (default 20). Every run of a visitor's session marks their copy used (`touch`);
a copy unused for IDLE_SECONDS (20 minutes) is swept when a new one is made, and when the
cap is reached the least recently used copy idle for EVICT_IDLE_SECONDS (2 minutes) makes
room; if none is, the new visitor is told the demo is full (`DemoFullError`). A visitor
whose copy was swept gets a fresh one on their next click. Streamlit 1.67 offers no hook
for the end of a session, hence the sweep by idleness.

Anonymous visitors read whatever the copy holds, so a copy is made only of a database
that holds the synthetic benchmark and nothing people did (`template_problems`: no other
import, no users but the personas, no comments, no approvals, no audit entries or
exception events by anyone but the benchmark's build and the engine); otherwise the demo
is refused, naming the database and what it holds (`require_template`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from core import access, demo_mode
from core.activity import BOOTSTRAP_ACTOR
from core.db import connect
from core.db import demo as demo_sql
from core.db.backend import is_postgres_url
from core.db.connection import page_size_of
from core.errors import ConfigError, RefusedError
from core.views import common

DEMO_ENV = demo_mode.DEMO_ENV
# Where sandboxes are made (e.g. a volume with room for many visitors); unset: the system's
# temporary folder.
DIR_ENV = "RAZORRECON_DEMO_DIR"
PREFIX = "razorrecon-demo-"
MAX_SANDBOXES_ENV = "RAZORRECON_DEMO_MAX_SANDBOXES"
DEFAULT_MAX_SANDBOXES = 20
IDLE_SECONDS = 20 * 60
EVICT_IDLE_SECONDS = 2 * 60
LOCK_NAME = ".razorrecon-demo.lock"
PERSONAS = {
    "viewer": "viewer@demo.razorrecon.invalid",
    "reviewer": "reviewer@demo.razorrecon.invalid",
    "approver": "approver@demo.razorrecon.invalid",
    "admin": "admin@demo.razorrecon.invalid",
}


def enabled() -> bool:
    """Demo mode is only ever on when set explicitly."""
    return demo_mode.enabled()


def require_sqlite(database: str | Path) -> None:
    """Demo mode copies the shared SQLite file per browser session (SQLite's backup API);
    a PostgreSQL database has no file to copy, so the demo is refused, not half-run."""
    if is_postgres_url(str(database)):
        raise ConfigError(
            f"{DEMO_ENV}=1 needs a SQLite database: the demo gives every visitor a private "
            "copy of the database file, and a PostgreSQL database (DATABASE_URL=postgresql://"
            f"...) cannot be copied that way. Unset {DEMO_ENV}, or point DATABASE_URL at a "
            "SQLite file."
        )


# Who writes the benchmark's rows on a cold start (core.bootstrap): its build, the first
# start's import and run entries (core.activity.BOOTSTRAP_ACTOR) and the engine.
SYSTEM_ACTORS = ("benchmark", BOOTSTRAP_ACTOR, "engine")
SYNTHETIC_SOURCES = tuple(sorted(common.SYNTHETIC_SOURCES))


def template_problems(conn: sqlite3.Connection) -> list[str]:
    """What `conn` holds beyond the synthetic benchmark (empty: a demo may copy it)."""
    held = demo_sql.beyond_benchmark(
        conn, SYNTHETIC_SOURCES, tuple(PERSONAS.values()), SYSTEM_ACTORS
    )
    problems: list[str] = []
    if not held.imports:
        problems.append("no synthetic benchmark (nothing was imported)")
    if held.other_sources:
        problems.append("data imported from " + ", ".join(held.other_sources))
    if held.users:
        problems.append(f"{len(held.users)} user(s) ({_some(held.users)})")
    problems += [f"{count} {what}" for what, count in held.counts.items() if count]
    for what, actors in held.actors.items():
        if actors:
            problems.append(f"{what} by {_some(actors)}")
    return problems


def _some(names: tuple[str, ...]) -> str:
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def require_template(database: str | Path) -> None:
    """Refuse (ConfigError) unless `database` holds the synthetic benchmark and nothing
    people did: every anonymous visitor would read a copy of it."""
    require_sqlite(database)
    path = Path(database).resolve()
    if not path.is_file():
        return  # nothing yet: the cold start builds the benchmark into it
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        problems = template_problems(conn)
    finally:
        conn.close()
    if problems:
        raise ConfigError(_refusal(path, problems))


def _refusal(path: Path, problems: list[str]) -> str:
    return (
        f"{DEMO_ENV}=1 is refused on {path}: every demo visitor would get a copy of it, and "
        f"it holds {'; '.join(problems)}. The demo runs only on a database that holds the "
        "synthetic benchmark and nothing people did: point DATABASE_URL at a new file (the "
        f"app builds the benchmark into it on first start), or unset {DEMO_ENV}."
    )


def _copy(template: str | Path, target: Path) -> None:
    require_sqlite(template)
    source = sqlite3.connect(f"file:{Path(template).resolve()}?mode=ro", uri=True)
    dest = connect(target, page_size=page_size_of(source))  # the backup copies pages whole
    try:
        source.backup(dest)
        problems = template_problems(dest)  # what the visitor would read: the copy itself
        if problems:
            raise ConfigError(_refusal(Path(template).resolve(), problems))
        access.seed_users(dest, {email: role for role, email in PERSONAS.items()}, actor="demo")
    finally:
        dest.close()
        source.close()


def sandbox_root() -> Path:
    """The folder sandboxes are made in: RAZORRECON_DEMO_DIR (created when missing), or the
    system's temporary folder."""
    named = os.environ.get(DIR_ENV, "").strip()
    if not named:
        return Path(tempfile.gettempdir())
    root = Path(named)
    root.mkdir(parents=True, exist_ok=True)
    return root


class DemoFullError(RefusedError):
    """As many demo copies are in use as RAZORRECON_DEMO_MAX_SANDBOXES allows."""


def max_sandboxes(env: dict[str, str] | None = None) -> int:
    """RAZORRECON_DEMO_MAX_SANDBOXES: how many copies may live at once (1 to 10000)."""
    raw = (os.environ if env is None else env).get(MAX_SANDBOXES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_SANDBOXES
    if not raw.isdigit() or not 1 <= int(raw) <= 10_000:
        raise ConfigError(
            f"{MAX_SANDBOXES_ENV} must be a whole number from 1 to 10000 (how many demo "
            f"visitors may have a copy of the data at once), not {raw!r}"
        )
    return int(raw)


@contextlib.contextmanager
def _sandboxes_locked(root: Path) -> Iterator[None]:
    """One maker of sandboxes at a time in `root` (across processes), so the cap holds."""
    # Read-only, so a lock file another account made in a shared /tmp still serves.
    descriptor = os.open(root / LOCK_NAME, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def _live(root: Path) -> list[tuple[float, Path]]:
    """(last use, folder) of every sandbox in `root`, least recently used first."""
    found = []
    for folder in root.glob(f"{PREFIX}*"):
        with contextlib.suppress(OSError):
            if folder.is_dir():
                found.append((folder.stat().st_mtime, folder))
    return sorted(found)


def create_sandbox(template: str | Path, now: float | None = None) -> Path:
    """A private copy of `template` with the demo personas; its path. A copy that fails
    leaves no folder behind. Idle copies are swept first; at the cap the least recently
    used copy idle EVICT_IDLE_SECONDS makes room, else DemoFullError."""
    require_sqlite(template)
    cap = max_sandboxes()
    root = sandbox_root()
    moment = time.time() if now is None else now
    with _sandboxes_locked(root):
        sweep(moment)
        live = _live(root)
        while len(live) >= cap and live[0][0] <= moment - EVICT_IDLE_SECONDS:
            shutil.rmtree(live.pop(0)[1], ignore_errors=True)
        if len(live) >= cap:
            raise DemoFullError(
                f"The demo is full: {len(live)} visitors are working in it now, each on a "
                f"copy of their own ({MAX_SANDBOXES_ENV}={cap}). Try again in a few minutes; "
                "a copy is freed when its visitor has been idle for two minutes."
            )
        folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=root))  # created 0700
    target = folder / "sandbox.sqlite"
    try:
        _copy(template, target)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return target


def touch(sandbox: str | Path) -> bool:
    """Mark a visitor's copy used now (it is not swept while used); False when it is gone
    (swept while its visitor was idle)."""
    folder = Path(sandbox).parent
    try:
        os.utime(folder)
    except OSError:
        return False
    return Path(sandbox).is_file()


def reset_sandbox(template: str | Path, sandbox: str | Path) -> None:
    """Put the shared data back into the sandbox (everything the visitor did is gone, its
    anchors too); a shared database that no longer passes `template_problems` removes the
    sandbox."""
    copy = Path(sandbox)
    # The copy's anchors (its chain's head after each of the visitor's runs and decisions,
    # core.audit.anchor: beside the copy, in the demo) go with what they anchored: kept,
    # they would name rows the restored chain no longer has ("rows were cut off").
    shutil.rmtree(copy.with_name(copy.name + ".anchors"), ignore_errors=True)
    try:
        _copy(template, copy)
    except ConfigError:
        remove_sandbox(sandbox)
        raise


def remove_sandbox(sandbox: str | Path) -> None:
    folder = Path(sandbox).parent
    if folder.name.startswith(PREFIX):
        shutil.rmtree(folder, ignore_errors=True)


def sweep(now: float | None = None) -> None:
    """Remove sandboxes unused for IDLE_SECONDS (visitors who left)."""
    cutoff = (time.time() if now is None else now) - IDLE_SECONDS
    for folder in sandbox_root().glob(f"{PREFIX}*"):
        try:
            if folder.is_dir() and folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue
