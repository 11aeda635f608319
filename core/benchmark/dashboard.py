"""The same dataset as Razorpay Dashboard reports would give it (`--layout dashboard`).

`generate` writes the API layout first (integer paise, Unix seconds, API field names); this
module rewrites each file the way the Dashboard's reports download: display-name headers
(docs/razorpay-sources.md §1; the settlement recon report keeps its snake_case header,
§1.9), amounts in rupees (major units of the row's currency) with two decimals, dates as
`dd/mm/YYYY HH:MM:SS` in IST, booleans `TRUE`/`FALSE`. With `xlsx=True` each file becomes
a one-sheet workbook of the same stem (numbers as number cells). File stems stay ours
(payments, refunds, settlements, settlement_recon, ...); the bank statement is the bank's
layout and is left as it is.

The recon report's documented 27 columns carry no `on_hold` / `settled` / `transfer_id`;
those facts are kept as three trailing columns so that the dataset loses nothing.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from pyarrow import csv as pacsv

from core.benchmark import files

# Minor units per currency (docs/engine.md, International payments): JPY 0; BHD, KWD, OMR,
# JOD, TND 3; else 2. Stated here, not imported, like the rest of the benchmark's rules.
MINOR_UNIT_EXPONENT: dict[str, int] = {
    "JPY": 0,
    "BHD": 3,
    "KWD": 3,
    "OMR": 3,
    "JOD": 3,
    "TND": 3,
}

# (header, API column or "" for an always-empty column, kind)
Column = tuple[str, str, str]
PAYMENTS: tuple[Column, ...] = (
    ("Payment ID", "id", "text"),
    ("Order ID", "order_id", "text"),
    ("Invoice ID", "invoice_id", "text"),
    ("Amount", "amount", "money_ccy"),
    ("Currency", "currency", "text"),
    ("Base Amount", "base_amount", "money"),
    ("Status", "status", "text"),
    ("Payment Method", "method", "text"),
    ("International", "international", "bool"),
    ("Amount Refunded", "amount_refunded", "money_ccy"),
    ("Refund Status", "refund_status", "text"),
    ("Fees", "fee", "money"),
    ("Tax", "tax", "money"),
    ("Description", "description", "text"),
    ("Bank", "bank", "text"),
    ("Wallet", "wallet", "text"),
    ("Customer Email", "email", "text"),
    ("Customer Contact", "contact", "text"),
    ("Notes", "notes", "text"),
    ("Error Code", "error_code", "text"),
    ("Error Description", "error_description", "text"),
    ("Settled By", "settled_by", "settled_by"),
    ("Created At", "created_at", "time"),
)
REFUNDS: tuple[Column, ...] = (
    ("Refund ID", "id", "text"),
    ("Payment ID", "payment_id", "text"),
    ("Amount", "amount", "money_ccy"),
    ("Currency", "currency", "text"),
    ("Base Amount", "base_amount", "money"),
    ("Status", "status", "text"),
    ("Fees", "fee", "money"),
    ("Tax", "tax", "money"),
    ("Speed Requested", "speed_requested", "text"),
    ("Receipt", "receipt", "text"),
    ("Notes", "notes", "text"),
    ("Settled By", "settled_by", "settled_by"),
    ("Created At", "created_at", "time"),
)
SETTLEMENTS: tuple[Column, ...] = (
    ("Settlement ID", "id", "text"),
    ("Amount", "amount", "money"),
    ("Status", "status", "text"),
    ("Fees", "fees", "money"),
    ("Tax", "tax", "money"),
    ("UTR (Unique Transaction Reference)", "utr", "text"),
    ("Created At", "created_at", "time"),
)
RECON: tuple[Column, ...] = (
    ("transaction_entity", "type", "text"),
    ("entity_id", "entity_id", "text"),
    ("amount", "amount", "money"),
    ("currency", "currency", "text"),
    ("fee (exclusive tax)", "fee", "fee_ex_tax"),
    ("tax", "tax", "money"),
    ("debit", "debit", "money"),
    ("credit", "credit", "money"),
    ("payment_method", "method", "text"),
    ("card_type", "", "text"),
    ("issuer_name", "", "text"),
    ("entity_created_at", "created_at", "time"),
    ("payment_captured_at", "", "text"),
    ("payment_notes", "", "text"),
    ("refund_notes", "", "text"),
    ("arn", "", "text"),
    ("entity_description", "description", "text"),
    ("order_id", "order_id", "text"),
    ("order_receipt", "order_receipt", "text"),
    ("order_notes", "", "text"),
    ("dispute_id", "dispute_id", "text"),
    ("dispute_created_at", "", "text"),
    ("dispute_reason", "", "text"),
    ("settlement_id", "settlement_id", "text"),
    ("settled_at", "settled_at", "time"),
    ("settlement_utr", "settlement_utr", "text"),
    ("settled_by", "settled_by", "settled_by"),
    ("on_hold", "on_hold", "bool"),
    ("settled", "settled", "bool"),
    ("transfer_id", "transfer_id", "text"),
)
INSTANT_SETTLEMENTS: tuple[Column, ...] = (
    ("Instant Settlement ID", "id", "text"),
    ("Amount Requested", "amount_requested", "money"),
    ("Amount Settled", "amount_settled", "money"),
    ("Amount Pending", "amount_pending", "money"),
    ("Amount Reversed", "amount_reversed", "money"),
    ("Fees", "fees", "money"),
    ("Tax", "tax", "money"),
    ("Currency", "currency", "text"),
    ("Status", "status", "text"),
    ("Created At", "created_at", "time"),
)
INSTANT_PAYOUTS: tuple[Column, ...] = (
    ("Payout ID", "id", "text"),
    ("Instant Settlement ID", "instant_settlement_id", "text"),
    ("Amount", "amount", "money"),
    ("Amount Settled", "amount_settled", "money"),
    ("Fees", "fees", "money"),
    ("Tax", "tax", "money"),
    ("UTR", "utr", "text"),
    ("Status", "status", "text"),
    ("Processed At", "processed_at", "time"),
    ("Reversed At", "reversed_at", "time"),
    ("Created At", "created_at", "time"),
)
DISPUTES: tuple[Column, ...] = (
    ("Dispute ID", "id", "text"),
    ("Payment ID", "payment_id", "text"),
    ("Amount", "amount", "money"),
    ("Currency", "currency", "text"),
    ("Amount Deducted", "amount_deducted", "money"),
    ("Reason Code", "reason_code", "text"),
    ("Status", "status", "text"),
    ("Phase", "phase", "text"),
    ("Respond By", "respond_by", "time"),
    ("Created At", "created_at", "time"),
)
TRANSFERS: tuple[Column, ...] = (
    ("Transfer ID", "id", "text"),
    ("Source ID", "source", "text"),
    ("To ID", "recipient", "text"),
    ("Amount", "amount", "money"),
    ("Currency", "currency", "text"),
    ("Amount Reversed", "amount_reversed", "money"),
    ("Status", "status", "text"),
    ("On Hold", "on_hold", "bool"),
    ("On Hold Until", "on_hold_until", "time"),
    ("Created At", "created_at", "time"),
)
LAYOUTS: dict[str, tuple[Column, ...]] = {
    "payments.csv": PAYMENTS,
    "refunds.csv": REFUNDS,
    "settlements.csv": SETTLEMENTS,
    "settlement_recon.csv": RECON,
    "instant_settlements.csv": INSTANT_SETTLEMENTS,
    "instant_settlement_payouts.csv": INSTANT_PAYOUTS,
    "disputes.csv": DISPUTES,
    "transfers.csv": TRANSFERS,
}
MONEY_KINDS = frozenset({"money", "money_ccy", "fee_ex_tax"})


def rupees(values: pd.Series, exponent: np.ndarray | int = 2) -> pd.Series:
    """Integer minor units as decimal text of the major unit (`-12.05`, JPY `5600`); ""
    stays ""."""
    empty = values == ""
    number = pd.to_numeric(values.where(~empty, "0")).astype("int64").to_numpy()
    exp = np.broadcast_to(np.asarray(exponent, dtype=np.int64), number.shape)
    out = np.empty(len(number), dtype=object)
    for e in np.unique(exp):
        mine = exp == e
        scale = 10 ** int(e)
        whole = (np.abs(number[mine]) // scale).astype(str).astype(object)
        sign = np.where(number[mine] < 0, "-", "").astype(object)
        if e:
            frac = np.char.zfill((np.abs(number[mine]) % scale).astype(str), int(e))
            out[mine] = sign + whole + "." + frac.astype(object)
        else:
            out[mine] = sign + whole
    return pd.Series(out, index=values.index).where(~empty, "")


def ist_time(values: pd.Series) -> pd.Series:
    """Unix seconds as `dd/mm/YYYY HH:MM:SS` IST; "" stays ""."""
    empty = values == ""
    stamps = pd.to_datetime(pd.to_numeric(values.where(~empty, "0")), unit="s", utc=True)
    text = stamps.dt.tz_convert("Asia/Kolkata").dt.strftime("%d/%m/%Y %H:%M:%S")
    return text.where(~empty, "")


def convert(api: pd.DataFrame, layout: tuple[Column, ...]) -> pd.DataFrame:
    """An API-layout table (all strings) in the Dashboard layout (all strings)."""
    n = len(api)
    out: dict[str, pd.Series] = {}
    blank = pd.Series([""] * n, index=api.index, dtype=object)
    for header, source, kind in layout:
        if source and source not in api.columns:
            continue  # e.g. base_amount / settled_by without the money model
        values = api[source] if source else blank
        if kind == "money":
            out[header] = rupees(values)
        elif kind == "money_ccy":
            exponent = np.array(
                [MINOR_UNIT_EXPONENT.get(c.upper(), 2) for c in api["currency"]], dtype=np.int64
            )
            out[header] = rupees(values, exponent)
        elif kind == "fee_ex_tax":
            fee = pd.to_numeric(values.where(values != "", "0")).astype("int64")
            tax = pd.to_numeric(api["tax"].where(api["tax"] != "", "0")).astype("int64")
            out[header] = rupees((fee - tax).astype(str))
        elif kind == "time":
            out[header] = ist_time(values)
        elif kind == "bool":
            out[header] = values.map({"true": "TRUE", "false": "FALSE"}).fillna("")
        elif kind == "settled_by":
            out[header] = values.where(values != "", "Razorpay")
        else:
            out[header] = values
    return pd.DataFrame(out)


def write_xlsx(frame: pd.DataFrame, layout: tuple[Column, ...], path: Path) -> None:
    """One sheet: money as number cells (0.00), everything else as text."""
    from openpyxl import Workbook  # type: ignore[import-untyped]
    from openpyxl.cell import WriteOnlyCell  # type: ignore[import-untyped]

    kinds = {header: kind for header, _, kind in layout}
    money = [kinds.get(c, "text") in MONEY_KINDS for c in frame.columns]
    book = Workbook(write_only=True)
    sheet = book.create_sheet(path.stem)
    sheet.append(list(frame.columns))
    for row in frame.itertuples(index=False):
        cells: list[object] = []
        for value, is_money in zip(row, money, strict=True):
            if value == "":
                cells.append(None)
            elif is_money:
                cell = WriteOnlyCell(sheet, value=float(value))
                cell.number_format = "0.00"
                cells.append(cell)
            else:
                cells.append(value)
        sheet.append(cells)
    buffer = io.BytesIO()
    book.save(buffer)
    path.write_bytes(_stable_zip(buffer.getvalue()))


FIXED_TIME = "2000-01-01T00:00:00Z"


def _stable_zip(data: bytes) -> bytes:
    """The workbook with fixed zip entry times and document dates, so that the same
    dataset gives the same bytes (openpyxl stamps both with the current time)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info.filename)
            if info.filename == "docProps/core.xml":
                text = content.decode("utf-8")
                text = re.sub(
                    r"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:)",
                    rf"\g<1>{FIXED_TIME}\g<3>",
                    text,
                )
                content = text.encode("utf-8")
            entry = zipfile.ZipInfo(info.filename, date_time=(2000, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(entry, content)
    return out.getvalue()


def _read_strings(path: Path) -> pd.DataFrame:
    """An API file as strings ("" for empty), through Arrow's CSV reader."""
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().rstrip("\n").split(",")
    table = pacsv.read_csv(
        path,
        convert_options=pacsv.ConvertOptions(
            column_types={name: pa.string() for name in header},
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )
    frame: pd.DataFrame = table.to_pandas().astype(object)
    return frame


def _with_refund_fees(refunds: pd.DataFrame, recon: pd.DataFrame | None) -> pd.DataFrame:
    """The refund's fee and tax (the API refund entity has none; its recon row does); 0 for
    a refund without a row."""
    fee = pd.Series("0", index=refunds.index)
    tax = pd.Series("0", index=refunds.index)
    if recon is not None:
        rows = recon[recon["type"] == "refund"].drop_duplicates("entity_id").set_index("entity_id")
        fee = refunds["id"].map(rows["fee"]).fillna("0")
        tax = refunds["id"].map(rows["tax"]).fillna("0")
    return refunds.assign(fee=fee, tax=tax)


def rewrite(out_dir: Path, names: tuple[str, ...], *, xlsx: bool) -> tuple[str, ...]:
    """Rewrite the API files `names` in `out_dir` in the Dashboard layout; returns the names
    now in the folder (`.xlsx` stems with xlsx=True)."""
    written: list[str] = []
    recon_path = out_dir / "settlement_recon.csv"
    recon = (
        pd.read_csv(recon_path, dtype=str, keep_default_na=False) if recon_path.exists() else None
    )
    for name in names:
        layout = LAYOUTS.get(name)
        if layout is None:
            written.append(name)
            continue
        path = out_dir / name
        api = _read_strings(path)
        if name == "refunds.csv":
            api = _with_refund_fees(api, recon)
        frame = convert(api, layout)
        if xlsx:
            target = path.with_suffix(".xlsx")
            write_xlsx(frame, layout, target)
            path.unlink()
            written.append(target.name)
        else:
            files.write_frame(frame, path)
            written.append(name)
    return tuple(written)
