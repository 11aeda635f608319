"""The Books page's tables and chart (core.books): labels, rupees, the balance over time."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Generic, TypeVar

import altair as alt
import pandas as pd
import streamlit as st

from core.books.gst import (
    SUPPLIER_STATE,
    GstBases,
    Invoice,
    apply_invoice,
    gst_bases,
    parse_invoice_bytes,
)
from core.books.journal import journal_csv, month_vouchers, tally_xml
from core.books.ledger import Ledger, LedgerStatus, data_key, derive_ledger, rebuild_ledger
from core.books.pricing import (
    METHOD_CLASSES,
    PricingPlan,
    PricingRule,
    fee_check,
    overcharge_summary,
    unclassified_cards,
)
from core.books.rollforward import MonthRollForward
from core.dataset import Dataset
from core.db import raw
from core.db.raw import MonthProduct
from core.errors import InputError
from core.money import parse_rupees
from ui import auth, keys, shell
from ui.charts import INDIAN_SHORT
from ui.format import inr, inr_short, ist, md

T = TypeVar("T")

LABELS = {
    "captured": "Captured payments",
    "refunds": "Refunds",
    "fees": "Fees (incl. GST)",
    "dispute_debits": "Dispute debits",
    "dispute_reversals": "Dispute reversals",
    "written_off": "Written off (lost disputes)",
    "adjustments": "Adjustments",
    "transfers": "Transfers and reversals",
    "prior_period_adjustments": "Prior-period adjustments (closed months)",
    "settlements": "Settlements",
    "instant_settlements": "Instant settlements",
    "unsettled_payments": "Unsettled captured payments",
    "held": "Held by Razorpay",
    "pending_refunds": "Refunds not yet settled",
    "unsettled_other_rows": "Other unsettled rows",
    "instant_advances": "Instant settlements not yet drawn",
    "flagged_differences": "Differences under review (exceptions)",
}


def lines_table(lines: tuple[tuple[str, int], ...]) -> pd.DataFrame:
    """(line, paise) pairs as a two-column table of labels and exact rupees."""
    return pd.DataFrame(
        {
            "Line": [LABELS.get(name, name) for name, _ in lines],
            "Amount": [inr(amount) for _, amount in lines],
        }
    )


def drilldown_table(rows: tuple[tuple[str, str, str, int], ...]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Day": [r[0] for r in rows],
            "Entity": [f"{r[1]}: {r[2]}" for r in rows],
            "Unexplained": [inr(r[3]) for r in rows],
        }
    )


def balance_chart(days: pd.DataFrame) -> alt.Chart:
    """The closing balance and the open items per day (whole rupees), and the residual."""
    frame = pd.DataFrame(
        {
            "Day": pd.to_datetime(days["day"].astype(str)),
            "Closing balance": days["closing"] // 100,
            "Open items": days["open_items"] // 100,
            "Residual": days["residual"] // 100,
        }
    ).melt("Day", var_name="Series", value_name="Rupees")
    return (
        alt.Chart(frame, title="Razorpay receivable by day")
        .mark_line(point=False)
        .encode(
            x=alt.X("Day:T", title=None),
            y=alt.Y("Rupees:Q", title="₹", axis=alt.Axis(labelExpr=INDIAN_SHORT)),
            color=alt.Color("Series:N", legend=alt.Legend(orient="bottom", title=None)),
            strokeDash=alt.StrokeDash("Series:N", legend=None),
            tooltip=["Day:T", "Series:N", alt.Tooltip("Rupees:Q", format=",")],
        )
    )


def plans_table(plans: tuple[PricingPlan, ...]) -> pd.DataFrame:
    """One row per plan version and payment class: percent, fixed fee, GST."""
    rows = [
        {
            "Version": plan.version,
            "From (IST)": ist(plan.effective_from),
            "Class": rule.method,
            "Percent": f"{rule.percent_bp / 100:.2f}%",
            "Fixed": inr(rule.fixed_paise),
            "GST": f"{plan.gst_bp / 100:.0f}%",
        }
        for plan in plans
        for rule in plan.rules
    ]
    return pd.DataFrame(rows)


def overcharges_table(summary: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Month": summary["month"],
            "Class": summary["method_class"],
            "Payments": summary["payments"],
            "Overcharged": [inr(int(v)) for v in summary["overcharge"]],
        }
    )


def editor_frame() -> pd.DataFrame:
    """The plan editor's starting rows: every payment class, no fee."""
    return pd.DataFrame(
        {
            "Class": list(METHOD_CLASSES),
            "Percent": ["" for _ in METHOD_CLASSES],
            "Fixed ₹": ["" for _ in METHOD_CLASSES],
        }
    )


def rules_from_editor(frame: pd.DataFrame) -> tuple[PricingRule, ...]:
    """The edited rows as rules; a row with neither percent nor fixed fee is left out.
    Raises ValueError (with the class named) on a percent or amount that is not exact."""
    rules = []
    for klass, percent, fixed in frame[["Class", "Percent", "Fixed ₹"]].itertuples(
        index=False, name=None
    ):
        p_text, f_text = str(percent or "").strip(), str(fixed or "").strip()
        if not p_text and not f_text:
            continue
        try:
            bp = Decimal(p_text.rstrip("%") or "0") * 100
        except InvalidOperation as exc:
            raise ValueError(f"{klass}: not a percentage: {p_text!r}") from exc
        if bp != bp.to_integral_value():
            raise ValueError(f"{klass}: a percentage has at most two decimals")
        paise = parse_rupees(f_text) if f_text else 0
        rules.append(PricingRule(str(klass), int(bp), paise))
    return tuple(rules)


@dataclass(frozen=True)
class Kept(Generic[T]):
    """A result built from the raw tables, kept for the session with what it was built for
    (`parts`: the month, the plan versions) and from (`data`: core.books.ledger.data_key)."""

    parts: Hashable
    data: str
    value: T


def on_request(
    kept: str,
    button: str,
    label: str,
    month: str,
    product: MonthProduct,
    build: Callable[[Dataset], T],
    also: Hashable = (),
) -> T | None:
    """A result built from the raw tables (`build` over the rows of `month` that `product`
    reads: core.db.raw.read_month_dataset), computed only when asked for, never on a
    render: while the session keeps one (under `kept`) for this month, `also` (what else
    it was built for: the plan versions) and the data as they are, it is returned with no
    read; else the button `label` is offered, and pressing it reads the month's rows once,
    builds, frees them, keeps and returns the result. One kept per `kept` key; one for data
    that have since changed is dropped (it can never be shown again)."""
    parts = (month, also)
    key = shell.read(data_key)
    held = st.session_state.get(kept)
    if isinstance(held, Kept):
        if held.parts == parts and held.data == key:
            value: T = held.value
            return value
        if held.data != key:
            del st.session_state[kept]
    if not st.button(label, key=button):
        return None
    with st.spinner(f"Reading the rows of {month}: this takes a while on a large database."):
        dataset = shell.read(raw.read_month_dataset, month, product)
        built = build(dataset)
        del dataset
    st.session_state[kept] = Kept(parts, key, built)
    return built


@dataclass(frozen=True)
class JournalFiles:
    """A month's journal, ready to download: its voucher count, CSV and Tally XML (UTF-8)."""

    vouchers: int
    csv: bytes
    xml: bytes


def journal_files(dataset: Dataset, month: str) -> JournalFiles:
    vouchers = month_vouchers(dataset, month)
    return JournalFiles(
        len(vouchers), journal_csv(vouchers).encode("utf-8"), tally_xml(vouchers).encode("utf-8")
    )


def journal_section(month: str) -> None:
    """The Journal tab: the month's vouchers and both downloads, built on request."""
    files = on_request(
        keys.BOOKS_JOURNAL,
        keys.BOOKS_JOURNAL_BUILD,
        f"Prepare the journal for {month}",
        month,
        "journal",
        lambda dataset: journal_files(dataset, month),
    )
    if files is not None:
        journal_downloads(month, files)


def journal_downloads(month: str, files: JournalFiles) -> None:
    """The month's journal as CSV and as Tally vouchers, side by side."""
    st.caption(
        f"{files.vouchers:,} balanced vouchers: the month's captured payments and one per "
        "settlement; every line names the recon rows it comes from."
    )
    left, right = st.columns(2)
    left.download_button(
        "Journal (CSV)",
        files.csv,
        file_name=f"journal-{month}.csv",
        mime="text/csv",
        key=keys.BOOKS_JOURNAL_CSV,
    )
    right.download_button(
        "Tally vouchers (XML)",
        files.xml,
        file_name=f"tally-{month}.xml",
        mime="application/xml",
        key=keys.BOOKS_JOURNAL_TALLY,
    )


def report_downloads(month: str, zipped: bytes, pdf_bytes: bytes) -> None:
    """The month-end close report: the CSV bundle and the PDF."""
    left, right = st.columns(2)
    left.download_button(
        "Close report (CSV bundle)",
        zipped,
        file_name=f"close-{month}.zip",
        mime="application/zip",
        key=keys.BOOKS_REPORT_ZIP,
    )
    right.download_button(
        "Close report (PDF)",
        pdf_bytes,
        file_name=f"close-{month}.pdf",
        mime="application/pdf",
        key=keys.BOOKS_REPORT_PDF,
    )


def _typed_invoice(month: str, state: str, taxable: str, gst: str) -> Invoice | None:
    if not taxable.strip():
        return None
    paise = parse_rupees(gst) if gst.strip() else 0
    same = state.strip().lower() == SUPPLIER_STATE.lower()
    split = {"cgst": paise // 2, "sgst": paise - paise // 2} if same else {"igst": paise}
    return Invoice(month, parse_rupees(taxable), **split)


def gst_section(month: str) -> None:
    """The GST tab: the month's bases computed on request and kept; the invoice typed or
    uploaded is applied to them on every render (no read)."""
    bases = on_request(
        keys.BOOKS_GST_BASES,
        keys.BOOKS_GST_COMPUTE,
        f"Compute the GST figures for {month}",
        month,
        "gst",
        lambda dataset: gst_bases(dataset, month),
    )
    gst_figures(bases, month)


def gst_figures(bases: GstBases | None, month: str) -> None:
    """GST on fees: the two bases and what lies between them, Razorpay's invoice (typed in
    or uploaded as CSV) explained as timing or a real difference, and the ITC split. The
    invoice is applied on every render to the month's `bases` (computed on request, kept);
    with none yet, only the invoice's fields are shown."""
    left, mid, right = st.columns(3)
    state = left.text_input("Your GST state", value=SUPPLIER_STATE, key=keys.BOOKS_GST_STATE)
    taxable = mid.text_input("Invoice taxable value (₹)", key=keys.BOOKS_GST_TAXABLE)
    gst = right.text_input("Invoice GST (₹)", key=keys.BOOKS_GST_AMOUNT)
    upload = st.file_uploader(
        "…or upload Razorpay's tax invoice as CSV (lines `component,amount` in rupees: "
        "taxable_value, cgst, sgst, igst; optionally `month,YYYY-MM`)",
        type=["csv"],
        key=keys.BOOKS_GST_UPLOAD,
    )
    invoice = None
    try:
        if upload is not None:
            invoice = parse_invoice_bytes(upload.name, upload.getvalue(), month)
        else:
            invoice = _typed_invoice(month, state, taxable, gst)
    except InputError as exc:
        st.error(md(f"The invoice was not read: {exc}"))
    except ValueError as exc:
        st.error(md(str(exc)))
    if bases is None:
        return
    t = apply_invoice(bases, invoice, merchant_state=state)
    rows = [
        ("Fees by payment (captured, refunds, instant)", t.payment_fees, t.payment_gst),
        ("Fees by settlement (recon rows settled)", t.settlement_fees, t.settlement_gst),
        (
            "Timing: this month's payments and refunds settled later or not yet",
            t.captured_not_settled_fees,
            t.captured_not_settled_gst,
        ),
        (
            "Timing: earlier months' payments and refunds settled this month",
            -t.settled_from_other_months_fees,
            -t.settled_from_other_months_gst,
        ),
        (
            "Other rows settled (transfers, adjustments, unknown)",
            -t.other_rows_fees,
            -t.other_rows_gst,
        ),
        (
            "Settled rows charging other than their payment",
            -t.row_fee_differences,
            -t.row_gst_differences,
        ),
        ("Unexplained", t.unexplained_fees, t.unexplained_gst),
    ]
    if t.invoice is not None and t.invoice_fee_difference is not None:
        rows.append(("Invoice", t.invoice.taxable_value, t.invoice.gst))
        rows.append(
            ("Invoice − by payment", t.invoice_fee_difference, t.invoice_gst_difference or 0)
        )
        rows.append(("… of which timing", t.invoice_timing_fees, t.invoice_timing_gst))
        rows.append(("… of which a real difference", t.invoice_real_fees, t.invoice_real_gst))
    st.dataframe(
        pd.DataFrame(
            {
                "": [r[0] for r in rows],
                "Fees": [inr(r[1]) for r in rows],
                "GST": [inr(r[2]) for r in rows],
            }
        ),
        key=keys.BOOKS_GST_TABLE,
        hide_index=True,
    )
    if t.invoice is not None:
        if t.invoice_basis == "payment":
            st.success("The invoice ties out to the fees charged by payment.")
        elif t.invoice_basis == "settlement":
            st.info(
                "The invoice equals the fees by settlement: its difference from the payment "
                f"basis, {inr(t.invoice_timing_fees)}, is all timing."
            )
        else:
            st.warning(
                f"The invoice differs from the fees charged by {inr(t.invoice_real_fees)} "
                f"(GST {inr(t.invoice_real_gst)}): a real difference to raise with Razorpay."
            )
    credit = ", ".join(f"{name} {inr(amount)}" for name, amount in t.itc)
    st.markdown(f"**Input tax credit ({t.itc_kind}):** {credit}")


def unclassified_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Card payments the plan cannot price (card details unknown, no `card` line)."""
    return pd.DataFrame(
        {
            "Payment": frame["payment_id"],
            "Captured (IST)": [ist(int(v)) for v in frame["created_at"]],
            "Class": frame["method_class"],
            "Plan version": frame["plan_version"],
        }
    )


@dataclass(frozen=True)
class FeeCheck:
    """The fees checked against the plan: overcharges by month and class, and the card
    payments the plan cannot classify."""

    overcharges: pd.DataFrame
    unclassified: pd.DataFrame


def fee_check_tables(dataset: Dataset, plans: tuple[PricingPlan, ...]) -> FeeCheck:
    """The check's tables over `dataset` (a month's read: that month's payments)."""
    return FeeCheck(
        overcharge_summary(fee_check(dataset, plans)), unclassified_cards(dataset, plans)
    )


def pricing_section(plans: tuple[PricingPlan, ...], month: str) -> None:
    """The Pricing tab's tables: the month's payments' fees checked on request (kept while
    the month, the data and the plan versions are the same: a new version makes it stale),
    and the plan versions."""
    check = on_request(
        keys.BOOKS_FEES,
        keys.BOOKS_FEES_CHECK,
        f"Check the fees of {month} against the plan",
        month,
        "fees",
        lambda dataset: fee_check_tables(dataset, plans),
        also=tuple(plan.version for plan in plans),
    )
    pricing_tables(check, plans, month)


def pricing_tables(check: FeeCheck | None, plans: tuple[PricingPlan, ...], month: str) -> None:
    """The Pricing tab's tables: the month's overcharges by payment class and its card
    payments the plan cannot classify (once checked, on request), and the plan versions."""
    if check is not None:
        st.subheader(f"Overcharges in {month} by payment class")
        if check.overcharges.empty:
            st.success(f"Every fee of {month} is within the contracted plan.")
        else:
            st.dataframe(
                overcharges_table(check.overcharges), key=keys.BOOKS_OVERCHARGES, hide_index=True
            )
        lost = check.unclassified
        if len(lost):
            st.warning(
                f"{len(lost):,} card payments of {month} cannot be classified (no `card` line)."
            )
            st.dataframe(unclassified_table(lost), key=keys.BOOKS_UNCLASSIFIED, hide_index=True)
    st.subheader("Plan versions")
    st.dataframe(plans_table(plans), key=keys.BOOKS_PLANS, hide_index=True)


def session_ledger(status: LedgerStatus) -> Ledger | None:
    """None when the stored ledger is current (the page reads it month by month). Otherwise
    says why it is not shown and offers to derive it again (admin: stored for everyone) or
    to compute it for this session only, each behind a button with a progress bar, never on
    a render; returns this session's computed ledger while the data stay as they were, else
    None (the roll-forward waits; the other tabs compute from the raw tables on request, as
    with a current ledger)."""
    if status.current:
        return None
    st.warning(md(f"{status.reason} The stored books are not shown: they may not match the data."))
    key = shell.read(data_key)
    kept = st.session_state.get(keys.BOOKS_LEDGER_SESSION)
    left, right = st.columns(2)
    if auth.can("admin") and left.button(
        "Derive the books again (stored for everyone)",
        key=keys.BOOKS_LEDGER_REBUILD,
        type="primary",
    ):
        bar = st.progress(0.0, "Deriving the books")
        with shell.guarded():
            auth.require("admin", "derive the books again")
            with shell.connection() as conn:
                rebuild_ledger(conn, lambda f, m: bar.progress(min(1.0, f), m))
            st.session_state.pop(keys.BOOKS_LEDGER_SESSION, None)
            shell.flash("success", "The books were derived again from the data.")
            st.rerun()
    if kept is not None and kept[0] == key:
        st.caption(f"Shown: the books as computed for this session at {ist(kept[1])}.")
        ledger: Ledger = kept[2]
        return ledger
    if right.button("Compute them for this session only", key=keys.BOOKS_LEDGER_COMPUTE):
        bar = st.progress(0.0, "Computing the books")
        with shell.connection() as conn:
            derived = derive_ledger(conn, lambda f, m: bar.progress(min(1.0, f), m))
        st.session_state[keys.BOOKS_LEDGER_SESSION] = (key, int(time.time()), derived.ledger)
        st.rerun()
    return None


def rollforward_section(result: MonthRollForward, daily: pd.DataFrame) -> None:
    """The month's figures, whether it ties out, the balance by day, its movements and open
    items, and the entities behind a residual."""
    open_total = sum(amount for _, amount in result.open_items)
    figures = (
        ("Opening", result.opening),
        ("Closing", result.closing),
        ("Open items", open_total),
        ("Residual", result.residual),
    )
    for column, (label, paise) in zip(st.columns(4), figures, strict=True):
        column.metric(label, inr_short(paise), help=inr(paise), border=True)
    if result.residual == 0:
        st.success("The closing balance equals the open items: no unexplained residual.")
    else:
        st.error(f"Unexplained residual of {inr(result.residual)}: see the entities below.")
    st.altair_chart(balance_chart(daily), key=keys.BOOKS_CHART, width="stretch")
    left, right = st.columns(2)
    left.subheader("Movements")
    left.dataframe(lines_table(result.movements), key=keys.BOOKS_MOVEMENTS, hide_index=True)
    right.subheader("Open items at month end")
    right.dataframe(lines_table(result.open_items), key=keys.BOOKS_OPEN_ITEMS, hide_index=True)
    if result.drilldown:
        st.subheader("Where the residual comes from")
        st.dataframe(drilldown_table(result.drilldown), key=keys.BOOKS_DRILLDOWN, hide_index=True)
