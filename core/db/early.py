"""Reads a command makes before its heavy imports (core.snapshot_ahead): the standard
library only, on a read-only connection of its own; nothing is written or migrated."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any


def latest_snapshot_record(database: str) -> dict[str, Any]:
    """The `snapshot_json` of the SQLite file's latest completed run, {} when it has none
    or the file cannot be read as such a database."""
    try:
        conn = sqlite3.connect(f"{Path(database).resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute(
                "SELECT snapshot_json FROM runs WHERE status = 'completed' ORDER BY id DESC LIMIT 1"
            ).fetchone()
        finally:
            conn.close()
        record = json.loads(row[0]) if row and row[0] else {}
    except (sqlite3.Error, ValueError):
        return {}
    return dict(record) if isinstance(record, dict) else {}
