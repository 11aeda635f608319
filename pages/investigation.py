"""Investigation: an exception's evidence, the investigator's answer, the human decision."""

import streamlit as st

import ui.evidence
import ui.investigator
import ui.packet
from core.views.exception import evidence, exception
from ui import auth, comments, decision, keys, shell, widgets
from ui.format import EVIDENCE_WIDTH, class_label, due_text, inr, ist, md

shell.require_frame()
st.title("Investigation")
st.session_state[keys.INVESTIGATE_ID] = shell.selected_exception()
chosen = st.columns([1, 3])[0].number_input(
    "Exception id",
    min_value=1,
    step=1,
    key=keys.INVESTIGATE_ID,
    on_change=shell.follow,
    args=(keys.INVESTIGATE_ID, keys.SELECTED_EXCEPTION),
)
if chosen is None:
    st.info("No exception to investigate: the queue is empty.")
    st.stop()
exception_id = int(chosen)
item = shell.read(exception, exception_id)
if item is None:
    st.error(f"There is no exception #{exception_id}.")
    st.stop()

st.subheader(f"#{item['id']} · {md(item['reason_code'])}")
widgets.facts(
    [
        ("Exposure", inr(item["exposure_amount"])),
        ("Class", class_label(item["exposure_class"])),
        ("Status", item["status"]),
        ("Assignee", item["assignee"] or "—"),
        ("Review due", due_text(item["due_date"]) or "—"),  # not the settlement's due date
    ]
)
if item.get("not_found_run_id") and item["status"] not in ("RESOLVED", "AUTO_CLEARED"):
    st.warning(
        f"Needs review: no longer found by run #{item['not_found_run_id']}. A person worked "
        "on it, so it stays open until someone resolves or reopens it.",
        icon=":material/report:",
    )
st.caption(
    f"{md(item['entity_type'])} **{md(item['entity_id'])}** · codes {md(item['reason_codes'])} · "
    f"expected {inr(item['expected_amount'])}, actual {inr(item['actual_amount'])}, "
    f"difference {inr(item['difference'])} · created {ist(item['entity_created_at'])}"
)
if item["settlement_id"] and st.button(
    f"Open settlement {md(item['settlement_id'])}", key=keys.INVESTIGATE_TO_SETTLEMENT
):
    shell.forget(keys.SETTLEMENT_SEARCH, keys.SETTLEMENT_CHOICE)
    st.session_state[keys.SELECTED_SETTLEMENT] = item["settlement_id"]
    st.switch_page("pages/settlement.py")

evidence_col, answer_col = st.columns([3, 2])
with evidence_col:
    st.markdown("#### Evidence (read only)")
    details = st.toggle("Show internal keys", key=keys.INVESTIGATE_DETAILS)
    for n, section in enumerate(shell.read(evidence, exception_id)):
        heading = f"{md(ui.evidence.title(section))} ({len(section.records)})"
        with st.expander(heading, expanded=n < 3):
            ui.evidence.show(
                section, f"{keys.EVIDENCE_TABLE}-{n}", details=details, budget=EVIDENCE_WIDTH
            )

with answer_col:
    st.markdown("#### Investigator")
    answers = st.session_state.setdefault(keys.INVESTIGATE_ANSWER, {})
    if st.button(
        "Ask the investigator",
        key=keys.INVESTIGATE_ASK,
        icon=":material/psychology:",
        disabled=not auth.can("review"),
    ):
        with shell.guarded(), st.spinner("Investigating…"):
            from core.investigate import investigate  # loads after the page has painted

            answers[exception_id] = investigate(
                auth.database(), exception_id, actor=auth.actor_name()
            )
    answer = answers.get(exception_id)
    if answer is None:
        st.caption("Ask for an explanation: it cites only records from the evidence.")
    else:
        # The model's text is data: shown as text, never as Markdown (no links, no images);
        # beside a model's answer, the rules' answer.
        ui.investigator.show(answer)

    decision.box(item)
    ui.packet.downloads(exception_id)

st.markdown("#### History")
widgets.records_table(comments.history_records(exception_id), keys.HISTORY_TABLE, "No actions yet.")
comments.thread(exception_id)
