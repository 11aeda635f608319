"""Temporary folders and files of processes that died, removed at the next start.

A large run stages gigabytes in the temporary folder (`razorrecon-staging-<pid>-*`, see
core.db.staging) and a command writes its output to `razorrecon-out-<pid>-*.tmp` first (see
core.outputs). A process that is SIGKILLed cannot clean up after itself, so the pipeline,
the command line and the app call `remove_dead_leftovers()` when they start.

An entry is removed only when its owner is certainly gone: the pid in its name is not a
live process here, and, for a staging folder, nobody holds the lock on its `.owner` file
(the owner holds it for the folder's whole life, which also protects a folder whose owner
runs in another pid namespace sharing the same temporary folder). A live process's entries
are never touched; entries without a pid in their name are left alone.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STAGING_PREFIX = "razorrecon-staging-"
OUTPUT_PREFIX = "razorrecon-out-"
OWNER_FILE = ".owner"
_NAMED = re.compile(rf"^({re.escape(STAGING_PREFIX)}|{re.escape(OUTPUT_PREFIX)})(\d+)-")
_done: set[str] = set()
_guard = threading.Lock()


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one we may not signal exists too)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _locked_by_someone(folder: Path) -> bool:
    owner = folder / OWNER_FILE
    try:
        fd = os.open(owner, os.O_RDWR)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: leave it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the lock we may have taken
    return False


def remove_dead_leftovers(folder: str | Path | None = None) -> list[Path]:
    """Remove staging folders and output temporaries of dead processes from `folder` (the
    temporary folder by default); the paths removed."""
    root = Path(folder) if folder is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        named = _NAMED.match(entry.name)
        if named is None:
            continue
        pid = int(named.group(2))
        if pid == os.getpid() or pid_alive(pid):
            continue
        path = Path(entry.path)
        try:
            if entry.is_dir(follow_symlinks=False):
                if _locked_by_someone(path):
                    continue
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:
            continue
        removed.append(path)
    return removed


def remove_dead_leftovers_once(folder: str | Path | None = None) -> list[Path]:
    """`remove_dead_leftovers`, at most once per process and folder (for start-up hooks
    that run often, like the app's)."""
    key = str(folder if folder is not None else tempfile.gettempdir())
    with _guard:
        if key in _done:
            return []
        _done.add(key)
    return remove_dead_leftovers(folder)


@contextmanager
def owned_folder(prefix: str = STAGING_PREFIX) -> Iterator[Path]:
    """A new private folder in the temporary folder, named `<prefix><pid>-...`, holding the
    lock on its `.owner` file until it is removed (with everything in it) on exit."""
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))
    try:
        fd = os.open(folder / OWNER_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, f"{os.getpid()}\n".encode())
            yield folder
        finally:
            os.close(fd)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
