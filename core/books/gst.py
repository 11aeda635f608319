"""GST on fees, tied out against Razorpay's monthly tax invoice (docs/books.md).

The month's fees (without GST) and GST, counted two ways: by payment (the fee and tax on
each payment captured in the month, plus the fees of refunds and instant payouts made in
it) and by settlement (the fee and tax on the recon rows of the settlements made in the
month). Razorpay's invoice, typed in or uploaded, is compared with the payment basis, and
the two bases are reconciled with each other, line by line: timing (fees on payments and
refunds of this month settled in another month or not yet, less those of other months
settled in this one's settlements), other rows settled (transfers, adjustments, rows for
no known payment), settled rows whose fee differs from their payment's (incl. duplicate
rows), and what is left, unexplained (zero by construction unless a row has no date).
An invoice is explained against both: equal to the payment basis it ties out; equal to the
settlement basis its difference from the payment basis is all timing; otherwise the
difference from the payment basis is a real difference, to raise with Razorpay.
The input-tax-credit summary splits the invoice's GST by the place of supply: IGST when
the merchant's state differs from the supplier's, else CGST + SGST, half each.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from core import columns
from core.books.rollforward import razorpay_settled
from core.calendar import in_ist_month
from core.dataset import Dataset
from core.errors import InputError, Problem
from core.money import MoneyFormatError, parse_rupees

# Razorpay Software Private Limited's registration (the supplier on its invoices).
SUPPLIER_STATE = "Karnataka"
# GST on Razorpay's fees: 18% (IGST, or CGST 9% + SGST 9%), as the recon rows' `tax` is.
GST_RATE_PERCENT = 18


def gst_of(taxable: int) -> int:
    """18% of `taxable` paise, rounded half up to the paisa: an invoice's GST on its total."""
    return (taxable * GST_RATE_PERCENT + 50) // 100


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


INVOICE_COMPONENTS = ("taxable_value", "igst", "cgst", "sgst")
MAX_INVOICE_BYTES = 64 * 1024


def parse_invoice_csv(month: str, text: str, file: str = "invoice.csv") -> Invoice:
    """An invoice from CSV lines `component,amount`, amounts in rupees: taxable_value, igst,
    cgst, sgst (any case, spaces for underscores), and optionally `month,YYYY-MM`, which
    must be `month`. A `component,amount` header is allowed. Fails closed: any other line,
    a repeated component, an amount that is not exact rupees, or no taxable_value raises
    InputError naming file:line:column."""
    problems: list[Problem] = []
    values: dict[str, int] = {}
    seen: dict[str, int] = {}
    lines = text.splitlines()
    for number, row in enumerate(csv.reader(lines), start=1):
        cells = [cell.strip() for cell in row]
        if not any(cells):
            continue
        name = cells[0].lower().replace(" ", "_")
        if number == 1 and name == "component":
            continue
        if len(cells) != 2:
            where = "3" if len(cells) > 2 else "2"
            problems.append(
                Problem(
                    file, number, where, f"expected 2 cells (component,amount), got {len(cells)}"
                )
            )
            continue
        if name in seen:
            problems.append(Problem(file, number, "1", f"{cells[0]!r} repeats line {seen[name]}"))
            continue
        seen[name] = number
        if name == "month":
            if cells[1] != month:
                problems.append(
                    Problem(file, number, "2", f"the invoice is for {cells[1]!r}, not {month}")
                )
            continue
        if name not in INVOICE_COMPONENTS:
            problems.append(
                Problem(
                    file,
                    number,
                    "1",
                    f"unknown component {cells[0]!r}: one of month, "
                    + ", ".join(INVOICE_COMPONENTS),
                )
            )
            continue
        try:
            paise = parse_rupees(cells[1])
        except MoneyFormatError as exc:
            problems.append(Problem(file, number, "2", str(exc)))
            continue
        if paise < 0:
            problems.append(Problem(file, number, "2", f"{cells[0]} is negative"))
            continue
        values[name] = paise
    if not problems and "taxable_value" not in values:
        problems.append(Problem(file, 0, "", "no taxable_value line"))
    if problems:
        raise InputError(problems)
    return Invoice(month, **values)


def parse_invoice_file(path: Path, month: str) -> Invoice:
    """parse_invoice_csv over a file (UTF-8, at most MAX_INVOICE_BYTES)."""
    data = path.read_bytes()
    return parse_invoice_bytes(path.name, data, month)


def parse_invoice_bytes(file: str, data: bytes, month: str) -> Invoice:
    """An uploaded invoice CSV's bytes (see parse_invoice_csv); refused when too large or
    not UTF-8."""
    if len(data) > MAX_INVOICE_BYTES:
        raise InputError([Problem(file, 0, "", f"larger than {MAX_INVOICE_BYTES // 1024} KiB")])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)  # 1-based, in bytes
        raise InputError([Problem(file, line, str(column), "not UTF-8 text")]) from None
    return parse_invoice_csv(month, text, file)


@dataclass(frozen=True)
class GstTieOut:
    month: str
    payment_fees: int  # fees without GST, by payment
    payment_gst: int
    settlement_fees: int  # by settlement
    settlement_gst: int
    # by payment − by settlement = timing + settled elsewhere − other rows − row differences
    # + unexplained
    timing_fees: int  # captured_later − settled_earlier (payments and refunds)
    timing_gst: int
    captured_not_settled_fees: int  # this month's payments and refunds settled in another
    captured_not_settled_gst: int  # month's settlements, or not yet
    settled_from_other_months_fees: int  # rows of other months' payments and refunds in
    settled_from_other_months_gst: int  # this month's settlements
    other_rows_fees: int  # transfers, adjustments, rows for no known payment, settled
    other_rows_gst: int
    row_fee_differences: int  # settled rows (of this month's payments) charging other than
    row_gst_differences: int  # their payment (fee differences and duplicate rows)
    unexplained_fees: int
    unexplained_gst: int
    invoice: Invoice | None
    invoice_fee_difference: int | None  # invoice − by payment
    invoice_gst_difference: int | None
    invoice_basis: str | None  # 'payment' (ties), 'settlement' (all timing) or None (real)
    invoice_timing_fees: int  # the part of invoice − by payment that is timing
    invoice_timing_gst: int
    invoice_real_fees: int  # the rest: a real difference, to raise with Razorpay
    invoice_real_gst: int
    itc: tuple[tuple[str, int], ...]  # (IGST | CGST | SGST, paise)
    itc_kind: str  # 'IGST' or 'CGST+SGST'
    itc_mismatch: bool  # the invoice's split is not the place of supply's
    settled_elsewhere_fees: int = 0  # this month's payments settled by another entity (a
    settled_elsewhere_gst: int = 0  # bank): charged, never in Razorpay's settlements
    # GST of an invoice that computes it on its total (gst_of) against the basis it ties to,
    # whose GST was rounded item by item: within half a paisa per item, rounding, not real.
    invoice_rounding_gst: int = 0


def _net(fee: npt.NDArray[np.int64], tax: npt.NDArray[np.int64]) -> tuple[int, int]:
    """(fees without GST, GST) of some rows' fee and tax (paise, missing as 0)."""
    return int((fee - tax).sum()), int(tax.sum())


@dataclass(frozen=True)
class GstBases:
    """What the month's GST tie-out reads from the data (paise): the two bases and the
    lines between them. `apply_invoice` explains an invoice against them without the data,
    so a page can keep them and re-apply a typed invoice on every keystroke."""

    month: str
    payment_fees: int
    payment_gst: int
    settlement_fees: int
    settlement_gst: int
    captured_not_settled_fees: int
    captured_not_settled_gst: int
    settled_from_other_months_fees: int
    settled_from_other_months_gst: int
    other_rows_fees: int
    other_rows_gst: int
    row_fee_differences: int
    row_gst_differences: int
    # This month's payments settled by another entity (a bank), with no row in its
    # settlements: charged, never in Razorpay's settlements; not timing (docs/books.md).
    settled_elsewhere_fees: int = 0
    settled_elsewhere_gst: int = 0
    # How many items each basis's GST adds up (each rounded on its own): payments, refund
    # rows and instant payouts; rows in the month's settlements and instant payouts.
    payment_items: int = 0
    settlement_items: int = 0

    @property
    def timing_fees(self) -> int:
        return self.captured_not_settled_fees - self.settled_from_other_months_fees

    @property
    def timing_gst(self) -> int:
        return self.captured_not_settled_gst - self.settled_from_other_months_gst

    @property
    def unexplained_fees(self) -> int:
        return (self.payment_fees - self.settlement_fees) - (
            self.timing_fees
            + self.settled_elsewhere_fees
            - self.other_rows_fees
            - self.row_fee_differences
        )

    @property
    def unexplained_gst(self) -> int:
        return (self.payment_gst - self.settlement_gst) - (
            self.timing_gst
            + self.settled_elsewhere_gst
            - self.other_rows_gst
            - self.row_gst_differences
        )


def tie_out(
    dataset: Dataset,
    month: str,
    invoice: Invoice | None = None,
    *,
    merchant_state: str = SUPPLIER_STATE,
    supplier_state: str = SUPPLIER_STATE,
) -> GstTieOut:
    """The month's GST on fees, and the invoice explained against it: `gst_bases` (reads the
    dataset) then `apply_invoice` (pure)."""
    return apply_invoice(
        gst_bases(dataset, month),
        invoice,
        merchant_state=merchant_state,
        supplier_state=supplier_state,
    )


def gst_bases(dataset: Dataset, month: str) -> GstBases:
    """The month's fees and GST by payment and by settlement, and the lines between them.

    Whole columns at once: text compared as Arrow strings, ids matched by integer codes of
    one dictionary (a missing id is an id of its own, as `astype(str).isin` had it), IST
    dates by integer arithmetic (core.calendar.in_ist_month)."""
    pay = dataset.payments
    p = columns.captured(pay) & in_ist_month(pay["created_at"].to_numpy(np.int64), month)
    # A payment settled by another entity (a bank: Settled By) is charged its fee but is
    # never in Razorpay's settlements (nor in the roll-forward or the journal).
    by_razorpay = razorpay_settled(pay["settled_by"])
    pay_fee, pay_tax = columns.paise(pay["fee"]), columns.paise(pay["tax"])

    recon = dataset.recon
    rtype = columns.text(recon["type"])
    is_refund = columns.equals(rtype, "refund")
    is_payment = columns.equals(rtype, "payment")
    refund_in_month = is_refund & in_ist_month(columns.seconds(recon["created_at"]), month)
    fee, tax = columns.paise(recon["fee"]), columns.paise(recon["tax"])

    payouts = dataset.instant_payouts
    done = columns.equals(columns.text(payouts["status"]), "processed") & in_ist_month(
        columns.seconds(payouts["processed_at"], payouts["created_at"]), month
    )
    p_fees, p_gst = _net(pay_fee[p], pay_tax[p])
    r_fees, r_gst = _net(fee[refund_in_month], tax[refund_in_month])
    po_fees, po_gst = _net(
        columns.paise(payouts["fees"])[done], columns.paise(payouts["tax"])[done]
    )
    payment_fees, payment_gst = p_fees + r_fees + po_fees, p_gst + r_gst + po_gst

    st = dataset.settlements
    settled = columns.equals(columns.text(st["status"]), "processed") & in_ist_month(
        st["created_at"].to_numpy(np.int64), month
    )
    settled_ids = columns.text(st["id"]).filter(pa.array(settled))
    in_settlements = np.asarray(
        pc.is_in(columns.text(recon["settlement_id"]), value_set=settled_ids)
        .fill_null(False)
        .to_numpy(zero_copy_only=False),
        dtype=bool,
    )
    s_fees, s_gst = _net(fee[in_settlements], tax[in_settlements])
    settlement_fees, settlement_gst = s_fees + po_fees, s_gst + po_gst

    # Payment rows in this month's settlements: of this month's payments, of other months'
    # payments, or of no known payment.
    (pay_id, entity), size = columns.shared_codes(
        columns.text(pay["id"]), columns.text(recon["entity_id"])
    )
    pay_rows = in_settlements & is_payment
    known = columns.member(entity, pay_id, size)
    this_month = columns.member(entity, pay_id[p], size)
    mine = pay_rows & this_month
    ids = entity[mine]
    # This month's payments, each id once (its first row), that have a row in this month's
    # settlements, and the payments with none.
    p_rows = np.flatnonzero(p)
    their = p_rows[columns.first_of_each(pay_id[p_rows])]
    covered = their[columns.member(pay_id[their], ids, size)]
    cov_fees, cov_gst = _net(pay_fee[covered], pay_tax[covered])
    mine_fees, mine_gst = _net(fee[mine], tax[mine])
    row_fee_diff, row_gst_diff = mine_fees - cov_fees, mine_gst - cov_gst
    earlier = pay_rows & known & ~this_month
    earlier_fees, earlier_gst = _net(fee[earlier], tax[earlier])
    unsettled = p_rows[~columns.member(pay_id[p_rows], ids, size)]
    later = unsettled[by_razorpay[unsettled]]
    later_fees, later_gst = _net(pay_fee[later], pay_tax[later])
    elsewhere = unsettled[~by_razorpay[unsettled]]
    elsewhere_fees, elsewhere_gst = _net(pay_fee[elsewhere], pay_tax[elsewhere])
    # Refund rows: of this month not in its settlements; in its settlements from other months.
    ref_later = refund_in_month & ~in_settlements
    ref_later_fees, ref_later_gst = _net(fee[ref_later], tax[ref_later])
    ref_earlier = ~refund_in_month & is_refund & in_settlements
    ref_earlier_fees, ref_earlier_gst = _net(fee[ref_earlier], tax[ref_earlier])
    other = in_settlements & ~is_payment & ~is_refund
    unknown = pay_rows & ~known
    unknown_fees, unknown_gst = _net(fee[unknown], tax[unknown])
    o_fees, o_gst = _net(fee[other], tax[other])
    other_fees, other_gst = o_fees + unknown_fees, o_gst + unknown_gst
    later_fees, later_gst = later_fees + ref_later_fees, later_gst + ref_later_gst
    earlier_fees, earlier_gst = earlier_fees + ref_earlier_fees, earlier_gst + ref_earlier_gst
    return GstBases(
        month=month,
        payment_fees=payment_fees,
        payment_gst=payment_gst,
        settlement_fees=settlement_fees,
        settlement_gst=settlement_gst,
        captured_not_settled_fees=later_fees,
        captured_not_settled_gst=later_gst,
        settled_from_other_months_fees=earlier_fees,
        settled_from_other_months_gst=earlier_gst,
        other_rows_fees=other_fees,
        other_rows_gst=other_gst,
        row_fee_differences=row_fee_diff,
        row_gst_differences=row_gst_diff,
        settled_elsewhere_fees=elsewhere_fees,
        settled_elsewhere_gst=elsewhere_gst,
        payment_items=int(p.sum() + refund_in_month.sum() + done.sum()),
        settlement_items=int(in_settlements.sum() + done.sum()),
    )


def apply_invoice(
    bases: GstBases,
    invoice: Invoice | None = None,
    *,
    merchant_state: str = SUPPLIER_STATE,
    supplier_state: str = SUPPLIER_STATE,
) -> GstTieOut:
    """The invoice explained against the month's bases (ties out, all timing, or a real
    difference) and the input-tax-credit split by place of supply: arithmetic, no data."""
    b = bases
    same_state = merchant_state.strip().lower() == supplier_state.strip().lower()
    gst_total = invoice.gst if invoice is not None else b.payment_gst
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
    basis: str | None = None
    inv_timing = (0, 0)
    inv_real = (0, 0)
    rounding = 0
    if invoice is not None:
        by_payment = (invoice.taxable_value - b.payment_fees, invoice.gst - b.payment_gst)
        by_settlement = (invoice.taxable_value - b.settlement_fees, invoice.gst - b.settlement_gst)
        on_total = invoice.gst == gst_of(invoice.taxable_value)

        def rounded(gap: tuple[int, int], items: int) -> bool:
            return on_total and gap[0] == 0 and abs(gap[1]) <= (items + 1) // 2

        if by_payment == (0, 0):
            basis = "payment"
        elif by_settlement == (0, 0):
            basis = "settlement"
            inv_timing = by_payment
        elif rounded(by_payment, b.payment_items):
            basis, rounding = "payment", by_payment[1]
        elif rounded(by_settlement, b.settlement_items):
            basis, rounding = "settlement", by_settlement[1]
            inv_timing = (by_payment[0], b.settlement_gst - b.payment_gst)
        else:
            inv_real = by_payment
    return GstTieOut(
        month=b.month,
        payment_fees=b.payment_fees,
        payment_gst=b.payment_gst,
        settlement_fees=b.settlement_fees,
        settlement_gst=b.settlement_gst,
        timing_fees=b.timing_fees,
        timing_gst=b.timing_gst,
        captured_not_settled_fees=b.captured_not_settled_fees,
        captured_not_settled_gst=b.captured_not_settled_gst,
        settled_from_other_months_fees=b.settled_from_other_months_fees,
        settled_from_other_months_gst=b.settled_from_other_months_gst,
        other_rows_fees=b.other_rows_fees,
        other_rows_gst=b.other_rows_gst,
        row_fee_differences=b.row_fee_differences,
        row_gst_differences=b.row_gst_differences,
        unexplained_fees=b.unexplained_fees,
        unexplained_gst=b.unexplained_gst,
        invoice=invoice,
        invoice_fee_difference=None if invoice is None else invoice.taxable_value - b.payment_fees,
        invoice_gst_difference=None if invoice is None else invoice.gst - b.payment_gst,
        invoice_basis=basis,
        invoice_timing_fees=inv_timing[0],
        invoice_timing_gst=inv_timing[1],
        invoice_real_fees=inv_real[0],
        invoice_real_gst=inv_real[1],
        itc=itc,
        itc_kind=kind,
        itc_mismatch=mismatch,
        settled_elsewhere_fees=b.settled_elsewhere_fees,
        settled_elsewhere_gst=b.settled_elsewhere_gst,
        invoice_rounding_gst=rounding,
    )
