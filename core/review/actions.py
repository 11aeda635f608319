"""Human decisions on exceptions: idempotent, version-checked, audited in one transaction.

Legal moves (anything else is refused, exit 3):

| action | from | to |
|---|---|---|
| assign | OPEN | ASSIGNED |
| assign (reassign) | ASSIGNED, INVESTIGATED, ESCALATED | unchanged, new assignee |
| investigate | ASSIGNED, ESCALATED | INVESTIGATED |
| resolve | OPEN, ASSIGNED, INVESTIGATED, ESCALATED | RESOLVED |
| escalate | OPEN, ASSIGNED, INVESTIGATED | ESCALATED |
| reopen | RESOLVED, ESCALATED, AUTO_CLEARED | OPEN (unassigned, new due date) |
| reopen | any open one marked "no longer found" (needs review) | OPEN (as above) |
| comment | any | unchanged |

Every action needs an actor with the reviewer role (core.access; a refusal is audited)
and a request id; resolve, escalate, reopen and comment need a note; assign needs an
assignee, who must be an active user with the reviewer role or above (or the local user).
A resolve carries its type: explained, corrected_at_source or written_off (with the
amount, paise). A write-off above the four-eyes threshold (RAZORRECON_FOUR_EYES_PAISE)
does not resolve: it waits for an approver other than its maker (core.review.approvals).

A comment goes through core.review.comments.add_comment (the exception's thread; it
may carry attachments there). A request id answers once: the same id with the same
payload returns the first answer and does nothing; with another payload it is refused.
`expected_version`, when given, must equal the exception's version (else refused).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Mapping

from core import access
from core.audit import append, canonical_json, write_anchor
from core.db import access as access_sql
from core.db import review as review_sql
from core.db import transaction
from core.errors import InputError, Problem, RefusedError
from core.money import format_inr
from core.review.comments import add_comment
from core.review.due import due_date
from core.review.model import (
    ActionResult,
    BulkResult,
    ExceptionRecord,
    load_exception,
    payload_hash,
    refuse_other_payload,
)

OPEN_STATUSES = ("OPEN", "ASSIGNED", "INVESTIGATED", "ESCALATED")
# action -> {from status: to status}; None as target keeps the status.
TRANSITIONS: dict[str, dict[str, str | None]] = {
    "assign": {"OPEN": "ASSIGNED", "ASSIGNED": None, "INVESTIGATED": None, "ESCALATED": None},
    "investigate": {"ASSIGNED": "INVESTIGATED", "ESCALATED": "INVESTIGATED"},
    "resolve": {s: "RESOLVED" for s in OPEN_STATUSES},
    "escalate": {"OPEN": "ESCALATED", "ASSIGNED": "ESCALATED", "INVESTIGATED": "ESCALATED"},
    "reopen": {"RESOLVED": "OPEN", "ESCALATED": "OPEN", "AUTO_CLEARED": "OPEN"},
    "comment": {
        s: None
        for s in ("OPEN", "ASSIGNED", "INVESTIGATED", "RESOLVED", "ESCALATED", "AUTO_CLEARED")
    },
}
NOTE_REQUIRED = frozenset({"resolve", "escalate", "reopen", "comment"})
# Past-tense names for events and audit actions.
EVENT_NAMES = {
    "assign": "assigned",
    "investigate": "investigated",
    "resolve": "resolved",
    "escalate": "escalated",
    "reopen": "reopened",
    "comment": "commented",
}
RESOLUTIONS = ("explained", "corrected_at_source", "written_off")
MAX_TEXT = 10_000
MAX_REQUEST_ID = 200


def _problem(field: str, message: str) -> InputError:
    return InputError([Problem("request", 0, field, message)])


def _text(field: str, value: str | None, *, required: bool, limit: int = MAX_TEXT) -> str | None:
    text = value.strip() if isinstance(value, str) else None
    if not text:
        if required:
            raise _problem(field, "is required and must not be blank")
        return None
    if len(text) > limit:
        raise _problem(field, f"is longer than {limit} characters")
    return text


def _required(field: str, value: str | None, *, limit: int) -> str:
    text = _text(field, value, required=True, limit=limit)
    if text is None:  # _text raised already; this narrows the type
        raise _problem(field, "is required and must not be blank")
    return text


def _stale(conn: sqlite3.Connection, exc: ExceptionRecord, expected: int) -> RefusedError:
    events = review_sql.events_of(conn, exc.id)
    last = f" (last: {events[-1]['action']} by {events[-1]['actor']})" if events else ""
    return RefusedError(
        f"exception {exc.id} changed since you loaded it: it is at version {exc.version}, "
        f"you had version {expected}; it is now {exc.status}{last}. Reload and decide again."
    )


def _apply(
    conn: sqlite3.Connection,
    exc: ExceptionRecord,
    action: str,
    *,
    actor: str,
    note: str | None,
    assignee: str | None,
    request_id: str,
    expected_version: int | None,
    now: int,
    resolution: str | None = None,
    amount: int | None = None,
    four_eyes: int | None = None,
) -> ActionResult:
    """Check and make one move inside the open transaction; raises RefusedError."""
    if expected_version is not None and exc.version != expected_version:
        raise _stale(conn, exc, expected_version)
    allowed = TRANSITIONS[action]
    if action == "reopen" and exc.needs_review:
        allowed = {exc.status: "OPEN"}  # no longer found: a person says it still holds
    if exc.status not in allowed:
        legal = ", ".join(allowed)
        raise RefusedError(
            f"cannot {action} exception {exc.id}: it is {exc.status} "
            f"({action} is allowed from {legal})"
        )
    if action == "resolve":
        pending = access_sql.pending_approval_for(conn, exc.id)
        if pending is not None:
            raise RefusedError(
                f"exception {exc.id} has a write-off awaiting approval (#{pending['id']} by "
                f"{pending['maker']}); an approver approves or rejects it first"
            )
        if resolution == "written_off":
            _check_write_off(exc, int(amount or 0))
        if resolution == "written_off" and four_eyes is not None:
            closed = written_off_exposure(exc.exposure_amount, int(amount or 0))
            if closed > four_eyes:
                return _request_approval(
                    conn,
                    exc,
                    actor=actor,
                    note=note or "",
                    amount=int(amount or 0),
                    request_id=request_id,
                    threshold=four_eyes,
                    now=now,
                )
    target = allowed[exc.status] or exc.status
    version = exc.version
    new_assignee = exc.assignee
    if action != "comment":
        new_assignee = assignee if assignee is not None else exc.assignee
        due = exc.due_date
        if action == "reopen":
            new_assignee = None
            due = due_date(exc.exposure_class, exc.exposure_amount, now)
        closed_at = now if target == "RESOLVED" else None
        if not review_sql.update_state(
            conn,
            exc.id,
            expected_version=exc.version,
            status=target,
            assignee=new_assignee,
            due_date=due,
            closed_at=closed_at,
            now=now,
            settled=action in ("resolve", "reopen"),
        ):
            raise _stale(conn, load_exception(conn, exc.id), exc.version)
        version += 1
    event_name = EVENT_NAMES[action]
    event_id = review_sql.insert_event(
        conn, (exc.id, event_name, actor, note, exc.status, target, request_id, now)
    )
    seq = append(
        conn,
        actor=actor,
        action=f"exception.{event_name}",
        entity_type="exception",
        entity_id=str(exc.id),
        payload={
            "request_id": request_id,
            "from_status": exc.status,
            "to_status": target,
            "note": note,
            "assignee": new_assignee,
            "version": version,
            "exposure_class": exc.exposure_class,
            "exposure_amount": exc.exposure_amount,
            "reason_code": exc.reason_code,
            **({"resolution": resolution, "write_off_amount": amount} if resolution else {}),
        },
        now=now,
    )
    return ActionResult(
        request_id=request_id,
        action=action,
        exception_id=exc.id,
        from_status=exc.status,
        to_status=target,
        version=version,
        assignee=new_assignee,
        event_id=event_id,
        audit_seq=seq,
        resolution=resolution,
        amount=amount,
    )


def written_off_exposure(exposure_amount: int | None, amount: int) -> int:
    """The money a write-off takes off the books, which the four-eyes threshold is tested
    on: the exception's whole exposure, since resolving closes all of it whatever amount
    the reviewer types (a partial write-off leaves nothing open to chase the rest), or the
    typed amount when it is larger (an exception with no exposure figure, e.g. structural).
    Paise."""
    return max(int(exposure_amount or 0), int(amount))


def _check_write_off(exc: ExceptionRecord, amount: int) -> None:
    """A write-off may not be larger than a positive exposure: more than is at risk cannot
    be lost, so such an amount is a mistake (a digit too many) and is refused."""
    exposure = int(exc.exposure_amount or 0)
    if exposure > 0 and amount > exposure:
        raise _problem(
            "amount",
            f"a write-off of {format_inr(amount)} is more than exception {exc.id}'s exposure "
            f"of {format_inr(exposure)}; write off at most the exposure",
        )


def _request_approval(
    conn: sqlite3.Connection,
    exc: ExceptionRecord,
    *,
    actor: str,
    note: str,
    amount: int,
    request_id: str,
    threshold: int,
    now: int,
) -> ActionResult:
    """A write-off above the threshold: record it as awaiting a second person's approval.
    The exception keeps its status and version; resolving it meanwhile is refused."""
    approval_id = access_sql.insert_approval(
        conn,
        exception_id=exc.id,
        resolution="written_off",
        amount=amount,
        note=note,
        maker=actor,
        version=exc.version,
        request_id=request_id,
        now=now,
    )
    event_id = review_sql.insert_event(
        conn,
        (exc.id, "write_off_requested", actor, note, exc.status, exc.status, request_id, now),
    )
    seq = append(
        conn,
        actor=actor,
        action="exception.write_off_requested",
        entity_type="exception",
        entity_id=str(exc.id),
        payload={
            "request_id": request_id,
            "approval_id": approval_id,
            "resolution": "written_off",
            "write_off_amount": amount,
            "four_eyes_threshold": threshold,
            "four_eyes_amount": written_off_exposure(exc.exposure_amount, amount),
            "note": note,
            "status": exc.status,
            "version": exc.version,
            "exposure_amount": exc.exposure_amount,
        },
        now=now,
    )
    return ActionResult(
        request_id=request_id,
        action="resolve",
        exception_id=exc.id,
        from_status=exc.status,
        to_status=exc.status,
        version=exc.version,
        assignee=exc.assignee,
        event_id=event_id,
        audit_seq=seq,
        resolution="written_off",
        amount=amount,
        approval_id=approval_id,
    )


def _resolution(
    action: str, resolution: str | None, amount: int | None
) -> tuple[str | None, int | None]:
    """A resolve's (type, amount); other actions take neither."""
    if action != "resolve":
        if resolution is not None or amount is not None:
            raise _problem("resolution", f"{action} takes no resolution or amount")
        return None, None
    kind = resolution or "explained"
    if kind not in RESOLUTIONS:
        raise _problem(
            "resolution", f"unknown resolution {kind!r}; one of {', '.join(RESOLUTIONS)}"
        )
    if kind == "written_off":
        if amount is None or isinstance(amount, bool) or int(amount) <= 0:
            raise _problem("amount", "a write-off needs the amount written off, in paise, above 0")
        return kind, int(amount)
    if amount is not None:
        raise _problem("amount", f"only a write-off carries an amount, not {kind}")
    return kind, None


def _assignee(conn: sqlite3.Connection, value: str | None) -> str | None:
    """An assignee is a person who can work exceptions: an active reviewer or above, or
    the local single user of this machine (an admin: core.access.local_user)."""
    if value is None:
        return None
    if value == access.local_user().actor:
        return value
    user = access.get_user(conn, value)
    if user is None or not user.active or not access.role_includes(user.role, "review"):
        raise _problem(
            "assignee", f"{value!r} is not an active user with the reviewer role or above"
        )
    return user.email


def act(
    conn: sqlite3.Connection,
    action: str,
    exception_id: int,
    *,
    actor: access.Actor,
    request_id: str,
    note: str | None = None,
    assignee: str | None = None,
    expected_version: int | None = None,
    now: int | None = None,
    resolution: str | None = None,
    amount: int | None = None,
) -> ActionResult:
    """Make one action on one exception (see the module's table); the answer, or a replay."""
    if action not in TRANSITIONS:
        raise _problem("action", f"unknown action {action!r}")
    if isinstance(actor, str):
        _required("actor", actor, limit=200)
    rid = _required("request_id", request_id, limit=MAX_REQUEST_ID)
    note_ = _text("note", note, required=action in NOTE_REQUIRED)
    assignee_ = _text("assignee", assignee, required=action == "assign", limit=200)
    if action not in ("assign", "escalate") and assignee_ is not None:
        raise _problem("assignee", f"{action} takes no assignee")
    resolution_, amount_ = _resolution(action, resolution, amount)
    if action == "comment":  # the thread's entry, its history event and audit entry
        return add_comment(
            conn,
            exception_id,
            actor=actor,
            body=note_ or "",
            request_id=rid,
            expected_version=expected_version,
            now=now,
        )
    acting = access.require(
        conn, actor, "review", action=action, entity_type="exception", entity_id=str(exception_id)
    )
    actor_ = acting.actor
    assignee_ = _assignee(conn, assignee_)
    four_eyes = access.four_eyes_threshold() if resolution_ == "written_off" else None
    payload = {
        "kind": "single",
        "action": action,
        "exception_id": int(exception_id),
        "actor": actor_,
        "note": note_,
        "assignee": assignee_,
        "expected_version": expected_version,
        **({"resolution": resolution_, "amount": amount_} if resolution_ else {}),
    }
    digest = payload_hash(payload)
    stamp = int(time.time()) if now is None else int(now)
    outermost = not conn.in_transaction  # then this transaction's head is anchored here
    with transaction(conn):
        prior = review_sql.find_request(conn, rid)
        if prior is not None:
            if prior[0] != digest:
                raise refuse_other_payload(rid)
            return ActionResult(**{**json.loads(prior[1]), "replayed": True})
        exc = load_exception(conn, int(exception_id))
        result = _apply(
            conn,
            exc,
            action,
            actor=actor_,
            note=note_,
            assignee=assignee_,
            request_id=rid,
            expected_version=expected_version,
            now=stamp,
            resolution=resolution_,
            amount=amount_,
            four_eyes=four_eyes,
        )
        review_sql.record_request(conn, rid, digest, canonical_json(result.to_dict()), stamp)
        if outermost:
            write_anchor(conn, now=stamp)
    return result


def assign(
    conn: sqlite3.Connection,
    exception_id: int,
    *,
    actor: access.Actor,
    assignee: str,
    request_id: str,
    note: str | None = None,
    expected_version: int | None = None,
) -> ActionResult:
    """Give the exception to `assignee` (OPEN becomes ASSIGNED; otherwise a reassignment)."""
    return act(
        conn,
        "assign",
        exception_id,
        actor=actor,
        assignee=assignee,
        request_id=request_id,
        note=note,
        expected_version=expected_version,
    )


def mark_investigated(
    conn: sqlite3.Connection,
    exception_id: int,
    *,
    actor: access.Actor,
    request_id: str,
    note: str | None = None,
    expected_version: int | None = None,
) -> ActionResult:
    """Record that the assigned reviewer has investigated (ASSIGNED/ESCALATED -> INVESTIGATED)."""
    return act(
        conn,
        "investigate",
        exception_id,
        actor=actor,
        request_id=request_id,
        note=note,
        expected_version=expected_version,
    )


def resolve(
    conn: sqlite3.Connection,
    exception_id: int,
    *,
    actor: access.Actor,
    note: str,
    request_id: str,
    expected_version: int | None = None,
    resolution: str = "explained",
    amount: int | None = None,
) -> ActionResult:
    """Close the exception with a decision; the note says what was decided and why.

    resolution: explained, corrected_at_source, or written_off with `amount` (paise). A
    write-off above the four-eyes threshold is recorded as awaiting approval instead
    (`result.approval_id`); an approver other than the maker then approves it.
    """
    return act(
        conn,
        "resolve",
        exception_id,
        actor=actor,
        note=note,
        request_id=request_id,
        expected_version=expected_version,
        resolution=resolution,
        amount=amount,
    )


def escalate(
    conn: sqlite3.Connection,
    exception_id: int,
    *,
    actor: access.Actor,
    note: str,
    request_id: str,
    assignee: str | None = None,
    expected_version: int | None = None,
) -> ActionResult:
    """Hand the exception up (optionally to `assignee`); the note says why."""
    return act(
        conn,
        "escalate",
        exception_id,
        actor=actor,
        note=note,
        assignee=assignee,
        request_id=request_id,
        expected_version=expected_version,
    )


def reopen(
    conn: sqlite3.Connection,
    exception_id: int,
    *,
    actor: access.Actor,
    note: str,
    request_id: str,
    expected_version: int | None = None,
) -> ActionResult:
    """Put a RESOLVED, ESCALATED or AUTO_CLEARED exception back in the queue as OPEN."""
    return act(
        conn,
        "reopen",
        exception_id,
        actor=actor,
        note=note,
        request_id=request_id,
        expected_version=expected_version,
    )


def comment(
    conn: sqlite3.Connection,
    exception_id: int,
    *,
    actor: access.Actor,
    note: str,
    request_id: str,
    expected_version: int | None = None,
) -> ActionResult:
    """Add a comment to the history; the status and version stay."""
    return act(
        conn,
        "comment",
        exception_id,
        actor=actor,
        note=note,
        request_id=request_id,
        expected_version=expected_version,
    )


def _bulk(
    conn: sqlite3.Connection,
    action: str,
    exception_ids: Iterable[int],
    *,
    actor: access.Actor,
    request_id: str,
    note: str | None,
    assignee: str | None,
    expected_versions: Mapping[int, int] | None,
    now: int | None,
) -> BulkResult:
    if isinstance(actor, str):
        _required("actor", actor, limit=200)
    rid = _required("request_id", request_id, limit=MAX_REQUEST_ID)
    note_ = _text("note", note, required=action in NOTE_REQUIRED)
    assignee_ = _text("assignee", assignee, required=action == "assign", limit=200)
    ids = sorted({int(i) for i in exception_ids})
    if not ids:
        raise _problem("exception_ids", "select at least one exception")
    acting = access.require(
        conn,
        actor,
        "review",
        action=f"bulk {action}",
        entity_type="exception",
        entity_id=",".join(str(i) for i in ids[:20]),
    )
    actor_ = acting.actor
    assignee_ = _assignee(conn, assignee_)
    versions = {int(k): int(v) for k, v in (expected_versions or {}).items()}
    payload = {
        "kind": "bulk",
        "action": action,
        "exception_ids": ids,
        "actor": actor_,
        "note": note_,
        "assignee": assignee_,
        "expected_versions": {str(k): versions[k] for k in sorted(versions)},
    }
    digest = payload_hash(payload)
    stamp = int(time.time()) if now is None else int(now)
    outermost = not conn.in_transaction
    with transaction(conn):
        prior = review_sql.find_request(conn, rid)
        if prior is not None:
            if prior[0] != digest:
                raise refuse_other_payload(rid)
            return BulkResult.from_dict(json.loads(prior[1]), replayed=True)
        found = {r["id"]: ExceptionRecord.from_row(r) for r in review_sql.get_exceptions(conn, ids)}
        applied: list[ActionResult] = []
        skipped: list[tuple[int, str]] = []
        for exc_id in ids:
            exc = found.get(exc_id)
            if exc is None:
                skipped.append((exc_id, f"exception {exc_id} does not exist"))
                continue
            try:
                with transaction(conn):
                    applied.append(
                        _apply(
                            conn,
                            exc,
                            action,
                            actor=actor_,
                            note=note_,
                            assignee=assignee_,
                            request_id=rid,
                            expected_version=versions.get(exc_id),
                            now=stamp,
                        )
                    )
            except RefusedError as refusal:
                skipped.append((exc_id, str(refusal)))
        result = BulkResult(rid, action, tuple(applied), tuple(skipped))
        review_sql.record_request(conn, rid, digest, canonical_json(result.to_dict()), stamp)
        if outermost:
            write_anchor(conn, now=stamp)
    return result


def bulk_assign(
    conn: sqlite3.Connection,
    exception_ids: Iterable[int],
    *,
    actor: access.Actor,
    assignee: str,
    request_id: str,
    note: str | None = None,
    expected_versions: Mapping[int, int] | None = None,
    now: int | None = None,
) -> BulkResult:
    """Assign every selected exception that may be assigned; the rest are listed as skipped.

    One request id covers the whole selection, so a repeated click replays the first answer.
    """
    return _bulk(
        conn,
        "assign",
        exception_ids,
        actor=actor,
        request_id=request_id,
        note=note,
        assignee=assignee,
        expected_versions=expected_versions,
        now=now,
    )


def bulk_escalate(
    conn: sqlite3.Connection,
    exception_ids: Iterable[int],
    *,
    actor: access.Actor,
    note: str,
    request_id: str,
    assignee: str | None = None,
    expected_versions: Mapping[int, int] | None = None,
    now: int | None = None,
) -> BulkResult:
    """Escalate every selected exception that may be escalated; the rest are skipped."""
    return _bulk(
        conn,
        "escalate",
        exception_ids,
        actor=actor,
        request_id=request_id,
        note=note,
        assignee=assignee,
        expected_versions=expected_versions,
        now=now,
    )
