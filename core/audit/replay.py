"""Replaying the trail: the exceptions' state must be exactly what their entries say.

Every change of an exception's status, assignee or version is written with an audit entry
in the same transaction (core.review.sync and core.review.actions), so replaying the
`exception.*` entries in seq order gives each exception's current status, assignee,
version, exposure and reason code. A row changed without an entry (a direct
`UPDATE exceptions SET status = 'RESOLVED'`) no longer matches its replay, and an
exception with no `exception.opened` entry was inserted behind the trail's back.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from core.db import audit as audit_sql

# Fields the trail determines, in the order they are compared and reported.
REPLAYED = ("status", "assignee", "version", "exposure_amount", "reason_code")


@dataclass
class _State:
    status: str
    assignee: str | None
    version: int
    exposure_amount: int | None
    reason_code: str | None


class Replay:
    """Feed it the chain's rows in seq order (`add`), then `mismatch(conn)`."""

    def __init__(self) -> None:
        self.states: dict[int, _State] = {}
        self.problem: tuple[int, str] | None = None

    def add(self, seq: int, action: str, entity_id: str, payload_json: str) -> None:
        if not action.startswith("exception.") or self.problem is not None:
            return
        try:
            exc_id = int(entity_id)
            payload: dict[str, Any] = json.loads(payload_json)
        except ValueError:
            return
        name = action.removeprefix("exception.")
        state = self.states.get(exc_id)
        if name == "opened":
            self.states[exc_id] = _State(
                "OPEN", None, 1, payload.get("exposure_amount"), payload.get("reason_code")
            )
            return
        if state is None:
            # Not opened in the trail: if the exception exists, `mismatch` names it.
            return
        if "version" in payload and "to_status" in payload:  # a person's decision
            state.status = str(payload["to_status"])
            state.assignee = payload.get("assignee")
            state.version = int(payload["version"])
            state.exposure_amount = payload.get("exposure_amount", state.exposure_amount)
            state.reason_code = payload.get("reason_code", state.reason_code)
        elif name == "reopened":  # by the engine's sync
            state.status, state.assignee = "OPEN", None
            state.version += 1
            state.exposure_amount = payload.get("exposure_amount", state.exposure_amount)
        elif name == "refreshed":
            state.version += 1
            state.exposure_amount = payload.get("exposure_amount", state.exposure_amount)
        elif name == "auto_cleared":
            state.status = "AUTO_CLEARED"
            state.version += 1

    def mismatch(self, conn: sqlite3.Connection) -> tuple[int, str] | None:
        """(exception id, what differs) for the first exception whose stored state is not
        its replay, or None when all match."""
        if self.problem is not None:
            return self.problem
        seen: set[int] = set()
        for row in audit_sql.exception_states(conn):
            exc_id = int(row[0])
            seen.add(exc_id)
            want = self.states.get(exc_id)
            if want is None:
                return exc_id, "has no exception.opened entry in the trail"
            for field, got in zip(REPLAYED, row[1:], strict=True):
                expected = getattr(want, field)
                if got != expected:
                    return exc_id, (
                        f"{field} is {got!r} but the trail gives {expected!r} "
                        "(changed without an audit entry)"
                    )
        for exc_id in sorted(set(self.states) - seen):
            return exc_id, "is in the trail but not in the exceptions table"
        return None
