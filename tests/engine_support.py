"""Test-only helpers for the engine tests: Datasets from dicts, and a small loader for the
spec's worked example (API-shaped files in paise plus an HDFC statement in rupees).

This is deliberately not the importer (core.ingest owns that); it reads exactly the
example's shapes so the engine can be checked against the spec on its own.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pandas as pd

from core.dataset import (
    BANK_COLUMNS,
    DISPUTE_COLUMNS,
    PAYMENT_COLUMNS,
    RECON_COLUMNS,
    REFUND_COLUMNS,
    SETTLEMENT_COLUMNS,
    Dataset,
    normalise_utr,
)
from core.money import parse_rupees

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))


def ts(text: str) -> int:
    """'2026-06-01' or '2026-06-01T10:00' (IST) -> Unix seconds."""
    value = dt.datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=IST)
    return int(value.timestamp())


DEFAULTS: dict[str, dict[str, Any]] = {
    "payments": {
        "currency": "INR",
        "status": "captured",
        "captured": True,
        "method": "upi",
        "fee": 0,
        "tax": 0,
        "amount_refunded": 0,
        "international": False,
    },
    "refunds": {"currency": "INR", "status": "processed"},
    "settlements": {"status": "processed", "fees": 0, "tax": 0},
    "recon": {
        "debit": 0,
        "credit": 0,
        "currency": "INR",
        "fee": 0,
        "tax": 0,
        "on_hold": False,
        "settled": True,
    },
    "bank": {"debit": 0, "credit": 0},
    "disputes": {"currency": "INR", "phase": "chargeback"},
}
COLUMNS = {
    "payments": PAYMENT_COLUMNS,
    "refunds": REFUND_COLUMNS,
    "settlements": SETTLEMENT_COLUMNS,
    "recon": RECON_COLUMNS,
    "bank": BANK_COLUMNS,
    "disputes": DISPUTE_COLUMNS,
}


def frame(table: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A Dataset frame with the fixed columns and dtypes; missing fields take defaults."""
    columns = COLUMNS[table]
    records = []
    occurrences: dict[str, int] = {}
    for number, row in enumerate(rows, 1):
        record = {**DEFAULTS[table], **row}
        if table == "recon" and "row_key" not in record:
            base = f"{record['type']}:{record['entity_id']}:{record.get('settlement_id') or ''}"
            occurrences[base] = occurrences.get(base, 0) + 1
            record["row_key"] = f"{base}:{occurrences[base] - 1}"
        if table == "bank":
            record.setdefault("file", "bank_statement.csv")
            record.setdefault("line_no", number + 1)
            record.setdefault("id", f"{record['file']}:{record['line_no']}")
            if "utr" not in row:
                record["utr"] = normalise_utr(record.get("reference"))
        records.append({name: record.get(name) for name in columns})
    data = pd.DataFrame(records, columns=list(columns))
    return (
        data.astype(columns)
        if len(data)
        else pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in columns.items()})
    )


def dataset(
    payments: list[dict[str, Any]] = (),  # type: ignore[assignment]
    refunds: list[dict[str, Any]] = (),  # type: ignore[assignment]
    settlements: list[dict[str, Any]] = (),  # type: ignore[assignment]
    recon: list[dict[str, Any]] = (),  # type: ignore[assignment]
    bank: list[dict[str, Any]] | None = None,
    disputes: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> Dataset:
    """A Dataset from lists of dicts; `bank=None` means no bank statement was given."""
    return Dataset(
        disputes=frame("disputes", list(disputes)),
        payments=frame("payments", list(payments)),
        refunds=frame("refunds", list(refunds)),
        settlements=frame("settlements", list(settlements)),
        recon=frame("recon", list(recon)),
        bank=frame("bank", list(bank or [])),
        has_bank_statement=bank is not None,
    )


# --- the worked example -------------------------------------------------------------------


def _items(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8-sig"))
        return list(data["items"] if isinstance(data, dict) else data)
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def _value(raw: Any, dtype: str) -> Any:
    if raw is None or raw == "":
        return None
    if dtype in ("int64", "Int64"):
        return int(raw)
    if dtype == "bool":
        return raw if isinstance(raw, bool) else str(raw).lower() in ("true", "1")
    if isinstance(raw, (dict, list)):
        return json.dumps(raw)
    return str(raw)


def _api_frame(path: Path, table: str) -> pd.DataFrame:
    columns = COLUMNS[table]
    rows = [
        {name: _value(item.get(name), dtype) for name, dtype in columns.items() if name in item}
        for item in _items(path)
    ]
    return frame(table, rows)


def _bank_frame(path: Path) -> pd.DataFrame:
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    header_at = next(i for i, line in enumerate(lines) if line.startswith("Date,Narration"))
    rows = []
    reader = csv.reader(lines[header_at + 1 :])
    for offset, cells in enumerate(reader):
        line_no = header_at + 2 + offset
        if not cells or cells[0].startswith("*"):
            continue
        date, narration, reference, value_date, debit, credit, balance = cells
        day = dt.datetime.strptime(date, "%d/%m/%y").date().isoformat()
        rows.append(
            {
                "file": path.name,
                "line_no": line_no,
                "txn_date": day,
                "value_date": dt.datetime.strptime(value_date, "%d/%m/%y").date().isoformat(),
                "narration": narration,
                "reference": reference,
                "debit": parse_rupees(debit) if debit else 0,
                "credit": parse_rupees(credit) if credit else 0,
                "balance": parse_rupees(balance) if balance else None,
            }
        )
    return frame("bank", rows)


def load_example(folder: Path) -> Dataset:
    """The spec example's dataset folder as a Dataset."""
    bank_path = folder / "bank_statement.csv"
    return Dataset(
        payments=_api_frame(folder / "payments.json", "payments"),
        refunds=_api_frame(folder / "refunds.csv", "refunds"),
        settlements=_api_frame(folder / "settlements.csv", "settlements"),
        recon=_api_frame(folder / "settlement_recon.csv", "recon"),
        bank=_bank_frame(bank_path) if bank_path.exists() else frame("bank", []),
        has_bank_statement=bank_path.exists(),
    )


# --- a small clean world for table-driven tests ----------------------------------------------
# Monday 2026-06-01: P1 (domestic) is captured; T+2 -> due Wednesday 06-03, overdue after
# Thursday 06-04 (grace 1). S1 is created Wednesday 06-03 and credited the same day.

AS_OF = ts("2026-06-30T23:59:59")
UTR1 = "AXISCN0000000001"
UTR2 = "KKBKH00000000002"
UTR3 = "HDFCN00000000003"


def world() -> dict[str, list[dict[str, Any]]]:
    """One payment P1 and one refund R1 (of P0, an earlier payment) settled in S1, and S1's
    bank credit. Every entity is MATCHED as of AS_OF."""
    return {
        "payments": [
            {
                "id": "pay_P1",
                "amount": 100_000,
                "fee": 2_000,
                "tax": 305,
                "order_id": "order_1",
                "created_at": ts("2026-06-01T10:00"),
            },
            {
                "id": "pay_P0",
                "amount": 60_000,
                "fee": 0,
                "tax": 0,
                "order_id": "order_0",
                "created_at": ts("2026-05-01T10:00"),
                "status": "refunded",
                "captured": True,
            },
        ],
        "refunds": [
            {
                "id": "rfnd_R1",
                "payment_id": "pay_P0",
                "amount": 50_000,
                "created_at": ts("2026-06-01T11:00"),
            }
        ],
        "settlements": [
            {
                "id": "setl_S1",
                "amount": 48_000,
                "utr": UTR1,
                "created_at": ts("2026-06-03T12:00"),
            },
            {
                "id": "setl_S0",
                "amount": 60_000,
                "utr": UTR3,
                "created_at": ts("2026-05-05T12:00"),
            },
        ],
        "recon": [
            {
                "entity_id": "pay_P1",
                "type": "payment",
                "amount": 100_000,
                "credit": 98_000,
                "fee": 2_000,
                "tax": 305,
                "created_at": ts("2026-06-01T10:00"),
                "settled_at": ts("2026-06-03T12:00"),
                "settlement_id": "setl_S1",
                "settlement_utr": UTR1,
                "order_id": "order_1",
            },
            {
                "entity_id": "rfnd_R1",
                "type": "refund",
                "amount": 50_000,
                "debit": 50_000,
                "created_at": ts("2026-06-01T11:00"),
                "settled_at": ts("2026-06-03T12:00"),
                "settlement_id": "setl_S1",
                "settlement_utr": UTR1,
                "payment_id": "pay_P0",
                "order_id": "order_0",
            },
            {
                "entity_id": "pay_P0",
                "type": "payment",
                "amount": 60_000,
                "credit": 60_000,
                "created_at": ts("2026-05-01T10:00"),
                "settled_at": ts("2026-05-05T12:00"),
                "settlement_id": "setl_S0",
                "settlement_utr": UTR3,
                "order_id": "order_0",
            },
        ],
        "bank": [
            {
                "txn_date": "2026-06-03",
                "narration": f"NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-{UTR1}",
                "reference": UTR1,
                "credit": 48_000,
            },
            {
                "txn_date": "2026-05-05",
                "narration": f"RTGS CR-{UTR3}-RAZORPAY SOFTWARE PVT LTD",
                "reference": UTR3,
                "credit": 60_000,
            },
            {
                "txn_date": "2026-06-04",
                "narration": "NEFT CR-HDFC0000240-ACME DISTRIBUTORS-INV 2231",
                "reference": "539362802315",
                "credit": 1_67_318_00,
            },
            {
                "txn_date": "2026-06-04",
                "narration": "POS 4xxxx1234 AMAZON PAY",
                "reference": "927715150280",
                "debit": 1_70_534_00,
            },
        ],
    }


def build(tables: dict[str, list[dict[str, Any]]], *, bank: bool = True) -> Dataset:
    return dataset(
        payments=tables["payments"],
        refunds=tables["refunds"],
        settlements=tables["settlements"],
        recon=tables["recon"],
        bank=tables["bank"] if bank else None,
        disputes=tables.get("disputes", []),
    )


def find(tables: dict[str, list[dict[str, Any]]], table: str, **match: Any) -> dict[str, Any]:
    """The one row of `table` whose fields equal `match` (to mutate it in a test)."""
    rows = [r for r in tables[table] if all(r.get(k) == v for k, v in match.items())]
    assert len(rows) == 1, (table, match, rows)
    return rows[0]


def outcome(outcomes: pd.DataFrame, entity_type: str, entity_id: str) -> dict[str, Any]:
    """The one outcome of an entity as a plain dict (None for null)."""
    rows = outcomes[(outcomes["entity_type"] == entity_type) & (outcomes["entity_id"] == entity_id)]
    assert len(rows) == 1, (entity_type, entity_id, len(rows))
    record = rows.iloc[0].to_dict()
    return {k: (None if v is pd.NA else v) for k, v in record.items()}


# --- mutations for table-driven cases ---------------------------------------------------------

Tables = dict[str, list[dict[str, Any]]]
Mutation = Any  # Callable[[Tables], None]


def change(table: str, match: dict[str, Any], **fields: Any) -> Mutation:
    def apply(tables: Tables) -> None:
        find(tables, table, **match).update(fields)

    return apply


def drop(table: str, **match: Any) -> Mutation:
    def apply(tables: Tables) -> None:
        tables[table].remove(find(tables, table, **match))

    return apply


def add(table: str, row: dict[str, Any]) -> Mutation:
    def apply(tables: Tables) -> None:
        tables[table].append(dict(row))

    return apply


def duplicate(table: str, match: dict[str, Any], **fields: Any) -> Mutation:
    def apply(tables: Tables) -> None:
        tables[table].append({**find(tables, table, **match), **fields})

    return apply


def both(*mutations: Mutation) -> Mutation:
    def apply(tables: Tables) -> None:
        for mutation in mutations:
            mutation(tables)

    return apply
