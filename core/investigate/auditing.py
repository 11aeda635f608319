"""The investigator's entries in the audit trail (through `core.audit.append`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from core import audit


def record(
    conn: sqlite3.Connection,
    *,
    actor: str,
    action: str,
    exception_id: int,
    payload: Mapping[str, Any],
) -> int:
    """Append one entry about an exception; returns its sequence number."""
    return audit.append(
        conn,
        actor=actor,
        action=action,
        entity_type="exception",
        entity_id=str(exception_id),
        payload=dict(payload),
    )
