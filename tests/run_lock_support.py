"""Test helpers for the run lock (core.db.run_lock) and old database files."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.db import connect
from core.db.run_lock import run_lock


@contextmanager
def held_on_another_thread(database: str, what: str = "import-day") -> Iterator[None]:
    """The run lock of `database` held by another thread for the block (the lock is
    re-entrant on the thread that holds it, so this one would not wait for itself)."""
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        holder = connect(database)
        with run_lock(holder, what):
            held.set()
            done.wait(60)
        holder.close()

    holding = threading.Thread(target=hold)
    holding.start()
    try:
        assert held.wait(60)
        yield
    finally:
        done.set()
        holding.join()


def four_kib_file(path: Path) -> None:
    """An empty WAL database file made with SQLite's default 4 KiB pages (as every file was
    before core.db.connection.HOUSE_PAGE_SIZE)."""
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("PRAGMA page_size = 4096")
    old.execute("PRAGMA journal_mode = WAL")
    old.close()
