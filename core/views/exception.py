"""One exception on the Investigation page: its row, its history, and the evidence it
stands on (read only)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from core.db import views as db


def exception(conn: sqlite3.Connection, exception_id: int) -> dict[str, Any] | None:
    return db.exception_by_id(conn, exception_id)


def exception_history(conn: sqlite3.Connection, exception_id: int) -> list[dict[str, Any]]:
    return db.exception_events(conn, exception_id)


@dataclass(frozen=True)
class EvidenceSection:
    """A titled group of records (each a dict of column -> value) behind an exception;
    note: what the group means when it is not self-evident (e.g. 'not found')."""

    title: str
    records: tuple[dict[str, Any], ...]
    note: str = ""
    tool: str = ""  # the evidence tool that read it, and its arguments (the page's title)
    args: tuple[tuple[str, Any], ...] = ()


def basic_evidence(conn: sqlite3.Connection, exception_id: int) -> tuple[EvidenceSection, ...]:
    """The records an exception stands on, read straight from the tables."""
    item = db.exception_by_id(conn, exception_id)
    if item is None:
        return ()
    sections: list[EvidenceSection] = []
    entity_type, entity_id = item["entity_type"], item["entity_id"]
    run = db.latest_completed_run(conn)
    if run is not None:
        outcome = db.outcome_for(conn, int(run["id"]), entity_type, entity_id)
        if outcome:
            sections.append(EvidenceSection(f"Outcome in run {run['id']}", (outcome,)))
    fetch = {
        "payment": db.payment_by_id,
        "refund": db.refund_by_id,
        "settlement": db.settlement_by_id,
        "bank_entry": db.bank_line_by_id,
        "recon_row": db.recon_row_by_key,
    }.get(entity_type)
    record = fetch(conn, entity_id) if fetch else None
    if record:
        sections.append(EvidenceSection(entity_type.replace("_", " ").capitalize(), (record,)))
    if entity_type in ("payment", "refund"):
        rows = db.recon_rows_for_entity(conn, entity_id)
        sections.append(EvidenceSection("Settlement recon rows", tuple(rows)))
    settlement_id = item["settlement_id"] or (record or {}).get("settlement_id")
    if settlement_id and entity_type != "settlement":
        settlement = db.settlement_by_id(conn, settlement_id)
        if settlement:
            sections.append(EvidenceSection("Settlement", (settlement,)))
    if settlement_id:
        utr = (db.settlement_by_id(conn, settlement_id) or {}).get("utr")
        run_id = int(run["id"]) if run else None
        bank = db.bank_lines_for_settlement(conn, utr, settlement_id, run_id)
        sections.append(EvidenceSection("Bank lines", tuple(bank)))
    return tuple(sections)


def evidence(conn: sqlite3.Connection, exception_id: int) -> tuple[EvidenceSection, ...]:
    """The investigator's evidence: what its allow-listed tools read for this exception."""
    # Imported here, as the page reaches its evidence: its title and choice paint first.
    # The evidence tools only: the model client, redactor and rules load with investigate().
    from core.investigate.gather import gather_evidence

    gathered = gather_evidence(conn, exception_id)
    sections = [EvidenceSection("Exception", (dict(gathered.exception),))]
    for item in gathered.items:
        args = ", ".join(f"{k} {v}" for k, v in dict(item.args).items())
        title = item.tool.replace("_", " ").capitalize() + (f" · {args}" if args else "")
        records = tuple(dict(r) for r in item.records)
        sections.append(
            EvidenceSection(title, records, item.note, item.tool, tuple(dict(item.args).items()))
        )
    return tuple(sections)
