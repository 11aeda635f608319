"""Four eyes: a write-off above the threshold is resolved only when a second person with
the approver role approves it. The maker can neither approve nor reject their own
request (refused, and the refusal is audited). Idempotent by request id, like every
review action; one transaction per decision.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import asdict, dataclass
from typing import Any

from core import access
from core.audit import append, canonical_json
from core.db import access as access_sql
from core.db import review as review_sql
from core.db import transaction
from core.errors import NotFoundError, RefusedError
from core.review.actions import (
    MAX_REQUEST_ID,
    TRANSITIONS,
    _required,
    _text,
)
from core.review.model import ActionResult, load_exception, payload_hash, refuse_other_payload


@dataclass(frozen=True)
class Approval:
    """A write-off awaiting (or given) a second person's decision. amount: the amount the
    maker typed; exposure_amount: the exception's exposure, which the write-off closes
    whole (core.review.actions.written_off_exposure); both in paise."""

    id: int
    exception_id: int
    resolution: str
    amount: int
    note: str
    maker: str
    version: int
    status: str
    checker: str | None
    checker_note: str | None
    request_id: str
    created_at: int
    decided_at: int | None
    exposure_amount: int | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Approval:
        return cls(**{k: row[k] for k in row.keys()})  # noqa: SIM118 - sqlite3.Row

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def list_approvals(conn: sqlite3.Connection, *, status: str | None = "pending") -> list[Approval]:
    """Approvals in a status (pending by default, oldest first); None: the latest of all."""
    return [Approval.from_row(r) for r in access_sql.list_approvals(conn, status=status)]


def pending_for(conn: sqlite3.Connection, exception_id: int) -> Approval | None:
    row = access_sql.pending_approval_for(conn, exception_id)
    return None if row is None else Approval.from_row(row)


def _get(conn: sqlite3.Connection, approval_id: int) -> Approval:
    row = access_sql.get_approval(conn, approval_id)
    if row is None:
        raise NotFoundError(f"approval {approval_id} does not exist")
    return Approval.from_row(row)


def _decide(
    conn: sqlite3.Connection,
    decision: str,
    approval_id: int,
    *,
    actor: access.Actor,
    request_id: str,
    note: str | None,
    now: int | None,
) -> ActionResult:
    rid = _required("request_id", request_id, limit=MAX_REQUEST_ID)
    note_ = _text("note", note, required=decision in ("reject", "withdraw"))
    withdrawing = decision == "withdraw"
    acting = access.require(
        conn,
        actor,
        "review" if withdrawing else "approve",
        action=decision,
        entity_type="approval",
        entity_id=str(approval_id),
    )
    found = _get(conn, int(approval_id))
    if withdrawing and found.maker != acting.actor:
        raise access.refuse(
            conn,
            acting.actor,
            f"only {found.maker}, who requested write-off #{found.id}, may withdraw it; an"
            " approver rejects it",
            action=decision,
            entity_type="approval",
            entity_id=str(found.id),
            details={"exception_id": found.exception_id, "amount": found.amount},
        )
    if not withdrawing and found.maker == acting.actor:
        raise access.refuse(
            conn,
            acting.actor,
            f"four eyes: {acting.actor} requested write-off #{found.id} and cannot {decision} "
            "it; another approver decides it, or its maker withdraws it",
            action=decision,
            entity_type="approval",
            entity_id=str(found.id),
            details={"exception_id": found.exception_id, "amount": found.amount},
        )
    payload = {
        "kind": "approval",
        "decision": decision,
        "approval_id": int(approval_id),
        "actor": acting.actor,
        "note": note_,
    }
    digest = payload_hash(payload)
    stamp = int(time.time()) if now is None else int(now)
    with transaction(conn):
        prior = review_sql.find_request(conn, rid)
        if prior is not None:
            if prior[0] != digest:
                raise refuse_other_payload(rid)
            return ActionResult(**{**json.loads(prior[1]), "replayed": True})
        current = _get(conn, found.id)
        if current.status != "pending":
            raise RefusedError(
                f"write-off #{current.id} was already {current.status} by {current.checker}"
            )
        exc = load_exception(conn, current.exception_id)
        status, version, seq_action = exc.status, exc.version, "exception.write_off_rejected"
        event = "write_off_rejected"
        if decision == "approve":
            if exc.version != current.version or exc.status not in TRANSITIONS["resolve"]:
                raise RefusedError(
                    f"exception {exc.id} changed since the write-off was requested (version "
                    f"{current.version}, now {exc.version}, {exc.status}); reject it and "
                    "decide again"
                )
            if not review_sql.update_state(
                conn,
                exc.id,
                expected_version=exc.version,
                status="RESOLVED",
                assignee=exc.assignee,
                due_date=exc.due_date,
                closed_at=stamp,
                now=stamp,
            ):
                raise RefusedError(f"exception {exc.id} changed meanwhile; reload and decide")
            status, version, seq_action, event = "RESOLVED", exc.version + 1, "", "resolved"
        access_sql.decide_approval(
            conn,
            current.id,
            status="approved" if decision == "approve" else "rejected",
            checker=acting.actor,
            checker_note=note_,
            now=stamp,
        )
        event_note = current.note if decision == "approve" else note_
        event_id = review_sql.insert_event(
            conn, (exc.id, event, acting.actor, event_note, exc.status, status, rid, stamp)
        )
        seq = append(
            conn,
            actor=acting.actor,
            action=seq_action or "exception.resolved",
            entity_type="exception",
            entity_id=str(exc.id),
            payload={
                "request_id": rid,
                "approval_id": current.id,
                **({"withdrawn_by_maker": True} if withdrawing else {}),
                "from_status": exc.status,
                "to_status": status,
                "resolution": current.resolution,
                "write_off_amount": current.amount,
                "maker": current.maker,
                "checker": acting.actor,
                "maker_note": current.note,
                "checker_note": note_,
                "version": version,
                "exposure_amount": exc.exposure_amount,
                "reason_code": exc.reason_code,
            },
            now=stamp,
        )
        result = ActionResult(
            request_id=rid,
            action=decision,
            exception_id=exc.id,
            from_status=exc.status,
            to_status=status,
            version=version,
            assignee=exc.assignee,
            event_id=event_id,
            audit_seq=seq,
            resolution=current.resolution,
            amount=current.amount,
            approval_id=current.id,
        )
        review_sql.record_request(conn, rid, digest, canonical_json(result.to_dict()), stamp)
    return result


def approve(
    conn: sqlite3.Connection,
    approval_id: int,
    *,
    actor: access.Actor,
    request_id: str,
    note: str | None = None,
    now: int | None = None,
) -> ActionResult:
    """Approve a pending write-off: the exception becomes RESOLVED (written off), decided
    by the approver on the maker's request. Refused for the maker, a non-approver, a
    decided approval, or an exception that changed since the request."""
    return _decide(
        conn, "approve", approval_id, actor=actor, request_id=request_id, note=note, now=now
    )


def reject(
    conn: sqlite3.Connection,
    approval_id: int,
    *,
    actor: access.Actor,
    note: str,
    request_id: str,
    now: int | None = None,
) -> ActionResult:
    """Reject a pending write-off (a note says why); the exception stays as it was."""
    return _decide(
        conn, "reject", approval_id, actor=actor, request_id=request_id, note=note, now=now
    )


def withdraw(
    conn: sqlite3.Connection,
    approval_id: int,
    *,
    actor: access.Actor,
    note: str,
    request_id: str,
    now: int | None = None,
) -> ActionResult:
    """The maker withdraws their own pending write-off (a note says why): recorded as a
    rejection by the maker (status rejected, checker the maker, the audit entry
    `exception.write_off_rejected` marked `withdrawn_by_maker`), so the exception is free
    to be decided again, as after a rejection. Only the maker may: a reviewer who asked
    for a write-off by mistake, or in local mode where no second person can decide it, is
    not left with an exception no one can close. Refused for anyone else (audited)."""
    return _decide(
        conn, "withdraw", approval_id, actor=actor, request_id=request_id, note=note, now=now
    )
