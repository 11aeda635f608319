"""The Audit page's calls into core.audit (owned by the review & audit area)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from core import audit, demo_mode
from core.outputs import safe_cell
from core.views.common import ist_text, rupees_number
from ui import shell
from ui.format import cell, field_label, inr, ist


def filter_values() -> dict[str, list[str]]:
    # Three DISTINCTs over the trail's indexes (0.2-0.4 s at 10M): the same until it grows.
    return dict(shell.read_marked(audit.filter_values))


def make_filter(**values: Any) -> Any:
    return audit.AuditFilter(**values)


def entries(where: Any, limit: int) -> tuple[int, list[Any]]:
    with shell.connection() as conn:
        return int(audit.count(conn, where)), list(audit.query(conn, where, limit=limit))


def verify() -> Any:
    return shell.read(audit.verify)


# In the public demo the anchors' warnings are the deployment's business (they name the
# server's folders and its settings); a visitor is told what the demo does instead.
DEMO_ANCHORS_NOTE = (
    "In this demo your copy keeps its anchors (the chain's head, written after every run and"
    " decision) unsigned beside the copy. A deployment signs them and keeps them where the"
    " database's writers cannot change them, so that an edited trail is detected."
)


def verify_warnings(result: Any) -> tuple[str, ...]:
    """What to say under a verification: its warnings, or in the demo the note above."""
    warnings = tuple(getattr(result, "warnings", ()))
    if warnings and demo_mode.enabled():
        return (DEMO_ANCHORS_NOTE,)
    return warnings


# The CSV a person downloads: readable columns first (₹ as a number a spreadsheet sums,
# times in IST, the payload as 'field: value' text), then the stored columns unchanged.
READABLE_CSV = ("Entry", "When (IST)", "By", "Action", "Entity", "Note", "Amount (₹)", "Details")


def export(where: Any, fmt: str) -> bytes:
    """The filtered trail as a file's bytes: CSV (readable columns, then the stored ones)
    or JSON lines (exactly as stored, to re-verify elsewhere)."""
    stream = io.StringIO()
    with shell.connection() as conn:
        audit.write_export(conn, stream, fmt, where)
    if fmt != "csv":
        return stream.getvalue().encode("utf-8")
    stream.seek(0)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    for n, row in enumerate(csv.reader(stream)):
        writer.writerow([*(READABLE_CSV if n == 0 else _readable_cells(row)), *row])
    return out.getvalue().encode("utf-8")


def _readable_cells(row: list[str]) -> list[Any]:
    """The readable columns of one stored CSV row (seq, created_at, actor, action,
    entity_type, entity_id, payload_json, ...); the closing anchor row has only its time."""
    seq, created, actor, action, entity_type, entity_id, payload_json = row[:7]
    when = ist_text(int(created)) if created.isdigit() else ""
    if seq == "anchor":
        return [seq, when, "", action, "", "", "", ""]
    note, amount, rest = readable_payload(payload_json, action)
    return [
        seq,
        when,
        actor,
        action,
        f"{entity_type}: {entity_id}",
        safe_cell(note or ""),
        "" if amount is None else rupees_number(amount),
        safe_cell(rest),
    ]


def readable_payload(
    payload_json: str | None, action: str = ""
) -> tuple[str | None, int | None, str]:
    """An entry's payload as (note, amount in paise, the rest as 'Field: value; ...' with
    paise in ₹ and times in IST). The amount is money a decision settled (AMOUNT_FIELDS):
    a write-off's amount, or the exposure an `exception.resolved` closed; an exposure on
    any other entry (assigned, commented, escalated, opened by a run) stays in the rest,
    so it never reads as money moved."""

    try:
        payload = json.loads(payload_json) if payload_json else {}
    except ValueError:
        payload = {}
    if not isinstance(payload, dict):
        payload = {"payload": payload}
    note = payload.pop("note", None)
    amount = next(
        (
            payload.pop(k)
            for k in AMOUNT_FIELDS
            if (k != "exposure_amount" or action in EXPOSURE_DECIDED)
            and isinstance(payload.get(k), int)
            and not isinstance(payload.get(k), bool)
        ),
        None,
    )
    rest = "; ".join(
        f"{field_label(k)}: {_detail(k, v)}" for k, v in payload.items() if v not in (None, "")
    )
    return (None if note is None else str(note)), amount, rest


AMOUNT_FIELDS = ("write_off_amount", "exposure_amount", "amount")
# Entries whose exposure_amount is money decided (the Amount column); elsewhere a detail.
EXPOSURE_DECIDED = frozenset({"exception.resolved"})
# Paise in audit payloads under names the record tables do not use: a month close's
# figures, the four-eyes threshold a write-off was held against, a refreshed exposure.
PAYLOAD_MONEY_FIELDS = frozenset(
    {"opening", "closing", "open_items", "residual", "four_eyes_threshold", "old_exposure"}
)


def _detail(key: str, value: Any) -> Any:
    """One payload value as the Details column shows it (the stored JSON keeps paise)."""
    money = key in PAYLOAD_MONEY_FIELDS or key.endswith(("_paise", "_amount"))
    if money and isinstance(value, int) and not isinstance(value, bool):
        return inr(value)
    return cell(key, value)


def rows(entries: list[Any], *, details: bool = False) -> list[dict[str, Any]]:
    """Audit entries for the table: the note and the amount (₹) in their own columns; the
    rest of the payload as short 'field: value' text (paise as ₹, times in IST); the raw
    payload and the hash only with `details`."""

    shown = []
    for e in entries:
        note, amount, rest = readable_payload(e.payload_json, e.action)
        row = {
            "Seq": str(e.seq),
            "When": ist(e.created_at),
            "By": e.actor,
            "Action": e.action,
            "Entity": f"{e.entity_type}: {e.entity_id}",
            "Note": note or "",
            "Amount": inr(amount) if amount is not None else "",
            "Details": rest,
        }
        if details:
            row["Raw payload"] = e.payload_json
            row["Hash"] = e.hash
        shown.append(row)
    return shown
