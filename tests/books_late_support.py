"""A closed month after a late day (docs/books.md section 4), shared by the command-line
and Books page tests: the 1,500-payment benchmark reconciled, May 2026 closed as the Books
page closes it, then `import-day` brings a payment captured on 29 May for ₹7,777.00 (fee
₹183.54) that no settlement carries yet."""

from __future__ import annotations

import csv
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import numpy as np

from core.books.close import ClosedMonth, close_month
from core.books.ledger import ledger_for
from core.calendar import in_ist_month
from core.db import connect, migrate
from core.engine import EngineParams
from core.pipeline import reconcile_day_into_db, reconcile_folder_into_db
from tests.engine_support import ts

T = TypeVar("T")
AS_OF = ts("2026-06-30T23:59:59+05:30")
CLOSED_AT = ts("2026-06-02T10:00:00+05:30")
LATE_ID = "pay_LateMay29xxxxx"
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


def late_day(
    folder: Path,
    payment_id: str = LATE_ID,
    created: str = "2026-05-29T12:15:00+05:30",
    amount: int = LATE_AMOUNT,
    fee: int = LATE_FEE,
) -> Path:
    """A day folder holding one captured card payment (GST 2,800 paise) and nothing else."""
    folder.mkdir()
    (folder / "payments.csv").write_text(
        f"{PAYMENT_HEADER}\n"
        f"{payment_id},payment,{amount},INR,captured,order_{payment_id[4:]},,false,"
        f"card,0,,true,Order payment,late@example.com,+919800000001,{fee},2800,,{ts(created)}\n",
        encoding="utf-8",
    )
    for name, header in EMPTY.items():
        (folder / name).write_text(f"{header}\n", encoding="utf-8")
    return folder


def close(conn: sqlite3.Connection, month: str, *, now: int = CLOSED_AT) -> ClosedMonth:
    """Close `month` as the Books page does (the ledger's events for it)."""
    events = ledger_for(conn, month).events_for(month)
    return close_month(
        conn, events, month, actor="admin@example.com", request_id=f"close-{month}", now=now
    )


def reconciled(conn: sqlite3.Connection, benchmark: Path) -> None:
    reconcile_folder_into_db(conn, benchmark, params=EngineParams(), as_of=AS_OF)


def import_day(conn: sqlite3.Connection, folder: Path) -> None:
    reconcile_day_into_db(conn, folder, params=EngineParams(), as_of=AS_OF)


@contextmanager
def migrated(db: Path) -> Iterator[sqlite3.Connection]:
    """A connection to a new SQLite file, migrated; closed after."""
    conn = connect(db)
    try:
        migrate(conn)
        yield conn
    finally:
        conn.close()


def closed_then_late(
    conn: sqlite3.Connection,
    benchmark: Path,
    folder: Path,
    at_close: Callable[[sqlite3.Connection], T],
) -> tuple[ClosedMonth, T]:
    """The benchmark reconciled, May closed, `at_close` taken right after the close (what
    the books held then), then the late payment's day (in `folder`) imported."""
    reconciled(conn, benchmark)
    may = close(conn, "2026-05")
    kept = at_close(conn)
    import_day(conn, late_day(folder))
    return may, kept


def corrected_day(
    folder: Path, benchmark: Path, month: str = "2026-05"
) -> tuple[Path, str, str, int]:
    """A day folder that corrects one row kept at `month`'s close: the first payment recon
    row with GST of a settlement made in `month`, sent again (same row) with its tax 0. Its
    settlement's voucher keeps its debits (Payment gateway charges up by the tax, GST
    input credit down by it). Returns the folder, the payment id, the settlement id and
    the tax it had (paise)."""
    with (benchmark / "settlements.csv").open(encoding="utf-8") as f:
        made = {
            r["id"]
            for r in csv.DictReader(f)
            if in_ist_month(np.array([int(r["created_at"])]), month)[0]
        }
    with (benchmark / "settlement_recon.csv").open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or ())
        row = next(
            r
            for r in reader
            if r["type"] == "payment" and r["settlement_id"] in made and int(r["tax"]) > 0
        )
    tax, row["tax"] = int(row["tax"]), "0"
    folder.mkdir()
    (folder / "payments.csv").write_text(f"{PAYMENT_HEADER}\n", encoding="utf-8")
    (folder / "settlements.csv").write_text(f"{EMPTY['settlements.csv']}\n", encoding="utf-8")
    with (folder / "settlement_recon.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, header, lineterminator="\n")
        writer.writeheader()
        writer.writerow(row)
    return folder, row["entity_id"], row["settlement_id"], tax
