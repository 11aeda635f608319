"""The Audit page's calls into core.audit (owned by the review & audit area)."""

from __future__ import annotations

import io
from typing import Any

from core import audit
from ui import shell


def filter_values() -> dict[str, list[str]]:
    return dict(shell.read(audit.filter_values))


def make_filter(**values: Any) -> Any:
    return audit.AuditFilter(**values)


def entries(where: Any, limit: int) -> tuple[int, list[Any]]:
    with shell.connection() as conn:
        return int(audit.count(conn, where)), list(audit.query(conn, where, limit=limit))


def verify() -> Any:
    return shell.read(audit.verify)


def export(where: Any, fmt: str) -> bytes:
    """The filtered trail as a file's bytes (CSV, or JSON lines)."""
    stream = io.StringIO()
    with shell.connection() as conn:
        audit.write_export(conn, stream, fmt, where)
    return stream.getvalue().encode("utf-8")


def rows(entries: list[Any], *, details: bool = False) -> list[dict[str, Any]]:
    """Audit entries for the table: the note and the amount (₹) in their own columns; the
    rest of the payload as short 'field: value' text (paise as ₹, times in IST)."""
    import json

    from ui.format import cell, field_label, inr, ist

    shown = []
    for e in entries:
        try:
            payload = json.loads(e.payload_json) if e.payload_json else {}
        except ValueError:
            payload = {}
        if not isinstance(payload, dict):
            payload = {"payload": payload}
        note = payload.pop("note", None)
        amount = next(
            (
                payload.pop(k)
                for k in ("write_off_amount", "exposure_amount", "amount")
                if isinstance(payload.get(k), int)
            ),
            None,
        )
        rest = "; ".join(
            f"{field_label(k)}: {cell(k, v)}" for k, v in payload.items() if v not in (None, "")
        )
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
