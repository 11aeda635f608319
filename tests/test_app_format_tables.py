"""Readable tables and downloads: column widths that fit the room a table has, one record
too wide for a row shown top to bottom, audit entries with the note and the amount (₹) in
their own columns, and an audit CSV in rupees and IST with the stored columns after."""

from __future__ import annotations

import csv
import io
import sqlite3
from decimal import Decimal

import pandas as pd
import pytest

from core import audit as core_audit
from core.db import connect
from tests import conftest
from ui import audit
from ui.format import (
    MIN_COLUMN_PX,
    READABLE_PX,
    fitted_table,
    fitted_widths,
    natural_widths,
    records_frame,
)

# 2026-04-03 09:30 IST
MOMENT = 1775188800

# This module's database tests run on SQLite and on PostgreSQL (tests/conftest.py).
conn = conftest.db_conn
db_path = conftest.db_url


def test_fitted_widths_keep_narrow_columns_and_cut_the_widest_to_fit() -> None:
    widths = {"Id": 60, "Amount": 110, "Narration": 700, "Note": 500}
    fitted = fitted_widths(widths, 900)
    assert sum(fitted.values()) <= 900
    assert fitted["Id"] == 60 and fitted["Amount"] == 110
    assert fitted["Narration"] == fitted["Note"] < 500
    assert fitted_widths({"a": 100, "b": 200}, 900) == {"a": 100, "b": 200}


def test_natural_widths_follow_the_longest_text_within_bounds() -> None:
    frame = pd.DataFrame({"Id": ["1", "22"], "Narration": ["x" * 30, "y" * 400]})
    widths = natural_widths(frame)
    assert widths["Id"] == MIN_COLUMN_PX
    assert MIN_COLUMN_PX < widths["Narration"] <= 420


def test_one_record_too_wide_for_a_row_reads_top_to_bottom() -> None:
    record = {f"field_{n}": f"value number {n} " * 3 for n in range(12)}
    shown, config, hidden = fitted_table(records_frame([record]), 500)
    assert list(shown.columns) == ["Field", "Value"]
    assert list(shown["Field"]) == [f"Field {n}" for n in range(12)]
    assert shown["Value"].iloc[3] == record["field_3"]
    assert hidden == 0 and set(config) == {"Field", "Value"}


def test_many_records_keep_their_columns_and_fit_the_budget() -> None:
    records = [
        {"payment_id": f"pay_{n:014d}", "amount": 123456 * n, "narration": "NEFT " * 30}
        for n in range(1, 6)
    ]
    shown, config, hidden = fitted_table(records_frame(records), 520)
    assert list(shown.columns) == ["Payment", "Amount", "Narration"]
    assert shown["Amount"].iloc[0] == "₹1,234.56"
    assert hidden == 0
    assert sum(c["width"] for c in config.values()) <= 520


def test_a_table_with_more_columns_than_fit_readably_shows_the_leading_ones() -> None:
    record = {f"column_{n}": f"pay_{n:014d}" for n in range(12)}
    frame = records_frame([record, record])
    shown, config, hidden = fitted_table(frame, 940)
    assert list(config) == list(shown.columns)[: len(config)]
    assert hidden == 12 - len(config) > 0
    natural = natural_widths(frame)
    assert all(c["width"] == natural[name] for name, c in config.items())  # ids stay whole
    assert sum(c["width"] for c in config.values()) <= 940


def test_a_last_column_gets_the_room_left_when_there_is_enough() -> None:
    records = [{"seq": "1", "by": "a" * 30, "note": "b" * 30, "details": "c" * 200}] * 2
    _, config, hidden = fitted_table(records_frame(records), 500)
    assert hidden == 0 and list(config) == ["Seq", "By", "Note", "Details"]
    assert config["By"]["width"] == config["Note"]["width"] == READABLE_PX
    assert config["Details"]["width"] == 500 - MIN_COLUMN_PX - 2 * READABLE_PX


def test_a_column_empty_in_every_row_is_left_out() -> None:
    records = [{"payment_id": "", "refund_id": "rfnd_1"}, {"payment_id": None, "refund_id": "r2"}]
    shown, config, _ = fitted_table(records_frame(records))
    assert list(shown.columns) == list(config) == ["Refund"]


def test_records_hide_internal_keys_unless_details_are_asked_for() -> None:
    record = {"payment_id": "pay_1", "row_key": "k", "line_no": 4, "request_id": "r"}
    assert list(records_frame([record]).columns) == ["Payment"]
    assert "Row key" in records_frame([record], details=True).columns


def _entry(conn: sqlite3.Connection) -> int:
    return core_audit.append(
        conn,
        actor="asha@example.com",
        action="exception.resolved",
        entity_type="exception",
        entity_id="42",
        payload={
            "note": "=Written off with the bank's consent",
            "write_off_amount": 13_500_000,
            "difference": -25_050,
            "due_date": "2026-04-10",
        },
        now=MOMENT,
    )


def test_audit_rows_show_the_note_and_the_amount_in_their_own_columns(
    conn: sqlite3.Connection,
) -> None:
    _entry(conn)
    (entry,) = core_audit.query(conn, core_audit.AuditFilter(), limit=5)
    (row,) = audit.rows([entry])
    assert row["Note"] == "=Written off with the bank's consent"
    assert row["Amount"] == "₹1,35,000.00"
    assert row["When"] == "03 Apr 2026, 09:30 IST"
    assert row["Details"] == "Difference: -₹250.50; Due: 10 Apr 2026"
    assert "Raw payload" not in row
    (raw,) = audit.rows([entry], details=True)
    assert '"write_off_amount":13500000' in raw["Raw payload"].replace(" ", "")


def test_the_audit_csv_has_rupees_and_ist_first_then_the_stored_columns(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = connect(db_path)
    _entry(conn)
    conn.close()
    monkeypatch.setenv("DATABASE_URL", db_path)
    text = audit.export(audit.make_filter(), "csv").decode("utf-8")
    header, *rows = list(csv.reader(io.StringIO(text)))
    assert header[: len(audit.READABLE_CSV)] == list(audit.READABLE_CSV)
    assert header[len(audit.READABLE_CSV) :] == list(core_audit.chain.EXPORT_COLUMNS)
    entry = dict(zip(header, rows[0], strict=True))
    assert entry["When (IST)"] == "2026-04-03 09:30 IST"
    assert Decimal(entry["Amount (₹)"]) == Decimal("135000.00")
    assert entry["Note"] == "'=Written off with the bank's consent"  # never a formula
    assert entry["Entity"] == "exception: 42"
    assert entry["created_at"] == str(MOMENT) and "13500000" in entry["payload_json"]
    assert rows[-1][0] == "anchor" and rows[-1][len(audit.READABLE_CSV)] == "anchor"
    lines = audit.export(audit.make_filter(), "jsonl").decode().splitlines()
    assert len(lines) == 2  # JSON lines stay exactly as stored, with the anchor


def test_every_time_field_reads_in_ist_and_money_in_rupees() -> None:
    record = {"occurred_at": MOMENT, "as_of": MOMENT, "amount": 13_500_000, "day": "2026-04-03"}
    (row,) = records_frame([record]).to_dict("records")
    assert row["Occurred at"] == row["As of"] == "03 Apr 2026, 09:30 IST"
    assert row["Amount"] == "₹1,35,000.00"


def test_a_column_named_whole_is_never_cut_to_fit() -> None:
    from ui.format import fitted_table

    frame = pd.DataFrame(
        {
            "When": ["04 Dec 2026, 14:26 IST"],
            "Action": ["exception.write_off_requested"],
            "Note": ["a long note " * 20],
            "Details": ["closing ₹3,75,937.56 " * 10],
        }
    ).astype("string")
    frame = pd.concat([frame, frame], ignore_index=True)
    _, cut, _ = fitted_table(frame, 700)
    _, kept, _ = fitted_table(frame, 700, whole=("Action",))
    action_px = 7 * len("exception.write_off_requested") + 16
    assert cut["Action"]["width"] < action_px  # what the Audit page did
    assert kept["Action"]["width"] >= action_px
    assert sum(c["width"] for c in kept.values()) <= 700


def test_row_order_is_internal_and_hold_and_settled_flags_read_yes_or_no() -> None:
    record = {"id": "bank_statement.csv:10", "row_order": 271, "on_hold": 0, "settled": 1}
    (row,) = records_frame([record]).to_dict("records")
    assert "Row order" not in row
    assert (row["On hold"], row["Settled"]) == ("No", "Yes")
    assert records_frame([record], details=True).loc[0, "Row order"] == "271"


def test_a_disputes_respond_by_and_hold_until_read_as_ist_times() -> None:
    record = {"respond_by": MOMENT, "on_hold_until": MOMENT}
    (row,) = records_frame([record]).to_dict("records")
    assert row["Respond by"] == "03 Apr 2026, 09:30 IST"
    assert row["On hold until"] == "03 Apr 2026, 09:30 IST"


def test_audit_amount_column_is_only_money_decided_exposure_of_other_entries_is_a_detail(
    conn: sqlite3.Connection,
) -> None:
    for action in ("exception.assigned", "exception.commented", "exception.resolved"):
        core_audit.append(
            conn,
            actor="asha@example.com",
            action=action,
            entity_type="exception",
            entity_id="7",
            payload={"note": action, "exposure_amount": 10_000, "assignee": "ravi@example.com"},
            now=MOMENT,
        )
    entries = core_audit.query(conn, core_audit.AuditFilter(), limit=5)
    by_note = {row["Note"]: row for row in audit.rows(entries)}
    for action in ("exception.assigned", "exception.commented"):
        assert by_note[action]["Amount"] == ""  # nothing was decided: no money moved
        assert "Exposure amount: ₹100.00" in by_note[action]["Details"]
    assert by_note["exception.resolved"]["Amount"] == "₹100.00"  # the exposure it closed
    assert "Exposure" not in by_note["exception.resolved"]["Details"]
