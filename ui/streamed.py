"""The Data page's streamed import: a dataset folder on this server too large to upload
(10M payments), imported, reconciled and stored window by window with a progress bar fed
by the same `ProgressFn(fraction, message)` the command line draws with tqdm."""

from __future__ import annotations

import streamlit as st

from core import demo_mode
from core.calendar import CalendarParams
from core.errors import InputError
from ui import actions, keys, shell, widgets


def folder_form(calendar: CalendarParams, as_of: int) -> None:
    """Folder path, amount unit, a confirmation when data would be replaced, the button,
    and while it runs: st.progress from 0 to 100 %."""
    st.markdown("**A folder on this server** (API CSVs of any size; replaces the raw data)")
    if demo_mode.enabled():
        st.info(demo_mode.refusal(demo_mode.SERVER_FOLDER), icon=":material/block:")
        return
    st.caption(
        "For datasets too large to upload: read a block at a time, reconciled by windows "
        "of settlement days, stored as one run (`python -m core reconcile DIR --stream --db`)."
    )
    folder = st.text_input("Dataset folder on the server", key=keys.STREAM_FOLDER)
    unit = st.radio(
        "Amounts in", ["auto", "paise", "rupees"], horizontal=True, key=keys.STREAM_UNIT
    )
    # Always asked (not only when data are held): counting 10M raw rows to decide whether
    # to ask would cost the page more than its 1 s.
    allowed = st.checkbox(
        "Replace the imported data held now, if any (exceptions, their history, runs and "
        "the audit trail stay)",
        key=keys.STREAM_CONFIRM,
    )
    if st.button(
        "Import and reconcile the folder",
        key=keys.STREAM_START,
        disabled=not folder or not allowed,
    ):
        try:
            with widgets.progress_bar() as bar:
                stored = actions.stream_folder(
                    folder, unit, calendar, as_of, widgets.progress_to(bar)
                )
        except InputError as exc:
            refused = len(exc.problems)
            st.error(f"The folder was refused: {refused} problem(s); nothing was written.")
            widgets.problems_table(exc.problems, keys.STREAM_PROBLEMS)
            return
        except Exception as exc:
            shell.show_error(exc)
            return
        bar.progress(1.0, text=f"Done: run #{stored.run_id}")
        st.success(
            f"Run #{stored.run_id}: {stored.outcomes:,} outcomes from {stored.windows} "
            f"windows; the exception queue is up to date."
        )
