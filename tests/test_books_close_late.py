"""A closed month after a late day (docs/books.md section 4): May is closed, then
`import-day` brings a 29 May payment of ₹7,777.00 (fee ₹183.54). The `rollforward` command
prints what the Books page shows (`books_month`: May's snapshot marked closed, June opening
from it with a prior-period adjustment of ₹7,593.46), in text and `--json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.__main__ import main
from core.books.close import PRIOR_PERIOD, ClosedMonth, books_month, close_month, closed_months
from core.books.ledger import ledger_for
from core.books.rollforward import month_rollforward
from core.db import connect, migrate
from core.engine import EngineParams
from core.money import format_rupees
from core.pipeline import reconcile_day_into_db, reconcile_folder_into_db
from tests.engine_support import ts

AS_OF = ts("2026-06-30T23:59:59+05:30")
CLOSED_AT = ts("2026-06-02T10:00:00+05:30")
LATE_AMOUNT, LATE_FEE = 777_700, 18_354  # ₹7,777.00 captured on 29 May, fee ₹183.54
LATE = LATE_AMOUNT - LATE_FEE  # 759,346 paise: what the late payment adds to May's closing
PAYMENT_HEADER = (
    "id,entity,amount,currency,status,order_id,invoice_id,international,method,"
    "amount_refunded,refund_status,captured,description,email,contact,fee,tax,error_code,"
    "created_at"
)
# The day brings no settlement: the two files are there, empty (a day folder needs them).
EMPTY = {
    "settlements.csv": "id,entity,amount,status,fees,tax,utr,created_at",
    "settlement_recon.csv": (
        "entity_id,type,debit,credit,amount,currency,fee,tax,on_hold,settled,created_at,"
        "settled_at,settlement_id,description,payment_id,settlement_utr,order_id,method"
    ),
}


@pytest.fixture(scope="module")
def late_db(
    benchmark_1500: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, ClosedMonth]:
    """The benchmark reconciled, May closed as the Books page closes it (the ledger's events
    for the month), then a day folder holding a late 29 May payment imported: the database
    file and May's close."""
    where = tmp_path_factory.mktemp("closed-late")
    db = where / "books.sqlite"
    late = where / "late-day"
    late.mkdir()
    created = ts("2026-05-29T12:15:00+05:30")
    (late / "payments.csv").write_text(
        f"{PAYMENT_HEADER}\n"
        f"pay_LateMay29xxxxx,payment,{LATE_AMOUNT},INR,captured,order_LateMay29ordr,,false,"
        f"card,0,,true,Order payment,late@example.com,+919800000001,{LATE_FEE},2800,,{created}\n",
        encoding="utf-8",
    )
    for name, header in EMPTY.items():
        (late / name).write_text(f"{header}\n", encoding="utf-8")
    conn = connect(db)
    try:
        migrate(conn)
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        events = ledger_for(conn, "2026-05").events_for("2026-05")
        may = close_month(
            conn, events, "2026-05", actor="admin@example.com", request_id="c1", now=CLOSED_AT
        )
        reconcile_day_into_db(conn, late, params=EngineParams(), as_of=AS_OF)
    finally:
        conn.close()
    return db, may


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


def _books(db: Path, month: str) -> dict[str, object]:
    """What the Books page shows for `month` (its ledger's events, the closes)."""
    conn = connect(db)
    try:
        events = ledger_for(conn, month).events_for(month)
        return books_month(events, month, closed_months(conn)).as_dict()
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
    late_db: tuple[Path, ClosedMonth], capsys: pytest.CaptureFixture[str]
) -> None:
    db, may = late_db
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
    late_db: tuple[Path, ClosedMonth], capsys: pytest.CaptureFixture[str]
) -> None:
    db, may = late_db
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
