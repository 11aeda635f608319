"""Realistic rows for the app's tests and UI benchmark, written straight into the tables.

It stands in for import -> reconcile -> sync where a test needs a known database shape
fast (or a million payments in seconds). It follows the spec's money model: a payment row
credits `amount - fee`, a settlement's amount is the sum of its rows, its bank line
carries its UTR. A fixed share of payments get an exception with its exposure.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from core.db import transaction
from core.db.review import record_sync
from core.db.views import analyse, insert_rows

DAY = 86_400
CHUNK = 50_000
PAYMENT_CODES = (
    ("SETTLEMENT_AMOUNT_DISCREPANCY", "amount_at_risk"),
    ("AMOUNT_MISMATCH", "amount_at_risk"),
    ("MISSING_RECONCILIATION_RECORD", "awaiting_settlement"),
    ("TIMING_WINDOW_EXCEEDED", "structural"),
    ("WRONG_MAPPING", "structural"),
    ("DUPLICATE_RECONCILIATION_RECORD", "amount_at_risk"),
)


@dataclass(frozen=True)
class Built:
    """What the builder wrote: the run id, and counts to assert against."""

    run_id: int
    payments: int
    settlements: int
    exceptions: int
    as_of: int


def build(
    conn: sqlite3.Connection,
    *,
    payments: int = 500,
    seed: int = 7,
    exception_rate: float = 0.06,
    as_of: int | None = None,
    source: str = "benchmark",
    per_settlement: int = 100,
) -> Built:
    rng = random.Random(seed)
    as_of = as_of or int(time.time())
    start = as_of - 60 * DAY
    now = int(time.time())
    insert_rows(
        conn,
        "imports",
        ["id", "source", "location", "content_hash", "imported_at", "report_json"],
        [(1, source, f"builder seed={seed}", f"builder-{seed}-{payments}", now, "{}")],
    )
    insert_rows(
        conn,
        "runs",
        [
            "id",
            "started_at",
            "finished_at",
            "status",
            "as_of",
            "source",
            "params_json",
            "input_hashes_json",
        ],
        [(1, now - 2, now, "completed", as_of, source, json.dumps({"settlement_days": 2}), "{}")],
    )
    # The queue below is this run's, as a sync leaves it (core.review.sync.unsynced_run).
    with transaction(conn):
        record_sync(conn, 1, now, "engine", "{}")
    pay_cols = ["id", "amount", "status", "captured", "order_id", "method", "fee", "tax"]
    pay_cols += ["created_at", "import_id"]
    recon_cols = ["row_key", "entity_id", "type", "credit", "amount", "fee", "tax", "settled"]
    recon_cols += ["created_at", "settled_at", "settlement_id", "settlement_utr", "order_id"]
    recon_cols += ["import_id"]
    out_cols = ["run_id", "entity_type", "entity_id", "status", "reason_code", "reason_codes"]
    out_cols += ["settlement_id", "expected_amount", "actual_amount", "difference"]
    out_cols += ["exposure_class", "exposure_amount", "order_id", "utr", "entity_created_at"]
    exc_cols = ["entity_type", "entity_id", "reason_code", "reason_codes", "exposure_class"]
    exc_cols += ["exposure_amount", "expected_amount", "actual_amount", "difference"]
    exc_cols += ["settlement_id", "order_id", "utr", "entity_created_at", "status"]
    exc_cols += ["first_run_id", "last_run_id", "opened_at", "updated_at"]

    settlements: dict[str, list[int]] = {}
    exceptions = 0
    for base in range(0, payments, CHUNK):
        pays, recons, outs, excs = [], [], [], []
        for i in range(base, min(payments, base + CHUNK)):
            pid, oid = f"pay_{i:014d}", f"order_{i:012d}"
            amount = rng.randrange(10_000, 5_000_000)
            fee = amount * 2 // 100
            tax = fee * 18 // 118
            created = start + (i * 55 * DAY) // max(payments, 1) + rng.randrange(0, 3600)
            sid = f"setl_{i // per_settlement:010d}"
            utr = f"UTIB{i // per_settlement:012d}"
            pays.append((pid, amount, "captured", 1, oid, "upi", fee, tax, created, 1))
            credit = amount - fee
            code, cls = ("", "")
            if rng.random() < exception_rate:
                code, cls = PAYMENT_CODES[rng.randrange(len(PAYMENT_CODES))]
            if code == "SETTLEMENT_AMOUNT_DISCREPANCY":
                credit -= rng.randrange(100, 5000)
            settled_at = created + 2 * DAY
            if code != "MISSING_RECONCILIATION_RECORD":
                recons.append(
                    (
                        f"payment:{pid}:{sid}:1",
                        pid,
                        "payment",
                        credit,
                        amount,
                        fee,
                        tax,
                        1,
                        created,
                        settled_at,
                        sid,
                        utr,
                        oid,
                        1,
                    )
                )
                settlements.setdefault(sid, [created, 0])[1] += credit
            expected, actual = amount - fee, credit
            exposure = abs(actual - expected) if cls == "amount_at_risk" else 0
            if cls == "awaiting_settlement":
                exposure, actual = expected, 0
            row_sid = None if code == "MISSING_RECONCILIATION_RECORD" else sid
            row_utr = None if code == "MISSING_RECONCILIATION_RECORD" else utr
            status = "EXCEPTION" if code else "MATCHED"
            outs.append(
                (
                    1,
                    "payment",
                    pid,
                    status,
                    code,
                    code,
                    row_sid,
                    expected,
                    actual,
                    actual - expected,
                    cls,
                    exposure,
                    oid,
                    row_utr,
                    created,
                )
            )
            if code:
                exceptions += 1
                excs.append(
                    (
                        "payment",
                        pid,
                        code,
                        code,
                        cls,
                        exposure,
                        expected,
                        actual,
                        actual - expected,
                        row_sid,
                        oid,
                        row_utr,
                        created,
                        "OPEN",
                        1,
                        1,
                        now,
                        now,
                    )
                )
        insert_rows(conn, "payments", pay_cols, pays)
        insert_rows(conn, "recon_rows", recon_cols, recons)
        insert_rows(conn, "outcomes", out_cols, outs)
        insert_rows(conn, "exceptions", exc_cols, excs)

    setl_rows, bank_rows, outs, excs = [], [], [], []
    for n, (sid, (created, net)) in enumerate(sorted(settlements.items())):
        utr = f"UTIB{int(sid[5:]):012d}"
        setl_created = created + 2 * DAY
        setl_rows.append((sid, net, "processed", utr, setl_created, 1))
        line_id = f"bank_statement.csv:{n + 6}"
        missing = n % 10 == 3  # one settlement in ten never reached the bank
        if not missing:
            day = time.strftime("%Y-%m-%d", time.gmtime(setl_created + 19_800 + DAY))
            narration = f"NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-{utr}"
            bank_rows.append((line_id, "bank_statement.csv", n + 6, day, narration, utr, net, 1))
            outs.append((1, "bank_entry", line_id, "MATCHED", "", "", sid, net, net, 0, "", 0))
        status, code = ("EXCEPTION", "MISSING_BANK_ENTRY") if missing else ("MATCHED", "")
        cls, exposure = ("awaiting_settlement", net) if missing else ("", 0)
        actual = 0 if missing else net
        head = (1, "settlement", sid, status, code, code, sid, net, actual, actual - net)
        outs.append((*head, cls, exposure))
        if missing:
            exceptions += 1
            head = ("settlement", sid, code, code, cls, exposure, net, 0, -net, sid, None, utr)
            excs.append((*head, setl_created, "OPEN", 1, 1, now, now))
    insert_rows(
        conn,
        "settlements",
        ["id", "amount", "status", "utr", "created_at", "import_id"],
        setl_rows,
    )
    insert_rows(
        conn,
        "bank_lines",
        ["id", "file", "line_no", "txn_date", "narration", "utr", "credit", "import_id"],
        bank_rows,
    )
    insert_rows(conn, "outcomes", out_cols[:12], outs)
    insert_rows(conn, "exceptions", exc_cols, excs)
    # As the engine's sync does: every exception is opened in the audit trail, so that
    # `audit verify` (which replays the trail against the exceptions) holds.
    from core.audit import AuditEvent, append_many

    opened = conn.execute("SELECT id, exposure_amount, reason_code FROM exceptions ORDER BY id")
    append_many(
        conn,
        [
            AuditEvent(
                "engine",
                "exception.opened",
                "exception",
                str(r[0]),
                {"exposure_amount": r[1], "reason_code": r[2], "to_status": "OPEN"},
            )
            for r in opened.fetchall()
        ],
        now=now,
    )
    analyse(conn)
    return Built(1, payments, len(settlements), exceptions, as_of)


def bootstrap_builder(conn: sqlite3.Connection, work: object, progress: Callable) -> None:
    """A `core.bootstrap.Builder` that writes the builder's rows (fast cold starts in tests).

    BUILDER_DELAY (seconds) stretches the build so that concurrent starts overlap.
    """
    progress(0.1, "Writing synthetic rows")
    time.sleep(float(os.environ.get("BUILDER_DELAY", "0")))
    build(conn, payments=int(os.environ.get("BUILDER_PAYMENTS", "300")))
    progress(0.9, "Rows written")


def dying_builder(conn: sqlite3.Connection, work: object, progress: Callable) -> None:
    """A builder killed midway: a 'running' run and an import, then SIGKILL."""
    insert_rows(
        conn,
        "imports",
        ["source", "location", "content_hash", "imported_at", "report_json"],
        [("benchmark", "seed=42", "partial", 0, "{}")],
    )
    insert_rows(
        conn,
        "runs",
        ["started_at", "status", "as_of", "source", "params_json", "input_hashes_json"],
        [(0, "running", 0, "benchmark", "{}", "{}")],
    )
    progress(0.5, "About to die")
    os.kill(os.getpid(), signal.SIGKILL)
