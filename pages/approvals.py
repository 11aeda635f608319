"""Approvals: write-offs above the four-eyes threshold, waiting for a second person."""

import streamlit as st

from core import review
from ui import auth, keys, shell, widgets
from ui.format import inr, ist

shell.require_frame()
st.title("Approvals")
shell.need("approve", "Approving write-offs")
st.caption(
    f"A write-off that closes more than {inr(shell.four_eyes())} (the exception's exposure, "
    "or the amount written off if larger) is resolved only when an approver other than the "
    "person who asked for it approves it. Approving closes the whole exposure."
)
pending = shell.read(review.list_approvals)
widgets.records_table(
    [
        {
            "Approval": a.id,
            "Exception": a.exception_id,
            "Write-off": inr(a.amount),
            "Exposure closed": inr(a.exposure_amount or 0),
            "Requested by": a.maker,
            "Asked": ist(a.created_at),
            "Note": a.note,
        }
        for a in pending
    ],
    keys.APPROVALS_TABLE,
    "Nothing awaits approval.",
)
if pending:
    labels = {
        a.id: f"#{a.id} · exception {a.exception_id} · {inr(a.amount)} of "
        f"{inr(a.exposure_amount or 0)} exposure"
        for a in pending
    }
    chosen = st.selectbox(
        "Write-off", list(labels), format_func=labels.get, key=keys.APPROVAL_CHOICE
    )
    mine = next(a for a in pending if a.id == chosen).maker == auth.actor_name()
    if mine:
        st.warning("You asked for this write-off: another approver must decide it.")
    st.text_input("Note (required to reject)", key=keys.APPROVAL_NOTE)
    left, right = st.columns(2)
    left.button(
        "Approve",
        key=keys.APPROVAL_APPROVE,
        type="primary",
        on_click=shell.approval_decision,
        args=("approve", int(chosen)),
        disabled=mine,  # four eyes (core refuses it too, audited)
    )
    right.button(
        "Reject",
        key=keys.APPROVAL_REJECT,
        on_click=shell.approval_decision,
        args=("reject", int(chosen)),
    )
st.markdown("#### Decided")
widgets.records_table(
    [
        {
            "Approval": a.id,
            "Exception": a.exception_id,
            "Write-off": inr(a.amount),
            "Exposure": inr(a.exposure_amount or 0),
            "Asked by": a.maker,
            "Decision": a.status,
            "Decided by": a.checker,
            "Decided": ist(a.decided_at),
        }
        for a in shell.read(review.list_approvals, status=None)
        if a.status != "pending"
    ],
    f"{keys.APPROVALS_TABLE}-decided",
    "None yet.",
)
