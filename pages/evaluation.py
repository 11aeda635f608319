"""Evaluation: the held-out report on the benchmark, with a confusion matrix by code."""

import streamlit as st

from core.views.evaluation import evaluation_report
from core.views.runs import latest_run
from ui import charts, keys, shell
from ui.format import md

shell.require_frame()
st.title("Evaluation")
run = shell.read(latest_run)
if run is None:
    st.info("No completed run yet.")
    st.stop()
report = shell.read(evaluation_report, run.id)
if report is None:
    st.info(
        "Held-out evaluation needs the benchmark's labels, and they describe the synthetic "
        "benchmark at its own as-of date. The latest run is not such a run, so there is no "
        "accuracy to report."
    )
    st.stop()
st.info(
    "Measured on the synthetic benchmark against labels the engine never sees. "
    "It shows the engine finds the faults the generator planted; it is not production "
    "accuracy.",
    icon=":material/science:",
)
cols = st.columns(len(report.headline))
for column, (name, value) in zip(cols, report.headline.items(), strict=True):
    column.metric(name, value, border=True)
st.caption(report.caption)
st.caption(
    "Over every label (development and held-out splits): "
    + " · ".join(f"{name} {value}" for name, value in report.full.items())
)

st.subheader("By reason code")
st.dataframe(
    report.by_code,
    hide_index=True,
    width="stretch",
    height=35 * (len(report.by_code) + 1) + 3,  # every code, no scroll inside the table
    key=keys.EVALUATION_BY_CODE,
)
st.subheader("Confusion matrix")
st.altair_chart(
    charts.confusion(report.confusion, actual="Ground truth", predicted="Engine", count="Count"),
    width="content",
    key=keys.EVALUATION_CONFUSION,
)
if report.notes:
    st.subheader("Held-out disagreements")
    for note in report.notes:
        st.markdown(f"- {md(note)}")
