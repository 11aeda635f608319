"""Exceptions: the review queue, filtered, sorted and paged in the database."""

import streamlit as st

from core.review.sync import unsynced_warning
from core.views.queue import ALL_STATUSES, queue, queue_csv, queue_options
from ui import auth, keys, shell, shortcuts, widgets
from ui.format import QUEUE_COLUMNS, QUEUE_MORE_COLUMNS, inr, queue_columns, queue_frame

shell.require_frame()
st.title("Exceptions")
unsynced = shell.read_marked(unsynced_warning)  # a run stored, its sync never committed
if unsynced:
    st.warning(unsynced, icon=":material/sync_problem:")
options = shell.read_marked(queue_options)  # cached until the data change (data mark)
flt, sort, size = widgets.queue_filters(options)

# The page widget's key carries the query, so a new filter or sort starts at page 1.
query_sig = widgets.signature(flt, sort, size)
page_key = f"{keys.QUEUE_PAGE}-{query_sig}"
page = shell.read_marked(
    queue, flt, sort=sort, page=int(st.session_state.get(page_key, 1)), page_size=size
)

st.markdown(
    f"**{page.total:,}** exceptions match, exposure **{inr(page.total_paise)}**"
    f" · page {page.page} of {page.pages}"
)
if page.other_statuses:
    hint = st.columns([3, 1])
    hint[0].info(
        f"{page.other_statuses:,} more match in other statuses.", icon=":material/filter_alt:"
    )
    hint[1].button(
        "Show every status",
        key=keys.QUEUE_ALL_STATUSES,
        on_click=shell.set_state,
        args=(keys.QUEUE_STATUSES, list(ALL_STATUSES)),
    )
if not page.items:
    st.info("Nothing matches these filters.")
    st.stop()

toggles = st.columns([1, 1, 4])
bulk = toggles[0].toggle("Select several", key=keys.QUEUE_BULK, help="To assign or escalate")
more = toggles[1].toggle("More columns", key=keys.QUEUE_MORE, help="Class, difference, order")
nonce = st.session_state.get(keys.QUEUE_TABLE_NONCE, 0)
sig = widgets.signature(query_sig, page.page, page.items, bulk, nonce)
shown = queue_frame(page.items)
event = st.dataframe(
    shown,
    hide_index=True,
    width="stretch",
    height=min(35 * (len(page.items) + 1) + 3, 640),
    column_order=QUEUE_COLUMNS + (QUEUE_MORE_COLUMNS if more else ()),
    column_config=queue_columns(more, shown),
    on_select="rerun",
    selection_mode="multi-row" if bulk else ["single-row", "single-cell"],
    key=f"{keys.QUEUE_TABLE}-{sig}",
)
st.pagination(page.pages, key=page_key, max_visible_pages=7)
cells = [] if bulk else getattr(event.selection, "cells", [])  # absent: a row-only state
picked = event.selection.rows + [r for r, _ in cells]
rows = [i for i in picked if i < len(page.items)]  # a click on any cell opens its row
st.session_state[keys.QUEUE_ORDER] = [i.id for i in page.items]  # for "Next exception"
if rows and not bulk:  # a click on a row opens it
    st.session_state[keys.QUEUE_TABLE_NONCE] = nonce + 1  # back here: nothing selected
    st.session_state[keys.SELECTED_EXCEPTION] = page.items[rows[0]].id
    st.switch_page("pages/investigation.py")
selected = [page.items[i] for i in rows] if bulk else []

open_col, assign_col, escalate_col, export_col = st.columns([3, 3, 3, 2])
with open_col:
    labels = {i.id: f"#{i.id} · {i.reason_code} · {i.entity_id}" for i in page.items}
    default = selected[0].id if len(selected) == 1 else page.items[0].id
    choice = st.selectbox(
        "Open an exception",
        list(labels),
        index=list(labels).index(default),
        format_func=labels.get,
        key=keys.QUEUE_OPEN_CHOICE,
    )
    if st.button(
        "Investigate",
        key=keys.QUEUE_OPEN,
        type="primary",
        icon=":material/search:",
        shortcut=shortcuts.OPEN,
        help=shortcuts.QUEUE_HELP,
    ):
        st.session_state[keys.SELECTED_EXCEPTION] = int(choice)
        st.switch_page("pages/investigation.py")

versions = {i.id: i.version for i in selected}
if auth.can("review"):
    with assign_col:
        people = shell.people()
        assignee = st.selectbox(
            "Assign selected to",
            people,
            index=None,
            key=keys.QUEUE_ASSIGN_TO,
            placeholder=shell.assignee_placeholder(people),
        )
        shell.nobody_to_assign(people)
        if st.button(
            f"Assign {len(selected)} selected",
            key=keys.QUEUE_ASSIGN,
            disabled=not selected or not assignee,
        ):
            shell.bulk_decision(
                "bulk_assign", versions, f"Assigned {{n}} to {assignee}.", assignee=str(assignee)
            )
    with escalate_col:
        note = st.text_input("Escalation note (required)", key=keys.QUEUE_ESCALATE_NOTE)
        if st.button(
            f"Escalate {len(selected)} selected",
            key=keys.QUEUE_ESCALATE,
            disabled=not selected or not note.strip(),
        ):
            shell.bulk_decision("bulk_escalate", versions, "Escalated {n}.", note=note.strip())
    if not bulk:
        assign_col.caption("Click a row to open it; turn on Select several to assign or escalate.")
else:
    assign_col.caption("Assigning and escalating need the reviewer role.")
with export_col:
    st.download_button(
        f"CSV ({page.total:,})",
        data=lambda: shell.read(queue_csv, flt, sort=sort),
        file_name="exceptions.csv",
        mime="text/csv",
        key=keys.QUEUE_EXPORT,
        on_click="ignore",
        icon=":material/download:",
    )
