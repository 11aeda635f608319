"""Books: the Razorpay receivable rolled forward and tied out, its journal entries, and the
fees checked against the contracted pricing plan (docs/books.md)."""

import datetime as dt

import streamlit as st

from core.books.close import closed_months
from core.books.ledger import fallback_months, ledger_status, stored_ledger, stored_months
from core.books.report import build_report, bundle, pdf
from core.books.store import pricing_plans, save_pricing_plan
from core.calendar import IST
from ui import auth, books, keys, shell

shell.require_frame()
st.title("Books")
# The ledger is derived when a run completes (docs/books.md "The stored ledger"): a render
# reads the month's results, never the raw tables; a stale one is never shown silently.
status = shell.read(ledger_status)
source = books.session_ledger(status)
if status.current:
    months = shell.read(stored_months)
else:
    months = source.months() if source is not None else shell.read(fallback_months)
if not months:
    st.info("No data yet. Import data and run a reconciliation on the Data page.")
    st.stop()

month = st.selectbox("Month (IST)", months, key=keys.BOOKS_MONTH)
ledger = shell.read(stored_ledger, month) if status.current else source
# A closed month shows what was in the books at its close unless today's data are asked for
# (docs/books.md section 4): the roll-forward, the balance by day and the journal alike.
closes = shell.read(closed_months)
basis = books.basis_choice(month, closes)
# Lazy tabs (on_change="rerun"): only the open tab's code runs. The close report, the
# journal, the fee check and the GST bases need the raw tables: each is built when asked
# for, never on render, and kept for the session (docs/books.md; books.on_request).
roll_tab, journal_tab, pricing_tab, gst_tab = st.tabs(
    ["Roll-forward", "Journal", "Pricing", "GST on fees"], key=keys.BOOKS_TAB, on_change="rerun"
)

if roll_tab.open:
    with roll_tab:
        st.caption(
            "What Razorpay owes: opening + captured − refunds − fees − disputes ± adjustments − "
            "transfers − settlements = closing, tied out to the open items."
        )
        if ledger is None:
            st.info("The roll-forward is shown once the books are derived (see above).")
            st.stop()
        events = ledger.events_for(month)
        if month not in closes and auth.can("admin"):
            books.close_control(month, events, ledger.months(), closes)
        result, daily = books.month_figures(month, basis, events, closes, ledger.daily())
        books.rollforward_section(result, daily)
        books.write_offs_section(month)
        if st.button("Prepare the close report (CSV bundle and PDF)", key=keys.BOOKS_REPORT_BUILD):
            report = shell.read(build_report, month, ledger, merchant_state=books.gst_state())
            st.session_state[keys.BOOKS_REPORT] = (month, bundle(report), pdf(report))
        ready = st.session_state.get(keys.BOOKS_REPORT)
        if ready is not None and ready[0] == month:
            books.report_downloads(month, ready[1], ready[2])

if journal_tab.open:
    with journal_tab:
        books.journal_section(month, basis, closes, ledger)

if pricing_tab.open:
    with pricing_tab:
        books.today_only_note(month, closes, "the fee check")
        plans = shell.read(pricing_plans)
        if plans:
            books.pricing_section(plans, month)
        else:
            st.info("No pricing plan yet: fees are checked only once one is entered.")
        if auth.can("admin"):
            st.subheader("New plan version")
            edited = st.data_editor(
                books.editor_frame(),
                key=keys.BOOKS_PLAN_EDITOR,
                hide_index=True,
                disabled=["Class"],
            )
            start = st.date_input("In force from (IST)", key=keys.BOOKS_PLAN_FROM)
            if st.button("Save plan version", key=keys.BOOKS_PLAN_SAVE, type="primary"):
                with shell.guarded():
                    auth.require("admin", "save a pricing plan")
                    rules = books.rules_from_editor(edited)
                    moment = dt.datetime.combine(start, dt.time(0, 0), tzinfo=IST)
                    with shell.connection() as conn:
                        version = save_pricing_plan(
                            conn,
                            effective_from=int(moment.timestamp()),
                            rules=rules,
                            actor=auth.actor_name(),
                            request_id=shell.request_id("books-plan"),
                        )
                    shell.done("books-plan")
                    shell.flash(
                        "success", f"Pricing plan version {version} saved. Reconcile to use it."
                    )
                    st.rerun()

if gst_tab.open:
    with gst_tab:
        books.today_only_note(month, closes, "the GST on fees")
        books.gst_section(month)
