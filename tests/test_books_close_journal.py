"""The journal of a closed month, and the prior-period adjustment vouchers of the next
(docs/books.md section 4, "The journal of a closed month"), through `python -m core
journal`: May is closed, then a payment captured on 29 May (₹7,777.00, fee ₹183.54)
arrives. May's journal is printed as it was at the close unless today's data are asked
for (and then what arrived after the close is named, with its import); June's journal
carries the late payment as a balanced prior-period adjustment voucher, dated 1 June."""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
import xml.etree.ElementTree as ET
from decimal import Decimal
from pathlib import Path

import pytest

from core.__main__ import main
from core.books.close import PRIOR_PERIOD, closed_months, month_bank_credits, since_close
from core.books.journal import journal_csv, month_vouchers, tally_xml
from core.books.ledger import ledger_for
from core.db import connect
from core.db.raw import read_dataset
from core.money import format_rupees
from tests.books_late_support import (
    LATE,
    LATE_AMOUNT,
    LATE_FEE,
    LATE_ID,
    close,
    closed_then_late,
    corrected_day,
    import_day,
    late_day,
    migrated,
    reconciled,
)
from tests.engine_support import ts
from tests.guard_support import guards_off

MAY, JUNE = "2026-05", "2026-06"
CAPTURED_MAY = "RZP-CAPTURED-2026-05"


def _journals(conn: sqlite3.Connection, month: str) -> tuple[str, str]:
    """What `journal` printed for `month` before this change (every voucher from today's
    rows, CSV and Tally XML): the oracle of "what was in the books" at a moment."""
    vouchers = month_vouchers(read_dataset(conn), month, credits=month_bank_credits(conn, month))
    return journal_csv(vouchers), tally_xml(vouchers)


def _journals_now(db: Path, month: str) -> tuple[str, str]:
    conn = connect(db)
    try:
        return _journals(conn, month)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def late(
    benchmark_1500: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, tuple[str, str]]]:
    """The database after May was closed and the late payment came; May's and June's
    journals as they were at the close (CSV, XML)."""
    where = tmp_path_factory.mktemp("close-journal")
    db = where / "books.sqlite"
    with migrated(db) as conn:
        _, at_close = closed_then_late(
            conn,
            benchmark_1500,
            where / "late-day",
            lambda c: {month: _journals(c, month) for month in (MAY, JUNE)},
        )
    return db, at_close


def _journal(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[str, str]:
    """`journal`'s standard output and standard error (exit 0)."""
    capsys.readouterr()
    assert main(["journal", "--db", str(db), *args]) == 0
    printed = capsys.readouterr()
    return printed.out, printed.err


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _paise(cell: str) -> int:
    return int(Decimal(cell or "0") * 100)


def _line(rows: list[dict[str, str]], voucher: str, ledger: str) -> dict[str, str]:
    (found,) = [r for r in rows if r["voucher"] == voucher and r["ledger"] == ledger]
    return found


def test_a_closed_months_journal_is_printed_as_it_was_at_the_close_and_says_so(
    late: tuple[Path, dict[str, tuple[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, at_close = late
    then_csv, then_xml = at_close[MAY]
    out, err = _journal(capsys, db, "--month", MAY)
    assert out == then_csv  # the default for a closed month: the basis it was closed on
    assert _journal(capsys, db, "--month", MAY, "--basis", "closed")[0] == then_csv
    assert _journal(capsys, db, "--month", MAY, "--format", "tally")[0] == then_xml
    assert LATE_ID not in out
    count = len({r["voucher"] for r in _rows(then_csv)})
    assert err.startswith(
        f"2026-05 journal, basis closed: the {count} vouchers as kept at the close (closed by"
        " admin@example.com at 2026-06-02 10:00 IST). Data that arrived later are not in them"
    )
    # What the same command printed before this change: today's data, the late payment in.
    assert LATE_ID in _journals_now(db, MAY)[0]


def test_todays_journal_of_a_closed_month_names_what_arrived_after_the_close(
    late: tuple[Path, dict[str, tuple[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, at_close = late
    out, err = _journal(capsys, db, "--month", MAY, "--basis", "current")
    assert out == _journals_now(db, MAY)[0]  # May's own vouchers from today's rows
    now, then = _rows(out), _rows(at_close[MAY][0])
    grew = _paise(_line(now, CAPTURED_MAY, "Razorpay receivable")["debit"]) - _paise(
        _line(then, CAPTURED_MAY, "Razorpay receivable")["debit"]
    )
    assert grew == LATE_AMOUNT
    conn = connect(db)
    try:
        (late_import,) = conn.execute("SELECT import_id FROM payments WHERE id = ?", (LATE_ID,))
        (through,) = conn.execute("SELECT through_import_id FROM month_closes").fetchone()
    finally:
        conn.close()
    assert late_import[0] > through
    lines = err.splitlines()
    assert lines[0].startswith(
        "2026-05 journal, basis current: today's data, including what arrived after the close"
        " (closed by admin@example.com at 2026-06-02 10:00 IST); 1 voucher(s) differ from the"
        " journal kept at the close."
    )
    (changed,) = [x for x in lines if x.startswith("  ")]
    money = r"₹[\d,.]+"
    assert re.fullmatch(
        rf"  {CAPTURED_MAY} changed: debits ({money}) as closed, ({money}) today;"
        rf" lines Razorpay receivable Dr \1 -> \2, Sales \(Razorpay collections\) Cr \1 -> \2;"
        rf" 1 row\(s\) new or changed since the close: {LATE_ID} \(import {late_import[0]},"
        r" \d{4}-\d\d-\d\d \d\d:\d\d IST\); 0 gone",
        changed,
    ), changed


def test_todays_journal_names_the_lines_and_the_corrected_row_when_the_debits_stay_equal(
    benchmark_1500: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # May closed, then a kept recon row sent again with its GST 0: its settlement's voucher
    # moves the tax from GST input credit to Payment gateway charges, its debits unchanged,
    # and it gains no row. The line names both ledgers and the corrected row with its import.
    db = tmp_path / "books.sqlite"
    with migrated(db) as conn:
        closed_then_late(conn, benchmark_1500, tmp_path / "late-day", lambda c: None)
        folder, payment, settlement, tax = corrected_day(tmp_path / "fix", benchmark_1500)
        import_day(conn, folder)
        key, imported = conn.execute(
            "SELECT row_key, import_id FROM recon_rows WHERE entity_id = ? AND settlement_id = ?",
            (payment, settlement),
        ).fetchone()
        (through,) = conn.execute("SELECT through_import_id FROM month_closes").fetchone()
    assert imported > through
    voucher = f"RZP-{settlement}"
    then = _rows(_journal(capsys, db, "--month", MAY)[0])
    out, err = _journal(capsys, db, "--month", MAY, "--basis", "current")
    was, now = (
        {r["ledger"]: _paise(r["debit"]) for r in rows if r["voucher"] == voucher}
        for rows in (then, _rows(out))
    )
    charges, gst = "Payment gateway charges", "GST input credit"
    assert (now[charges], now[gst]) == (was[charges] + tax, was[gst] - tax)
    assert sum(was.values()) == sum(now.values())  # what main printed told nothing more
    (line,) = [x for x in err.splitlines() if x.startswith(f"  {voucher} ")]
    debits = format_rupees(sum(was.values()), symbol=True)

    def moved(ledger: str) -> str:
        return (
            f"{ledger} Dr {format_rupees(was[ledger], symbol=True)}"
            f" -> {format_rupees(now[ledger], symbol=True)}"
        )

    assert re.fullmatch(
        re.escape(
            f"  {voucher} changed: debits {debits} as closed, {debits} today; lines"
            f" {moved(charges)}, {moved(gst)}; 1 row(s) new or changed since the close:"
            f" {key} (import {imported}, "
        )
        + r"\d{4}-\d\d-\d\d \d\d:\d\d IST\); 0 gone",
        line,
    ), line


def test_what_a_changed_voucher_names_is_bounded_with_how_many_more() -> None:
    from core.books.close import change_details
    from core.books.posting import LineChange, VoucherChange

    change = VoucherChange(
        "RZP-setl_X",
        "changed",
        300_000,
        300_000,
        added=(),
        removed=(),
        lines=tuple(LineChange(f"L{i}", "Dr", 100 * i, 100 * i + 1) for i in range(7)),
        since=tuple(f"row{i}" for i in range(8)),
    )
    lines, rows = change_details(change, (("row0", 7, 0),), limit=3)
    assert lines == "L0 Dr ₹0.00 -> ₹0.01, L1 Dr ₹1.00 -> ₹1.01, L2 Dr ₹2.00 -> ₹2.01, and 4 more"
    assert rows == "row0 (import 7, 1970-01-01 05:30 IST), row1, row2, and 5 more"


def test_the_next_months_journal_carries_the_late_payment_as_a_prior_period_voucher(
    late: tuple[Path, dict[str, tuple[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, at_close = late
    out, err = _journal(capsys, db, "--month", JUNE)
    rows = _rows(out)
    number = f"{CAPTURED_MAY}-PPA-{JUNE}"
    adjustment = [r for r in rows if r["kind"] == "prior_period"]
    assert [(r["voucher"], r["ledger"], r["debit"], r["credit"]) for r in adjustment] == [
        (number, "Razorpay receivable", "7777.00", ""),
        (number, "Sales (Razorpay collections)", "", "7777.00"),
    ]
    assert {(r["date"], r["reference"], r["source_rows"]) for r in adjustment} == {
        ("2026-06-01", CAPTURED_MAY, LATE_ID)
    }
    assert adjustment[0]["narration"] == (
        f"Prior-period adjustment: {CAPTURED_MAY} of 2026-05 (closed by admin@example.com at"
        " 2026-06-02 10:00 IST), as today's data give it, less what was posted"
    )
    assert rows[: len(adjustment)] == adjustment  # the adjustments open the month's journal
    # June's own vouchers are those of before: the late payment is May's, not June's.
    then = _rows(at_close[JUNE][0])
    assert rows[len(adjustment) :] == then
    # Every voucher balances to the paisa, the adjustment too.
    for voucher in {r["voucher"] for r in rows}:
        lines = [r for r in rows if r["voucher"] == voucher]
        assert sum(_paise(r["debit"]) for r in lines) == sum(_paise(r["credit"]) for r in lines)
    assert "It carries 1 prior-period adjustment voucher(s) for 2026-05 (closed)" in err
    # The roll-forward's prior-period adjustment is the same change seen through the
    # receivable: the captured difference the voucher posts (₹7,777.00) less the payment's
    # fee (₹183.54), which the journal posts with the settlement that pays it.
    capsys.readouterr()
    assert main(["rollforward", "--db", str(db), "--month", JUNE, "--json"]) == 0
    moved = json.loads(capsys.readouterr().out)["movements"][PRIOR_PERIOD]
    conn = connect(db)
    try:
        diff = {
            line: d
            for _, line, _, _, d in since_close(
                ledger_for(conn, MAY).events_for(MAY), MAY, closed_months(conn)
            )
        }
    finally:
        conn.close()
    assert moved == LATE == diff["closing"]
    assert _paise(adjustment[1]["credit"]) == diff["captured"] == LATE_AMOUNT
    assert moved == diff["captured"] + diff["fees"] and diff["fees"] == -LATE_FEE


def test_the_prior_period_voucher_goes_to_tally_balanced_and_dated_in_the_open_month(
    late: tuple[Path, dict[str, tuple[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = late
    out, _ = _journal(capsys, db, "--month", JUNE, "--format", "tally")
    vouchers = ET.fromstring(out).iter("VOUCHER")
    (adjustment,) = [
        v for v in vouchers if v.findtext("VOUCHERNUMBER") == f"{CAPTURED_MAY}-PPA-{JUNE}"
    ]
    assert adjustment.findtext("DATE") == "20260601"
    assert adjustment.findtext("REFERENCE") == CAPTURED_MAY
    assert (adjustment.findtext("NARRATION") or "").startswith("Prior-period adjustment:")
    entries = [
        (e.findtext("LEDGERNAME"), e.findtext("ISDEEMEDPOSITIVE"), e.findtext("AMOUNT"))
        for e in adjustment.iter("ALLLEDGERENTRIES.LIST")
    ]
    assert entries == [
        ("Razorpay receivable", "Yes", "-7777.00"),
        ("Sales (Razorpay collections)", "No", "7777.00"),
    ]


def test_the_closed_basis_of_an_open_month_is_refused(
    late: tuple[Path, dict[str, tuple[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = late
    capsys.readouterr()
    assert main(["journal", "--db", str(db), "--month", JUNE, "--basis", "closed"]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err == "error: 2026-06 is open: its journal has only the current basis\n"


def test_a_later_late_payment_is_adjusted_once_after_the_month_that_posted_the_first_closes(
    benchmark_1500: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # May closed; a late May payment; June closed (its journal posts that payment's
    # adjustment); a second late May payment: July posts only the second, June's journal
    # as kept keeps the first, and today's June names its adjustment as changed.
    db = tmp_path / "books.sqlite"
    with migrated(db) as conn:
        closed_then_late(conn, benchmark_1500, tmp_path / "d1", lambda c: None)
        close(conn, JUNE)
        second = late_day(tmp_path / "d2", "pay_LateMay30yyyyy", "2026-05-30T09:00:00+05:30")
        import_day(conn, second)
    june_kept = _rows(_journal(capsys, db, "--month", JUNE)[0])
    july, err = _journal(capsys, db, "--month", "2026-07")
    posted = [r for r in june_kept if r["kind"] == "prior_period"]
    assert {(r["ledger"], r["debit"] or r["credit"], r["source_rows"]) for r in posted} == {
        ("Razorpay receivable", "7777.00", LATE_ID),
        ("Sales (Razorpay collections)", "7777.00", LATE_ID),
    }
    adjusting = [r for r in _rows(july) if r["kind"] == "prior_period"]
    assert {
        (r["voucher"], r["ledger"], r["debit"] or r["credit"], r["source_rows"]) for r in adjusting
    } == {
        (f"{CAPTURED_MAY}-PPA-2026-07", "Razorpay receivable", "7777.00", "pay_LateMay30yyyyy"),
        (
            f"{CAPTURED_MAY}-PPA-2026-07",
            "Sales (Razorpay collections)",
            "7777.00",
            "pay_LateMay30yyyyy",
        ),
    }
    assert "for 2026-05, 2026-06 (closed)" in err
    _, today = _journal(capsys, db, "--month", JUNE, "--basis", "current")
    assert f"  {CAPTURED_MAY}-PPA-{JUNE} changed:" in today
    capsys.readouterr()
    assert main(["rollforward", "--db", str(db), "--month", "2026-07", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["movements"][PRIOR_PERIOD] == LATE


def test_a_month_closed_before_the_journal_was_kept_has_only_todays_journal_and_says_so(
    late: tuple[Path, dict[str, tuple[str, str]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import shutil

    db = tmp_path / "old-close.sqlite"
    shutil.copyfile(late[0], db)
    conn = connect(db)
    try:  # what a close made before migration 0115 left (and 0116's guards then absent)
        with guards_off(conn, "month_close_books"), guards_off(conn, "month_closes"), conn:
            conn.execute("DELETE FROM month_close_books")
            conn.execute("UPDATE month_closes SET through_import_id = NULL")
    finally:
        conn.close()
    out, err = _journal(capsys, db, "--month", MAY)
    assert out == _journals_now(db, MAY)[0]
    assert "2026-05 journal, basis current: today's data, including what arrived after" in err
    assert "its close kept no journal (closed before migration 0115)" in err
    capsys.readouterr()
    assert main(["journal", "--db", str(db), "--month", MAY, "--basis", "closed"]) == 2
    assert "before a close kept the journal (migration 0115)" in capsys.readouterr().err
    june, err = _journal(capsys, db, "--month", JUNE)
    assert not [r for r in _rows(june) if r["kind"] == "prior_period"]
    assert "2026-05 was closed before its journal was kept (migration 0115)" in err


def test_a_close_during_which_an_import_lands_is_refused_and_stores_nothing(
    benchmark_1500: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The month's rows are read before the write lock is taken; a day stored in between
    # would leave the journal kept without it: the close is refused, to be made again.
    import core.books.close
    from core.errors import RefusedError

    db = tmp_path / "books.sqlite"
    with migrated(db) as conn:
        reconciled(conn, benchmark_1500)
    real = core.books.close.month_journal

    def read_then_a_day_lands(*args: object, **kwargs: object) -> object:
        journal = real(*args, **kwargs)  # type: ignore[arg-type]
        other = connect(db)
        try:
            import_day(other, late_day(tmp_path / "meanwhile"))
        finally:
            other.close()
        return journal

    monkeypatch.setattr(core.books.close, "month_journal", read_then_a_day_lands)
    conn = connect(db)
    try:
        with pytest.raises(RefusedError, match="data were imported while its journal was read"):
            close(conn, MAY)
        assert closed_months(conn) == {}
        assert conn.execute("SELECT count(*) FROM month_close_books").fetchone()[0] == 0
        monkeypatch.setattr(core.books.close, "month_journal", real)
        assert (
            close(conn, MAY).through_import_id
            == conn.execute("SELECT max(id) FROM imports").fetchone()[0]
        )
    finally:
        conn.close()


def test_todays_journal_names_the_row_whose_dispute_was_lost_after_the_close(
    benchmark_1500: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # April closed with a dispute open whose deduct-at-onset debit an April settlement
    # carried; a later import says it was lost. The settlement's voucher moves the debit
    # from disputed amounts to chargebacks, and the row behind it is named with the import
    # that stored the dispute again (an independent tester: "0 row(s) new or changed").
    db = tmp_path / "books.sqlite"
    april = "2026-04"
    start, end = (ts(f"{d}T00:00:00+05:30") for d in ("2026-04-01", "2026-05-01"))
    with migrated(db) as conn:
        reconciled(conn, benchmark_1500)
        key, settlement, dispute = conn.execute(
            "SELECT r.row_key, r.settlement_id, d.id FROM recon_rows r JOIN disputes d"
            " ON d.id = r.dispute_id WHERE d.status = 'open' AND r.settled_at >= ?"
            " AND r.settled_at < ? ORDER BY r.row_key LIMIT 1",
            (start, end),
        ).fetchone()
        close(conn, april)
        header, *rows = (benchmark_1500 / "disputes.csv").read_text().splitlines()
        (row,) = [r for r in rows if r.startswith(f"{dispute},")]
        folder = late_day(tmp_path / "lost")
        (folder / "payments.csv").write_text(
            (folder / "payments.csv").read_text().splitlines()[0] + "\n"
        )
        (folder / "disputes.csv").write_text(f"{header}\n{row.replace(',open,', ',lost,')}\n")
        import_day(conn, folder)
        (imported,) = conn.execute(
            "SELECT import_id FROM disputes WHERE id = ?", (dispute,)
        ).fetchone()

    _, err = _journal(capsys, db, "--month", april, "--basis", "current")
    (line,) = [x for x in err.splitlines() if x.startswith(f"  RZP-{settlement} ")]
    assert "Chargebacks Dr ₹0.00 -> " in line, line
    assert f"1 row(s) new or changed since the close: {key} (import {imported}, " in line, line
