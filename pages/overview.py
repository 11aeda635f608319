"""Overview: what the latest run established, and what is still open."""

import streamlit as st

from core.views.evaluation import heldout_accuracy
from core.views.overview import overview
from core.views.queue import ALL_STATUSES
from core.views.runs import changes_since_previous_run
from ui import auth, charts, keys, shell
from ui.format import CAPTURED_WHAT, class_label, inr, inr_short, newer_import_note, unpriced_note

shell.require_frame()
st.title("Overview")
ov = shell.read_marked(overview)  # live figures: read again once anything changes
if ov is None:
    st.info(shell.empty_state_note())
    if auth.can("admin"):
        st.page_link("pages/data.py", label="Go to Data", icon=":material/upload_file:")
    st.stop()

run, summary = ov.run, ov.summary
if run.is_synthetic:
    st.info(
        "**These data are the synthetic benchmark**: seeded, generated payments with known "
        "faults, not a merchant's books. Figures and accuracy below describe the benchmark, "
        "not production.",
        icon=":material/science:",
    )

if ov.newer_import is not None:
    st.warning(newer_import_note(run.id, *ov.newer_import), icon=":material/sync_problem:")

cards = st.columns(5)
kpis = (  # label, total, what the count counts (under the figure), what the help says
    ("Captured", summary.captured, "captured", CAPTURED_WHAT),
    ("Settled", summary.settled, "settlements", "processed settlements"),
    ("Credited in bank", summary.credited, "bank credits", "bank credits linked to a settlement"),
    ("Pending", summary.pending, "pending", "payments not yet due or held by the gateway"),
)
for column, (label, total, unit, what) in zip(cards, kpis, strict=False):
    column.metric(
        label,
        inr_short(total.paise),
        f"{total.count:,} {unit}" if total.count else None,
        delta_color="off",
        delta_arrow="off",
        help=f"{inr(total.paise)} across {total.count:,} {what}.",
        border=True,
    )
if summary.captured_unpriced:
    st.caption(unpriced_note(summary.captured_unpriced))
cards[4].metric(
    "Open exceptions",
    f"{ov.open_exceptions.count:,}",
    f"{inr_short(ov.open_exceptions.paise)} exposure",
    delta_color="off",
    delta_arrow="off",
    help=f"{inr(ov.open_exceptions.paise)} at stake over the exceptions not yet closed.",
    border=True,
)

changes = shell.read(changes_since_previous_run)
if changes is not None:
    st.subheader(
        f"First run (#{changes.run_id})"
        if changes.first
        else f"Run #{changes.run_id}, since the previous run (#{changes.previous_run_id})"
    )
    row = st.columns(4)
    for column, (label, n, key, what) in zip(
        row,
        (
            ("Opened", changes.opened, keys.OVERVIEW_SHOW_OPENED, "opened"),
            ("Auto-cleared", changes.auto_cleared, keys.OVERVIEW_SHOW_CLEARED, "auto_cleared"),
            (
                "Needs review: no longer found",
                changes.no_longer_found,
                keys.OVERVIEW_SHOW_REVIEW,
                "no_longer_found",
            ),
        ),
        strict=False,
    ):
        column.metric(label, f"{n:,}", border=True)
        column.button(
            "Show in the queue",
            key=key,
            on_click=shell.open_queue,
            args=(list(ALL_STATUSES), None, (what, changes.run_id)),
            disabled=not n,
        )
    row[3].metric("Reopened", f"{changes.reopened:,}", border=True)

st.subheader("Open exposure by class")
class_cards = st.columns(len(ov.exposure_by_class))
for column, (cls, total) in zip(class_cards, ov.exposure_by_class.items(), strict=True):
    column.metric(
        class_label(cls),
        inr_short(total.paise) if cls != "structural" else f"{total.count:,} open",
        f"{total.count:,} open" if cls != "structural" else "no money at stake",
        delta_color="off",
        delta_arrow="off",
        help=f"{inr(total.paise)} over {total.count:,} open exceptions.",
        border=True,
    )

left, right = st.columns(2)
with left:
    exposure = charts.spec("exposure_by_class", ov.exposure_by_class)
    st.vega_lite_chart(exposure, width="stretch", key=keys.OVERVIEW_CLASS_CHART)
    st.vega_lite_chart(
        charts.spec("ageing", ov.ageing), width="stretch", key=keys.OVERVIEW_AGE_CHART
    )
with right:
    if ov.exposure_by_code:
        by_code = charts.spec("exposure_by_code", ov.exposure_by_code)
        st.vega_lite_chart(by_code, width="stretch", key=keys.OVERVIEW_CODE_CHART)
    else:
        st.success("No open exceptions.")
    if summary.match_rate:
        # Fixed by the run (its cached summary): keyed by it, not hashed; by when it ran too,
        # as a database made again under the same name repeats run ids (data_mark).
        run_key = (auth.database(), run.id, run.started_at, run.finished_at)
        rates = charts.spec_for("match_rate", run_key, summary.match_rate)
        st.vega_lite_chart(rates, width="stretch", key=keys.OVERVIEW_MATCH_CHART)

st.subheader("Held-out accuracy")
accuracy = shell.read(heldout_accuracy, run.id)
if accuracy is None:
    st.caption(
        "Not measured for this run: accuracy is measured only on a run of the synthetic "
        "benchmark at its own as-of date, against labels the engine never sees."
    )
else:
    cols = st.columns(len(accuracy.metrics))
    for column, (name, value) in zip(cols, accuracy.metrics.items(), strict=True):
        column.metric(name, value, border=True)
    st.caption(accuracy.caption)
    st.page_link("pages/evaluation.py", label="Full report", icon=":material/fact_check:")
