"""Settlement: one batch, decomposed; its arithmetic checked; its bank line(s)."""

import streamlit as st

from core.views.settlement import settlement_choices, settlement_view
from ui import keys, shell, widgets
from ui.format import QUEUE_COLUMNS, inr, ist, md, queue_columns, queue_frame

shell.require_frame()
st.title("Settlement")
left, right = st.columns([1, 3])
search = left.text_input(
    "Find a settlement",
    key=keys.SETTLEMENT_SEARCH,
    placeholder="setl_… or UTR, any part",
    persist_state="session",
    on_change=shell.forget,
    args=(keys.SELECTED_SETTLEMENT, keys.SETTLEMENT_CHOICE),
)
choices = shell.read_marked(settlement_choices, search)  # open exposure per settlement
preselected = st.session_state.get(keys.SELECTED_SETTLEMENT)
ids = [c["id"] for c in choices]
if preselected and preselected not in ids and not search.strip():
    ids.insert(0, preselected)  # chosen on another page, outside the first choices
if not ids:
    st.info("No settlement matches." if search else "No settlements in the database yet.")
    st.stop()
labels = {
    c["id"]: f"{c['id']} · {inr(c['amount'])} · {c['status']}"
    + (f" · open exposure {inr(c['exposure'])}" if c["exposure"] else "")
    for c in choices
}
shell.agree(keys.SETTLEMENT_CHOICE, preselected if preselected in ids else ids[0])
chosen = right.selectbox(
    "Settlement",
    ids,
    format_func=lambda i: labels.get(i, i),
    key=keys.SETTLEMENT_CHOICE,
    on_change=shell.follow,
    args=(keys.SETTLEMENT_CHOICE, keys.SELECTED_SETTLEMENT),
)
st.session_state[keys.SELECTED_SETTLEMENT] = chosen
view = shell.read(settlement_view, chosen)
if view is None:
    shell.forget(keys.SELECTED_SETTLEMENT, keys.SETTLEMENT_CHOICE)
    st.error(f"Settlement {md(chosen)} is not in the database.")
    st.stop()

s = view.settlement
widgets.facts(
    [
        ("Amount", inr(s["amount"])),
        ("Status", s["status"]),
        ("UTR", s["utr"] or "—"),
        ("Created", ist(s["created_at"])),
    ]
)
if view.outcome:
    code = view.outcome["reason_code"] or "no exception"
    st.caption(f"Engine outcome: **{md(view.outcome['status'])}** ({md(code)})")

st.subheader("Decomposition")
st.dataframe(
    [
        {
            "Line": line.label,
            "Rows": "" if line.count is None else f"{line.count:,}",
            "Amount": inr(line.paise),
        }
        for line in view.lines
    ],
    hide_index=True,
    width="stretch",
    key=keys.SETTLEMENT_LINES,
)
st.caption(f"GST inside the fees: {inr(view.gst_paise)}")

st.subheader("Arithmetic checks")
for check in view.checks:
    if check.not_applicable:
        st.markdown(f"– {check.name}: not applicable. {md(check.not_applicable)}")
    elif check.expected is None:
        st.markdown(f"– {check.name}: computed {inr(check.computed)}; not stated by Razorpay")
    elif check.note:
        st.markdown(f":red[✗] {check.name}: {inr(check.expected)} {md(check.note)}")
    elif check.ok:
        st.markdown(f":green[✓] {check.name}: {inr(check.computed)}")
    else:
        st.markdown(
            f":red[✗] {check.name}: {inr(check.expected)} against "
            f"{inr(check.computed)} (difference {inr(check.difference)})"
        )

details = st.toggle(
    "Show internal keys", key=keys.SETTLEMENT_DETAILS, help="row_key, line_no, file, import"
)
st.subheader("Bank line(s)")
widgets.records_table(
    view.bank_lines, keys.SETTLEMENT_BANK, "No bank line carries this UTR.", details=details
)

st.subheader(f"Recon rows ({view.row_count:,})")
if view.row_count > len(view.rows):
    st.caption(f"The first {len(view.rows):,} rows are shown.")
widgets.records_table(
    view.rows, keys.SETTLEMENT_ROWS, "No recon rows name this settlement.", details=details
)

if view.open_exceptions:
    st.subheader("Open exceptions on this settlement")
    shown = queue_frame(view.open_exceptions)
    st.dataframe(
        shown,
        hide_index=True,
        column_order=QUEUE_COLUMNS,
        column_config=queue_columns(frame=shown),
        key=keys.SETTLEMENT_QUEUE,
    )
    ids_open = [i.id for i in view.open_exceptions]
    pick = st.selectbox("Exception", ids_open, key=keys.SETTLEMENT_OPEN_EXCEPTION)
    if st.button("Investigate", key=keys.SETTLEMENT_INVESTIGATE, icon=":material/search:"):
        st.session_state[keys.SELECTED_EXCEPTION] = int(pick)
        st.switch_page("pages/investigation.py")
