"""The frame around every page: cold start, navigation, sidebar, and the error boundary.

Errors become `st.error` with a clear message, never a traceback: domain errors say what
was wrong (bad input names file, line and column); anything unexpected is logged on the
server with its traceback and shown as one plain sentence.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import streamlit as st

from core import bootstrap, views
from core.db import connect, database_path
from core.errors import InputError, RazorReconError, RefusedError
from ui import keys
from ui.format import ist, md

log = logging.getLogger("razorrecon.app")
ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")

PAGES: tuple[tuple[str, str, str], ...] = (
    ("pages/overview.py", "Overview", ":material/dashboard:"),
    ("pages/exceptions.py", "Exceptions", ":material/rule:"),
    ("pages/settlement.py", "Settlement", ":material/account_balance:"),
    ("pages/investigation.py", "Investigation", ":material/search:"),
    ("pages/data.py", "Data", ":material/upload_file:"),
    ("pages/evaluation.py", "Evaluation", ":material/fact_check:"),
    ("pages/audit.py", "Audit", ":material/verified_user:"),
)
SOURCE_LABELS = {
    "benchmark": "Synthetic benchmark",
    "files": "Imported files",
    "razorpay_api": "Razorpay API",
}


@contextmanager
def connection() -> Iterator[sqlite3.Connection]:
    """A connection for one unit of work in this script run."""
    conn = connect()
    try:
        yield conn
    finally:
        conn.close()


def read(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a read model with a fresh connection: `read(views.overview)`."""
    with connection() as conn:
        return fn(conn, *args, **kwargs)


def request_id(action: str) -> str:
    """The idempotency key of the pending `action`; a double click reuses it."""
    ids = st.session_state.setdefault(keys.REQUEST_IDS, {})
    return str(ids.setdefault(action, f"ui-{uuid.uuid4().hex}"))


def done(action: str) -> None:
    """Forget the key of a completed action, so the next one is a new request."""
    st.session_state.setdefault(keys.REQUEST_IDS, {}).pop(action, None)


def flash(kind: str, text: str) -> None:
    """A message to show once, after the rerun that an action triggers."""
    st.session_state[keys.FLASH] = (kind, text)


def show_flash() -> None:
    kind, text = st.session_state.pop(keys.FLASH, (None, None))
    # Flash texts carry names and ids typed by people or read from data: shown as text.
    if kind == "success":
        st.success(md(text))
    elif kind == "warning":
        st.warning(md(text))
    elif kind == "error":
        st.error(md(text))


def decide(action: str, exception_id: int, version: int) -> None:
    """on_click of Resolve / Escalate. A callback runs before the page script, so the note
    box can be emptied after a decision; the outcome is shown as a flash message."""
    note = str(st.session_state.get(keys.DECISION_NOTE) or "").strip()
    if not note:
        flash("error", "Write a note first: it says what was decided and why.")
        return
    from ui.widgets import module

    key = f"{action}-{exception_id}"
    try:
        act = getattr(module("core.review", "Review"), action)
        with connection() as conn:
            result = act(
                conn,
                exception_id,
                actor=reviewer(),
                note=note,
                request_id=request_id(key),
                expected_version=version,
            )
    except Exception as exc:
        if not isinstance(exc, sqlite3.OperationalError):
            done(key)  # answered for good: the next click is a new request
        flash(*describe_error(exc))
        return
    done(key)
    st.session_state[keys.DECISION_NOTE] = ""
    flash("success", f"Exception #{exception_id} is now {result.to_status}.")


def bulk_decision(action: str, versions: dict[int, int], message: str, **fields: str) -> None:
    """Apply `core.review.<action>` (bulk_assign, bulk_escalate) to the selected exceptions
    at the versions the reviewer saw; `message` takes `{n}`, the number applied."""
    from ui.widgets import module

    with guarded(), connection() as conn:
        result = getattr(module("core.review", "Review"), action)(
            conn,
            list(versions),
            actor=reviewer(),
            request_id=request_id(action),
            expected_versions=versions,
            **fields,
        )
        done(action)
        skipped = "; ".join(f"#{i}: {why}" for i, why in result.skipped)
        flash(
            "warning" if result.skipped else "success",
            message.replace("{n}", str(len(result.applied)))
            + (f" Skipped {skipped}" if skipped else ""),
        )
        st.rerun()


def reviewer() -> str:
    return str(st.session_state.get(keys.REVIEWER) or "reviewer").strip() or "reviewer"


def selected_exception() -> int | None:
    """The exception to investigate: a deep link (?exception=ID, applied once), the one
    another page chose, else the largest open exposure."""
    link = st.query_params.get("exception")
    if link and link.isdigit() and st.session_state.get(keys.DEEP_LINK) != link:
        st.session_state[keys.DEEP_LINK] = link
        st.session_state[keys.SELECTED_EXCEPTION] = int(link)
    chosen = st.session_state.get(keys.SELECTED_EXCEPTION)
    if chosen is None:
        top = read(views.queue, views.QueueFilter(), page_size=1)
        chosen = top.items[0].id if top.items else None
        st.session_state[keys.SELECTED_EXCEPTION] = chosen
    return None if chosen is None else int(chosen)


def follow(widget_key: str, state_key: str) -> None:
    """on_change callback: copy a widget's value into shared state."""
    st.session_state[state_key] = st.session_state[widget_key]


def describe_error(exc: BaseException) -> tuple[str, str]:
    """('error' | 'warning', a plain message) for an exception; unexpected ones are logged."""
    if isinstance(exc, InputError):
        return "error", "The input was refused; nothing was written.\n\n" + str(exc)
    if isinstance(exc, RefusedError):
        return "warning", f"Not done: {exc}"
    if isinstance(exc, RazorReconError):
        return "error", str(exc)
    if isinstance(exc, sqlite3.OperationalError):
        log.error("database error", exc_info=exc)
        return "error", f"The database could not answer ({exc}). Try again in a moment."
    log.error("unexpected error on a page", exc_info=exc)
    return (
        "error",
        f"Something went wrong ({type(exc).__name__}: {exc}). The details are in the server log.",
    )


def show_error(exc: BaseException) -> None:
    kind, text = describe_error(exc)
    (st.warning if kind == "warning" else st.error)(md(text))


@contextmanager
def guarded() -> Iterator[None]:
    """Run a block; turn any error into a message in place."""
    try:
        yield
    except Exception as exc:
        show_error(exc)


def cold_start() -> bootstrap.BootstrapResult | None:
    """Make sure there is something to show; a progress bar while the benchmark builds."""
    slot = st.empty()

    def progress(fraction: float, message: str) -> None:
        slot.progress(min(1.0, max(0.0, fraction)), text=message)

    try:
        result = bootstrap.ensure_ready(progress=progress)
    except Exception as exc:
        slot.empty()
        show_error(exc)
        return None
    slot.empty()
    return result


def navigation() -> Any:
    pages = [
        st.Page(str(ROOT / path), title=title, icon=icon, default=(i == 0))
        for i, (path, title, icon) in enumerate(PAGES)
    ]
    return st.navigation(pages, position="sidebar")


def sidebar(result: bootstrap.BootstrapResult | None) -> None:
    with st.sidebar:
        st.markdown("### ₹ RazorRecon")
        with guarded():
            run = read(views.latest_run)
            if run is None:
                label = "needs a reconciliation run" if result else "unavailable"
                st.caption(f"Database {md(Path(database_path()).name)}: {label}")
            else:
                source = SOURCE_LABELS.get(run.source, run.source)
                st.markdown(f"**Data source:** {md(source)}")
                if run.location:
                    st.caption(md(run.location))
                st.markdown(f"**As of:** {ist(run.as_of)}")
                took = "" if run.duration_s is None else f" in {max(1, round(run.duration_s))} s"
                took = " in under a second" if run.duration_s == 0 else took
                st.markdown(f"**Last run:** #{run.id}, {ist(run.finished_at)}{took}")
                if run.is_synthetic:
                    st.caption("Synthetic data: figures describe the benchmark, not a merchant.")
        st.session_state.setdefault(keys.REVIEWER, "reviewer")
        st.text_input(
            "Reviewer name",
            key=keys.REVIEWER,
            help="Recorded with every decision in the audit trail.",
            persist_state="session",
        )


_frame = threading.local()


def run(page: Any) -> None:
    """Run the selected page inside the error boundary."""
    show_flash()
    _frame.active = True
    try:
        with guarded():
            page.run()
    finally:
        _frame.active = False


def require_frame() -> None:
    """First line of every page: a page run without app.py around it reruns through it.

    That happens once per server process, when its very first request is a page's URL:
    Streamlit treats a `pages/` folder as a v1 multipage app until `st.navigation` has
    been called (see ui/__init__.py), and runs the page script alone, without the cold
    start or the sidebar. The rerun goes through app.py.
    """
    if not getattr(_frame, "active", False):
        st.rerun()
