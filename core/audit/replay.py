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

And for who decides (`Replay.authorise`, an independent attacker, round 3, F1: a hash-chained
entry and an `UPDATE exceptions` consistent with it wrote off ₹66 lakh "by" a non-user with
no approval, and the state replay alone passed): each person's decision on an exception or a
user must be made, at that point of the trail, by someone the users replayed so far allow
(an active user with the role the decision needs; an actor that is no email address is the
command line's operator or a configured seeder, and `local:NAME` the local single user,
both admins by owning the database, as core.access says), never by a system actor; the
engine's own entries (opened, refreshed, reopened by a run, auto-cleared, no longer found)
are the engine's alone; and a write-off above the four-eyes limit resolves only through an
approval asked for by another person and decided by an approver who is not its maker.
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
# The engine's own exception entries (core.review.sync); `reopened` without a request id.
ENGINE_ACTOR = "engine"
_ENGINE_EVENTS = frozenset({"opened", "refreshed", "reopened", "auto_cleared", "no_longer_found"})
# Actors that are processes, not people: they never decide (core.activity, core.demo,
# core.investigate). An actor with no `@` that is none of these is an operator (admin).
SYSTEM_ACTORS = frozenset(
    {ENGINE_ACTOR, "razorpay-webhook", "bootstrap", "benchmark", "cli", "evaluation", "unknown"}
)
# Seeders (core.access.seed_admins / seed_users): may add people, nothing else.
SEEDERS = frozenset({"config", "demo"})
_ROLE_LEVEL = {"viewer": 0, "reviewer": 1, "approver": 2, "admin": 3}  # core.access.ROLES


def _paise(value: object) -> int:
    """An amount from a payload (paise), 0 when absent or not a whole number."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return 0
    try:
        return int(value)
    except ValueError:
        return 0


@dataclass
class _State:
    status: str
    assignee: str | None
    version: int
    exposure_amount: int | None
    reason_code: str | None


class Replay:
    """Feed it the chain's rows in seq order (`add`), then `mismatch(conn)`."""

    def __init__(self, four_eyes: int | None = None) -> None:
        self.states: dict[int, _State] = {}
        self.problem: tuple[int, str] | None = None
        self.users: dict[str, tuple[str, bool]] = {}  # email -> (role, active)
        self.approvals: dict[int, dict[str, Any]] = {}  # id -> APPROVAL_REPLAYED fields
        # Paise above which a write-off needs an approval; None: not checked.
        self.four_eyes = four_eyes
        self.violations: list[tuple[int, str]] = []  # (seq, what is not allowed)

    def _may(self, actor: str, role: str) -> str | None:
        """Why `actor` may not act with `role` at this point of the trail, else None."""
        if actor in SYSTEM_ACTORS or actor in SEEDERS:
            return f"{actor!r} is a system actor, not a person, and makes no decisions"
        if "@" not in actor or actor.startswith("local:"):
            return None  # the command line's operator or the local single user: admin
        held = self.users.get(actor)
        if held is None:
            return f"{actor} is not a user at this point of the trail (no user.added entry)"
        if not held[1]:
            return f"{actor} was deactivated before this entry and could no longer act"
        if _ROLE_LEVEL.get(held[0], -1) < _ROLE_LEVEL[role]:
            return f"{actor} is {held[0]} at this point of the trail; this needs the {role} role"
        return None

    def authorise(
        self, seq: int, actor: str, action: str, entity_type: str, payload_json: str
    ) -> None:
        """Check, before `add`/`add_user` apply it, that the entry's actor could make it;
        a violation is kept with its seq (`violations`)."""
        why = self._unauthorised(actor, action, entity_type, payload_json)
        if why is not None:
            self.violations.append((seq, f"{actor} {action}: {why}"))

    def _unauthorised(
        self, actor: str, action: str, entity_type: str, payload_json: str
    ) -> str | None:
        if entity_type == "user" and action.removeprefix("user.") in _USER_EVENTS:
            if action == "user.added" and actor in SEEDERS:
                return None
            return self._may(actor, "admin")
        if entity_type != "exception" or not action.startswith("exception."):
            return None
        name = action.removeprefix("exception.")
        try:
            payload: dict[str, Any] = json.loads(payload_json)
        except ValueError:
            return "its payload is not JSON"
        if not isinstance(payload, dict):
            return "its payload is not a JSON object"
        by_engine = name in _ENGINE_EVENTS and not (name == "reopened" and "request_id" in payload)
        if by_engine:
            if actor != ENGINE_ACTOR:
                return f"only the engine ({ENGINE_ACTOR!r}) makes this entry (a run's sync)"
            return None
        if actor == ENGINE_ACTOR:
            return "the engine makes no person's decision"
        approval_id = payload.get("approval_id")
        if name == "write_off_rejected" and payload.get("withdrawn_by_maker"):
            return self._may(actor, "reviewer") or self._maker_only(actor, approval_id)
        if name == "write_off_rejected" or (name == "resolved" and approval_id is not None):
            return self._may(actor, "approver") or self._checked(actor, approval_id, name)
        who = self._may(actor, "reviewer")
        if name == "resolved" and payload.get("resolution") == "written_off":
            closed = max(
                _paise(payload.get("exposure_amount")), _paise(payload.get("write_off_amount"))
            )
            if self.four_eyes is not None and closed > self.four_eyes:
                rule = (
                    f"four eyes: a write-off closing {closed} paise, above the limit of "
                    f"{self.four_eyes}, resolved without an approval by another approver"
                )
                return rule if who is None else f"{who}; and {rule}"
        return who

    def _pending(self, approval_id: object) -> dict[str, Any] | None:
        try:
            key = int(str(approval_id))
        except ValueError:
            return None
        found = self.approvals.get(key)
        return found if found is not None and found["status"] == "pending" else None

    def _maker_only(self, actor: str, approval_id: object) -> str | None:
        found = self._pending(approval_id)
        if found is None:
            return f"approval {approval_id} is not pending at this point of the trail"
        if found["maker"] != actor:
            return f"only its maker {found['maker']} withdraws approval {approval_id}"
        return None

    def _checked(self, actor: str, approval_id: object, name: str) -> str | None:
        found = self._pending(approval_id)
        if found is None:
            return f"approval {approval_id} is not pending at this point of the trail"
        if found["maker"] == actor:
            return f"four eyes: {actor} decided their own write-off request {approval_id}"
        return None

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
