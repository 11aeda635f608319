"""A scoped sync (core.review.sync.SyncScope) stores what the full sync stores."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from core.audit.anchor import anchor_file
from core.db import connect, migrate
from core.review import assign, reopen, resolve, sync_exceptions
from core.review.sync import SyncScope, SyncSummary
from tests.review_support import Finding, add_people, exception_id, write_run

NOW = 1_767_940_200
PERSON = "asha@example.com"


def _base(path: Path) -> tuple[int, list[Finding], list[str]]:
    """A database whose last synced run is the base run; people worked on some exceptions
    before and after its sync. (base run id, its findings, its matched payments)."""
    conn = connect(path)
    migrate(conn)
    add_people(conn)
    first = [Finding(f"pay_{i}") for i in range(1, 9)]
    sync_exceptions(conn, write_run(conn, first), now=NOW - 200)
    assign(conn, exception_id(conn, "pay_5"), actor=PERSON, assignee=PERSON, request_id="a5")
    base_findings = [
        Finding("pay_1"),
        Finding("pay_2"),
        Finding("pay_3", exposure_amount=20_000),  # refreshed by the base run
        Finding("pay_4"),
        Finding("pay_5"),
        Finding("pay_6"),
        Finding("pay_9"),
        Finding("pay_9", reason_code="SETTLEMENT_MISSING", entity_type="refund"),
    ]
    matched = ["pay_7", "pay_8"]  # auto-cleared by the base run
    base = write_run(conn, base_findings, matched=matched)
    sync_exceptions(conn, base, now=NOW - 100)
    resolve(conn, exception_id(conn, "pay_2"), actor=PERSON, note="ok", request_id="r2")
    reopen(conn, exception_id(conn, "pay_8"), actor=PERSON, note="again", request_id="o8")
    assign(conn, exception_id(conn, "pay_6"), actor=PERSON, assignee=PERSON, request_id="a6")
    resolve(conn, exception_id(conn, "pay_3"), actor=PERSON, note="fine", request_id="r3")
    conn.close()
    return base, base_findings, matched


def _carried_run(
    conn: sqlite3.Connection,
    base: int,
    base_findings: list[Finding],
    matched: list[str],
    fresh: list[Finding],
    fresh_matched: list[str],
) -> tuple[int, SyncScope]:
    """A run made as import-day stores one: the base run's outcomes but for the payments
    decided again (`fresh`, `fresh_matched`); its scope as the pipeline gives it."""
    again = {f.entity_id for f in fresh} | set(fresh_matched)
    kept = [f for f in base_findings if f.entity_type != "payment" or f.entity_id not in again]
    run = write_run(
        conn, [*kept, *fresh], matched=[*(m for m in matched if m not in again), *fresh_matched]
    )
    dropped = [
        (f.entity_type, f.entity_id)
        for f in base_findings
        if f.entity_type == "payment" and f.entity_id in again
    ]
    return run, SyncScope(base, [*dropped, *((f.entity_type, f.entity_id) for f in fresh)])


def _tables(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table but the schema's own, all columns, in rowid order."""
    names = [
        str(r[0])
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " AND name NOT LIKE 'exception_search_%' AND sql NOT LIKE '%WITHOUT ROWID%'"
        )
    ]
    found: dict[str, list[tuple[object, ...]]] = {}
    for name in names:
        if name == "exception_search":
            sql = "SELECT rowid, ids, notes FROM exception_search ORDER BY rowid"
        else:
            sql = f'SELECT rowid, * FROM "{name}" ORDER BY rowid'
        found[name] = [tuple(r) for r in conn.execute(sql)]
    found["outcomes"] = [tuple(r) for r in conn.execute("SELECT * FROM outcomes ORDER BY 1, 2, 3")]
    return found


def _both(
    tmp_path: Path, fresh: list[Finding], fresh_matched: list[str], *, synced_between: bool
) -> tuple[tuple[SyncSummary, dict[str, list[tuple[object, ...]]], list[str]], ...]:
    """The same carried run synced in full in one copy of the database and with its scope
    in another: (summary, tables, the statements run) of each."""
    base, base_findings, matched = _base(tmp_path / "full.sqlite")
    copy = tmp_path / "scoped" / "full.sqlite"
    copy.parent.mkdir()
    shutil.copy(tmp_path / "full.sqlite", copy)
    source = connect(tmp_path / "full.sqlite")
    anchors = anchor_file(source)
    source.close()
    if anchors is not None and Path(anchors).exists():
        shutil.copy(anchors, copy.parent / Path(anchors).name)
    results = []
    for path, scoped in ((tmp_path / "full.sqlite", False), (copy, True)):
        conn = connect(path)
        if synced_between:  # a run synced after the base run: the scope no longer holds
            between = write_run(conn, [*base_findings, Finding("pay_11")], matched=matched)
            sync_exceptions(conn, between, now=NOW - 50)
        run, scope = _carried_run(conn, base, base_findings, matched, fresh, fresh_matched)
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        summary = sync_exceptions(conn, run, now=NOW, scope=scope if scoped else None)
        conn.set_trace_callback(None)
        results.append((summary, _tables(conn), statements))
        conn.close()
    return tuple(results)


FRESH = [
    Finding("pay_1", exposure_amount=30_000),  # refreshed
    Finding("pay_7"),  # holds again after AUTO_CLEARED: reopened
    Finding("pay_2", exposure_amount=50_000),  # resolved, exposure moved: reopened
    Finding("pay_10"),  # opened
    Finding("pay_12", reason_code="SETTLEMENT_MISSING"),  # opened
]
# pay_4 (untouched) auto-cleared; pay_6 (assigned) no longer found; pay_8 (reopened by a
# person after the base run, matched in both runs: carried) no longer found.
FRESH_MATCHED = ["pay_4", "pay_6"]


def test_a_scoped_sync_stores_what_the_full_sync_stores(tmp_path: Path) -> None:
    (full, full_tables, _), (scoped, scoped_tables, statements) = _both(
        tmp_path, FRESH, FRESH_MATCHED, synced_between=False
    )
    assert any("review_scope" in s for s in statements)  # the scope was used
    assert scoped == full
    assert (full.opened, full.reopened, full.auto_cleared, full.refreshed) == (2, 2, 1, 1)
    assert (full.kept, full.no_longer_found) == (5, 2)
    assert set(scoped_tables) == set(full_tables)
    for name, rows in full_tables.items():
        assert scoped_tables[name] == rows, name


def test_a_scoped_sync_of_a_run_that_changes_nothing_stores_what_the_full_sync_stores(
    tmp_path: Path,
) -> None:
    (full, full_tables, _), (scoped, scoped_tables, statements) = _both(
        tmp_path, [], [], synced_between=False
    )
    assert any("review_scope" in s for s in statements)
    assert scoped == full
    assert scoped_tables == full_tables


def test_a_scope_whose_base_run_is_not_the_last_synced_falls_back_to_the_full_sync(
    tmp_path: Path,
) -> None:
    (full, full_tables, _), (scoped, scoped_tables, statements) = _both(
        tmp_path, FRESH, FRESH_MATCHED, synced_between=True
    )
    assert not any("review_scope" in s for s in statements)
    assert scoped == full
    assert scoped_tables == full_tables
