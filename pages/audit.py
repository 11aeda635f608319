"""Audit: the hash-chained trail, filtered; its verification; export."""

import streamlit as st

from ui import audit, keys, shell, widgets
from ui.format import md

shell.require_frame()
st.title("Audit trail")
values = audit.filter_values()
cols = st.columns([2, 2, 2, 3, 1])
any_ = "Any"
actor = cols[0].selectbox(
    "Actor", [any_, *values.get("actor", [])], key=keys.AUDIT_ACTOR, persist_state="session"
)
action = cols[1].selectbox(
    "Action", [any_, *values.get("action", [])], key=keys.AUDIT_ACTION, persist_state="session"
)
entity_type = cols[2].selectbox(
    "Entity type",
    [any_, *values.get("entity_type", [])],
    key=keys.AUDIT_ENTITY_TYPE,
    persist_state="session",
)
entity_id = cols[3].text_input("Entity id", key=keys.AUDIT_ENTITY_ID, persist_state="session")
limit = cols[4].selectbox("Show", [100, 500, 2000], key=keys.AUDIT_LIMIT)
where = audit.make_filter(
    actor=None if actor == any_ else actor,
    action=None if action == any_ else action,
    entity_type=None if entity_type == any_ else entity_type,
    entity_id=entity_id.strip() or None,
)

verify_col, format_col, export_col = st.columns([2, 1, 2], vertical_alignment="bottom")
if verify_col.button("Verify the chain", key=keys.AUDIT_VERIFY, icon=":material/link:"):
    with shell.guarded():
        st.session_state[keys.AUDIT_VERIFY_RESULT] = audit.verify()
fmt = format_col.selectbox("Export format", ["csv", "jsonl"], key=keys.AUDIT_EXPORT_FORMAT)
export_col.download_button(
    "Export the filtered trail",
    data=lambda: audit.export(where, fmt),
    file_name=f"audit.{fmt}",
    mime="text/csv" if fmt == "csv" else "application/x-ndjson",
    key=keys.AUDIT_EXPORT,
    on_click="ignore",
    icon=":material/download:",
)
result = st.session_state.get(keys.AUDIT_VERIFY_RESULT)
if result is not None and result.ok:
    st.success(
        f"Chain intact: {result.rows_checked:,} entries, head #{result.head_seq} "
        f"{result.head_hash[:16]}…"
    )
elif result is not None:
    st.error(f"Chain broken: {md(result.problem)}")
for warning in audit.verify_warnings(result):
    st.warning(md(warning))
if result is None:
    st.caption("Every entry's hash covers the one before it; verify to walk the chain.")

total, entries = audit.entries(where, int(limit))
st.markdown(f"**{total:,}** entries match; the newest {len(entries):,} are shown.")
details = st.toggle("Details: raw payload and hash", key=keys.AUDIT_DETAILS)
widgets.records_table(
    audit.rows(entries, details=details),
    keys.AUDIT_TABLE,
    "No entries match.",
    whole=("Action", "Entity"),
)
st.caption(
    "Amount: money a decision settled (a write-off's amount, the exposure a resolve closed);"
    " an exception's exposure on other entries (assigned, commented, opened) is in Details."
)
