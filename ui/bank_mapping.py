"""The Data page's form for a bank statement whose layout is not recognised: one select box
per column of its header, mapping it to one of our fields; saved once, reused by every later
import whose header matches (core.ingest.mappings)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import streamlit as st

from core.errors import InputError
from core.ingest.mappings import BANK_FIELDS, IGNORED
from ui import actions, keys, shell
from ui.format import md

FIELDS = [IGNORED, *BANK_FIELDS]  # the form's choices: not mapped, then our fields


def mapping_form(uploads: Iterable[Any]) -> None:
    """Show the form when an uploaded statement's header is not recognised; nothing else."""
    found = actions.unmapped_statement(uploads)
    if found is None:
        return
    name, data, guess = found
    st.warning(
        f"{md(name)}: this bank layout is not recognised. Map its columns (header on line "
        f"{guess.line}) once; later imports with the same header use the mapping."
    )
    with st.form(key=f"{keys.BANK_MAP_SAVE}_form"):
        columns = st.columns(3)
        assignments: dict[str, str] = {}
        for position, cell in enumerate(guess.cells):
            if not cell:
                continue
            choice = columns[position % 3].selectbox(
                md(cell),
                FIELDS,
                key=f"{keys.BANK_MAP_FIELD}_{position}",
                format_func=lambda f: f or "(not used)",
            )
            assignments[cell] = choice
        label = st.text_input("Layout name", value=name, key=keys.BANK_MAP_NAME)
        if st.form_submit_button("Save mapping", key=keys.BANK_MAP_SAVE):
            try:
                saved = actions.save_bank_mapping(name, data, assignments, label)
                shell.flash("success", f"Saved bank mapping {saved.describe()}. Import again.")
                st.rerun()
            except InputError as exc:
                st.error("The mapping does not read this statement; nothing was saved.")
                st.dataframe(
                    [p.as_row() for p in exc.problems],
                    hide_index=True,
                    key=f"{keys.BANK_MAP_SAVE}_problems",
                )
