"""Replaying the trail: the exceptions' state must be exactly what their entries say.

Every change of an exception's status, assignee or version is written with an audit entry
in the same transaction (core.review.sync and core.review.actions), so replaying the
`exception.*` entries in seq order gives each exception's current status, assignee,
version, exposure and reason code. A row changed without an entry (a direct
`UPDATE exceptions SET status = 'RESOLVED'`) no longer matches its replay, and an
exception with no `exception.opened` entry was inserted behind the trail's back.

The same holds for people and four-eyes approvals: every change of a user's role or
active state is a `user.*` entry (core.access), and every approval is asked for, approved
or rejected with an `exception.write_off_requested`, `exception.resolved` (carrying its
`approval_id`) or `exception.write_off_rejected` entry (core.review), so a direct
`UPDATE users SET role = 'admin'` or an edit of an approval no longer matches its replay.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from core.db import audit as audit_sql

# Fields the trail determines, in the order they are compared and reported.
REPLAYED = ("status", "assignee", "version", "exposure_amount", "reason_code")
USER_REPLAYED = ("role", "active")
APPROVAL_REPLAYED = (
    "exception_id",
    "resolution",
    "amount",
    "note",
    "maker",
    "version",
    "status",
    "checker",
    "checker_note",
)
_USER_EVENTS = frozenset({"added", "role_changed", "deactivated", "reactivated"})


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
        self.users: dict[str, tuple[str, bool]] = {}  # email -> (role, active)
        self.approvals: dict[int, dict[str, Any]] = {}  # id -> APPROVAL_REPLAYED fields

    def add_user(self, action: str, entity_id: str, payload_json: str) -> None:
        """A `user.*` entry: the person's role and active state after it."""
        name = action.removeprefix("user.")
        if not action.startswith("user.") or name not in _USER_EVENTS:
            return
        try:
            payload: dict[str, Any] = json.loads(payload_json)
        except ValueError:
            return
        self.users[entity_id] = (str(payload.get("role")), bool(payload.get("active")))

    def _approval(self, name: str, exc_id: int, actor: str, payload: dict[str, Any]) -> None:
        approval_id = payload.get("approval_id")
        if approval_id is None:
            return
        key = int(approval_id)
        if name == "write_off_requested":
            self.approvals[key] = {
                "exception_id": exc_id,
                "resolution": payload.get("resolution"),
                "amount": payload.get("write_off_amount"),
                "note": payload.get("note"),
                "maker": actor,
                "version": payload.get("version"),
                "status": "pending",
                "checker": None,
                "checker_note": None,
            }
        elif name in ("resolved", "write_off_rejected") and key in self.approvals:
            self.approvals[key].update(
                status="approved" if name == "resolved" else "rejected",
                checker=payload.get("checker", actor),
                checker_note=payload.get("checker_note"),
            )

    def add(
        self, seq: int, action: str, entity_id: str, payload_json: str, actor: str = ""
    ) -> None:
        if not action.startswith("exception.") or self.problem is not None:
            return
        try:
            exc_id = int(entity_id)
            payload: dict[str, Any] = json.loads(payload_json)
        except ValueError:
            return
        name = action.removeprefix("exception.")
        if name in ("write_off_requested", "resolved", "write_off_rejected"):
            self._approval(name, exc_id, actor, payload)
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

    def user_mismatch(self, conn: sqlite3.Connection) -> tuple[str, str] | None:
        """(email, what differs) for the first person whose role or active state is not
        what their `user.*` entries give, or None when all match."""
        seen: set[str] = set()
        for email, role, active in audit_sql.user_states(conn):
            seen.add(email)
            want = self.users.get(email)
            if want is None:
                return email, "has no user.added entry in the trail (added behind its back)"
            for field, got, expected in zip(USER_REPLAYED, (role, bool(active)), want, strict=True):
                if got != expected:
                    return email, (
                        f"{field} is {got!r} but the trail gives {expected!r} "
                        "(changed without an audit entry)"
                    )
        for email in sorted(set(self.users) - seen):
            return email, "is in the trail but not in the users table"
        return None

    def approval_mismatch(self, conn: sqlite3.Connection) -> tuple[int, str] | None:
        """(approval id, what differs) for the first approval that is not what its
        entries give, or None when all match."""
        seen: set[int] = set()
        for row in audit_sql.approval_states(conn):
            approval_id = int(row[0])
            seen.add(approval_id)
            want = self.approvals.get(approval_id)
            if want is None:
                return approval_id, (
                    "has no exception.write_off_requested entry in the trail "
                    "(inserted behind its back)"
                )
            for field, got in zip(APPROVAL_REPLAYED, row[1:], strict=True):
                if got != want[field]:
                    return approval_id, (
                        f"{field} is {got!r} but the trail gives {want[field]!r} "
                        "(changed without an audit entry)"
                    )
        for approval_id in sorted(set(self.approvals) - seen):
            return approval_id, "is in the trail but not in the approvals table"
        return None
