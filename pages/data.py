"""Data: import files, run reconciliation, sync from the Razorpay API."""

import datetime as dt

import streamlit as st

from core.calendar import CALENDAR_LIMITS, IST, CalendarParams
from core.views.runs import latest_data_date, recent_runs
from ui import actions, bank_mapping, import_choice, keys, shell, streamed, widgets
from ui.format import file_names_text, ist

shell.require_frame()
st.title("Data")
shell.need("admin", "Importing, reconciling and syncing")
# on_change="rerun": a tab knows whether it is open, so the Razorpay status (it counts every
# raw table: a scan of 10M payments) is read only when its tab is (docs/benchmark.md).
upload_tab, run_tab, sync_tab, runs_tab = st.tabs(
    ["Import files", "Reconcile", "Razorpay API", "Runs"], key=keys.DATA_TAB, on_change="rerun"
)

with upload_tab:
    st.caption("Dataset files, by name: " + file_names_text(actions.DATASET_NAMES))
    uploads = st.file_uploader(
        "Dataset files",
        type=actions.UPLOAD_TYPES,
        accept_multiple_files=True,
        key=keys.UPLOAD_FILES,
    )
    unit = st.radio(
        "Amounts in", ["auto", "paise", "rupees"], horizontal=True, key=keys.UPLOAD_UNIT
    )
    replace, allowed = import_choice.ask()
    older = st.checkbox(
        "Take older rows as corrections", key=keys.UPLOAD_ACCEPT_OLDER, help=actions.OLDER_HELP
    )
    if st.button(
        "Import", key=keys.UPLOAD_IMPORT, type="primary", disabled=not uploads or not allowed
    ):
        import_choice.import_files(uploads, unit, replace, older)
    import_choice.show_outcome()
    if uploads:
        with shell.guarded():
            bank_mapping.mapping_form(uploads)

with run_tab:
    latest = shell.read(latest_data_date) or dt.datetime.now(tz=IST).date()
    cols = st.columns(2)
    day = cols[0].date_input(
        "As of (IST date)",
        value=latest,
        key=keys.RUN_AS_OF_DATE,
        help="Defaults to the latest date in the data: ages and due dates count from it.",
    )
    moment = cols[1].time_input("As of (IST time)", value=dt.time(23, 59), key=keys.RUN_AS_OF_TIME)
    cols = st.columns(4)
    days = [  # (label, CalendarParams field, default, widget key): bounds in one place
        ("Settlement T+N", "settlement_days", 2, keys.RUN_SETTLEMENT_DAYS),
        ("International T+N", "international_days", 7, keys.RUN_INTERNATIONAL_DAYS),
        ("Grace days", "grace_days", 1, keys.RUN_GRACE_DAYS),
        ("Bank days", "bank_days", 1, keys.RUN_BANK_DAYS),
    ]
    calendar = CalendarParams(
        **{
            field: int(col.number_input(label, 0, CALENDAR_LIMITS[field], default, key=key))
            for col, (label, field, default, key) in zip(cols, days, strict=True)
        }
    )
    holidays = st.text_area(
        "Holidays (one ISO date per line)", key=keys.RUN_HOLIDAYS, placeholder="2026-08-15"
    )
    if st.button("Run reconciliation", key=keys.RUN_START, type="primary"):
        with shell.guarded(), widgets.progress_bar() as bar:
            calendar = CalendarParams(
                **{**vars(calendar), "holidays": actions.parse_holidays(holidays)}
            )
            as_of = actions.as_of_seconds(day, moment)
            run_id = actions.reconcile(calendar, as_of, widgets.progress_to(bar))
            bar.progress(1.0, text="Done")
            shell.flash("success", f"Reconciliation finished: run #{run_id}.")
            st.rerun()
    with st.expander("Import and reconcile a large folder on this server"):
        streamed.folder_form(calendar, actions.as_of_seconds(day, moment))

with sync_tab:
    status = None
    with shell.guarded():
        status = actions.razorpay_status() if sync_tab.open else None
    if status is not None:
        st.markdown(f"**State:** {status.state}")
        if status.last_run:
            run = status.last_run
            st.caption(
                f"Last sync #{run.id}: {run.range_from} → {run.range_to}, {run.items:,} items, "
                f"{run.requests} requests ({run.retries} retries), started {ist(run.started_at)}"
            )
        widgets.records_table(
            [vars(w) for w in status.watermarks], keys.SYNC_WATERMARKS, "No watermarks yet."
        )
        if status.recent_errors:
            st.markdown("**Recent errors**")
            widgets.records_table(
                [vars(e) for e in status.recent_errors], keys.SYNC_ERRORS, "No errors."
            )
    cols = st.columns(3)
    today = dt.datetime.now(tz=IST).date()
    start = cols[0].date_input("From", today - dt.timedelta(days=7), key=keys.SYNC_FROM)
    end = cols[1].date_input("To", today - dt.timedelta(days=1), key=keys.SYNC_TO)
    if cols[2].button("Start sync", key=keys.SYNC_START):
        with shell.guarded(), widgets.progress_bar("Connecting to Razorpay") as bar:
            report = actions.razorpay_sync(start, end, widgets.progress_to(bar))
            shell.flash("success", f"Synced {report.items:,} items. Reconcile to use them.")
            st.rerun()

with runs_tab:
    runs = shell.read(recent_runs)
    widgets.records_table(
        [
            {
                "run": r.id,
                "status": r.status,
                "source": r.source,
                "as_of": r.as_of,
                "started_at": r.started_at,
                "finished_at": r.finished_at,
                "error": r.error,
            }
            for r in runs
        ],
        keys.RUNS_TABLE,
        "No runs yet.",
    )
