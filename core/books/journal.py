"""Journal entries for the books (docs/books.md): one balanced voucher per processed
settlement, one for the month's captured payments, CSV and Tally XML.

A settlement's voucher: Bank Dr (what it paid), Payment gateway charges Dr (fees without
GST), GST input credit Dr (the GST on them), Customer refunds Dr, Chargebacks Dr/Cr (dispute
debits and reversals), Razorpay adjustments Dr/Cr, Route transfers Dr/Cr, and Razorpay
receivable Cr (the payments it carries, gross). What its rows and its amount leave over is
posted to a suspense ledger, so a voucher always balances and a difference is never hidden:
it is zero whenever the recon rows follow Razorpay's arithmetic and the settlement pays
their sum (spec section 1). Every line names the recon rows it comes from.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass, fields
from xml.sax.saxutils import escape

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core import columns
from core.calendar import IST, in_ist_month
from core.dataset import Dataset


@dataclass(frozen=True)
class Ledgers:
    """Ledger names as the merchant's chart of accounts has them (configurable)."""

    bank: str = "Bank"
    receivable: str = "Razorpay receivable"
    charges: str = "Payment gateway charges"
    gst: str = "GST input credit"
    refunds: str = "Customer refunds"
    chargebacks: str = "Chargebacks"
    adjustments: str = "Razorpay adjustments"
    transfers: str = "Route transfers"
    suspense: str = "Razorpay suspense"
    sales: str = "Sales (Razorpay collections)"

    @classmethod
    def from_mapping(cls, names: dict[str, str]) -> Ledgers:
        """Defaults overridden by `names` (field -> ledger name); unknown keys refused."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(names) - known)
        if unknown:
            raise ValueError(f"unknown ledger keys: {', '.join(unknown)}")
        return cls(**{k: str(v) for k, v in names.items()})


@dataclass(frozen=True)
class Line:
    ledger: str
    debit: int  # paise
    credit: int  # paise
    source_rows: tuple[str, ...]  # recon row keys (or payment ids) behind the line


@dataclass(frozen=True)
class Voucher:
    number: str
    date: dt.date
    kind: str  # 'settlement' or 'captured'
    reference: str  # the settlement id, or the month
    narration: str
    lines: tuple[Line, ...]

    @property
    def debits(self) -> int:
        return sum(line.debit for line in self.lines)

    @property
    def credits(self) -> int:
        return sum(line.credit for line in self.lines)


def _ist_date(seconds: int) -> dt.date:
    return dt.datetime.fromtimestamp(int(seconds), tz=IST).date()


@dataclass(frozen=True)
class _Rows:
    """The recon rows of the settlements being journalled, grouped by settlement and in
    row-key order within each (so any subset of a settlement's rows is already sorted, as
    a voucher line lists them): their columns as arrays in that order."""

    group: npt.NDArray[np.int64]  # the settlement code of each row, ascending
    keys: npt.NDArray[np.object_]  # row_key (str)
    payment: npt.NDArray[np.bool_]
    refund: npt.NDArray[np.bool_]
    adjustment: npt.NDArray[np.bool_]
    transfer: npt.NDArray[np.bool_]  # transfer or reversal
    dispute: npt.NDArray[np.bool_]  # has a dispute_id
    debit: npt.NDArray[np.int64]
    credit: npt.NDArray[np.int64]
    amount: npt.NDArray[np.int64]
    fee: npt.NDArray[np.int64]
    tax: npt.NDArray[np.int64]

    def segment(self, code: int) -> slice:
        low = int(np.searchsorted(self.group, code, side="left"))
        return slice(low, int(np.searchsorted(self.group, code, side="right")))


def _rows_of(recon: pd.DataFrame, settlement_ids: list[str]) -> tuple[_Rows, dict[str, int]]:
    """The rows of these settlements (by `settlement_id`, a missing one as ''), and each
    settlement id's code."""
    group_text = columns.text(recon["settlement_id"]).fill_null("")
    wanted = pa.array(settlement_ids, pa.large_string())
    (codes, wanted_codes), size = columns.shared_codes(group_text, wanted)
    chosen = np.flatnonzero(columns.member(codes, wanted_codes, size))
    keys = columns.text(recon["row_key"]).take(pa.array(chosen))
    by_key = np.asarray(pc.sort_indices(keys), dtype=np.int64)
    order = by_key[np.argsort(codes[chosen][by_key], kind="stable")]
    at = chosen[order]
    rtype = columns.text(recon["type"]).take(pa.array(at))

    def ints(name: str) -> npt.NDArray[np.int64]:
        values: npt.NDArray[np.int64] = recon[name].to_numpy(np.int64)[at]
        return values

    rows = _Rows(
        group=codes[at],
        keys=keys.take(pa.array(order)).to_numpy(zero_copy_only=False),
        payment=columns.equals(rtype, "payment"),
        refund=columns.equals(rtype, "refund"),
        adjustment=columns.equals(rtype, "adjustment"),
        transfer=columns.among(rtype, ("transfer", "reversal")),
        dispute=recon["dispute_id"].notna().to_numpy(dtype=bool)[at],
        debit=ints("debit"),
        credit=ints("credit"),
        amount=ints("amount"),
        fee=ints("fee"),
        tax=ints("tax"),
    )
    return rows, {sid: int(code) for sid, code in zip(settlement_ids, wanted_codes, strict=True)}


def settlement_vouchers(dataset: Dataset, ledgers: Ledgers | None = None) -> list[Voucher]:
    """One voucher per processed regular settlement, in (date, id) order."""
    return _settlement_vouchers(dataset, ledgers, None)


def _settlement_vouchers(
    dataset: Dataset, ledgers: Ledgers | None, month: str | None
) -> list[Voucher]:
    """settlement_vouchers, only those dated in `month` (IST) when given."""
    names = ledgers or Ledgers()
    st = dataset.settlements
    processed = st[st["status"].astype(str) == "processed"].sort_values(["created_at", "id"])
    if month is not None:
        processed = processed[in_ist_month(processed["created_at"].to_numpy(np.int64), month)]
    ids = list(processed["id"].astype(str))
    rows, code_of = _rows_of(dataset.recon, [sid for sid in ids if isinstance(sid, str)])
    vouchers = []
    for sid, amount, created in zip(
        ids,
        processed["amount"].to_numpy(np.int64),
        processed["created_at"].to_numpy(np.int64),
        strict=True,
    ):
        part = rows.segment(code_of[sid]) if isinstance(sid, str) else slice(0, 0)
        count = part.stop - part.start
        vouchers.append(
            Voucher(
                number=f"RZP-{sid}",
                date=_ist_date(int(created)),
                kind="settlement",
                reference=sid,
                narration=f"Razorpay settlement {sid} ({count} recon rows)",
                lines=_settlement_lines(rows, part, int(amount), names),
            )
        )
    return vouchers


def _settlement_lines(rows: _Rows, part: slice, paid: int, names: Ledgers) -> tuple[Line, ...]:
    keys = rows.keys[part]
    debit, credit, fee, tax = rows.debit[part], rows.credit[part], rows.fee[part], rows.tax[part]
    dispute, adjustment = rows.dispute[part], rows.adjustment[part]
    pay, ref = rows.payment[part], rows.refund[part]
    every = tuple(keys)
    charged = tuple(keys[fee != 0])
    lines: list[Line] = [Line(names.bank, paid, 0, every)] if paid >= 0 else []
    if paid < 0:
        lines.append(Line(names.bank, 0, -paid, every))
    lines.append(Line(names.charges, int((fee - tax).sum()), 0, charged))
    lines.append(Line(names.gst, int(tax.sum()), 0, charged))
    lines.append(Line(names.refunds, int(rows.amount[part][ref].sum()), 0, tuple(keys[ref])))
    groups = (
        (names.chargebacks, adjustment & dispute),
        (names.adjustments, adjustment & ~dispute),
        (names.transfers, rows.transfer[part]),
    )
    for ledger, mask in groups:
        out = int((debit[mask] - fee[mask]).sum())  # a transfer's fee is a charge above
        back = int(credit[mask].sum())
        if out:
            lines.append(Line(ledger, out, 0, tuple(keys[mask & (debit > 0)])))
        if back:
            lines.append(Line(ledger, 0, back, tuple(keys[mask & (credit > 0)])))
    lines.append(Line(names.receivable, 0, int(rows.amount[part][pay].sum()), tuple(keys[pay])))
    gap = sum(x.credit for x in lines) - sum(x.debit for x in lines)
    if gap:
        lines.append(Line(names.suspense, max(gap, 0), max(-gap, 0), every))
    return tuple(x for x in lines if x.debit or x.credit)


def captured_voucher(dataset: Dataset, month: str, ledgers: Ledgers | None = None) -> Voucher:
    """The month's captured payments: Razorpay receivable Dr, Sales Cr (gross, INR)."""
    names = ledgers or Ledgers()
    pay = dataset.payments
    chosen = columns.captured(pay) & in_ist_month(pay["created_at"].to_numpy(np.int64), month)
    foreign = columns.foreign(pay["currency"])[chosen]
    inr = np.where(
        foreign,
        columns.paise(pay["base_amount"])[chosen],
        pay["amount"].to_numpy(np.int64)[chosen],
    )
    total = int(inr.sum())
    ids = tuple(columns.sorted_text(columns.text(pay["id"]).filter(pa.array(chosen))))
    first = dt.date.fromisoformat(f"{month}-01")
    last = (first.replace(day=28) + dt.timedelta(days=4)).replace(day=1) - dt.timedelta(days=1)
    return Voucher(
        number=f"RZP-CAPTURED-{month}",
        date=last,
        kind="captured",
        reference=month,
        narration=f"Payments captured through Razorpay in {month} ({len(ids)} payments)",
        lines=(Line(names.receivable, total, 0, ids), Line(names.sales, 0, total, ids)),
    )


def month_vouchers(dataset: Dataset, month: str, ledgers: Ledgers | None = None) -> list[Voucher]:
    """The month's journal: its captured payments, then every settlement made in it."""
    settled = _settlement_vouchers(dataset, ledgers, month)
    return [captured_voucher(dataset, month, ledgers), *settled]


def rupees(paise: int) -> str:
    """Exact rupees with two decimals: -123456 -> '-1234.56'."""
    sign = "-" if paise < 0 else ""
    whole, part = divmod(abs(int(paise)), 100)
    return f"{sign}{whole}.{part:02d}"


CSV_COLUMNS = (
    "voucher",
    "date",
    "kind",
    "reference",
    "ledger",
    "debit",
    "credit",
    "source_rows",
    "narration",
)


_QUOTED = (",", '"', "\r", "\n")


def _cell(value: object) -> str:
    """One CSV cell as `csv.writer` (QUOTE_MINIMAL, ',' and '"') writes it in a row of
    several: text with none of , " CR LF as it is, anything else through the writer."""
    if isinstance(value, str) and not any(c in value for c in _QUOTED):
        return value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow((value, ""))
    return out.getvalue()[:-2]  # the cell, without the empty cell's ',' and the line end


def journal_csv(vouchers: list[Voucher]) -> str:
    """One CSV row per voucher line; amounts in rupees with two decimals. (Written cell by
    cell, each line's source rows joined once: the bytes csv.writer writes.)"""
    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow(CSV_COLUMNS)
    parts = [header.getvalue()]
    joined: dict[int, str] = {}  # id(source_rows) -> its cell: lines share them
    for v in vouchers:
        head = ",".join(_cell(x) for x in (v.number, v.date.isoformat(), v.kind, v.reference))
        narration = _cell(v.narration)
        for line in v.lines:
            rows = joined.get(id(line.source_rows))
            if rows is None:
                rows = joined[id(line.source_rows)] = _cell(";".join(line.source_rows))
            debit = rupees(line.debit) if line.debit else ""
            credit = rupees(line.credit) if line.credit else ""
            parts.append(f"{head},{_cell(line.ledger)},{debit},{credit},{rows},{narration}\n")
    return "".join(parts)


def tally_xml(vouchers: list[Voucher], company: str | None = None) -> str:
    """Tally's voucher import request (docs/books.md): ENVELOPE / HEADER (TALLYREQUEST Import
    Data) / BODY / IMPORTDATA / REQUESTDESC (REPORTNAME Vouchers) / REQUESTDATA with one
    TALLYMESSAGE per Journal voucher. A debit line is ISDEEMEDPOSITIVE Yes with a negative
    AMOUNT, a credit line ISDEEMEDPOSITIVE No with a positive AMOUNT."""
    company_xml = (
        f"<STATICVARIABLES><SVCURRENTCOMPANY>{escape(company)}</SVCURRENTCOMPANY></STATICVARIABLES>"
        if company
        else ""
    )
    parts = [
        "<ENVELOPE>",
        "<HEADER><TALLYREQUEST>Import Data</TALLYREQUEST></HEADER>",
        "<BODY><IMPORTDATA>",
        f"<REQUESTDESC><REPORTNAME>Vouchers</REPORTNAME>{company_xml}</REQUESTDESC>",
        "<REQUESTDATA>",
    ]
    for v in vouchers:
        parts.append('<TALLYMESSAGE xmlns:UDF="TallyUDF">')
        parts.append(f'<VOUCHER VCHTYPE="Journal" ACTION="Create" REMOTEID="{escape(v.number)}">')
        parts.append(f"<DATE>{v.date:%Y%m%d}</DATE>")
        parts.append("<VOUCHERTYPENAME>Journal</VOUCHERTYPENAME>")
        parts.append(f"<VOUCHERNUMBER>{escape(v.number)}</VOUCHERNUMBER>")
        parts.append(f"<REFERENCE>{escape(v.reference)}</REFERENCE>")
        parts.append(f"<NARRATION>{escape(v.narration)}</NARRATION>")
        for line in v.lines:
            is_debit = line.debit > 0
            amount = -line.debit if is_debit else line.credit
            parts.append(
                "<ALLLEDGERENTRIES.LIST>"
                f"<LEDGERNAME>{escape(line.ledger)}</LEDGERNAME>"
                f"<ISDEEMEDPOSITIVE>{'Yes' if is_debit else 'No'}</ISDEEMEDPOSITIVE>"
                f"<AMOUNT>{rupees(amount)}</AMOUNT>"
                "</ALLLEDGERENTRIES.LIST>"
            )
        parts.append("</VOUCHER>")
        parts.append("</TALLYMESSAGE>")
    parts += ["</REQUESTDATA>", "</IMPORTDATA></BODY>", "</ENVELOPE>"]
    return "\n".join(parts) + "\n"
