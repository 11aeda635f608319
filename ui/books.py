"""The Books page's tables and chart (core.books): labels, rupees, the balance over time."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Generic, TypeVar

import altair as alt
import pandas as pd
import streamlit as st

from core.books.close import (
    BASES,
    CLOSED_BASIS,
    CURRENT_BASIS,
    PRIOR_PERIOD,
    ClosedMonth,
    MonthJournal,
    WriteOff,
    books_month,
    books_view,
    change_details,
    close_month,
    kept_daily,
    month_days,
    month_journal,
    since_close,
    unposted_write_offs,
)
from core.books.gst import (
    SUPPLIER_STATE,
    GstBases,
    Invoice,
    apply_invoice,
    gst_bases,
    parse_invoice_bytes,
)
from core.books.journal import (
    Ledgers,
    Voucher,
    journal_csv,
    journal_sources,
    sources_csv,
    tally_xml,
)
from core.books.ledger import Ledger, LedgerStatus, data_key, derive_ledger, rebuild_ledger
from core.books.posting import VoucherChange
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
from core.views.queue import month_open_exceptions
from ui import auth, keys, shell
from ui.charts import INDIAN_SHORT
from ui.format import inr, inr_short, ist, md, table_height

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
    "pending_transfers": "Transfers not yet settled",
    "pending_dispute_deductions": "Dispute deductions not yet settled",
    "unsettled_other_rows": "Other unsettled rows",
    "instant_advances": "Instant settlements not yet drawn",
    "flagged_differences": "Differences under review (exceptions)",
    "opening": "Opening",
    "closing": "Closing",
    "residual": "Residual (unexplained)",
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
    render (`when_asked`)."""

    def make() -> T:
        with st.spinner(f"Reading the rows of {month}: this takes a while on a large database."):
            dataset = shell.read(raw.read_month_dataset, month, product)
            built = build(dataset)
            del dataset
        return built

    return when_asked(kept, button, label, (month, also), make)


def when_asked(
    kept: str, button: str, label: str, parts: Hashable, make: Callable[[], T]
) -> T | None:
    """A result computed only when asked for, never on a render: while the session keeps one
    (under `kept`) for these `parts` (the month, and what else it was built for: the plan
    versions, a basis) and the data as they are, it is returned with no read; else the
    button `label` is offered, and pressing it calls `make` once, keeps and returns the
    result. One kept per `kept` key; one for data that have since changed is dropped (it
    can never be shown again)."""
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
    built = make()
    st.session_state[kept] = Kept(parts, key, built)
    return built


@dataclass(frozen=True)
class JournalFiles:
    """A month's journal, ready to download: its voucher count, CSV and Tally XML (UTF-8),
    the source rows too many for a CSV cell (`sources`, UTF-8, `listed` of them),
    and what the page says of it (core.books.close.MonthJournal): its basis in words, the
    vouchers that differ from the journal kept at the close (with the import of each row
    since) and the prior-period adjustment vouchers it opens with."""

    vouchers: int
    csv: bytes
    xml: bytes
    sources: bytes = b""
    listed: int = 0
    notes: tuple[str, ...] = ()
    changes: tuple[VoucherChange, ...] = ()
    arrivals: tuple[tuple[str, int, int], ...] = ()
    adjustments: tuple[Voucher, ...] = ()


def journal_files(journal: MonthJournal) -> JournalFiles:
    vouchers = list(journal.vouchers)
    listed = journal_sources(vouchers)
    return JournalFiles(
        len(vouchers),
        journal_csv(vouchers).encode("utf-8"),
        tally_xml(vouchers).encode("utf-8"),
        sources_csv(listed).encode("utf-8"),
        len(listed),
        tuple(journal.basis_lines()),
        journal.changes,
        journal.arrivals,
        journal.adjustments(),
    )


def journal_section(
    month: str, basis: str, closes: Mapping[str, ClosedMonth], ledger: Ledger | None
) -> None:
    """The Journal tab: the month's vouchers on `basis` and both downloads, built on request
    (a closed month's as kept at the close reads no raw rows); for a month that opens from
    a closed one, the roll-forward's prior-period adjustment beside its adjustment vouchers
    (when the books are shown: `ledger`)."""
    closed = basis == CLOSED_BASIS
    files = when_asked(
        keys.BOOKS_JOURNAL,
        keys.BOOKS_JOURNAL_BUILD,
        f"Prepare the journal for {month}" + (" as closed" if closed else ""),
        (month, (basis, tuple(closes))),
        lambda: _journal_files(month, basis),
    )
    if files is None:
        return
    journal_downloads(month, files)
    shown = None if ledger is None else books_month(ledger.events_for(month), month, dict(closes))
    if shown is not None and shown.opens_from_closed is not None:
        moved = dict(shown.rollforward.movements)
        posted = sum(
            x.debit - x.credit
            for v in files.adjustments
            for x in v.lines
            if x.ledger == Ledgers().receivable
        )
        st.caption(
            f"The roll-forward's prior-period adjustment for {month} is"
            f" {inr(moved.get(PRIOR_PERIOD, 0))}; the adjustment vouchers move Razorpay"
            f" receivable by {inr(posted)}. Both carry the same late data: the roll-forward"
            " takes a payment's fee (and refunds, disputes, adjustments, transfers) when it"
            " happens, the journal when the settlement that pays it is posted."
        )


def _journal_files(month: str, basis: str) -> JournalFiles:
    with st.spinner(f"Reading the rows of {month}: this takes a while on a large database."):
        return journal_files(shell.read(month_journal, month, basis))


def journal_downloads(month: str, files: JournalFiles) -> None:
    """The month's journal as CSV and as Tally vouchers, side by side, after its basis and
    what differs from the journal kept at the close, or the adjustments it opens with."""
    st.caption(
        f"{files.vouchers:,} balanced vouchers: the month's captured payments and one per "
        "settlement; every line names the recon rows it comes from."
    )
    journal_notes(files)
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
    if files.listed:
        st.caption(
            "Some lines name more source rows than a spreadsheet cell holds: the CSV counts"
            f" them there, and the journal sources file lists all {files.listed:,}, one per row."
        )
        st.download_button(
            "Source rows of those lines (CSV)",
            files.sources,
            file_name=f"journal-sources-{month}.csv",
            mime="text/csv",
            key=keys.BOOKS_JOURNAL_SOURCES,
        )


def journal_notes(files: JournalFiles) -> None:
    """The journal's basis in words; the vouchers that differ from the journal kept at the
    close, each with the lines that differ and the rows new or changed since (and the
    import that stored each), as `journal --basis current` words them; the
    prior-period adjustment vouchers it opens with."""
    for note in files.notes:
        st.caption(note)
    if files.changes:
        worded = [change_details(c, files.arrivals) for c in files.changes]
        st.subheader("Vouchers that differ from the journal kept at the close")
        st.dataframe(
            pd.DataFrame(
                {
                    "Voucher": [c.number for c in files.changes],
                    "Change": [c.status for c in files.changes],
                    "Debits as closed": [inr(c.closed_debits) for c in files.changes],
                    "Debits today": [inr(c.today_debits) for c in files.changes],
                    "Lines that differ": [details[0] for details in worded],
                    "Rows new or changed since the close": [details[1] for details in worded],
                    "Rows gone": [len(c.removed) for c in files.changes],
                }
            ),
            key=keys.BOOKS_JOURNAL_CHANGES,
            hide_index=True,
        )
    if files.adjustments:
        st.subheader("Prior-period adjustment vouchers")
        st.dataframe(
            pd.DataFrame(
                {
                    "Voucher": [v.number for v in files.adjustments],
                    "Date": [v.date.isoformat() for v in files.adjustments],
                    "Adjusts": [v.reference for v in files.adjustments],
                    "Lines": [
                        "; ".join(
                            f"{x.ledger} {'Dr' if x.debit else 'Cr'} {inr(x.debit or x.credit)}"
                            for x in v.lines
                        )
                        for v in files.adjustments
                    ],
                    "Narration": [v.narration for v in files.adjustments],
                }
            ),
            key=keys.BOOKS_JOURNAL_ADJUSTMENTS,
            hide_index=True,
        )


BASIS_LABEL_TODAY = "Today's data"


def basis_choice(month: str, closes: Mapping[str, ClosedMonth]) -> str:
    """A closed month's basis, chosen (as kept at the close by default, or today's data);
    an open month has only today's."""
    closed = closes.get(month)
    if closed is None:
        return CURRENT_BASIS
    labels = {
        CLOSED_BASIS: f"As closed ({md(closed.label())})",
        CURRENT_BASIS: f"{BASIS_LABEL_TODAY} (what arrived after the close included)",
    }
    chosen = st.radio(
        f"{month} is closed. Show",
        BASES,
        format_func=labels.__getitem__,
        key=keys.BOOKS_BASIS,
        horizontal=True,
    )
    return str(chosen)


def today_only_note(month: str, closes: Mapping[str, ClosedMonth], what: str) -> None:
    """Under a closed month's basis choice, a tab a close does not keep (the fee check, the
    GST bases) says it is built from today's data whichever basis is chosen (the close
    report labels these files the same way, docs/books.md section 4)."""
    if month in closes:
        st.info(
            f"{month} is closed, but {what} is built from today's data, including what arrived"
            " after the close: a close keeps the roll-forward, the balance by day and the"
            " journal, not this."
        )


def month_figures(
    month: str,
    basis: str,
    events: pd.DataFrame,
    closes: Mapping[str, ClosedMonth],
    daily: pd.DataFrame,
) -> tuple[MonthRollForward, pd.DataFrame]:
    """The roll-forward and balance by day the Roll-forward tab shows for `month` on
    `basis`, saying which: an open month's books and every day (`daily`); a closed month's
    snapshot and the balance by day its close kept (today's, said so, when it kept none);
    or today's figures for a closed month, its days only, with the lines that moved since
    the close."""
    closed = closes.get(month)
    if closed is None:
        return books_view(events, month, dict(closes)), daily
    if basis == CLOSED_BASIS:
        st.info(f"{month} is closed ({md(closed.closed_by)}): the figures are as closed.")
        others = {m: c for m, c in closes.items() if m != month}
        moved_by = books_view(events, month, others).closing - closed.snapshot.closing
        if moved_by:
            st.warning(
                f"Today's data move {month}'s closing by {inr(moved_by)} (data that arrived"
                f" or changed after the close): choose **{BASIS_LABEL_TODAY}** above to see"
                " which lines moved.",
                icon=":material/difference:",
            )
        kept = shell.read(kept_daily, month)
        if kept is not None:
            st.caption(f"The balance by day of {month} as kept at the close.")
            return closed.snapshot, kept
        st.caption(
            f"The close of {month} kept no balance by day (closed before migration 0115): the"
            " chart is today's data, which include what arrived after the close."
        )
        return closed.snapshot, month_days(daily, month)
    others = {m: c for m, c in closes.items() if m != month}
    st.warning(
        f"{month} is {md(closed.label())}. Shown: today's data, including what arrived after the"
        f" close. The books keep {month} as closed and carry the difference as the next"
        " month's prior-period adjustments."
    )
    moved = [r for r in since_close(events, month, dict(closes)) if r[4]]
    if moved:
        st.subheader("Since the close")
        st.dataframe(
            pd.DataFrame(
                {
                    "Line": [LABELS.get(r[1], r[1]) for r in moved],
                    "As closed": [inr(r[2]) for r in moved],
                    "Today": [inr(r[3]) for r in moved],
                    "Difference": [inr(r[4]) for r in moved],
                }
            ),
            key=keys.BOOKS_SINCE_CLOSE,
            hide_index=True,
        )
    else:
        st.success("Today's data say what was closed: nothing changed since the close.")
    return books_view(events, month, others), month_days(daily, month)


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


def gst_state() -> str:
    """The merchant's GST state as the GST tab holds it (Razorpay's own until changed): the
    close report splits its input tax credit by it too."""
    # Kept under a key of its own: a widget's key goes when its tab is not drawn.
    typed = str(st.session_state.get(keys.BOOKS_GST_STATE_KEPT) or "").strip()
    return typed or SUPPLIER_STATE


def gst_figures(bases: GstBases | None, month: str) -> None:
    """GST on fees: the two bases and what lies between them, Razorpay's invoice (typed in
    or uploaded as CSV) explained as timing or a real difference, and the ITC split. The
    invoice is applied on every render to the month's `bases` (computed on request, kept);
    with none yet, only the invoice's fields are shown."""
    left, mid, right = st.columns(3)
    state = left.text_input("Your GST state", value=gst_state(), key=keys.BOOKS_GST_STATE)
    st.session_state[keys.BOOKS_GST_STATE_KEPT] = state
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
            "Payments settled by another entity (a bank): never in Razorpay's settlements",
            t.settled_elsewhere_fees,
            t.settled_elsewhere_gst,
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
        if t.invoice_rounding_gst:
            rows.append(("… of which rounding", 0, t.invoice_rounding_gst))
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
        rounding = (
            f" Its GST is 18% of its total; the GST charged item by item adds to"
            f" {inr(t.invoice.gst - t.invoice_rounding_gst)}: {inr(t.invoice_rounding_gst)} of"
            " rounding, not a difference."
            if t.invoice_rounding_gst
            else ""
        )
        if t.invoice_basis == "payment":
            st.success("The invoice ties out to the fees charged by payment." + rounding)
        elif t.invoice_basis == "settlement":
            st.info(
                "The invoice equals the fees by settlement: its difference from the payment "
                f"basis, {inr(t.invoice_timing_fees)}, is all timing." + rounding
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
    movements, open_items = lines_table(result.movements), lines_table(result.open_items)
    left.dataframe(
        movements,
        key=keys.BOOKS_MOVEMENTS,
        hide_index=True,
        height=table_height(len(movements)),  # every line: eleven with a prior period
    )
    right.subheader("Open items at month end")
    right.dataframe(
        open_items,
        key=keys.BOOKS_OPEN_ITEMS,
        hide_index=True,
        height=table_height(len(open_items)),
    )
    if result.drilldown:
        st.subheader("Where the residual comes from")
        st.dataframe(drilldown_table(result.drilldown), key=keys.BOOKS_DRILLDOWN, hide_index=True)


def write_offs_section(month: str) -> None:
    """The review queue's final write-offs decided by the end of `month`, named as the
    roll-forward command and the close report name them: the Books do not post them, so
    their money is still in the open items (docs/books.md, *Write-offs in the review
    queue*). Nothing when there is none."""
    found = shell.read_marked(unposted_write_offs, month)
    if not found:
        return
    many = len(found) != 1
    st.warning(
        f"{len(found)} write-off{'s' if many else ''} made final in the review queue by the"
        f" end of {month}, {inr(sum(w.amount for w in found))} in all,"
        f" {'are' if many else 'is'} not posted in these books: the money is still in the"
        " open items above. Post each by hand: debit a bad-debts ledger, credit Razorpay"
        " receivable, dated its decision.",
        icon=":material/edit_note:",
    )
    st.dataframe(write_offs_table(found), key=keys.BOOKS_WRITE_OFFS, hide_index=True)


def write_offs_table(found: tuple[WriteOff, ...]) -> pd.DataFrame:
    """One row per write-off: what, how much, when (IST) and by whom it became final."""
    return pd.DataFrame(
        {
            "Exception": [f"#{w.exception_id}" for w in found],
            "Entity": [w.entity_id for w in found],
            "Reason": [w.reason_code for w in found],
            "Written off": [inr(w.amount) for w in found],
            "Decided": [ist(w.decided_at) for w in found],
            "Decided by": [w.decided_by for w in found],
            "Approval": [
                "not needed" if w.approval_id is None else f"#{w.approval_id}" for w in found
            ],
        }
    )


def close_control(
    month: str,
    events: pd.DataFrame,
    months: Sequence[str] = (),
    closes: Mapping[str, ClosedMonth] | None = None,
) -> None:
    """An admin's close of an open month, in two steps: the first says what closing means
    and names the month's open exceptions and the earlier months still open (of `months`,
    those not in `closes`); the second closes it (once: the request id makes a retry or a
    double click the same close)."""
    if st.session_state.get(keys.BOOKS_CLOSE_ASK) != month:
        st.button(
            "Close this month…",
            key=keys.BOOKS_CLOSE,
            on_click=shell.set_state,
            args=(keys.BOOKS_CLOSE_ASK, month),
        )
        return
    count, exposure = shell.read(month_open_exceptions, month)
    with st.container(border=True):
        st.markdown(f"**Close {month}?**")
        st.markdown(
            f"Closing keeps {month}'s roll-forward, balance by day and journal as today's data"
            " give them, for good: a close cannot be undone. Data that arrive for it later"
            f" leave {month} as closed; the next open month carries the difference as a"
            " prior-period adjustment."
        )
        if count:
            st.warning(
                f"{count:,} exception{'s' if count != 1 else ''} on {month}'s payments,"
                f" refunds and settlements {'are' if count != 1 else 'is'} still open,"
                f" exposure {inr(exposure)}: the close keeps the figures with them open.",
                icon=":material/warning:",
            )
        else:
            st.caption(f"No exception on {month}'s entities is open.")
        earlier = sorted(m for m in months if m < month and m not in (closes or {}))
        if earlier:  # a walkthrough closed June with April and May open, no word said
            st.warning(
                f"Earlier months are still open: {', '.join(earlier)}. Months are closed"
                f" oldest first; closing {month} now keeps its figures, and what later"
                " changes in them reaches the books as the next open month's prior-period"
                " adjustments.",
                icon=":material/event_busy:",
            )
        confirm, cancel = st.columns([1, 1])
        if confirm.button(f"Close {month}", key=keys.BOOKS_CLOSE_CONFIRM, type="primary"):
            with shell.guarded():
                auth.require("admin", "close a month")
                with shell.connection() as conn:
                    close_month(
                        conn,
                        events,
                        month,
                        actor=auth.actor_name(),
                        request_id=shell.request_id("close"),
                    )
                shell.done("close")
                st.session_state.pop(keys.BOOKS_REPORT, None)
                st.session_state.pop(keys.BOOKS_CLOSE_ASK, None)
                shell.flash("success", f"{month} closed.")
                st.rerun()
        cancel.button(
            "Cancel",
            key=keys.BOOKS_CLOSE_CANCEL,
            on_click=shell.forget,
            args=(keys.BOOKS_CLOSE_ASK,),
        )
