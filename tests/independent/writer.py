"""Write the independent conformance datasets: every file variation spec sections 2-3 permit.

`write_suite(root)` writes several dataset folders under `root` and returns, per folder,
the CLI options to reconcile it with and the outcome the spec gives every entity. Run
`python -m tests.independent.score` to reconcile them all and print the score.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from tests.independent import scenarios as sc
from tests.independent.model import ABSENT, IST, Expect, World, at, ist_date

MONEY = {
    "payments": {"amount", "fee", "tax", "amount_refunded"},
    "refunds": {"amount"},
    "settlements": {"amount", "fees", "tax"},
    "settlement_recon": {"debit", "credit", "amount", "fee", "tax"},
}
TIMES = {"created_at", "settled_at"}
BOOLS = {"captured", "international", "on_hold", "settled"}
TEXT_NULLABLE = {
    "order_id",
    "payment_id",
    "dispute_id",
    "settlement_id",
    "method",
    "description",
    "settlement_utr",
}

API_COLUMNS = {
    "payments": [
        "id", "entity", "amount", "currency", "status", "order_id", "invoice_id", "international",
        "method", "amount_refunded", "refund_status", "captured", "description", "email", "contact",
        "notes", "fee", "tax", "error_code", "created_at",
    ],
    "refunds": [
        "id", "entity", "amount", "currency", "payment_id", "notes", "receipt", "created_at",
        "batch_id", "status", "speed_requested", "speed_processed",
    ],
    "settlements": ["id", "entity", "amount", "status", "fees", "tax", "utr", "created_at"],
    "settlement_recon": [
        "entity_id", "type", "debit", "credit", "amount", "currency", "fee", "tax", "on_hold",
        "settled", "created_at", "settled_at", "settlement_id", "posted_at", "credit_type",
        "description", "notes", "payment_id", "settlement_utr", "order_id", "order_receipt",
        "method", "card_network", "card_issuer", "card_type", "dispute_id",
    ],
}  # fmt: skip


@dataclass
class CsvStyle:
    """How one entity file is written."""

    unit: str = "paise"  # paise | rupees | whole_rupees
    dates: str = "unix"  # unix | dashboard (dd/mm/YYYY HH:MM:SS, IST)
    columns: list[str] | None = None  # None: the API order
    extra: dict[str, Callable[[dict[str, Any]], str]] = field(default_factory=dict)
    bom: bool = False
    crlf: bool = False
    blank_as_space: bool = False  # empty text cells written as whitespace
    plain_whole: float = 0.0  # rupees: share of whole-rupee amounts written without decimals


def rupees(paise: int, rng: random.Random) -> str:
    text = f"{'-' if paise < 0 else ''}{abs(paise) // 100}.{abs(paise) % 100:02d}"
    return text[:-1] if text.endswith("0") and rng.random() < 0.3 else text


def indian(paise: int) -> str:
    """1,35,000.00: Indian digit grouping."""
    whole, frac = divmod(paise, 100)
    digits = str(whole)
    if len(digits) > 3:
        head, tail = digits[:-3], digits[-3:]
        groups = []
        while len(head) > 2:
            groups.insert(0, head[-2:])
            head = head[:-2]
        digits = ",".join([head, *groups, tail]) if head else ",".join([*groups, tail])
    return f"{digits}.{frac:02d}"


def _cell(table: str, col: str, value: Any, style: CsvStyle, rng: random.Random) -> str:
    if value is None:
        return (
            " " * rng.randrange(1, 3)
            if style.blank_as_space and col in TEXT_NULLABLE and rng.random() < 0.7
            else ""
        )
    if col in BOOLS:
        return rng.choice([("true", "false"), ("1", "0")])[0 if value else 1]
    if col in MONEY[table]:
        if style.unit == "rupees":
            if value % 100 == 0 and rng.random() < style.plain_whole:
                return str(value // 100)
            return rupees(value, rng)
        if style.unit == "whole_rupees":
            assert value % 100 == 0, (table, col, value)
            return str(value // 100)
        return str(value)
    if isinstance(value, datetime):
        if style.dates == "dashboard":
            return value.astimezone(IST).strftime("%d/%m/%Y %H:%M:%S")
        return str(int(value.timestamp()))
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def write_csv(
    path: Path, table: str, rows: list[dict[str, Any]], style: CsvStyle, rng: random.Random
) -> None:
    columns = style.columns or API_COLUMNS[table]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n" if style.crlf else "\n")
    writer.writerow([*columns, *style.extra])
    for row in rows:
        cells = [_cell(table, c, row.get(c), style, rng) for c in columns]
        writer.writerow([*cells, *(fn(row) for fn in style.extra.values())])
    path.write_text(
        ("\ufeff" if style.bom else "") + buffer.getvalue(), encoding="utf-8", newline=""
    )


def _json_value(value: Any) -> Any:
    return int(value.timestamp()) if isinstance(value, datetime) else value


def write_json(
    path: Path,
    rows: list[dict[str, Any]],
    envelope: bool,
    *,
    bom: bool = False,
    crlf: bool = False,
    omit_nulls: bool = False,
) -> None:
    """Razorpay-shaped JSON; `omit_nulls` leaves out null fields, as partial exports do."""
    items = [
        {k: _json_value(v) for k, v in row.items() if not (omit_nulls and v is None)}
        for row in rows
    ]
    body: Any = {"entity": "collection", "count": len(items), "items": items} if envelope else items
    text = json.dumps(body, ensure_ascii=False, indent=1)
    text = text.replace("\n", "\r\n") if crlf else text
    path.write_text(("\ufeff" if bom else "") + text, encoding="utf-8", newline="")


# ---- bank statements -------------------------------------------------------------------


@dataclass
class BankLayout:
    """A bank's CSV export: banner, header names, date and amount formats."""

    banner: list[list[str]]
    header: list[str]
    # per header column: date, value_date, narration, reference, debit, credit, balance,
    # serial or other
    fields: list[str]
    date_format: str
    amount: Callable[[int], str]
    empty: str = ""  # what the unused amount column holds
    separator: bool = False
    trailer: list[list[str]] = field(default_factory=list)
    crlf: bool = False
    bom: bool = False
    value_lag: bool = False  # credits' value date often a working day after the transaction date
    pad: bool = False  # amounts padded with spaces


def write_bank(path: Path, w: World, layout: BankLayout) -> None:
    """Write the statement and give each line's expectation its id `<file>:<physical line>`."""
    rng, lines = w.rng, w.bank
    if layout.value_lag:
        for line in lines:
            if line.credit and rng.random() < 0.6:
                line.value_day = w.cal.add(line.day, 1)
    records: list[list[str]] = [list(r) for r in layout.banner]
    records.append(layout.header)
    if layout.separator:
        records.append(["********"] * len(layout.header))
    balance = 25_00_000_00
    pad: Callable[[str], str] = (lambda t: f" {t} ") if layout.pad else (lambda t: t)
    ordered = sorted(lines, key=lambda line: line.day)
    for serial, line in enumerate(ordered, 1):
        balance += (line.credit or 0) - (line.debit or 0)
        value_day = line.value_day or line.day
        cells = {
            "date": line.day.strftime(layout.date_format),
            "value_date": value_day.strftime(layout.date_format),
            "narration": line.narration,
            "reference": line.reference,
            "debit": pad(layout.amount(line.debit)) if line.debit else layout.empty,
            "credit": pad(layout.amount(line.credit)) if line.credit else layout.empty,
            "balance": pad(layout.amount(balance)),
            "serial": str(serial),
            "other": rng.choice(["MUMBAI - FORT", "0001", ""]),
        }
        records.append([cells[f] for f in layout.fields])
        if line.expect is not None:
            line.expect.entity_id = f"{path.name}:{len(records)}"
    records.extend(layout.trailer)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n" if layout.crlf else "\n").writerows(records)
    path.write_text(
        ("\ufeff" if layout.bom else "") + buffer.getvalue(), encoding="utf-8", newline=""
    )


HDFC = BankLayout(
    banner=[
        ["HDFC BANK Ltd.", "", "", "", "", "", ""],
        ["Statement of account", "", "", "", "", "", ""],
        ["Account No :", "50200012345678", "", "", "", "", ""],
        [""] * 7,
    ],
    header=[
        "Date",
        "Narration",
        "Chq./Ref.No.",
        "Value Dt",
        "Withdrawal Amt.",
        "Deposit Amt.",
        "Closing Balance",
    ],
    fields=["date", "narration", "reference", "value_date", "debit", "credit", "balance"],
    date_format="%d/%m/%y",
    amount=indian,
    separator=True,
    crlf=True,
    value_lag=True,
)

ICICI = BankLayout(
    banner=[
        ["DETAILED STATEMENT"],
        [],
        ["Transaction Date from", "01/05/2026", "to", "30/06/2026"],
        ["Transactions List - ACME RETAIL PVT LTD (INR) - 000405001234"],
        [],
    ],
    header=[
        "S No.",
        "Value Date",
        "Transaction Date",
        "Cheque Number",
        "Transaction Remarks",
        "Withdrawal Amount (INR )",
        "Deposit Amount (INR )",
        "Balance (INR )",
    ],
    fields=["serial", "value_date", "date", "reference", "narration", "debit", "credit", "balance"],
    date_format="%d/%m/%Y",
    amount=lambda p: f"{p // 100}.{p % 100:02d}",
    empty="0.00",
    trailer=[[""] * 8],
    value_lag=True,
)

ICICI_TIGHT = BankLayout(
    banner=[["Account Number", "000405001234"], []],
    header=[
        "No.",
        "Transaction Date",
        "Value Date",
        "UTR",
        "Transaction Remarks",
        "Withdrawal Amount(INR)",
        "Deposit Amount(INR)",
        "Balance(INR)",
    ],
    fields=["serial", "date", "value_date", "reference", "narration", "debit", "credit", "balance"],
    date_format="%d/%m/%y",
    amount=indian,
    value_lag=True,
)

SBI = BankLayout(
    banner=[
        ["State Bank of India"],
        ["Account Number", ":", "00000031234567890"],
        ["Account Description", ":", "CURRENT ACCOUNT"],
        [],
    ],
    header=[
        "Txn Date",
        "Value Date",
        "Description",
        "Ref No./Cheque No.",
        "Debit",
        "Credit",
        "Balance",
    ],
    fields=["date", "value_date", "narration", "reference", "debit", "credit", "balance"],
    date_format="%d/%m/%Y",
    amount=lambda p: f"{p // 100:,}.{p % 100:02d}",
    empty=" ",
    bom=True,
    pad=True,
)

AXIS = BankLayout(
    banner=[["Statement of Account No - 912020012345678 for the period 01-05-2026 to 30-06-2026"]],
    header=[
        "Tran Id",
        "  value date ",
        "PARTICULARS",
        "Reference",
        "DR",
        "CR",
        "BALANCE",
        "Branch Name",
    ],
    fields=[
        "serial",
        "value_date",
        "narration",
        "reference",
        "debit",
        "credit",
        "balance",
        "other",
    ],
    date_format="%Y-%m-%d",
    amount=lambda p: f"{p // 100}" if p % 100 == 0 else f"{p // 100}.{p % 100:02d}",
)

KOTAK = BankLayout(
    banner=[
        ["Kotak Mahindra Bank"],
        ["Date :", "19/06/2026"],
        ["Period", "01/05/2026 - 19/06/2026"],
    ],
    header=[
        "Sl No",
        "Txn Date",
        "Value Date",
        "Particulars",
        "Cheque Number",
        "Dr",
        "Cr",
        "Balance",
    ],
    fields=["serial", "date", "value_date", "narration", "reference", "debit", "credit", "balance"],
    date_format="%d/%m/%y",
    amount=indian,
    separator=True,
    value_lag=True,
)

GENERIC = BankLayout(
    banner=[],
    header=[
        "Transaction Date",
        "Value Date",
        "Narration",
        "Reference",
        "Debit",
        "Credit",
        "Closing Balance",
    ],
    fields=["date", "value_date", "narration", "reference", "debit", "credit", "balance"],
    date_format="%Y-%m-%d",
    amount=indian,
)


# ---- datasets --------------------------------------------------------------------------


@dataclass
class DatasetSpec:
    """One dataset folder, the CLI options it is reconciled with, and what the spec expects."""

    name: str
    folder: Path
    options: list[str]
    expects: list[Expect]
    about: str


def _shuffled(w: World, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = list(rows)
    w.rng.shuffle(rows)
    return rows


def hdfc_csv_paise(root: Path) -> DatasetSpec:
    w = World("hdfc_csv_paise", at(date(2026, 6, 30), 23, 59, 59), seed=101)
    sc.everything(w, matched=70)
    w.finish()
    folder = root / w.name
    folder.mkdir(parents=True)
    write_csv(folder / "payments.csv", "payments", _shuffled(w, w.payments), CsvStyle(), w.rng)
    write_csv(folder / "refunds.csv", "refunds", w.refunds, CsvStyle(crlf=True), w.rng)
    write_csv(folder / "settlements.csv", "settlements", w.settlements, CsvStyle(bom=True), w.rng)
    write_csv(
        folder / "settlement_recon.csv",
        "settlement_recon",
        _shuffled(w, w.recon),
        CsvStyle(crlf=True, bom=True),
        w.rng,
    )
    write_bank(folder / "bank_statement.csv", w, HDFC)
    return DatasetSpec(
        w.name,
        folder,
        ["--as-of", "2026-06-30T23:59:59+05:30"],
        w.expects,
        "API-shaped CSV in paise (BOM, CRLF), HDFC statement with banner and separator",
    )


def icici_json(root: Path) -> DatasetSpec:
    w = World("icici_json", at(date(2026, 6, 30), 23, 59, 59), seed=202)
    sc.everything(w, matched=40)
    w.finish()
    folder = root / w.name
    folder.mkdir(parents=True)
    write_json(folder / "payments.json", _shuffled(w, w.payments), envelope=True)
    write_json(folder / "refunds.json", w.refunds, envelope=False)
    write_json(folder / "settlements.json", w.settlements, envelope=False)
    write_json(folder / "settlement_recon.json", w.recon, envelope=True)
    write_bank(folder / "bank_statement.csv", w, ICICI)
    return DatasetSpec(
        w.name,
        folder,
        ["--as-of", "2026-06-30T23:59:59+05:30"],
        w.expects,
        "JSON (envelope and plain list), ICICI statement whose value dates lag the "
        "transaction dates",
    )


def sbi_dashboard_rupees(root: Path) -> DatasetSpec:
    w = World(
        "sbi_dashboard_rupees",
        at(date(2026, 6, 30), 23, 59, 59),
        seed=303,
        float_traps=True,
        whole_refunds=True,
    )
    sc.everything(w, matched=40)
    w.finish()
    folder = root / w.name
    folder.mkdir(parents=True)
    dash = CsvStyle(unit="rupees", dates="dashboard", plain_whole=0.3)
    write_csv(folder / "payments.csv", "payments", w.payments, dash, w.rng)
    # every refund a whole number of rupees, written without decimals: only the dashboard
    # date format says this file is in rupees
    write_csv(
        folder / "refunds.csv",
        "refunds",
        w.refunds,
        CsvStyle(unit="rupees", dates="dashboard", plain_whole=1.0),
        w.rng,
    )
    write_csv(
        folder / "settlements.csv",
        "settlements",
        w.settlements,
        CsvStyle(unit="rupees", dates="dashboard", crlf=True),
        w.rng,
    )
    write_csv(folder / "settlement_recon.csv", "settlement_recon", w.recon, dash, w.rng)
    write_bank(folder / "bank_statement.csv", w, SBI)
    return DatasetSpec(
        w.name,
        folder,
        ["--as-of", "2026-06-30T23:59:59"],
        w.expects,
        "dashboard exports in rupees with dd/mm/YYYY HH:MM:SS IST dates, "
        "whole rupees without decimals; "
        "SBI statement; as-of without offset",
    )


def axis_csv_reordered(root: Path) -> DatasetSpec:
    """Columns in another order, unknown extra columns, optional columns absent, blank cells."""
    w = World("axis_csv_reordered", datetime(2026, 6, 30, 19, 0, 0, tzinfo=UTC), seed=404)
    sc.everything(w, matched=40)
    w.finish()
    folder = root / w.name
    folder.mkdir(parents=True)
    note = lambda row: "line one, with comma\nline two"  # noqa: E731
    write_csv(
        folder / "payments.csv",
        "payments",
        w.payments,
        CsvStyle(
            columns=[
                "created_at",
                "captured",
                "status",
                "id",
                "fee",
                "amount",
                "international",
                "order_id",
                "description",
                "notes",
            ],
            extra={"merchant_tag": note, "Internal Ref": lambda row: "x"},
            blank_as_space=True,
        ),
        w.rng,
    )
    write_csv(
        folder / "refunds.csv",
        "refunds",
        w.refunds,
        CsvStyle(
            columns=["status", "payment_id", "amount", "created_at", "id"], blank_as_space=True
        ),
        w.rng,
    )
    write_csv(
        folder / "settlements.csv",
        "settlements",
        w.settlements,
        CsvStyle(
            columns=["utr", "created_at", "status", "amount", "id"],
            extra={"bank_account": lambda r: "XXXX5678"},
        ),
        w.rng,
    )
    write_csv(
        folder / "settlement_recon.csv",
        "settlement_recon",
        w.recon,
        CsvStyle(
            columns=[
                "settlement_id",
                "entity_id",
                "type",
                "amount",
                "fee",
                "credit",
                "debit",
                "on_hold",
                "settled",
                "settled_at",
                "created_at",
                "payment_id",
                "order_id",
                "dispute_id",
            ],
            extra={"my_note": note},
            blank_as_space=True,
        ),
        w.rng,
    )
    write_bank(folder / "bank_statement.csv", w, AXIS)
    return DatasetSpec(
        w.name,
        folder,
        ["--as-of", "2026-06-30T19:00:00Z"],
        w.expects,
        "CSV with columns reordered, unknown columns, optional columns absent, whitespace "
        "cells, a quoted newline; Axis-style statement (value date only, Dr/Cr, ISO dates); "
        "as-of in UTC whose IST date is the next day",
    )


def json_no_bank(root: Path) -> DatasetSpec:
    """No bank statement and no refunds file: settlements are checked by their sums only."""
    w = World("json_no_bank", at(date(2026, 6, 30), 12), seed=505, has_bank=False)
    sc.matched_payments(w, 30)
    for ref in list(w.refunds):  # no refunds file: drop refunds and their rows
        w.expects = [e for e in w.expects if e.entity_id != ref["id"]]
        w.recon = [r for r in w.recon if r["entity_id"] != ref["id"]]
        for bat in w.batches:
            bat.rows = [r for r in bat.rows if r["entity_id"] != ref["id"]]
    w.refunds.clear()
    sc.duplicates(w)
    sc.amount_mismatch(w)
    sc.missing_recon(w)
    sc.pending_awaiting(w)
    sc.on_hold(w)
    sc.status_mismatch(w)
    sc.unknown_rows(w)
    day = w.wd_back(6)
    bat = w.batch(w.moment(day), sum_delta=4_200)
    sc._fill(w, bat, 2)
    bat.expect = w.expect(
        "settlement",
        bat.id,
        "EXCEPTION",
        "SETTLEMENT_SUM_MISMATCH",
        exposure_amount=4_200,
        scenario="sum off, no bank statement",
    )
    bat = w.batch(w.moment(day), status="failed")
    sc._fill(w, bat, 2)
    bat.expect = w.expect(
        "settlement", bat.id, "EXCEPTION", "SETTLEMENT_FAILED", scenario="failed, no bank statement"
    )
    bat = w.batch(w.moment(w.wd_back(1)), status="created", sum_delta=3_00_000)
    bat.expect = w.expect(
        "settlement",
        bat.id,
        "PENDING",
        "AWAITING_SETTLEMENT",
        scenario="created, no bank statement",
    )
    w.finish()
    folder = root / w.name
    folder.mkdir(parents=True)
    write_json(folder / "payments.json", w.payments, envelope=False)
    write_csv(folder / "settlements.csv", "settlements", w.settlements, CsvStyle(), w.rng)
    write_json(folder / "settlement_recon.json", w.recon, envelope=False)
    return DatasetSpec(
        w.name,
        folder,
        ["--as-of", "2026-06-30T12:00:00+05:30"],
        w.expects,
        "no bank statement (match_method no_bank_statement), no refunds file",
    )


def params_holidays(root: Path) -> DatasetSpec:
    """Every calendar parameter changed, with holidays: T+3, T+5 international, no grace, B=2."""
    holidays = frozenset({date(2026, 6, 5), date(2026, 6, 17)})
    w = World(
        "params_holidays",
        at(date(2026, 6, 19), 18),
        seed=606,
        settlement_days=3,
        international_days=5,
        grace_days=0,
        bank_days=2,
        holidays=holidays,
    )
    sc.everything(w, matched=40)
    w.finish()
    folder = root / w.name
    folder.mkdir(parents=True)
    write_csv(folder / "payments.csv", "payments", w.payments, CsvStyle(), w.rng)
    write_csv(folder / "refunds.csv", "refunds", w.refunds, CsvStyle(), w.rng)
    write_csv(folder / "settlements.csv", "settlements", w.settlements, CsvStyle(), w.rng)
    write_csv(folder / "settlement_recon.csv", "settlement_recon", w.recon, CsvStyle(), w.rng)
    write_bank(folder / "bank_statement.csv", w, KOTAK)
    (root / "holidays.txt").write_text(
        "".join(f"{d.isoformat()}\n" for d in sorted(holidays)), encoding="utf-8"
    )
    options = [
        "--as-of",
        "2026-06-19T18:00:00+05:30",
        "--settlement-days",
        "3",
        "--international-days",
        "5",
        "--grace-days",
        "0",
        "--bank-days",
        "2",
        "--holidays",
        str(root / "holidays.txt"),
    ]
    return DatasetSpec(
        w.name, folder, options, w.expects, "custom calendar and holidays; Kotak-style statement"
    )


def whole_rupees_override(root: Path) -> DatasetSpec:
    """Rupee files whose amounts carry no decimals: only `--amount-unit rupees` can tell."""
    w = World("whole_rupees_override", at(date(2026, 6, 30), 23), seed=707, whole_rupees=True)
    sc.matched_payments(w, 25)
    parents = [p for p in w.payments if not p["international"] and not p["amount_refunded"]]
    sc.duplicates(w)
    sc.wrong_mapping(w, parents[0])
    sc.missing_recon(w)
    sc.pending_awaiting(w)
    sc.status_mismatch(w)
    days = sc.Days(w)
    bat = w.batch(w.moment(days.take()), bank="custom")
    sc._fill(w, bat, 3)
    bat.expect = w.expect(
        "settlement",
        bat.id,
        "EXCEPTION",
        "BANK_UTR_AMOUNT_MISMATCH",
        exposure_amount=100_00,
        scenario="credit 100 rupees high",
    )

    def high(bat: Any = bat) -> None:
        line = w.credit_line(bat, bat.amount + 100_00, style=0)
        line.expect = Expect("bank_entry", "", "MATCHED", scenario="credit 100 rupees high")

    w.later.append(high)
    w.finish()
    folder = root / w.name
    folder.mkdir(parents=True)
    whole = CsvStyle(unit="whole_rupees")
    write_csv(folder / "payments.csv", "payments", w.payments, whole, w.rng)
    write_csv(folder / "refunds.csv", "refunds", w.refunds, whole, w.rng)
    write_csv(folder / "settlements.csv", "settlements", w.settlements, whole, w.rng)
    write_csv(folder / "settlement_recon.csv", "settlement_recon", w.recon, whole, w.rng)
    write_bank(folder / "bank_statement.csv", w, GENERIC)
    return DatasetSpec(
        w.name,
        folder,
        ["--as-of", "2026-06-30T23:00:00+05:30", "--amount-unit", "rupees"],
        w.expects,
        "integer rupee amounts with --amount-unit rupees; statement without banner, ISO dates",
    )


def json_bom_dashboard_mix(root: Path) -> DatasetSpec:
    """Units decided per file: paise JSON (BOM, CRLF, null fields left out) next to rupee CSV."""
    w = World("json_bom_dashboard_mix", at(date(2026, 6, 30), 23, 59, 59), seed=808)
    sc.everything(w, matched=40, refunds=False)
    w.finish()
    folder = root / w.name
    folder.mkdir(parents=True)
    write_json(
        folder / "payments.json", w.payments, envelope=True, bom=True, crlf=True, omit_nulls=True
    )
    write_json(folder / "refunds.json", [], envelope=True)
    write_csv(
        folder / "settlements.csv",
        "settlements",
        w.settlements,
        CsvStyle(unit="rupees", dates="dashboard", plain_whole=0.5),
        w.rng,
    )
    write_json(folder / "settlement_recon.json", w.recon, envelope=False, bom=True, omit_nulls=True)
    write_bank(folder / "bank_statement.csv", w, ICICI_TIGHT)
    return DatasetSpec(
        w.name,
        folder,
        ["--as-of", "2026-06-30T23:59:59+05:30"],
        w.expects,
        "paise JSON with BOM/CRLF and null fields omitted, empty refunds envelope, rupee "
        "settlements CSV; statement headers without inner spaces",
    )


DATASETS = [
    hdfc_csv_paise,
    icici_json,
    sbi_dashboard_rupees,
    axis_csv_reordered,
    json_no_bank,
    params_holidays,
    whole_rupees_override,
    json_bom_dashboard_mix,
]


def write_suite(root: Path) -> list[DatasetSpec]:
    root.mkdir(parents=True, exist_ok=True)
    specs = [make(root) for make in DATASETS]
    for spec in specs:
        ids = [(e.entity_type, e.entity_id) for e in spec.expects]
        assert len(ids) == len(set(ids)), f"{spec.name}: an entity has two expectations"
        assert all(e.entity_id for e in spec.expects), spec.name
    return specs


def absent(e: Expect) -> bool:
    return e.status == ABSENT


__all__ = ["DatasetSpec", "absent", "ist_date", "write_suite"]
