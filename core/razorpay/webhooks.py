"""Razorpay webhooks: raw body + headers in, a `WebhookResult` out. No web framework here.

A delivery is checked in this order, and the first failure ends it with nothing changed
besides a record of it. An unsigned delivery (steps 1-2, or a body over MAX_BODY_BYTES) is
only counted, per UTC day and verdict (`razorpay_webhook_rejections`): a forger cannot
grow the database. A signed one gets a row in the delivery log (the body's hash and size,
never its text); the log is pruned by age (RAZORPAY_WEBHOOK_LOG_DAYS, default 30).

1. a webhook secret is configured (else 503, so Razorpay retries once it is);
2. `X-Razorpay-Signature` equals HMAC-SHA256(secret, raw body) in hex, compared in constant
   time. The raw bytes are what is signed: the same JSON re-serialised differently fails;
3. `X-Razorpay-Event-Id` is present; the body is UTF-8 JSON shaped like an event (nested at
   most MAX_JSON_DEPTH deep, integers of at most MAX_INT_DIGITS digits), and every entity it
   carries passes the importer's validation (else 400, logged; never a 500);
4. the event is not dated beyond the allowed clock skew into the future
   (RAZORPAY_WEBHOOK_MAX_SKEW_SECONDS, default 300; else 422 "refused", logged): an event
   dated 2100 would otherwise outrank every later real event for its entities;
5. neither the event id nor the exact body is already in the inbox (else 200 "duplicate":
   Razorpay retries deliveries, and a replay, even under a new unsigned event id header,
   must change nothing).

Then, in one transaction: the carried payments, refunds and settlements are upserted where it
is safe, the entities are marked for re-reconciliation, and the event enters the inbox.
Safe means the event is not older than one already applied to that entity and does not move
it backwards in its lifecycle: the importer's one table (core.ingest.lifecycle: a status
back, captured -> authorized, processed -> pending or failed, ...; a payment's
amount_refunded lowered), so events may arrive in any order. A dispute event stores its
dispute (the newest event wins; a dispute's phases may open a decided one again, so its
status is not ranked) and marks it and its payment.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import os
import re
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pandas as pd

from core import demo_mode
from core.activity import record_webhook
from core.audit import write_anchor
from core.dataset import Dataset
from core.db import razorpay as db
from core.db import transaction
from core.errors import ConfigError, InputError

LOG = logging.getLogger("razorrecon.webhooks")

SIGNATURE_HEADER = "x-razorpay-signature"
EVENT_ID_HEADER = "x-razorpay-event-id"
MAX_BODY_BYTES = 1_000_000
MAX_JSON_DEPTH = 32
MAX_INT_DIGITS = 19  # int64: paise, Unix seconds
DEFAULT_LOG_DAYS = 30
DEFAULT_MAX_SKEW_SECONDS = 300
UNSIGNED_VERDICTS = frozenset({"unconfigured", "bad_signature", "too_large"})
SOURCE = "razorpay_webhook"
_EVENT_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,100}$")
_SIGNATURE = re.compile(r"^[0-9a-fA-F]{64}$")

# event name -> entities it may carry that we upsert
PAYMENT_EVENTS = frozenset({"payment.authorized", "payment.captured", "payment.failed"})
REFUND_EVENTS = frozenset({"refund.created", "refund.processed", "refund.failed"})
SETTLEMENT_EVENTS = frozenset({"settlement.processed"})
DISPUTE_PREFIX = "payment.dispute."

# entity (also its outcome entity type) -> its Dataset field: raw table, importer kind and
# lifecycle (core.ingest.lifecycle.STATUS_RANK, GROWING_AMOUNTS)
_ENTITIES: dict[str, str] = {
    "payment": "payments",
    "refund": "refunds",
    "settlement": "settlements",
    "dispute": "disputes",
}


@dataclass(frozen=True)
class WebhookResult:
    """What became of one delivery.

    status: the HTTP status to answer with. verdict: accepted, duplicate, bad_signature,
    malformed or unconfigured. event_id / event: from the header and body when readable.
    message: one line for the log and the response. upserted: 'payment:pay_X' entities
    written; skipped: entities carried but not written, with why; marked: entities marked
    for re-reconciliation.
    """

    status: int
    verdict: str
    event_id: str | None
    event: str | None
    message: str
    upserted: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    marked: tuple[str, ...] = ()

    @property
    def changed_something(self) -> bool:
        return self.verdict == "accepted"

    def as_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "event_id": self.event_id,
            "event": self.event,
            "message": self.message,
            "upserted": list(self.upserted),
            "skipped": list(self.skipped),
            "marked": list(self.marked),
        }


class _Malformed(Exception):
    """A verified delivery whose content we cannot use."""


@dataclass(frozen=True)
class WebhookLimits:
    """log_days: delivery log rows older than this are pruned; max_skew_seconds: how far
    an event's created_at may lie ahead of this server's clock."""

    log_days: int = DEFAULT_LOG_DAYS
    max_skew_seconds: int = DEFAULT_MAX_SKEW_SECONDS


def limits_from_env(env: Mapping[str, str] | None = None) -> WebhookLimits:
    """RAZORPAY_WEBHOOK_LOG_DAYS and RAZORPAY_WEBHOOK_MAX_SKEW_SECONDS (whole numbers, the
    first at least 1); ConfigError naming the variable when one is not."""
    source = os.environ if env is None else env

    def number(name: str, default: int, minimum: int) -> int:
        text = source.get(name, "").strip()
        if not text:
            return default
        if not text.isdigit() or int(text) < minimum:
            raise ConfigError(f"{name} must be a whole number of at least {minimum}: {text!r}")
        return int(text)

    return WebhookLimits(
        log_days=number("RAZORPAY_WEBHOOK_LOG_DAYS", DEFAULT_LOG_DAYS, 1),
        max_skew_seconds=number("RAZORPAY_WEBHOOK_MAX_SKEW_SECONDS", DEFAULT_MAX_SKEW_SECONDS, 0),
    )


@dataclass
class _Plan:
    frames: dict[str, list[pd.DataFrame]] = field(default_factory=dict)
    versions: list[tuple[str, str]] = field(default_factory=list)
    upserted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    marks: list[tuple[str, str]] = field(default_factory=list)
    absent: dict[str, tuple[str, ...]] = field(default_factory=dict)  # Dataset.absent


def sign(body: bytes, secret: str) -> str:
    """The signature Razorpay sends for `body`: hex HMAC-SHA256 keyed with the secret."""
    return hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify_signature(body: bytes, signature: str | None, secret: str) -> bool:
    """Constant-time check of `signature` against the raw body."""
    if not signature or not _SIGNATURE.match(signature.strip()):
        return False
    return hmac.compare_digest(sign(body, secret), signature.strip().lower())


def handle_webhook(
    conn: sqlite3.Connection,
    body: bytes,
    headers: Mapping[str, str],
    *,
    secret: str | None,
    now: int | None = None,
    limits: WebhookLimits | None = None,
) -> WebhookResult:
    """Verify, deduplicate and apply one delivery; see the module doc for the rules.
    `limits` defaults to the environment's (limits_from_env)."""
    received_at = int(time.time()) if now is None else now
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    digest = hashlib.sha256(body).hexdigest()
    raw_event_id = lowered.get(EVENT_ID_HEADER, "").strip() or None

    def reject(status: int, verdict: str, message: str, event: str | None = None) -> WebhookResult:
        if verdict in UNSIGNED_VERDICTS:
            # Unsigned: counted, never stored row by row (anyone can send these).
            day = dt.datetime.fromtimestamp(received_at, tz=dt.UTC).date().isoformat()
            with transaction(conn):
                db.count_webhook_rejection(conn, day=day, verdict=verdict, now=received_at)
            LOG.debug("webhook rejected (%s): %s", verdict, message)
            shown = verdict if verdict != "too_large" else "malformed"
            return WebhookResult(status, shown, raw_event_id, event, message)
        _log(verdict, raw_event_id[:100] if raw_event_id else None, message)
        LOG.warning("webhook rejected (%s): %s [event id %r]", verdict, message, raw_event_id)
        return WebhookResult(status, verdict, raw_event_id, event, message)

    def _log(verdict: str, event_id: str | None, message: str) -> None:
        with transaction(conn):
            db.log_webhook_delivery(
                conn,
                received_at=received_at,
                event_id=event_id,
                verdict=verdict,
                reason=message,
                body_sha256=digest,
                body_bytes=len(body),
            )
            db.prune_webhook_log(conn, before=received_at - window)

    try:
        chosen = limits or limits_from_env()
    except ConfigError as exc:
        return reject(503, "unconfigured", str(exc))
    window = chosen.log_days * 86_400
    if demo_mode.enabled():
        return reject(503, "unconfigured", demo_mode.refusal(demo_mode.WEBHOOK))
    if not secret:
        return reject(503, "unconfigured", "RAZORPAY_WEBHOOK_SECRET is not set")
    if len(body) > MAX_BODY_BYTES:
        return reject(413, "too_large", f"body of {len(body)} bytes is over {MAX_BODY_BYTES}")
    if not verify_signature(body, lowered.get(SIGNATURE_HEADER), secret):
        reason = "missing" if SIGNATURE_HEADER not in lowered else "does not match the body"
        return reject(401, "bad_signature", f"X-Razorpay-Signature {reason}")
    if raw_event_id is None or not _EVENT_ID.match(raw_event_id):
        return reject(400, "malformed", "X-Razorpay-Event-Id is missing or invalid")
    event_id = raw_event_id
    try:
        text, event = _parse(body)
    except _Malformed as exc:
        return reject(400, "malformed", str(exc))
    name = str(event["event"])
    created_at = int(event["created_at"])
    ahead = created_at - received_at
    if ahead > chosen.max_skew_seconds:
        return reject(
            422,
            "refused",
            f"created_at {created_at} is {ahead} s ahead of this server's clock (at most "
            f"{chosen.max_skew_seconds} s allowed); refused so that it cannot outrank later "
            "events",
            name,
        )
    try:
        with transaction(conn):
            seen = db.inbox_event(conn, event_id)
            same_body = db.inbox_event_with_body(conn, digest) if seen is None else None
            if seen is not None or same_body is not None:
                if seen is not None:
                    note = "" if seen["body_sha256"] == digest else " (with a different body)"
                    message = f"event {event_id} was already received{note}; nothing changed"
                elif same_body is not None:
                    message = (
                        f"this body was already received as event {same_body['event_id']}"
                        "; a replay under a new event id changes nothing"
                    )
                _log("duplicate", event_id, message)
                LOG.info("webhook duplicate: %s", message)
                return WebhookResult(200, "duplicate", event_id, name, message)
            plan = _plan(conn, event_id, name, created_at, event["payload"])
            handled = bool(plan.marks)
            _apply(conn, plan, event_id, created_at, digest, received_at, name)
            outcome = "applied" if handled else "ignored"
            detail = {"upserted": plan.upserted, "skipped": plan.skipped, "marked": plan.marks}
            db.insert_inbox_event(
                conn,
                event_id=event_id,
                event=name,
                event_created_at=created_at,
                received_at=received_at,
                body_sha256=digest,
                body=text,
                outcome=outcome,
                detail_json=json.dumps(detail, sort_keys=True),
            )
            if plan.upserted:  # rows changed: the trail says so, in this transaction
                record_webhook(
                    conn,
                    event_id,
                    event=name,
                    body_sha256=digest,
                    upserted=plan.upserted,
                    skipped=plan.skipped,
                    marked=len(plan.marks),
                )
            message = (
                f"{name} {outcome}: {len(plan.upserted)} upserted, {len(plan.skipped)} "
                f"skipped, {len(plan.marks)} marked for re-reconciliation"
            )
            _log("accepted", event_id, message)
        if plan.upserted:
            write_anchor(conn)
    except _Malformed as exc:
        return reject(400, "malformed", str(exc), name)
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # A signed event whose values break a conversion: refused and logged, never a 500.
        return reject(400, "malformed", f"the event could not be used: {exc}"[:500], name)
    LOG.info("webhook %s: %s", event_id, message)
    return WebhookResult(
        200,
        "accepted",
        event_id,
        name,
        message,
        upserted=tuple(plan.upserted),
        skipped=tuple(plan.skipped),
        marked=tuple(f"{t}:{i}" for t, i in plan.marks),
    )


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Malformed(f"duplicate JSON key {key!r}")
        result[key] = value
    return result


def _reject_constant(token: str) -> Any:
    raise _Malformed(f"JSON constant {token} is not allowed")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Malformed(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _depth(value: Any) -> int:
    """How deeply a parsed JSON value nests (iteratively: no recursion to exhaust)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _parse(body: bytes) -> tuple[str, dict[str, Any]]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Malformed(f"body is not UTF-8 (byte {exc.start})") from exc
    try:
        event = json.loads(
            text,
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_reject_constant,
            parse_int=_bounded_int,
        )
    except json.JSONDecodeError as exc:
        raise _Malformed(f"body is not JSON: {exc.msg} at line {exc.lineno}") from exc
    except RecursionError as exc:
        raise _Malformed(f"body nests deeper than {MAX_JSON_DEPTH} levels") from exc
    except ValueError as exc:  # e.g. a number too long for Python's int conversion limit
        raise _Malformed(f"body is not usable JSON: {exc}") from exc
    if _depth(event) > MAX_JSON_DEPTH:
        raise _Malformed(f"body nests deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(event, dict):
        raise _Malformed("body is not a JSON object")
    if event.get("entity", "event") != "event":
        raise _Malformed(f"entity is {event.get('entity')!r}, not 'event'")
    name = event.get("event")
    if not isinstance(name, str) or not name or len(name) > 100:
        raise _Malformed("'event' is missing or not a name")
    created_at = event.get("created_at")
    if isinstance(created_at, bool) or not isinstance(created_at, int) or created_at <= 0:
        raise _Malformed("'created_at' is missing or not a positive Unix time")
    if not isinstance(event.get("payload"), dict):
        raise _Malformed("'payload' is missing or not an object")
    return text, event


def _carried(payload: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """payload[name]['entity'], or None when the event does not carry it."""
    wrapper = payload.get(name)
    if wrapper is None:
        return None
    entity = wrapper.get("entity") if isinstance(wrapper, dict) else None
    if not isinstance(entity, dict) or not isinstance(entity.get("id"), str) or not entity["id"]:
        raise _Malformed(f"payload.{name}.entity is not an entity with an id")
    return entity


def _plan(
    conn: sqlite3.Connection,
    event_id: str,
    name: str,
    created_at: int,
    payload: Mapping[str, Any],
) -> _Plan:
    """Decide what the event writes and marks, validating everything before any write."""
    plan = _Plan()
    if name in PAYMENT_EVENTS:
        wanted = ["payment"]
    elif name in REFUND_EVENTS:
        wanted = ["refund", "payment"]
    elif name in SETTLEMENT_EVENTS:
        wanted = ["settlement"]
    elif name.startswith(DISPUTE_PREFIX):
        wanted = ["payment", "dispute"]
    else:
        return plan  # an event we do not use: kept in the inbox as 'ignored'
    carried = {entity: _carried(payload, entity) for entity in wanted}
    primary = wanted[0]
    if carried[primary] is None and not name.startswith(DISPUTE_PREFIX):
        raise _Malformed(f"{name} carries no payload.{primary}.entity")
    for entity, item in carried.items():
        if item is not None:
            _plan_entity(conn, plan, event_id, entity, item, created_at)
    if name in REFUND_EVENTS:
        refund = carried["refund"] or {}
        payment_id = refund.get("payment_id")
        if isinstance(payment_id, str) and payment_id:
            _mark(plan, "payment", payment_id)
    if name.startswith(DISPUTE_PREFIX):
        dispute = carried["dispute"] or {}
        payment_id = dispute.get("payment_id") or (carried["payment"] or {}).get("id")
        if not isinstance(payment_id, str) or not payment_id:
            raise _Malformed(f"{name} names no payment (payload.dispute.entity.payment_id)")
        _mark(plan, "payment", payment_id)
    return plan


def _mark(plan: _Plan, entity_type: str, entity_id: str) -> None:
    if (entity_type, entity_id) not in plan.marks:
        plan.marks.append((entity_type, entity_id))


def _plan_entity(
    conn: sqlite3.Connection,
    plan: _Plan,
    event_id: str,
    entity: str,
    item: dict[str, Any],
    created_at: int,
) -> None:
    from core.db.raw import read_rows_by_key
    from core.ingest.entities import frame_and_absent_from_items
    from core.ingest.lifecycle import backward_moves

    table = _ENTITIES[entity]
    entity_id = str(item["id"])
    try:
        frame, lacking = frame_and_absent_from_items(table, [item], f"webhook:{event_id}:{entity}")
    except InputError as exc:
        raise _Malformed(f"payload.{entity}.entity is invalid: {exc}") from exc
    _mark(plan, entity, entity_id)
    label = f"{entity}:{entity_id}"
    newer = db.entity_version(conn, entity, entity_id)
    if newer is not None and newer > created_at:
        plan.skipped.append(f"{label} (a newer event, of {newer}, was applied already)")
        return
    # The stored row moved back in its lifecycle? The importer's comparison decides.
    back = backward_moves(table, frame, read_rows_by_key(conn, table, [entity_id]))
    if back:
        move = back[0]
        if move.column == "status":
            why = f"stored status {move.stored} is past {move.incoming}"
        else:
            why = f"stored {move.column} {move.stored} is higher than {move.incoming}"
        plan.skipped.append(f"{label} ({why})")
        return
    plan.frames.setdefault(entity, []).append(frame)
    if lacking:  # a field the event left out keeps its stored value, as in a sync
        plan.absent[table] = lacking
    plan.versions.append((entity, entity_id))
    plan.upserted.append(label)


def _apply(
    conn: sqlite3.Connection,
    plan: _Plan,
    event_id: str,
    created_at: int,
    digest: str,
    received_at: int,
    name: str,
) -> None:
    if plan.frames:
        from core.ingest import store_dataset

        empty = Dataset()

        def joined(entity: str, default: pd.DataFrame) -> pd.DataFrame:
            frames = plan.frames.get(entity)
            return pd.concat(frames, ignore_index=True) if frames else default

        dataset = Dataset(
            payments=joined("payment", empty.payments),
            refunds=joined("refund", empty.refunds),
            settlements=joined("settlement", empty.settlements),
            disputes=joined("dispute", empty.disputes),
            absent=MappingProxyType(plan.absent),
        )
        try:
            store_dataset(
                conn,
                dataset,
                source=SOURCE,
                location=f"{name} {event_id}",
                content_hash=digest,
                # Checked per entity already (_plan_entity: newest event wins, lifecycle).
                accept_older=True,
            )
        except InputError as exc:
            raise _Malformed(f"the carried entities do not fit the stored data: {exc}") from exc
    for entity, entity_id in plan.versions:
        db.set_entity_version(
            conn, entity, entity_id, event_created_at=created_at, event_id=event_id
        )
    for entity_type, entity_id in plan.marks:
        db.add_rereconcile_mark(
            conn,
            entity_type=entity_type,
            entity_id=entity_id,
            reason=name,
            event_id=event_id,
            now=received_at,
        )


def open_marks(conn: sqlite3.Connection) -> list[tuple[int, str, str, str]]:
    """Entities webhooks touched since the last reconciliation: (mark id, entity type,
    entity id, event name), oldest first.
    """
    return [
        (int(r["id"]), str(r["entity_type"]), str(r["entity_id"]), str(r["reason"]))
        for r in db.open_rereconcile_marks(conn)
    ]


def clear_marks(conn: sqlite3.Connection, *, through_id: int, run_id: int) -> int:
    """Clear open marks up to `through_id` once run `run_id` has reconciled them; returns how
    many. Call it with the largest id `open_marks` returned before the run started, so marks
    added during the run stay open.
    """
    with transaction(conn):
        return db.clear_rereconcile_marks(
            conn, through_id=through_id, run_id=run_id, now=int(time.time())
        )
