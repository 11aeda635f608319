"""Importing into a database that already holds data: add, replace, or keep separate.

Nothing merges silently into the benchmark (issue 13): the reviewer chooses, and Replace
needs a confirmation that names what it removes (the five raw tables; exceptions, their
history, runs and the audit trail stay).
"""

from __future__ import annotations

import streamlit as st

from core.views.runs import holdings, raw_counts
from ui import keys, shell
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
