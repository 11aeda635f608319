"""Write-offs made in the review queue are named in the Books (pgteam REPORT finding 8): the
Books do not post them, so the roll-forward and the close report carry a note line that
names each final write-off decided by the month's end and their total; a pending or
rejected approval, or a write-off reopened since, is not one."""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import sqlite3
import zipfile
from pathlib import Path

import pytest

from core import access
from core.books.cli import run as rollforward_cli
from core.books.close import unposted_write_offs
from core.books.report import build_report, bundle
from core.calendar import IST
from core.db import connect
from core.review import approve, reject, reopen, resolve, sync_exceptions
from core.review.model import ActionResult
from tests.review_support import Finding, add_people, exception_id, write_run

REVIEWER, APPROVER = "asha@example.com", "approver@example.com"


def _write_off(conn: sqlite3.Connection, entity: str, amount: int, rid: str) -> ActionResult:
    return resolve(
        conn,
        exception_id(conn, entity, "MISSING_SETTLEMENT"),
        actor=REVIEWER,
        note="never settled; written off",
        request_id=rid,
        resolution="written_off",
        amount=amount,
    )


def test_final_write_offs_are_named_in_the_rollforward_and_the_close_report(
    db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(access.FOUR_EYES_ENV, "200000")  # ₹2,000, as the tester had it
    conn = connect(db_url)
    try:
        add_people(conn)
        entities = ("pay_P16", "pay_P9", "pay_P7", "pay_P6", "pay_P5")
        findings = [
            Finding(e, reason_code="MISSING_SETTLEMENT", exposure_amount=a, settlement_id=None)
            for e, a in zip(entities, (268_510, 100_000, 300_000, 50_000, 400_000), strict=True)
        ]
        sync_exceptions(conn, write_run(conn, findings))
        # P16 above the limit: approved by a second person (the tester's #179).
        asked = _write_off(conn, "pay_P16", 268_510, "w16")
        assert asked.approval_id is not None
        approved = approve(conn, asked.approval_id, actor=APPROVER, request_id="a16")
        # P9 at or under the limit: final at once.
        _write_off(conn, "pay_P9", 100_000, "w9")
        # P7 awaits its approval; P5's was rejected; P6 was written off, then reopened.
        assert _write_off(conn, "pay_P7", 300_000, "w7").approval_id is not None
        rejected = _write_off(conn, "pay_P5", 400_000, "w5")
        reject(conn, rejected.approval_id, actor=APPROVER, note="chase", request_id="x5")
        _write_off(conn, "pay_P6", 50_000, "w6")
        reopen(
            conn,
            exception_id(conn, "pay_P6", "MISSING_SETTLEMENT"),
            actor=REVIEWER,
            note="the bank found it",
            request_id="o6",
        )
        decided = dt.datetime.fromtimestamp(
            int(
                conn.execute(
                    "SELECT max(created_at) FROM audit_log WHERE action = 'exception.resolved'"
                ).fetchone()[0]
            ),
            IST,
        )
        month = decided.strftime("%Y-%m")
        before = (decided.replace(day=1) - dt.timedelta(days=1)).strftime("%Y-%m")
        found = unposted_write_offs(conn, month)
        report = build_report(conn, month)
    finally:
        conn.close()
    assert [(w.entity_id, w.amount) for w in found] == [("pay_P16", 268_510), ("pay_P9", 100_000)]
    assert found[0].approval_id == asked.approval_id and found[0].decided_by == APPROVER
    assert approved.to_status == "RESOLVED" and found[1].approval_id is None

    # The roll-forward command: a note line with the total, and each write-off named.
    rollforward_cli(argparse.Namespace(db=Path(db_url), month=month, json=False))
    text = capsys.readouterr().out
    assert "write-offs not posted (2, review queue)" in text and "3,685.10" in text
    assert "pay_P16" in text and "pay_P9" in text and "pay_P7" not in text
    rollforward_cli(argparse.Namespace(db=Path(db_url), month=month, json=True))
    data = json.loads(capsys.readouterr().out)
    assert data["write_offs_not_posted"]["total"] == 368_510
    assert [w["entity_id"] for w in data["write_offs_not_posted"]["items"]] == [
        "pay_P16",
        "pay_P9",
    ]
    # Effective at the decision: the month before knows none.
    rollforward_cli(argparse.Namespace(db=Path(db_url), month=before, json=True))
    assert json.loads(capsys.readouterr().out)["write_offs_not_posted"]["total"] == 0

    # The close report: its own file, and the README says it.
    files = zipfile.ZipFile(io.BytesIO(bundle(report)))
    listed = files.read(f"close-{month}/write_offs_not_posted.csv").decode()
    assert "pay_P16" in listed and "pay_P9" in listed and "pay_P7" not in listed
    assert "3,685.10" in files.read(f"close-{month}/README.txt").decode()
    # With no payments the journal's receivable and the roll-forward agree (finding 11's
    # file, docs/books.md section 2).
    tie = files.read(f"close-{month}/receivable_journal_vs_rollforward.csv").decode()
    assert "today,difference,0.00,0" in tie
