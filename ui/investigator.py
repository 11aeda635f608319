"""The Investigation page's answer: what the investigator said, and, beside a model's answer,
the rules' (deterministic) answer, so a reviewer always sees the engine's facts whatever a
model wrote (independent attacker, finding 7: a planted narration made a model's false
"received in full" the only text on the page).

Rendering only: every string is data (`ui.format.md`), never Markdown.
"""

from __future__ import annotations

import streamlit as st

from core.investigate.result import DETERMINISTIC, Investigation
from ui.format import md

RULES_HEADING = "The rules' answer (deterministic, from the engine's facts)"


def show(answer: Investigation) -> None:
    """The answer shown, its source and citations; the rules' answer beside a model's."""
    st.markdown(f"**Root cause:** {md(answer.root_cause)} · confidence {answer.confidence:.0%}")
    st.markdown(md(answer.summary))
    st.markdown(f"**Recommendation:** {md(answer.recommendation)}")
    if answer.requires_human_review:
        st.warning("A person must decide this one.", icon=":material/person_alert:")
    st.caption(f"Source: {md(answer.source_label)}")
    st.caption("Citations (checked against the evidence): " + md(", ".join(answer.citations)))
    if answer.source == DETERMINISTIC or not answer.rules_summary:
        return
    with st.container(border=True):
        st.markdown(f"**{md(RULES_HEADING)}**")
        st.caption(
            "A model's text is checked for ids, amounts, direction and status claims, not for "
            "every claim prose can make: where the two disagree, the rules' answer is the "
            "engine's."
        )
        st.markdown(f"**Root cause:** {md(answer.deterministic_root_cause)}")
        st.markdown(md(answer.rules_summary))
        st.markdown(f"**Recommendation:** {md(answer.rules_recommendation)}")
