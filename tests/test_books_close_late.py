"""A closed month after a late day (docs/books.md section 4): May is closed, then
`import-day` brings a 29 May payment of ₹7,777.00 (fee ₹183.54). The `rollforward` command
prints what the Books page shows (`books_month`: May's snapshot marked closed, June opening
from it with a prior-period adjustment of ₹7,593.46); the close report of May is what the
close kept (the snapshot, the balance by day, the journal), with every file's basis stated
and today's difference line by line; June's report carries the journal command's journal,
the late payment's adjustment voucher first."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest

from core.__main__ import main
from core.books.close import PRIOR_PERIOD, ClosedMonth, books_month, closed_months
from core.books.ledger import ledger_for
from core.books.report import CloseReport, build_report
from core.books.rollforward import month_rollforward
from core.db import connect
from core.money import format_rupees
from tests.books_late_support import (
    CLOSED_AT,
    LATE,
    LATE_AMOUNT,
    LATE_FEE,
    closed_then_late,
    migrated,
)


@pytest.fixture(scope="module")
def late_db(
    benchmark_1500: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, ClosedMonth, CloseReport]:
    """The benchmark reconciled, May closed as the Books page closes it (the ledger's events
    for the month), then a day folder holding a late 29 May payment imported: the database
    file, May's close and May's close report built right after the close."""
    where = tmp_path_factory.mktemp("closed-late")
    db = where / "books.sqlite"
    with migrated(db) as conn:
        may, at_close = closed_then_late(
            conn, benchmark_1500, where / "late-day", lambda c: build_report(c, "2026-05")
        )
    return db, may, at_close


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


def _books(db: Path, month: str) -> dict[str, object]:
    """What the Books page shows for `month` (its ledger's events, the closes), and the
    command's note of write-offs not posted (none here: docs/books.md section 1)."""
    conn = connect(db)
    try:
        events = ledger_for(conn, month).events_for(month)
        shown = books_month(events, month, closed_months(conn)).as_dict()
        return {**shown, "write_offs_not_posted": {"total": 0, "items": []}}
    finally:
        conn.close()


def _today(db: Path, month: str) -> int:
    """Today's closing of `month` from the data alone, closes ignored."""
    conn = connect(db)
    try:
        return month_rollforward(ledger_for(conn, month).events_for(month), month).closing
    finally:
        conn.close()


def test_rollforward_prints_the_closed_snapshot_of_a_month_a_late_payment_came_for(
    late_db: tuple[Path, ClosedMonth, CloseReport], capsys: pytest.CaptureFixture[str]
) -> None:
    db, may, _ = late_db
    snap = may.snapshot
    args = ("rollforward", "--db", str(db), "--month", "2026-05")
    shown = json.loads(_cli(capsys, *args, "--json"))
    text = _cli(capsys, *args)
    assert shown == _books(db, "2026-05")
    assert shown["closing"] == snap.closing and shown["opening"] == snap.opening
    assert shown["movements"] == dict(snap.movements)
    assert shown["open_items"] == dict(snap.open_items)
    assert shown["closed"] == {
        "by": "admin@example.com",
        "at": CLOSED_AT,
        "at_ist": "2026-06-02 10:00 IST",
    }
    # The data say more now (what the command printed before: the late payment counted).
    assert _today(db, "2026-05") == snap.closing + LATE
    first = text.splitlines()[0]
    assert first == (
        "Razorpay receivable, 2026-05 (closed by admin@example.com at 2026-06-02 10:00 IST:"
        " the figures are as closed)"
    )
    assert f"  {'closing':<28} {format_rupees(snap.closing):>18}" in text.splitlines()
    assert format_rupees(dict(snap.movements)["captured"]) in text
    assert format_rupees(dict(snap.movements)["captured"] + LATE_AMOUNT) not in text
    assert format_rupees(snap.closing + LATE) not in text


def test_rollforward_shows_the_late_payment_as_the_next_months_prior_period_adjustment(
    late_db: tuple[Path, ClosedMonth, CloseReport], capsys: pytest.CaptureFixture[str]
) -> None:
    db, may, _ = late_db
    args = ("rollforward", "--db", str(db), "--month", "2026-06")
    shown = json.loads(_cli(capsys, *args, "--json"))
    text = _cli(capsys, *args)
    assert shown == _books(db, "2026-06")
    assert shown["closed"] is None and shown["opens_from_closed"] == "2026-05"
    assert shown["opening"] == may.snapshot.closing
    moves = shown["movements"]
    assert isinstance(moves, dict) and next(iter(moves)) == PRIOR_PERIOD
    assert moves[PRIOR_PERIOD] == LATE
    assert shown["closing"] == _today(db, "2026-06")
    assert shown["opening"] + sum(moves.values()) == shown["closing"]
    assert text.splitlines()[0] == (
        "Razorpay receivable, 2026-06 (open; opens from 2026-05's closing as closed)"
    )
    assert f"  {PRIOR_PERIOD:<28} {format_rupees(LATE):>18}" in text.splitlines()
    assert f"  {'opening':<28} {format_rupees(may.snapshot.closing):>18}" in text.splitlines()


def _rows(archive: zipfile.ZipFile, name: str) -> list[dict[str, str]]:
    text = archive.read(f"close-2026-05/{name}").decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_close_report_of_a_closed_month_is_its_snapshot_and_labels_what_is_todays(
    late_db: tuple[Path, ClosedMonth, CloseReport],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    db, may, at_close = late_db
    snap = may.snapshot
    out = tmp_path / "close.zip"
    _cli(capsys, "close-report", "--db", str(db), "--month", "2026-05", "--out", str(out))
    june = json.loads(_cli(capsys, "rollforward", "--db", str(db), "--month", "2026-06", "--json"))
    with zipfile.ZipFile(out) as archive:
        roll = _rows(archive, "rollforward.csv")
        archive_roll = archive.read("close-2026-05/rollforward.csv").decode()
        manifest = _rows(archive, "manifest.csv")
        since = _rows(archive, "prior_period_adjustments.csv")
        daily = _rows(archive, "daily.csv")
        journal = _rows(archive, "journal.csv")
        readme = archive.read("close-2026-05/README.txt").decode()
    # The roll-forward is the snapshot, paisa for paisa, and says so.
    expected = [
        ("opening", snap.opening),
        *snap.movements,
        ("closing", snap.closing),
        *snap.open_items,
        ("residual", snap.residual),
    ]
    assert [(r["line"], int(r["paise"])) for r in roll] == expected
    assert {r["basis"] for r in roll} == {"closed_snapshot"}
    bases = {r["file"]: r["basis"] for r in manifest}
    kept = ("rollforward.csv", "residual_drilldown.csv", "daily.csv", "journal.csv", "tally.xml")
    for name in kept:
        assert bases[name] == "closed_snapshot", name
    for name in ("gst_tie_out.csv", "fee_overcharges.csv"):
        assert bases[name] == "today", name
    assert bases["prior_period_adjustments.csv"] == "closed_snapshot_vs_today"
    # Today's difference, line by line; its closing is June's prior-period adjustment.
    diff = {r["line"]: int(r["difference_paise"]) for r in since}
    assert {k: v for k, v in diff.items() if v} == {
        "captured": LATE_AMOUNT,
        "fees": -LATE_FEE,
        "closing": LATE,
        "unsettled_payments": LATE,
    }
    assert diff["closing"] == june["movements"][PRIOR_PERIOD]
    closing = next(r for r in since if r["line"] == "closing")
    assert (int(closing["closed_paise"]), int(closing["today_paise"])) == (
        snap.closing,
        snap.closing + LATE,
    )
    # The journal and the balance by day are those the close kept: the files of the report
    # built right after the close, byte for byte; the late payment is in neither.
    with zipfile.ZipFile(out) as archive:
        for name in ("daily.csv", "journal.csv", "tally.xml"):
            assert archive.read(f"close-2026-05/{name}").decode() == at_close.files[name], name
    assert "pay_LateMay29xxxxx" not in {r for row in journal for r in row["source_rows"].split(";")}
    assert {r["basis"] for r in daily} == {"closed_snapshot"}
    assert int(daily[-1]["closing_paise"]) == snap.closing
    assert "2026-05 is CLOSED (by admin@example.com at 2026-06-02 10:00 IST)" in readme
    # Right after the close the same report agreed with its snapshot everywhere.
    assert "no prior-period adjustment" in at_close.files["README.txt"]
    assert at_close.files["rollforward.csv"] == archive_roll
    assert f"move 2026-05's closing by {format_rupees(LATE, symbol=True)}" in readme
    assert "The next month's journal posts it as prior-period adjustment vouchers" in readme
    assert "fee_overcharges.csv, gst_tie_out.csv include it" in readme


def _june_report(db: Path) -> CloseReport:
    conn = connect(db)
    try:
        return build_report(conn, "2026-06")
    finally:
        conn.close()


def test_the_next_months_close_report_carries_the_journal_command_s_adjustment_voucher(
    late_db: tuple[Path, ClosedMonth, CloseReport], capsys: pytest.CaptureFixture[str]
) -> None:
    db, _, _ = late_db
    june = _june_report(db)
    printed = _cli(capsys, "journal", "--db", str(db), "--month", "2026-06")
    assert june.files["journal.csv"] == printed
    assert "RZP-CAPTURED-2026-05-PPA-2026-06,2026-06-01,prior_period," in printed
    assert (
        "journal.csv and tally.xml open with 1 prior-period adjustment voucher(s) for 2026-05."
        in june.files["README.txt"]
    )


def test_the_next_months_daily_file_opens_at_the_opening_plus_its_prior_period_adjustments(
    late_db: tuple[Path, ClosedMonth, CloseReport],
) -> None:
    # An independent tester: June's daily.csv first day did not tie to rollforward.csv's
    # opening, and nothing said why (daily.csv is today's data; the opening is May's close).
    import csv
    import io

    db, _, _ = late_db
    june = _june_report(db)
    roll = {
        (r["section"], r["line"]): int(r["paise"])
        for r in csv.DictReader(io.StringIO(june.files["rollforward.csv"]))
    }
    first = next(csv.DictReader(io.StringIO(june.files["daily.csv"])))
    adjustment = roll[("movement", "prior_period_adjustments")]
    assert adjustment != 0
    assert int(first["opening_paise"]) == roll[("opening", "opening")] + adjustment
    assert (
        "so its first day opens at that opening plus the prior-period adjustments"
        in (june.files["README.txt"])
    )
