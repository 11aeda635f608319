"""GST on fees, tied out against Razorpay's monthly tax invoice (docs/books.md).

The month's fees (without GST) and GST, counted two ways: by payment (the fee and tax on
each payment captured in the month, plus the fees of refunds and instant payouts made in
it) and by settlement (the fee and tax on the recon rows of the settlements made in the
month). Razorpay's invoice, typed in or uploaded, is compared with the payment basis, and
the two bases are reconciled with each other: fees charged on payments captured this month
but settled in another (timing), and recon rows whose fee differs from their payment's.
The input-tax-credit summary splits the invoice's GST by the place of supply: IGST when
the merchant's state differs from the supplier's, else CGST + SGST, half each.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.books.rollforward import month_bounds
from core.calendar import IST
from core.dataset import Dataset
from core.money import parse_rupees

# Razorpay Software Private Limited's registration (the supplier on its invoices).
SUPPLIER_STATE = "Karnataka"


@dataclass(frozen=True)
class Invoice:
    """Razorpay's tax invoice for a month, in paise. igst/cgst/sgst as printed (0 when
    the invoice shows none)."""

    month: str
    taxable_value: int
    igst: int = 0
    cgst: int = 0
    sgst: int = 0

    @property
    def gst(self) -> int:
        return self.igst + self.cgst + self.sgst


def parse_invoice_csv(month: str, text: str) -> Invoice:
    """An invoice from CSV lines `component,amount` (rupees): taxable_value, igst, cgst,
    sgst (any case; a header row and unknown components are ignored)."""
    values: dict[str, int] = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) < 2:
            continue
        name = row[0].strip().lower().replace(" ", "_")
        if name in ("taxable_value", "igst", "cgst", "sgst"):
            values[name] = parse_rupees(row[1])
    if "taxable_value" not in values:
        raise ValueError("the invoice CSV needs a taxable_value line")
    return Invoice(month, **values)


@dataclass(frozen=True)
class GstTieOut:
    month: str
    payment_fees: int  # fees without GST, by payment
    payment_gst: int
    settlement_fees: int  # by settlement
    settlement_gst: int
    timing_fees: int  # the rest of by payment − by settlement: timing and other rows (not
    timing_gst: int  # itemised yet: docs/books.md)
    row_fee_differences: int  # settled rows whose fee differs from their payment's
    row_gst_differences: int
    invoice: Invoice | None
    invoice_fee_difference: int | None  # invoice − by payment
    invoice_gst_difference: int | None
    itc: tuple[tuple[str, int], ...]  # (IGST | CGST | SGST, paise)
    itc_kind: str  # 'IGST' or 'CGST+SGST'
    itc_mismatch: bool  # the invoice's split is not the place of supply's


def _in_month(seconds: pd.Series, month: str) -> pd.Series:
    first, following = month_bounds(month)
    days = pd.to_datetime(seconds.astype("int64"), unit="s", utc=True).dt.tz_convert(IST).dt.date
    return (days >= first) & (days < following)


def tie_out(
    dataset: Dataset,
    month: str,
    invoice: Invoice | None = None,
    *,
    merchant_state: str = SUPPLIER_STATE,
    supplier_state: str = SUPPLIER_STATE,
) -> GstTieOut:
    pay = dataset.payments
    captured = pay["captured"].astype(bool) | pay["status"].astype(str).isin(
        ["captured", "refunded"]
    )
    p = pay[captured & _in_month(pay["created_at"], month)]
    p_fee = p["fee"].astype("Int64").fillna(0).astype(np.int64)
    p_tax = p["tax"].astype("Int64").fillna(0).astype(np.int64)
    recon = dataset.recon
    ref_rows = recon[
        (recon["type"].astype(str) == "refund")
        & _in_month(recon["created_at"].astype("Int64").fillna(0), month)
    ]
    payouts = dataset.instant_payouts
    done = payouts[
        (payouts["status"].astype(str) == "processed")
        & _in_month(payouts["processed_at"].astype("Int64").fillna(payouts["created_at"]), month)
    ]
    po_fee = done["fees"].astype("Int64").fillna(0).astype(np.int64)
    po_tax = done["tax"].astype("Int64").fillna(0).astype(np.int64)
    payment_gst = int(p_tax.sum() + ref_rows["tax"].sum() + po_tax.sum())
    payment_fees = int(
        (p_fee - p_tax).sum() + (ref_rows["fee"] - ref_rows["tax"]).sum() + (po_fee - po_tax).sum()
    )

    st = dataset.settlements
    settled_ids = set(
        st.loc[
            (st["status"].astype(str) == "processed") & _in_month(st["created_at"], month), "id"
        ].astype(str)
    )
    rows = recon[recon["settlement_id"].astype(str).isin(settled_ids)]
    settlement_gst = int(rows["tax"].sum() + po_tax.sum())
    settlement_fees = int((rows["fee"] - rows["tax"]).sum() + (po_fee - po_tax).sum())

    # Settled payment rows whose fee or tax differs from their payment's.
    pay_rows = rows[rows["type"].astype(str) == "payment"]
    by_id = pay.set_index(pay["id"].astype(str))
    known = pay_rows[pay_rows["entity_id"].astype(str).isin(by_id.index)]
    ids = known["entity_id"].astype(str)
    their_fee = ids.map(by_id["fee"]).astype("Int64").fillna(known["fee"]).astype(np.int64)
    their_tax = ids.map(by_id["tax"]).astype("Int64").fillna(known["tax"]).astype(np.int64)
    row_gst_diff = int((known["tax"].to_numpy() - their_tax.to_numpy()).sum())
    row_fee_diff = int(
        ((known["fee"] - known["tax"]).to_numpy() - (their_fee - their_tax).to_numpy()).sum()
    )
    # The rest between the two bases: fees captured in one month and settled in another,
    # and refund, transfer and adjustment rows settled in another month (not itemised).
    timing_fees = payment_fees - settlement_fees + row_fee_diff
    timing_gst = payment_gst - settlement_gst + row_gst_diff

    same_state = merchant_state.strip().lower() == supplier_state.strip().lower()
    gst_total = invoice.gst if invoice is not None else payment_gst
    itc: tuple[tuple[str, int], ...]
    if same_state:
        half = gst_total // 2
        itc = (("CGST", half), ("SGST", gst_total - half))
        kind = "CGST+SGST"
        mismatch = invoice is not None and invoice.igst > 0
    else:
        itc = (("IGST", gst_total),)
        kind = "IGST"
        mismatch = invoice is not None and (invoice.cgst > 0 or invoice.sgst > 0)
    return GstTieOut(
        month=month,
        payment_fees=payment_fees,
        payment_gst=payment_gst,
        settlement_fees=settlement_fees,
        settlement_gst=settlement_gst,
        timing_fees=timing_fees,
        timing_gst=timing_gst,
        row_fee_differences=row_fee_diff,
        row_gst_differences=row_gst_diff,
        invoice=invoice,
        invoice_fee_difference=None if invoice is None else invoice.taxable_value - payment_fees,
        invoice_gst_difference=None if invoice is None else invoice.gst - payment_gst,
        itc=itc,
        itc_kind=kind,
        itc_mismatch=mismatch,
    )
