"""The pages' imports, made once per server process before the first session (serve.py).

Python imports a module once per process, but Streamlit imports a page's modules when a
session first opens that page, so without this the first person to open Investigation or
Data after a restart pays for importing the review actions, the evidence tools or the
engine (0.2-0.8 CPU s, more where `.pyc` files cannot be written) inside their render.
`imports()` imports every module a page imports at its top level, plus the one a render
imports inside a function (the evidence tools); tests/test_app_warm_imports.py checks the
list against the pages' sources. It also builds the Overview's chart templates (each
kind's Vega-Lite spec built and validated by Altair once, ui.charts.template: 0.1-0.3 CPU s
that the first Overview paid). What only a button needs (the investigator's model
client, the PDF packet, the Razorpay SDK, the streamed import) is deliberately not here.
"""

from __future__ import annotations

import logging
import threading
import time

_lock = threading.Lock()
_warmed: list[float] = []


def imports() -> float:
    """Import the pages' modules and build the chart templates once per process; the
    seconds it took (0.0 after that)."""
    with _lock:
        if _warmed:
            return 0.0
        started = time.perf_counter()
        # Before the runtime starts, each @st.cache_data decorator logs "No runtime found"
        # while checking its parameters; its cache is made at its first call, in a session.
        quiet = logging.getLogger("streamlit.runtime.caching.cache_data_api")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            import streamlit.emojis  # noqa: F401  (st.set_page_config's icon check: 0.1 s)

            import core.access
            import core.books.close
            import core.books.journal
            import core.books.ledger
            import core.books.report
            import core.books.store
            import core.calendar
            import core.db.raw
            import core.errors
            import core.investigate.gather  # core.views.exception.evidence, inside a render
            import core.review
            import core.review.sync  # the Exceptions page: a run stored but not synced
            import core.views.evaluation
            import core.views.exception
            import core.views.overview
            import core.views.queue
            import core.views.runs
            import core.views.settlement  # noqa: F401
            import ui.actions
            import ui.audit
            import ui.auth
            import ui.bank_mapping
            import ui.books
            import ui.charts
            import ui.comments
            import ui.decision
            import ui.evidence
            import ui.format
            import ui.import_choice
            import ui.investigator
            import ui.keys
            import ui.packet
            import ui.shell
            import ui.shortcuts
            import ui.streamed
            import ui.widgets

            ui.charts.warm()
        finally:
            quiet.setLevel(level)
        _warmed.append(time.perf_counter() - started)
        return _warmed[0]
