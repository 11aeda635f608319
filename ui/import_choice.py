"""Importing into a database that already holds data: add, replace, or keep separate.

Nothing merges silently into the benchmark (issue 13): the reviewer chooses, and Replace
needs a confirmation that names what it removes (the five raw tables; exceptions, their
history, runs and the audit trail stay).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.errors import InputError, OlderRowsError
from core.views.runs import holdings, raw_counts
from ui import actions, keys, shell, widgets
from ui.format import md


def ask() -> tuple[bool, bool]:
    """(replace, allowed): whether to replace the raw data, and whether Import may run."""
    held = shell.read(holdings)
    replace, allowed = False, True
    if not held.empty:
        whose = "the synthetic benchmark" if held.is_benchmark else "imported data"
        modes = {
            "replace": "Replace what is there",
            "separate": "Keep it: use a separate workspace",
        }
        if not held.is_benchmark:
            modes = {"add": "Add to the data already imported", **modes}
        mode = st.radio(
            f"This database holds {whose}. Import these files how?",
            list(modes),
            format_func=modes.get,
            index=None,
            key=keys.UPLOAD_MODE,
        )
        replace = mode == "replace"
        allowed = mode in ("add", "replace")
        if mode == "separate":
            st.info(
                "A separate workspace is a separate database file: start the app with "
                "DATABASE_URL naming a new file (e.g. DATABASE_URL=merchant.sqlite) and import "
                "there; this database stays as it is."
            )
        if replace:
            n = shell.read(raw_counts)  # counted only now: a person is about to Replace
            allowed = st.checkbox(
                f"Replace removes {n.payments:,} payments, {n.refunds:,} refunds, "
                f"{n.settlements:,} settlements, {n.recon_rows:,} settlement report rows "
                f"and {n.bank_lines:,} bank lines of {whose} "
                f"({md(held.location or held.source or '')}). Exceptions, their history, runs "
                "and the audit trail stay. Replace them.",
                key=keys.UPLOAD_CONFIRM,
            )
    return replace, allowed


def import_files(uploads: list[Any], unit: str, replace: bool, older: bool) -> None:
    """Import the uploads under a progress bar. Its outcome (the report, or the refusal's
    problems) replaces an earlier import's: one that fails otherwise (a busy database)
    shows its error alone, never under an earlier "Imported."."""
    st.session_state.pop(keys.UPLOAD_RESULT, None)
    try:
        with widgets.progress_bar() as bar:
            report = actions.import_uploads(
                uploads, unit, replace, widgets.progress_to(bar), accept_older=older
            )
        st.session_state[keys.UPLOAD_RESULT] = ("ok", report.lines())
    except (InputError, OlderRowsError) as exc:
        st.session_state[keys.UPLOAD_RESULT] = ("problems", tuple(exc.problems))
    except Exception as exc:
        shell.show_error(exc)


def show_outcome() -> None:
    """The latest import's outcome of this session, if any."""
    outcome = st.session_state.get(keys.UPLOAD_RESULT)
    if outcome and outcome[0] == "ok":
        st.success("Imported. Run reconciliation to see the result.")
        st.code("\n".join(outcome[1]), language=None, wrap_lines=True)  # none cut at the edge
    elif outcome:
        st.error(f"The import was refused: {len(outcome[1])} problem(s); nothing was written.")
        widgets.problems_table(outcome[1], keys.UPLOAD_PROBLEMS)
