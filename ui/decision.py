"""The Investigation page's Decision box: every action where the reviewer is looking.

Resolve, escalate, reopen, assign, and "Next exception"; the outcome of each is shown
right under the buttons (keys.DECISION_FLASH), not above the page title.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.review import pending_for
from ui import auth, keys, shell, shortcuts
from ui.format import inr, md

RESOLUTIONS = {
    "explained": "Explained",
    "corrected_at_source": "Corrected at source",
    "written_off": "Written off",
}
CLOSED = ("RESOLVED", "AUTO_CLEARED")


def box(item: dict[str, Any]) -> None:
    exception_id, version, status = int(item["id"]), int(item["version"]), item["status"]
    st.markdown("#### Decision")
    pending = shell.read(pending_for, exception_id)
    if pending is not None:
        maker = md(pending.maker)
        mine = pending.maker == auth.actor_name()
        st.info(
            f"Write-off of {inr(pending.amount)} by {maker} awaits approval "
            f"(#{pending.id}): an approver other than {maker} decides on the "
            "Approvals page" + (", or you withdraw it (with a note saying why)." if mine else ".")
        )
        if mine:
            st.button(
                "Withdraw my write-off request",
                key=keys.DECISION_WITHDRAW,
                on_click=shell.withdraw_write_off,
                args=(pending.id,),
            )
    if not auth.can("review"):
        st.caption("Deciding needs the reviewer role.")
    else:
        st.text_area("Note (required)", key=keys.DECISION_NOTE, height=90)
        kind = st.radio(
            "Resolution",
            list(RESOLUTIONS),
            format_func=RESOLUTIONS.get,
            horizontal=True,
            key=keys.DECISION_RESOLUTION,
        )
        if kind == "written_off":
            st.text_input(
                "Amount written off (₹)",
                key=keys.DECISION_AMOUNT,
                placeholder="₹",
                help="In rupees: 25,000.50, 25k, 1.5 L or 2 Cr",
            )
            st.caption(
                f"A write-off closes the whole exposure ({inr(item.get('exposure_amount'))}) "
                "and may not be larger; when it closes more than "
                f"{inr(shell.four_eyes())} a second person (approver) must approve."
            )
        marked = bool(item.get("not_found_run_id")) and status not in CLOSED
        # Side by side at their own widths (the buttons also show their keys), wrapping if
        # the column is narrow, so no label is cut short.
        buttons = st.container(horizontal=True, gap="small")
        buttons.button(
            "Resolve",
            key=keys.DECISION_RESOLVE,
            type="primary",
            disabled=status in CLOSED,
            on_click=shell.decide,
            args=("resolve", exception_id, version),
            shortcut=shortcuts.RESOLVE,
        )
        buttons.button(
            "Escalate",
            key=keys.DECISION_ESCALATE,
            disabled=status in (*CLOSED, "ESCALATED"),
            on_click=shell.decide,
            args=("escalate", exception_id, version),
            shortcut=shortcuts.ESCALATE,
        )
        buttons.button(
            "Reopen",
            key=keys.DECISION_REOPEN,
            disabled=not (marked or status in (*CLOSED, "ESCALATED")),
            on_click=shell.decide,
            args=("reopen", exception_id, version),
            help="Back to OPEN, unassigned (from resolved, escalated, auto-cleared, or "
            "needs review: no longer found)",
        )
        assign_col, assign_button = st.columns([3, 1], vertical_alignment="bottom")
        people = shell.people()
        assign_col.selectbox(
            "Assign to",
            people,
            index=None,
            key=keys.DECISION_ASSIGNEE,
            placeholder=shell.assignee_placeholder(people),
        )
        assign_button.button(
            "Assign",
            key=keys.DECISION_ASSIGN,
            disabled=status in CLOSED,
            on_click=shell.assign_one,
            args=(exception_id, version),
        )
        shell.nobody_to_assign(people)
        shortcuts.note_keys()
    shell.show_flash(keys.DECISION_FLASH)
    previous_col, next_col = st.columns(2)
    previous_col.button(
        "Previous",
        key=keys.DECISION_PREVIOUS,
        icon=":material/skip_previous:",
        on_click=previous_exception,
        args=(exception_id,),
        shortcut=shortcuts.PREVIOUS,
    )
    next_col.button(
        "Next exception",
        key=keys.DECISION_NEXT,
        icon=":material/skip_next:",
        on_click=shell.next_exception,
        args=(exception_id,),
        shortcut=shortcuts.NEXT,
    )
    st.caption(shortcuts.INVESTIGATION_HELP if auth.can("review") else shortcuts.MOVE_HELP)


def previous_exception(current: int) -> None:
    """on_click of Previous: the row before this one on the queue page last shown."""
    order = [int(i) for i in st.session_state.get(keys.QUEUE_ORDER) or []]
    earlier = order[: order.index(current)] if current in order else []
    if earlier:
        st.session_state[keys.SELECTED_EXCEPTION] = earlier[-1]
    else:
        shell.flash_at(
            keys.DECISION_FLASH, "warning", "No previous exception on the queue page last shown."
        )
