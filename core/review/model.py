"""The records of the review area: exceptions, their events, and action results."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from core.audit import canonical_json
from core.db import review as review_sql
from core.errors import NotFoundError, RefusedError

STATUSES = ("OPEN", "ASSIGNED", "INVESTIGATED", "RESOLVED", "ESCALATED", "AUTO_CLEARED")
CLOSED_STATUSES = frozenset({"RESOLVED", "AUTO_CLEARED"})


@dataclass(frozen=True)
class ExceptionRecord:
    """One exception of the queue.

    entity_type/entity_id/reason_code: its identity across runs; reason_codes: all codes
    (';'-joined); exposure_class/exposure_amount (paise) and expected/actual/difference
    (paise): the facts of the latest run that had it; settlement_id, order_id, utr,
    entity_created_at: context; status: lifecycle status; assignee: the reviewer who
    has it; due_date: ISO date (see core.review.due); version: moves on with every
    change, for optimistic concurrency; first_run_id/last_run_id: runs that first and
    last had it; opened_at/updated_at/closed_at: Unix seconds.
    """

    id: int
    entity_type: str
    entity_id: str
    reason_code: str
    reason_codes: str
    exposure_class: str
    exposure_amount: int
    expected_amount: int | None
    actual_amount: int | None
    difference: int | None
    settlement_id: str | None
    order_id: str | None
    utr: str | None
    entity_created_at: int | None
    status: str
    assignee: str | None
    due_date: str | None
    version: int
    first_run_id: int
    last_run_id: int
    opened_at: int
    updated_at: int
    closed_at: int | None
    not_found_run_id: int | None = None  # a run no longer found it after a person touched it

    @property
    def needs_review(self) -> bool:
        """'Needs review: no longer found': open until a person resolves or reopens it."""
        return self.not_found_run_id is not None and not self.is_closed

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> ExceptionRecord:
        return cls(**{k: row[k] for k in row.keys()})  # noqa: SIM118 (Row has no __iter__ of keys)

    @property
    def is_closed(self) -> bool:
        return self.status in CLOSED_STATUSES

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ExceptionEvent:
    """One step of an exception's history.

    action: opened, reopened, refreshed, auto_cleared (by the engine's sync) or assigned,
    commented, investigated, resolved, escalated, reopened (by a person); actor: who;
    note: the reason or comment; from_status/to_status: the move (equal for a comment);
    request_id: the idempotency key of a human action; created_at: Unix seconds.
    """

    id: int
    exception_id: int
    action: str
    actor: str
    note: str | None
    from_status: str | None
    to_status: str | None
    request_id: str | None
    created_at: int

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> ExceptionEvent:
        return cls(**{k: row[k] for k in row.keys()})  # noqa: SIM118


@dataclass(frozen=True)
class ActionResult:
    """The answer to one human action.

    request_id: its idempotency key; action: assign, comment, investigate, resolve,
    escalate or reopen; exception_id: the exception; from_status/to_status: the move;
    version: the exception's version after it; assignee: after it; event_id and
    audit_seq: the history row and the audit entry it wrote; replayed: True when this is
    the stored answer to an earlier identical request (nothing was done again);
    resolution and amount: a resolve's type (explained, corrected_at_source, written_off)
    and the amount written off (paise); approval_id: the four-eyes approval this action
    requested (the exception is not resolved yet) or decided.
    """

    request_id: str
    action: str
    exception_id: int
    from_status: str
    to_status: str
    version: int
    assignee: str | None
    event_id: int
    audit_seq: int
    replayed: bool = False
    resolution: str | None = None
    amount: int | None = None
    approval_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BulkResult:
    """The answer to one multi-select action.

    applied: one ActionResult per exception changed; skipped: (exception_id, reason) for
    those the rules refused (closed, stale version, unknown id); replayed: as in
    ActionResult.
    """

    request_id: str
    action: str
    applied: tuple[ActionResult, ...]
    skipped: tuple[tuple[int, str], ...]
    replayed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "action": self.action,
            "applied": [a.to_dict() for a in self.applied],
            "skipped": [list(s) for s in self.skipped],
            "replayed": self.replayed,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, replayed: bool) -> BulkResult:
        return cls(
            request_id=data["request_id"],
            action=data["action"],
            applied=tuple(ActionResult(**{**a, "replayed": replayed}) for a in data["applied"]),
            skipped=tuple((int(i), str(r)) for i, r in data["skipped"]),
            replayed=replayed,
        )


# --- what every idempotent review write shares ---------------------------------------------


def payload_hash(payload: Mapping[str, Any]) -> str:
    """The request's fingerprint: a request id replayed with another payload is refused."""
    return hashlib.sha256(canonical_json(dict(payload)).encode("utf-8")).hexdigest()


def refuse_other_payload(request_id: str) -> RefusedError:
    return RefusedError(
        f"request id {request_id!r} was already used for a different action or payload; "
        "use a new request id for a new action"
    )


def load_exception(conn: sqlite3.Connection, exception_id: int) -> ExceptionRecord:
    row = review_sql.get_exception(conn, exception_id)
    if row is None:
        raise NotFoundError(f"exception {exception_id} does not exist")
    return ExceptionRecord.from_row(row)
