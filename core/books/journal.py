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
import pandas as pd

from core.calendar import IST
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


def _keys(frame: pd.DataFrame) -> tuple[str, ...]:
    return tuple(sorted(frame["row_key"].astype(str)))


def settlement_vouchers(dataset: Dataset, ledgers: Ledgers | None = None) -> list[Voucher]:
    """One voucher per processed regular settlement, in (date, id) order."""
    names = ledgers or Ledgers()
    st = dataset.settlements
    processed = st[st["status"].astype(str) == "processed"].sort_values(["created_at", "id"])
    recon = dataset.recon
    by_settlement = {
        str(k): g for k, g in recon.groupby(recon["settlement_id"].astype("string").fillna(""))
    }
    vouchers = []
    for sid, amount, created in zip(
        processed["id"].astype(str),
        processed["amount"].to_numpy(np.int64),
        processed["created_at"].to_numpy(np.int64),
        strict=True,
    ):
        rows = by_settlement.get(sid, recon.iloc[0:0])
        lines = _settlement_lines(rows, int(amount), names)
        vouchers.append(
            Voucher(
                number=f"RZP-{sid}",
                date=_ist_date(int(created)),
                kind="settlement",
                reference=sid,
                narration=f"Razorpay settlement {sid} ({len(rows)} recon rows)",
                lines=lines,
            )
        )
    return vouchers


def _settlement_lines(rows: pd.DataFrame, paid: int, names: Ledgers) -> tuple[Line, ...]:
    rtype = rows["type"].astype(str)
    debit = rows["debit"].astype(np.int64)
    credit = rows["credit"].astype(np.int64)
    fee = rows["fee"].astype(np.int64)
    tax = rows["tax"].astype(np.int64)
    dispute = rows["dispute_id"].notna()
    pay = rows[rtype == "payment"]
    ref = rows[rtype == "refund"]
    charged = rows[fee != 0]
    lines: list[Line] = [Line(names.bank, paid, 0, _keys(rows))] if paid >= 0 else []
    if paid < 0:
        lines.append(Line(names.bank, 0, -paid, _keys(rows)))
    lines.append(Line(names.charges, int((fee - tax).sum()), 0, _keys(charged)))
    lines.append(Line(names.gst, int(tax.sum()), 0, _keys(charged)))
    lines.append(Line(names.refunds, int(ref["amount"].astype(np.int64).sum()), 0, _keys(ref)))
    groups = (
        (names.chargebacks, (rtype == "adjustment") & dispute),
        (names.adjustments, (rtype == "adjustment") & ~dispute),
        (names.transfers, rtype.isin(["transfer", "reversal"])),
    )
    for ledger, mask in groups:
        part = rows[mask]
        out = int((debit[mask] - fee[mask]).sum())  # a transfer's fee is a charge above
        back = int(credit[mask].sum())
        if out:
            lines.append(Line(ledger, out, 0, _keys(part[debit[mask] > 0])))
        if back:
            lines.append(Line(ledger, 0, back, _keys(part[credit[mask] > 0])))
    lines.append(Line(names.receivable, 0, int(pay["amount"].astype(np.int64).sum()), _keys(pay)))
    gap = sum(x.credit for x in lines) - sum(x.debit for x in lines)
    if gap:
        lines.append(Line(names.suspense, max(gap, 0), max(-gap, 0), _keys(rows)))
    return tuple(x for x in lines if x.debit or x.credit)


def captured_voucher(dataset: Dataset, month: str, ledgers: Ledgers | None = None) -> Voucher:
    """The month's captured payments: Razorpay receivable Dr, Sales Cr (gross, INR)."""
    names = ledgers or Ledgers()
    pay = dataset.payments
    captured = pay["captured"].astype(bool) | pay["status"].astype(str).isin(
        ["captured", "refunded"]
    )
    days = pd.to_datetime(pay["created_at"], unit="s", utc=True).dt.tz_convert(IST)
    in_month = days.dt.strftime("%Y-%m") == month
    chosen = pay[captured & in_month]
    foreign = chosen["currency"].astype("string").str.upper().fillna("INR") != "INR"
    inr = np.where(
        foreign.to_numpy(),
        chosen["base_amount"].astype("Int64").fillna(0).to_numpy(np.int64),
        chosen["amount"].to_numpy(np.int64),
    )
    total = int(inr.sum())
    ids = tuple(sorted(chosen["id"].astype(str)))
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
    settled = [v for v in settlement_vouchers(dataset, ledgers) if f"{v.date:%Y-%m}" == month]
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


def journal_csv(vouchers: list[Voucher]) -> str:
    """One CSV row per voucher line; amounts in rupees with two decimals."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for v in vouchers:
        for line in v.lines:
            writer.writerow(
                (
                    v.number,
                    v.date.isoformat(),
                    v.kind,
                    v.reference,
                    line.ledger,
                    rupees(line.debit) if line.debit else "",
                    rupees(line.credit) if line.credit else "",
                    ";".join(line.source_rows),
                    v.narration,
                )
            )
    return out.getvalue()


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
