"""The read models behind the pages, on a real SQLite file filled by the data builder."""

from __future__ import annotations

import csv
import io
import sqlite3

import pytest

from core.db import views as db
from core.db.views import QueueFilter
from core.views.exception import basic_evidence
from core.views.overview import overview
from core.views.queue import QueueItem, queue, queue_csv, queue_options
from core.views.runs import compute_run_summary, run_summary
from core.views.settlement import settlement_view
from tests.app_builder import Built, build


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


@pytest.fixture
def built(conn: sqlite3.Connection) -> Built:
    return build(conn, payments=1200, seed=3)


def _all_open(conn: sqlite3.Connection) -> list[QueueItem]:
    page = queue(conn, QueueFilter(), page_size=10_000)
    return list(page.items)


def test_overview_totals_agree_with_the_rows(conn: sqlite3.Connection, built: Built) -> None:
    ov = overview(conn)
    assert ov is not None
    captured = conn.execute("SELECT count(*), sum(amount) FROM payments").fetchone()
    assert (ov.summary.captured.count, ov.summary.captured.paise) == tuple(captured)
    assert ov.open_exceptions.count == built.exceptions
    items = _all_open(conn)
    assert ov.open_exceptions.paise == sum(i.exposure_paise for i in items)
    assert sum(b.count for b in ov.ageing) == built.exceptions
    assert sum(t.count for t in ov.exposure_by_class.values()) == built.exceptions
    assert ov.run.is_synthetic


def test_credited_in_bank_counts_only_matched_bank_lines(
    conn: sqlite3.Connection, built: Built
) -> None:
    summary = compute_run_summary(conn, built.run_id)
    lines = conn.execute("SELECT count(*), sum(credit) FROM bank_lines").fetchone()
    assert (summary.credited.count, summary.credited.paise) == tuple(lines)
    assert summary.credited.count < built.settlements  # some settlements have no bank line


def test_match_rate_by_day_counts_every_settled_payment(
    conn: sqlite3.Connection, built: Built
) -> None:
    summary = run_summary(conn, built.run_id)
    with_settlement = conn.execute(
        "SELECT count(*) FROM outcomes WHERE entity_type = 'payment' AND settlement_id IS NOT NULL"
    ).fetchone()[0]
    assert sum(d.payments for d in summary.match_rate) == with_settlement
    assert all(0 <= d.matched <= d.payments for d in summary.match_rate)
    assert summary.overall_match_rate is not None and 0.8 < summary.overall_match_rate < 1


def test_run_summary_is_cached_until_the_data_change(
    conn: sqlite3.Connection, built: Built
) -> None:
    first = run_summary(conn, built.run_id)
    cached = db.get_run_summary(conn, built.run_id)
    assert cached is not None and cached["data_version"] == db.data_version(conn)
    conn.execute(
        "INSERT INTO imports (source, location, content_hash, imported_at, report_json) "
        "VALUES ('files', 'x', 'h2', 0, '{}')"
    )
    conn.execute(
        "INSERT INTO payments (id, amount, status, captured, created_at) "
        "VALUES ('pay_new', 12345, 'captured', 1, 0)"
    )
    second = run_summary(conn, built.run_id)
    assert second.captured.paise == first.captured.paise + 12345


def test_queue_filters_by_code_class_and_amount(conn: sqlite3.Connection, built: Built) -> None:
    items = _all_open(conn)
    code = "SETTLEMENT_AMOUNT_DISCREPANCY"
    page = queue(conn, QueueFilter(codes=(code,)), page_size=10_000)
    assert page.total == sum(1 for i in items if i.reason_code == code) > 0
    assert {i.reason_code for i in page.items} == {code}
    low, high = 1000, 3000
    ranged = queue(conn, QueueFilter(min_exposure=low, max_exposure=high), page_size=999)
    expected = [i for i in items if low <= i.exposure_paise <= high]
    assert ranged.total == len(expected) > 0
    structural = queue(conn, QueueFilter(classes=("structural",)), page_size=999)
    assert {i.exposure_class for i in structural.items} == {"structural"}


def test_queue_pages_in_the_database_and_sorts(conn: sqlite3.Connection, built: Built) -> None:
    first = queue(conn, QueueFilter(), page_size=10, page=1)
    second = queue(conn, QueueFilter(), page_size=10, page=2)
    assert len(first.items) == 10 and first.total == built.exceptions
    assert first.pages == -(-built.exceptions // 10)
    exposures = [i.exposure_paise for i in first.items + second.items]
    assert exposures == sorted(exposures, reverse=True)
    assert not {i.id for i in first.items} & {i.id for i in second.items}
    oldest = queue(conn, QueueFilter(), sort="oldest", page_size=20)
    ages = [i.age_days for i in oldest.items]
    assert ages == sorted(ages, reverse=True)
    beyond = queue(conn, QueueFilter(), page_size=10, page=10_000)
    assert beyond.page == beyond.pages


def test_queue_search_finds_payment_order_and_utr(conn: sqlite3.Connection, built: Built) -> None:
    target = next(i for i in _all_open(conn) if i.entity_type == "payment" and i.utr)
    for term in (target.entity_id, target.order_id, target.utr.lower()):
        page = queue(conn, QueueFilter(search=term), page_size=50)
        assert target.id in {i.id for i in page.items}, term
    nothing = queue(conn, QueueFilter(search="pay_*"), page_size=50)
    assert nothing.total == 0  # wildcards are literal


def test_queue_age_bounds_are_inclusive(conn: sqlite3.Connection, built: Built) -> None:
    items = _all_open(conn)
    page = queue(conn, QueueFilter(min_age_days=10, max_age_days=20), page_size=10_000)
    expected = {i.id for i in items if i.age_days is not None and 10 <= i.age_days <= 20}
    assert {i.id for i in page.items} == expected and expected


def test_queue_assignee_filter_and_unassigned(conn: sqlite3.Connection, built: Built) -> None:
    some = _all_open(conn)[:3]
    for item in some:
        conn.execute("UPDATE exceptions SET assignee = 'asha' WHERE id = ?", (item.id,))
    assert queue(conn, QueueFilter(assignee="asha")).total == 3
    assert queue(conn, QueueFilter(assignee="")).total == built.exceptions - 3
    assert queue_options(conn).assignees == ("asha",)


def test_csv_export_holds_the_whole_filtered_set(conn: sqlite3.Connection, built: Built) -> None:
    flt = QueueFilter(classes=("amount_at_risk", "awaiting_settlement", "structural"))
    total = queue(conn, flt).total
    rows = list(csv.DictReader(io.StringIO(queue_csv(conn, flt).decode())))
    assert len(rows) == total > 50  # more than one page
    assert {int(r["id"]) for r in rows} == {i.id for i in _all_open(conn)}
    assert all(r["exposure_amount"].isdigit() for r in rows)


def test_settlement_view_decomposes_and_checks(conn: sqlite3.Connection, built: Built) -> None:
    sid = conn.execute(
        "SELECT id FROM settlements WHERE id NOT IN (SELECT settlement_id FROM exceptions "
        "WHERE settlement_id IS NOT NULL) ORDER BY id LIMIT 1"
    ).fetchone()
    view = settlement_view(conn, sid[0]) if sid else None
    if view is None:  # every settlement had an exception: pick any
        view = settlement_view(conn, "setl_0000000000")
    assert view is not None
    net = next(line for line in view.lines if line.label.startswith("Net"))
    assert net.paise == view.settlement["amount"]
    assert view.checks[0].ok
    assert view.row_count == len(view.rows) or view.row_count > 500


def test_settlement_view_flags_a_broken_sum(conn: sqlite3.Connection, built: Built) -> None:
    conn.execute("UPDATE settlements SET amount = amount + 700 WHERE id = 'setl_0000000001'")
    view = settlement_view(conn, "setl_0000000001")
    assert view is not None
    assert not view.checks[0].ok and view.checks[0].difference == -700
    assert settlement_view(conn, "setl_nope") is None


def test_settlement_lines_show_every_recon_row_type_and_add_up_to_the_net(
    conn: sqlite3.Connection, built: Built
) -> None:
    extra = [  # (type, credit, debit, dispute_id)
        ("reversal", 37_288, 0, None),
        ("transfer", 0, 10_000, None),
        ("adjustment", 0, 50_000, "disp_VIEW01"),
        ("adjustment", 0, 2_500, None),
        ("penalty", 0, 100, None),
    ]
    for n, (kind, credit, debit, dispute) in enumerate(extra):
        conn.execute(
            "INSERT INTO recon_rows (row_key, entity_id, type, credit, debit, amount, "
            "settlement_id, dispute_id) VALUES (?, ?, ?, ?, ?, ?, 'setl_0000000001', ?)",
            (f"view-{n}", f"ent_VIEW{n}", kind, credit, debit, credit + debit, dispute),
        )
    moved = sum(credit - debit for _, credit, debit, _ in extra)
    conn.execute(
        "UPDATE settlements SET amount = amount + ? WHERE id = 'setl_0000000001'", (moved,)
    )
    view = settlement_view(conn, "setl_0000000001")
    assert view is not None
    by_label = {line.label: line.paise for line in view.lines}
    assert by_label["Transfer reversals"] == 37_288
    assert by_label["Transfers"] == -10_000
    assert by_label["Dispute debits and their reversals (adjustments naming a dispute)"] == -50_000
    assert by_label["Other adjustments (instant-settlement draws and the like)"] == -2_500
    assert by_label["Other rows (type penalty)"] == -100
    parts = [line.paise for line in view.lines[2:-1]]  # net payment credit onwards
    assert sum(parts) == by_label["Net settlement (Σ credit − Σ debit)"]
    assert sum(parts) == view.settlement["amount"] and view.checks[0].ok


def test_settlement_never_credited_shows_the_bank_check_failed(
    conn: sqlite3.Connection, built: Built
) -> None:
    sid = "setl_0000000003"  # the builder leaves one settlement in ten without a bank line
    assert not conn.execute("SELECT 1 FROM bank_lines WHERE utr = 'UTIB000000000003'").fetchone()
    view = settlement_view(conn, sid)
    assert view is not None and view.bank_lines == ()
    bank = next(c for c in view.checks if c.name == "Bank credit = settlement amount")
    assert not bank.ok and bank.computed == 0 and "not credited" in bank.note


def test_evidence_lists_the_rows_behind_an_exception(
    conn: sqlite3.Connection, built: Built
) -> None:
    item = next(i for i in _all_open(conn) if i.reason_code == "AMOUNT_MISMATCH")
    titles = [s.title for s in basic_evidence(conn, item.id)]
    assert "Payment" in titles and "Settlement recon rows" in titles and "Bank lines" in titles


def test_no_run_means_no_overview(conn: sqlite3.Connection) -> None:
    assert overview(conn) is None
    conn.execute(
        "INSERT INTO runs (started_at, status, as_of, source, params_json, input_hashes_json) "
        "VALUES (0, 'running', 0, 'benchmark', '{}', '{}')"
    )
    assert overview(conn) is None  # a running run is never shown as a result


def test_settlement_view_shows_an_instant_settlement(
    conn: sqlite3.Connection, built: Built
) -> None:
    conn.execute(
        "INSERT INTO instant_settlements (id, amount_requested, amount_settled, fees, tax, "
        "status, created_at) VALUES ('setlod_VIEW01', 50000, 49500, 500, 76, 'processed', 0)"
    )
    conn.execute(
        "INSERT INTO instant_payouts (id, instant_settlement_id, amount, amount_settled, utr, "
        "status, created_at) VALUES ('setlodp_VIEW01', 'setlod_VIEW01', 50000, 49500, "
        "'KKBKH0000VIEW001', 'processed', 0)"
    )
    view = settlement_view(conn, "setlod_VIEW01")
    assert view is not None
    assert (view.settlement["amount"], view.settlement["utr"]) == (49500, "KKBKH0000VIEW001")
    assert view.checks == () and view.row_count == 0


def test_holdings_tells_stored_from_empty_and_raw_counts_name_what_replace_removes(
    conn: sqlite3.Connection,
) -> None:
    from core.views.runs import holdings, raw_counts

    assert holdings(conn).empty and raw_counts(conn).payments == 0
    build(conn)
    assert not holdings(conn).empty
    counts = raw_counts(conn)
    for table in ("payments", "refunds", "settlements", "recon_rows", "bank_lines"):
        stored = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        assert getattr(counts, table) == stored
    assert counts.payments > 0


def test_the_overview_says_when_data_were_imported_after_its_run(
    conn: sqlite3.Connection, built: Built
) -> None:
    """A new user's walkthrough: after an import, before reconciling, the Overview showed
    the new files' Captured beside the old run's credits and exceptions, nothing saying
    so. It names the import the run did not read."""
    ov = overview(conn)
    assert ov is not None and ov.newer_import is None
    finished = ov.run.finished_at
    assert finished is not None
    conn.execute(
        "INSERT INTO imports (source, location, content_hash, imported_at, report_json) "
        "VALUES ('files', 'mine', 'h-new', ?, '{}')",
        (finished + 60,),
    )
    (newest,) = conn.execute("SELECT max(id) FROM imports").fetchone()

    later = overview(conn)

    assert later is not None and later.newer_import == (int(newest), finished + 60)


def test_settlement_stating_zero_fees_shows_the_fee_checks_as_not_applicable(
    conn: sqlite3.Connection, built: Built
) -> None:
    # Razorpay states fees 0 and tax 0 on a normal settlement (the Settlements report and the
    # API alike): the fees are charged per row. Such a check is not applicable, not failed.
    conn.execute("UPDATE settlements SET fees = 0, tax = 0 WHERE id = 'setl_0000000001'")
    view = settlement_view(conn, "setl_0000000001")
    assert view is not None
    checks = {c.name: c for c in view.checks}
    for name in ("Settlement fees = Σ row fees", "Settlement GST = Σ row GST"):
        check = checks[name]
        assert check.computed > 0 and check.expected == 0
        assert check.not_applicable and "normal settlement" in check.not_applicable
        assert not check.failed


def test_settlement_stating_other_fees_than_its_rows_fails_the_fee_check(
    conn: sqlite3.Connection, built: Built
) -> None:
    conn.execute("UPDATE settlements SET fees = 123, tax = 0 WHERE id = 'setl_0000000001'")
    view = settlement_view(conn, "setl_0000000001")
    assert view is not None
    checks = {c.name: c for c in view.checks}
    fees = checks["Settlement fees = Σ row fees"]
    assert fees.failed and not fees.not_applicable
    gst = checks["Settlement GST = Σ row GST"]  # a settlement stating fees states its tax
    assert gst.failed and not gst.not_applicable
