"""Books: the Razorpay receivable rolled forward and tied out to its open items."""

import json

import streamlit as st

from core.books import daily_balances, month_rollforward
from core.books.store import months_of, stored_events
from ui import books, keys, shell
from ui.format import inr, inr_short

shell.require_frame()
st.title("Books")
st.caption(
    "What Razorpay owes: opening + captured − refunds − fees − disputes ± adjustments − "
    "transfers − settlements = closing, tied out to the open items (docs/books.md)."
)
events = shell.read(stored_events)
months = months_of(events)
if not months:
    st.info("No data yet. Import data and run a reconciliation on the Data page.")
    st.stop()

month = st.selectbox("Month (IST)", months, key=keys.BOOKS_MONTH)
result = month_rollforward(events, month)
cards = st.columns(4)
open_total = sum(amount for _, amount in result.open_items)
for column, (label, paise) in zip(
    cards,
    (
        ("Opening", result.opening),
        ("Closing", result.closing),
        ("Open items", open_total),
        ("Residual", result.residual),
    ),
    strict=True,
):
    column.metric(label, inr_short(paise), help=inr(paise), border=True)
if result.residual == 0:
    st.success("The closing balance equals the open items: no unexplained residual.")
else:
    st.error(f"Unexplained residual of {inr(result.residual)}: see the entities below.")

days = daily_balances(events)
st.altair_chart(books.balance_chart(days), key=keys.BOOKS_CHART, width="stretch")

left, right = st.columns(2)
left.subheader("Movements")
left.dataframe(books.lines_table(result.movements), key=keys.BOOKS_MOVEMENTS, hide_index=True)
right.subheader("Open items at month end")
right.dataframe(books.lines_table(result.open_items), key=keys.BOOKS_OPEN_ITEMS, hide_index=True)
if result.drilldown:
    st.subheader("Where the residual comes from")
    st.dataframe(books.drilldown_table(result.drilldown), key=keys.BOOKS_DRILLDOWN, hide_index=True)
st.download_button(
    "Download the roll-forward (JSON)",
    json.dumps(result.as_dict(), indent=2),
    file_name=f"rollforward-{month}.json",
    mime="application/json",
    key=keys.BOOKS_EXPORT,
)
