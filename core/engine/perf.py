"""A quick synthetic Dataset builder and timer for the engine (not a test, not the benchmark).

`python -m core.engine.perf --payments 1000000` builds a Razorpay-shaped Dataset in memory
(vectorised: batched settlements, refunds, a bank credit per settlement, noise lines and
a sprinkle of faults), then times `reconcile`, `write_results_csv` and, with `--db`,
`persist_run`. It prints seconds, payments per second and the process's peak RSS. The
generator with ground truth and `make bench` belong to core.benchmark; this only serves
the engine's own speed work.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.calendar import IST_OFFSET_SECONDS
from core.dataset import (
    BANK_COLUMNS,
    PAYMENT_COLUMNS,
    RECON_COLUMNS,
    REFUND_COLUMNS,
    SETTLEMENT_COLUMNS,
    Dataset,
)

START = 1_767_225_600  # 2026-01-01 00:00 UTC
DAY = 86_400


def _ids(prefix: str, n: int, rng: np.random.Generator) -> pd.Series:
    alphabet = np.frombuffer(
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "S1"
    )
    chars = alphabet[rng.integers(0, len(alphabet), size=(n, 14))]
    body = chars.view("S14").ravel().astype(str)
    return pd.Series(np.char.add(prefix, body), dtype="string")


def _frame(columns: dict[str, str], values: dict[str, object], n: int) -> pd.DataFrame:
    data = {}
    for name, dtype in columns.items():
        if name in values:
            series: Any = pd.Series(values[name])
            data[name] = series.astype(dtype)
        else:
            data[name] = pd.Series([None] * n if n else [], dtype=dtype)
    return pd.DataFrame(data)


def build(payments: int, seed: int = 7) -> Dataset:
    """A Dataset with `payments` payments, ~1 recon row each, ~15 settlements per 1,000."""
    rng = np.random.default_rng(seed)
    n = payments
    pay_ids = _ids("pay_", n, rng)
    order_ids = _ids("order_", n, rng)
    created = np.sort(START + rng.integers(0, 180 * DAY, size=n)).astype(np.int64)
    amount = rng.integers(100, 5_000_000, size=n).astype(np.int64)
    fee = amount * 2 // 100
    tax = fee * 18 // 118
    captured = rng.random(n) > 0.05
    international = rng.random(n) < 0.03
    status = np.where(captured, "captured", "failed")

    settlements = max(2, n * 15 // 1000)
    block = np.minimum(np.arange(n) * settlements // n, settlements - 1)
    setl_ids = _ids("setl_", settlements, rng)
    setl_created = np.zeros(settlements, dtype=np.int64)
    np.maximum.at(setl_created, block, created)
    setl_created = setl_created + DAY
    utr = _ids("AXISCN", settlements, rng).str.slice(0, 16).str.upper()

    settled = captured & (rng.random(n) > 0.003)
    rows = np.flatnonzero(settled)
    duplicate = rows[rng.random(len(rows)) < 0.001]
    rows = np.concatenate([rows, duplicate])
    r_amount = amount[rows].copy()
    r_amount[rng.random(len(rows)) < 0.001] += 100
    r_credit = r_amount - fee[rows]
    refunded = np.flatnonzero(captured & (rng.random(n) < 0.05))
    refund_ids = _ids("rfnd_", len(refunded), rng)
    refund_amount = amount[refunded] // 2

    recon_entity = pd.concat([pay_ids.iloc[rows], refund_ids], ignore_index=True)
    recon_settlement_pos = np.concatenate([block[rows], block[refunded]])
    credit_all = np.concatenate([r_credit, np.zeros(len(refunded), dtype=np.int64)])
    debit_all = np.concatenate([np.zeros(len(rows), dtype=np.int64), refund_amount])
    setl_amount = np.zeros(settlements, dtype=np.int64)
    np.add.at(setl_amount, recon_settlement_pos, credit_all - debit_all)
    kind = np.concatenate([np.full(len(rows), "payment"), np.full(len(refunded), "refund")])
    recon_n = len(kind)
    recon = _frame(
        RECON_COLUMNS,
        {
            "row_key": pd.Series(np.arange(recon_n).astype(str)),
            "entity_id": recon_entity,
            "type": kind,
            "debit": debit_all,
            "credit": credit_all,
            "amount": np.concatenate([r_amount, refund_amount]),
            "currency": np.full(recon_n, "INR"),
            "fee": np.concatenate([fee[rows], np.zeros(len(refunded), dtype=np.int64)]),
            "tax": np.concatenate([tax[rows], np.zeros(len(refunded), dtype=np.int64)]),
            "on_hold": np.zeros(recon_n, dtype=bool),
            "settled": np.ones(recon_n, dtype=bool),
            "created_at": np.concatenate([created[rows], created[refunded] + 3600]),
            "settled_at": setl_created[recon_settlement_pos],
            "settlement_id": setl_ids.iloc[recon_settlement_pos].reset_index(drop=True),
            "settlement_utr": utr.iloc[recon_settlement_pos].reset_index(drop=True),
            "payment_id": pd.concat(
                [pd.Series([None] * len(rows), dtype="string"), pay_ids.iloc[refunded]],
                ignore_index=True,
            ),
            "order_id": pd.concat(
                [order_ids.iloc[rows], order_ids.iloc[refunded]], ignore_index=True
            ),
        },
        recon_n,
    )
    shuffle = rng.permutation(recon_n)
    recon = recon.iloc[shuffle].reset_index(drop=True)

    payments_frame = _frame(
        PAYMENT_COLUMNS,
        {
            "id": pay_ids,
            "amount": amount,
            "currency": np.full(n, "INR"),
            "status": status,
            "captured": captured,
            "order_id": order_ids,
            "method": np.full(n, "upi"),
            "fee": fee,
            "tax": tax,
            "amount_refunded": np.zeros(n, dtype=np.int64),
            "international": international,
            "created_at": created,
        },
        n,
    )
    refunds_frame = _frame(
        REFUND_COLUMNS,
        {
            "id": refund_ids,
            "payment_id": pay_ids.iloc[refunded].reset_index(drop=True),
            "amount": refund_amount,
            "currency": np.full(len(refunded), "INR"),
            "status": np.full(len(refunded), "processed"),
            "created_at": created[refunded] + 3600,
        },
        len(refunded),
    )
    settlements_frame = _frame(
        SETTLEMENT_COLUMNS,
        {
            "id": setl_ids,
            "amount": setl_amount,
            "status": np.full(settlements, "processed"),
            "utr": utr,
            "created_at": setl_created,
        },
        settlements,
    )
    credited = np.flatnonzero(rng.random(settlements) > 0.002)
    noise = max(1, settlements // 5)
    bank_n = len(credited) + noise
    day = (setl_created[credited] + IST_OFFSET_SECONDS) // DAY
    dates = np.concatenate([day, START // DAY + rng.integers(0, 180, size=noise)])
    narration = np.concatenate(
        [
            np.char.add("NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-", utr.iloc[credited]),
            np.full(noise, "UPI/CLOUD HOSTING/PAYMENT"),
        ]
    )
    bank = _frame(
        BANK_COLUMNS,
        {
            "id": pd.Series([f"bank.csv:{i + 2}" for i in range(bank_n)]),
            "file": np.full(bank_n, "bank.csv"),
            "line_no": np.arange(2, bank_n + 2),
            "txn_date": dates.astype("datetime64[D]").astype(str),
            "narration": narration,
            "reference": np.concatenate(
                [utr.iloc[credited].to_numpy(dtype=str), np.full(noise, "778508658675")]
            ),
            "utr": pd.concat([utr.iloc[credited], pd.Series([None] * noise)], ignore_index=True),
            "debit": np.concatenate([np.zeros(len(credited)), rng.integers(1, 10**6, noise)]),
            "credit": np.concatenate([setl_amount[credited], np.zeros(noise, dtype=np.int64)]),
        },
        bank_n,
    )
    return Dataset(
        payments=payments_frame,
        refunds=refunds_frame,
        settlements=settlements_frame,
        recon=recon,
        bank=bank,
        has_bank_statement=True,
    )


def write_files(dataset: Dataset, folder: Path) -> None:
    """Write the dataset as API-shaped CSV files (paise) plus an HDFC-style bank statement
    (rupees), so the whole CLI (`python -m core reconcile`) can be timed on it."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    folder.mkdir(parents=True, exist_ok=True)
    tables = {
        "payments.csv": dataset.payments,
        "refunds.csv": dataset.refunds,
        "settlements.csv": dataset.settlements,
        "settlement_recon.csv": dataset.recon.drop(columns=["row_key"]),
    }
    for name, frame in tables.items():
        table = pa.Table.from_pandas(frame, preserve_index=False)
        pacsv.write_csv(table, folder / name)
    bank = dataset.bank
    days = pd.to_datetime(bank["txn_date"]).dt.strftime("%d/%m/%y")

    def rupees(paise: pd.Series) -> pd.Series:
        values = paise.to_numpy(dtype=np.int64)
        text = pd.Series([f"{v // 100}.{v % 100:02d}" for v in values.tolist()], dtype="string")
        return text.where(values > 0, "")

    statement = pd.DataFrame(
        {
            "Date": days,
            "Narration": bank["narration"],
            "Chq./Ref.No.": bank["reference"],
            "Value Dt": days,
            "Withdrawal Amt.": rupees(bank["debit"]),
            "Deposit Amt.": rupees(bank["credit"]),
            "Closing Balance": "0.00",
        }
    )
    statement.to_csv(folder / "bank_statement.csv", index=False)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.engine.perf")
    parser.add_argument("--payments", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--db", action="store_true", help="also time persist_run")
    parser.add_argument("--write", type=Path, help="write the dataset files here and stop")
    args = parser.parse_args(argv)

    from core.engine import EngineParams, reconcile
    from core.engine.results import write_results_csv

    began = time.perf_counter()
    dataset = build(args.payments)
    built = time.perf_counter() - began
    print(
        f"built {args.payments:,} payments, {len(dataset.recon):,} recon rows, "
        f"{len(dataset.settlements):,} settlements, {len(dataset.bank):,} bank lines "
        f"in {built:.2f} s; peak RSS so far {_peak_rss_mb():,.0f} MB"
    )
    if args.write is not None:
        write_files(dataset, args.write)
        print(f"written to {args.write}; reconcile it as of 2026-07-20")
        return 0
    as_of = START + 200 * DAY
    outcomes = pd.DataFrame()
    for _ in range(args.repeat):
        began = time.perf_counter()
        outcomes = reconcile(dataset, EngineParams(), as_of)
        seconds = time.perf_counter() - began
        print(
            f"reconcile: {seconds:.2f} s, {args.payments / seconds:,.0f} payments/s, "
            f"{len(outcomes):,} outcomes; peak RSS {_peak_rss_mb():,.0f} MB"
        )
    with tempfile.TemporaryDirectory() as folder:
        began = time.perf_counter()
        write_results_csv(outcomes, Path(folder) / "results.csv")
        print(f"write_results_csv: {time.perf_counter() - began:.2f} s")
        if args.db:
            from core.db import connect, migrate
            from core.engine.persist import persist_run

            conn = connect(Path(folder) / "perf.sqlite")
            migrate(conn)
            began = time.perf_counter()
            run_id = persist_run(
                conn,
                outcomes,
                params=EngineParams(),
                as_of=as_of,
                source="synthetic",
                input_hashes={},
                timings={},
            )
            print(f"persist_run: {time.perf_counter() - began:.2f} s (run {run_id})")
            conn.close()
    print(outcomes.groupby(["entity_type", "status"]).size().to_string())
    print(f"peak RSS {_peak_rss_mb():,.0f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
