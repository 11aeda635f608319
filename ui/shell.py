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
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlparse

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import (
    RunLocation,
    ThreadState,
    get_script_run_ctx,
)

from core import bootstrap
from core.db import connect, database_path
from core.db.connection import lock_timeout_error, reachable, unreachable_error
from core.db.migrate import permission_refusal
from core.errors import (
    DatabaseBusyError,
    DatabaseUnreachableError,
    InputError,
    RazorReconError,
    RefusedError,
)
from core.money import MoneyFormatError, parse_rupees_short
from core.views.common import data_mark
from core.views.queue import OPEN_STATUSES, QueueFilter, my_work, queue, top_exception
from core.views.runs import latest_run
from ui import auth, keys
from ui.format import ist, md

log = logging.getLogger("razorrecon.app")
ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")

PAGES: tuple[tuple[str, str, str], ...] = (
    ("pages/overview.py", "Overview", ":material/dashboard:"),
    ("pages/exceptions.py", "Exceptions", ":material/rule:"),
    ("pages/settlement.py", "Settlement", ":material/account_balance:"),
    ("pages/books.py", "Books", ":material/menu_book:"),
    ("pages/investigation.py", "Investigation", ":material/search:"),
    ("pages/data.py", "Data", ":material/upload_file:"),
    ("pages/evaluation.py", "Evaluation", ":material/fact_check:"),
    ("pages/audit.py", "Audit", ":material/verified_user:"),
    ("pages/approvals.py", "Approvals", ":material/approval:"),
    ("pages/admin.py", "Admin", ":material/admin_panel_settings:"),
)
# Pages shown only to a role that can use them (each page refuses on its own too).
PAGE_PERMISSION = {
    "pages/data.py": "admin",
    "pages/approvals.py": "approve",
    "pages/admin.py": "admin",
}
SOURCE_LABELS = {
    "benchmark": "Synthetic benchmark",
    "files": "Imported files",
    "razorpay_api": "Razorpay API",
}


@contextmanager
def connection() -> Iterator[sqlite3.Connection]:
    """A connection for one unit of work in this script run (on the session's database:
    its demo sandbox, else the shared one)."""
    conn = connect(auth.database())
    try:
        yield conn
    finally:
        conn.close()


def read(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a read model with a fresh connection: `read(overview)`."""
    with connection() as conn:
        return fn(conn, *args, **kwargs)


def read_marked(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`read(fn, *args)`, cached per server process until the data change: keyed by the
    database, the data mark (the newest run and completed run, the audit trail's head:
    every change to the queue is audited, core.views.common.data_mark), the read model's
    name and its arguments (hashable values). For live figures that cost a scan of the
    open exceptions at 10M (the Overview's exposure and ageing, the Settlement picker's
    open exposure, the queue's count and page, the Audit filters' values): a rerun or
    another session with nothing changed reads them from memory."""
    database = auth.database()
    with connection() as conn:
        mark = data_mark(conn)
    name = f"{fn.__module__}.{fn.__qualname__}"
    return _marked(database, mark, name, args, tuple(sorted(kwargs.items())), fn)


@st.cache_data(max_entries=64, show_spinner=False)
def _marked(
    database: str,
    mark: tuple[int, int, int, str],
    name: str,
    args: tuple[Any, ...],
    kwargs: tuple[tuple[str, Any], ...],
    _fn: Callable[..., T],
) -> T:
    # `_fn` is not hashed (leading underscore): `name` stands for it in the key.
    with closing(connect(database)) as conn:
        return _fn(conn, *args, **dict(kwargs))


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


def flash_at(slot: str, kind: str, text: str) -> None:
    """A message to show once, where the page calls show_flash(slot)."""
    st.session_state[slot] = (kind, text)


def show_flash(slot: str = keys.FLASH) -> None:
    kind, text = st.session_state.pop(slot, (None, None))
    # Flash texts carry names and ids typed by people or read from data: shown as text.
    if kind == "success":
        st.success(md(text))
    elif kind == "warning":
        st.warning(md(text))
    elif kind == "error":
        st.error(md(text))


def answered(key: str, slot: str, call: Callable[[sqlite3.Connection], T]) -> T | None:
    """Run one idempotent action (`call`, on a connection, with `request_id(key)`) for an
    on_click: its result, or None with the error shown in `slot`. Answered for good (a
    result, or a refusal) the request id is used up, so the next click is a new request;
    a database that could not answer keeps it, so the retry is applied exactly once."""
    try:
        with connection() as conn:
            result = call(conn)
    except Exception as exc:
        if not isinstance(exc, sqlite3.OperationalError) and unreachable(exc) is None:
            done(key)
        flash_at(slot, *describe_error(exc, action=True))
        return None
    done(key)
    return result


def decide(action: str, exception_id: int, version: int) -> None:
    """on_click of Resolve / Escalate. A callback runs before the page script, so the note
    box can be emptied after a decision; the outcome is shown beside the Decision box
    (show_flash(keys.DECISION_FLASH)), where the reviewer is looking."""
    note = str(st.session_state.get(keys.DECISION_NOTE) or "").strip()
    if not note:
        flash_at(
            keys.DECISION_FLASH, "error", "Write a note first: it says what was decided and why."
        )
        return
    from core import review

    key = f"{action}-{exception_id}"
    extra: dict[str, Any] = {}
    if action == "resolve":
        kind = str(st.session_state.get(keys.DECISION_RESOLUTION) or "explained")
        extra["resolution"] = kind
        if kind == "written_off":
            extra["amount"] = _paise(st.session_state.get(keys.DECISION_AMOUNT))
            if extra["amount"] is None:
                flash_at(
                    keys.DECISION_FLASH,
                    "error",
                    "A write-off needs the amount written off, in rupees.",
                )
                return
    act = getattr(review, action)
    result = answered(
        key,
        keys.DECISION_FLASH,
        lambda conn: act(
            conn,
            exception_id,
            actor=auth.actor(),
            note=note,
            request_id=request_id(key),
            expected_version=version,
            **extra,
        ),
    )
    if result is None:
        return
    st.session_state[keys.DECISION_NOTE] = ""
    if result.approval_id is not None and result.action == "resolve":
        flash_at(
            keys.DECISION_FLASH,
            "success",
            f"Write-off of exception #{exception_id} is pending approval "
            f"(#{result.approval_id}): an approver other than you must approve it.",
        )
        return
    flash_at(
        keys.DECISION_FLASH, "success", f"Exception #{exception_id} is now {result.to_status}."
    )


def withdraw_write_off(approval_id: int) -> None:
    """on_click of Withdraw my request (the maker of a pending write-off), with the
    Decision box's note saying why; the outcome shown beside the Decision box."""
    note = str(st.session_state.get(keys.DECISION_NOTE) or "").strip()
    if not note:
        flash_at(keys.DECISION_FLASH, "error", "Write a note first: it says why it is withdrawn.")
        return
    from core import review

    key = f"withdraw-approval-{approval_id}"
    result = answered(
        key,
        keys.DECISION_FLASH,
        lambda conn: review.withdraw(
            conn, approval_id, actor=auth.actor(), note=note, request_id=request_id(key)
        ),
    )
    if result is None:
        return
    st.session_state[keys.DECISION_NOTE] = ""
    flash_at(
        keys.DECISION_FLASH,
        "success",
        f"Write-off #{approval_id} withdrawn: exception #{result.exception_id} is"
        f" {result.to_status} and may be decided again.",
    )


def assign_one(exception_id: int, version: int) -> None:
    """on_click of Assign on the Decision box."""
    from core import review

    assignee = st.session_state.get(keys.DECISION_ASSIGNEE)
    if not assignee:
        flash_at(
            keys.DECISION_FLASH,
            "error",
            "Choose who gets it first." if people() else NOBODY_TO_ASSIGN + " " + add_people(),
        )
        return
    key = f"assign-{exception_id}"
    result = answered(
        key,
        keys.DECISION_FLASH,
        lambda conn: review.assign(
            conn,
            exception_id,
            actor=auth.actor(),
            assignee=str(assignee),
            request_id=request_id(key),
            expected_version=version,
        ),
    )
    if result is None:
        return
    flash_at(
        keys.DECISION_FLASH,
        "success",
        f"Exception #{exception_id} is {result.to_status}, with {result.assignee}.",
    )


def next_exception(current: int) -> None:
    """on_click of Next exception: the next row of the queue page last shown, else the
    largest open exposure other than this one."""
    order = [int(i) for i in st.session_state.get(keys.QUEUE_ORDER) or []]
    following = order[order.index(current) + 1 :] if current in order else []
    if following:
        st.session_state[keys.SELECTED_EXCEPTION] = following[0]
        return
    top = read(queue, QueueFilter(), page_size=2)
    others = [i.id for i in top.items if i.id != current]
    if others:
        st.session_state[keys.SELECTED_EXCEPTION] = others[0]
    else:
        flash_at(keys.DECISION_FLASH, "success", "No other open exception: the queue is done.")


def _paise(text: object) -> int | None:
    """A typed amount in rupees, in the forms the queue's filters read too ('25,000',
    '25k', '1.5 L', '2 Cr'); None when it is not one."""
    try:
        return parse_rupees_short(str(text or ""))
    except MoneyFormatError:
        return None


def approval_decision(decision: str, approval_id: int) -> None:
    """on_click of Approve / Reject on the Approvals page."""
    from core import review

    note = str(st.session_state.get(keys.APPROVAL_NOTE) or "").strip() or None
    key = f"{decision}-approval-{approval_id}"
    fn = getattr(review, decision)
    result = answered(
        key,
        keys.FLASH,
        lambda conn: fn(
            conn, approval_id, actor=auth.actor(), request_id=request_id(key), note=note
        ),
    )
    if result is None:
        return
    st.session_state[keys.APPROVAL_NOTE] = ""
    verb = "approved" if decision == "approve" else "rejected"
    flash(
        "success",
        f"Write-off #{approval_id} {verb}: exception #{result.exception_id} is {result.to_status}.",
    )


def bulk_decision(action: str, versions: dict[int, int], message: str, **fields: str) -> None:
    """Apply `core.review.<action>` (bulk_assign, bulk_escalate) to the selected exceptions
    at the versions the reviewer saw; `message` takes `{n}`, the number applied."""
    from core import review

    with guarded(), connection() as conn:
        result = getattr(review, action)(
            conn,
            list(versions),
            actor=auth.actor(),
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


def four_eyes() -> int:
    """Paise above which a write-off needs an approver (RAZORRECON_FOUR_EYES_PAISE)."""
    return auth.access.four_eyes_threshold()


def people() -> list[str]:
    """Who can be given an exception: active users with the reviewer role or above, and in
    local single-user mode that user first (an admin works exceptions too)."""
    found = read(auth.access.assignable)
    identity = st.session_state.get(keys.IDENTITY)
    if isinstance(identity, auth.Session) and identity.mode == "local":
        return [identity.email, *(p for p in found if p != identity.email)]
    return found


NOBODY_TO_ASSIGN = "Nobody can be assigned yet: no active person has the reviewer role."


def add_people() -> str:
    """Where people are added, for whoever is signed in."""
    if auth.can("admin"):
        return "Add people (reviewer or above) on the Admin page."
    return "An admin adds people on the Admin page."


def assignee_placeholder(people: list[str]) -> str:
    return "a reviewer" if people else "nobody to assign yet"


def nobody_to_assign(people: list[str]) -> None:
    """Under an Assign to list with no one in it: why, and (for an admin) where to add people."""
    if people:
        return
    st.caption(f"{NOBODY_TO_ASSIGN} {add_people()}")
    if auth.can("admin"):
        st.page_link("pages/admin.py", label="Add people", icon=":material/person_add:")


def need(permission: str, what: str) -> None:
    """First lines of a page for one role: anyone else sees why, and nothing else."""
    if not auth.can(permission):
        role = auth.access.PERMISSIONS[permission]
        st.warning(f"{what} needs the {role} role.", icon=":material/lock:")
        st.stop()


def selected_exception() -> int | None:
    """The exception to investigate: a deep link (?exception=ID, applied once), the one
    another page chose, else the largest open exposure."""
    link = st.query_params.get("exception")
    if link and link.isdigit() and st.session_state.get(keys.DEEP_LINK) != link:
        st.session_state[keys.DEEP_LINK] = link
        st.session_state[keys.SELECTED_EXCEPTION] = int(link)
    chosen = st.session_state.get(keys.SELECTED_EXCEPTION)
    if chosen is None:
        chosen = read(top_exception)  # the queue's first row, without sorting the queue
        st.session_state[keys.SELECTED_EXCEPTION] = chosen
    return None if chosen is None else int(chosen)


def forget(*state_keys: str) -> None:
    """Drop shared state (an on_change callback: a new search forgets the old choice)."""
    for key in state_keys:
        st.session_state.pop(key, None)


def set_state(state_key: str, value: Any) -> None:
    """on_click callback: set shared state (or a widget's value) before the rerun."""
    st.session_state[state_key] = value


def agree(widget_key: str, wanted: Any) -> None:
    """Make a keyed select show `wanted` (set before the widget is drawn).

    Set through session state, so the browser is told the value: a keyed widget keeps its
    identity when its options change, and a value forgotten on the server alone (a new
    search) leaves the browser showing the old choice while the page shows the new one.
    """
    if st.session_state.get(widget_key) != wanted:
        st.session_state[widget_key] = wanted


def follow(widget_key: str, state_key: str) -> None:
    """on_change callback: copy a widget's value into shared state."""
    st.session_state[state_key] = st.session_state[widget_key]


def describe_error(exc: BaseException, *, action: bool = False) -> tuple[str, str]:
    """('error' | 'warning', a plain message) for an exception; unexpected ones are logged.
    action: the error ended a person's action (an on_click), not a page's reads."""
    busy = exc if isinstance(exc, DatabaseBusyError) else lock_timeout_error(exc, auth.database())
    if busy is not None:
        log.warning("%s", busy)
        return "error", busy_message(busy)
    down = unreachable(exc)
    if down is not None:
        log.warning("%s", down)
        return "error", unreachable_message(down, action=action)
    refused = permission_refusal(exc, auth.database())
    if refused is not None:
        log.error("database role lacks rights", exc_info=exc)
        return "error", f"The database refused this: {refused}."
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


def busy_message(busy: DatabaseBusyError) -> str:
    """What a person is told when their action waited longer than the busy timeout for
    another connection's lock: which database, that nothing was written, to try again.
    The action's transaction was rolled back, and the request id of a decision is kept,
    so trying again is the same request (core.review: idempotent per request id)."""
    if busy.postgres:
        name = urlparse(busy.database).path.lstrip("/") or busy.database
        held = "another session held a lock this needed"
    else:
        name = Path(busy.database).name or busy.database
        held = "another process held its write lock"
    return (
        f"The database {name} is busy: {held} for longer than {busy.waited} (an import or "
        "a reconciliation from the command line, or another person's change). Nothing was "
        "written. Try again in a moment."
    )


def unreachable(exc: BaseException) -> DatabaseUnreachableError | None:
    """`exc` as the session's database being unreachable (core.db.connection), else None."""
    return unreachable_error(exc, auth.database())


def _database_name(database: str) -> str:
    parsed = urlparse(database)
    if parsed.scheme.startswith("postgres"):
        return parsed.path.lstrip("/") or database
    return Path(database).name or database


def unreachable_message(down: DatabaseUnreachableError, *, action: bool) -> str:
    """What a person is told while the database cannot be reached: which database, in a
    few words why (never the driver's text: that goes to the server log), for an action
    that it was not saved, and that what they typed waits in its box and the page comes
    back by itself. Not saved is certain when the connection was never made; a connection
    lost mid-way had its transaction rolled back unless it broke during the commit, and a
    retry is the same request (idempotent), so it is applied once either way."""
    where = f"the database {_database_name(down.database)} cannot be reached ({down.reason})"
    back = (
        "This page comes back by itself when the database answers again (it checks every "
        f"{RECHECK_S} s)"
    )
    if not action:
        return f"{where[0].upper()}{where[1:]}. {back}; anything you typed stays in its box."
    if down.midway:
        saved = (
            "Not saved: the connection to the database "
            f"{_database_name(down.database)} broke ({down.reason}) before this finished, "
            "so it was rolled back. Trying again is the same request: it is applied once."
        )
    else:
        saved = f"Not saved: {where}, so nothing was written."
    return f"{saved} What you typed stays in its box. {back}; then try again."


def show_error(exc: BaseException) -> None:
    kind, text = describe_error(exc)
    (st.warning if kind == "warning" else st.error)(md(text))


@contextmanager
def guarded() -> Iterator[None]:
    """Run a block; turn any error into a message in place. A database that cannot be
    reached ends the run instead (`database_down`), unless this is an on_click callback
    (it flashes the message for the run that follows)."""
    try:
        yield
    except Exception as exc:
        down = unreachable(exc)
        if down is None:
            show_error(exc)
        elif ThreadState.get().run_location is RunLocation.CALLBACK:
            flash(*describe_error(exc, action=True))
        else:
            database_down(down)


RECHECK_S = 5
FLASH_SLOTS = (keys.FLASH, keys.DECISION_FLASH, keys.COMMENT_FLASH)


def database_down(down: DatabaseUnreachableError) -> NoReturn:
    """The database cannot be reached: keep the frame, say so once, stop the run.

    The frame: the navigation and who is signed in with their role, as the last run that
    reached the database established them (auth.remembered: the same sign-in; nothing can
    be read or written meanwhile, so it shows only what the person already saw). The
    message: an action's own (kept in its flash slot by `answered`: "Not saved: ...")
    else the page's. The run then stops: after a stopped run Streamlit keeps every
    widget's value, drawn in it or not (it forgets a widget only after a run that ended
    normally without drawing it), so a comment or a note typed on the page waits in its
    box, as it does when the database is busy, where the page stays drawn. A fragment
    checks the database every RECHECK_S seconds and reruns the app once it answers.
    """
    if not getattr(_frame, "navigated", False):
        session = auth.remembered()
        navigation(signed_in=session is not None)
        if session is not None and not getattr(_frame, "sidebar", False):
            with st.sidebar:
                st.markdown("### ₹ RazorRecon")
                auth.sidebar_box(session)
    typed = {k: v for k in keys.TYPED if isinstance(v := st.session_state.get(k), str) and v}
    if typed:
        st.session_state[keys.TYPED_DRAFTS] = typed
    if getattr(_frame, "sidebar", False):
        st.sidebar.caption("Database unreachable: nothing can be read or saved until it is back.")
    with st._main:  # the page's area, even when the sidebar's reads were cut off
        shown: list[str] = []
        for slot in FLASH_SLOTS:
            kind, text = st.session_state.pop(slot, (None, None))
            if text and text not in shown:
                shown.append(text)
                (st.success if kind == "success" else st.error)(md(text))
        if not shown:
            st.error(md(unreachable_message(down, action=False)))
        _recheck(auth.database())
    st.stop()


def restore_typed() -> None:
    """Before the first page run after the database was unreachable: put what was typed
    back in its boxes (database_down kept it), set through session state so the browser is
    told (it dropped the boxes with the page it could not draw)."""
    for key, value in (st.session_state.pop(keys.TYPED_DRAFTS, None) or {}).items():
        st.session_state[key] = value


@st.fragment(run_every=RECHECK_S)
def _recheck(database: str) -> None:
    """Every RECHECK_S seconds while the page says the database is unreachable: once a
    connection opens, the whole app reruns (the page, with what was typed)."""
    if reachable(database):
        st.rerun(scope="app")


def cold_start() -> bootstrap.BootstrapResult | None:
    """Make sure there is something to show; a progress bar while the benchmark builds."""
    slot = st.empty()

    def progress(fraction: float, message: str) -> None:
        slot.progress(min(1.0, max(0.0, fraction)), text=message)

    try:
        result = bootstrap.ensure_ready(
            progress=progress, seed=bootstrap.first_start_builds_benchmark()
        )
    except Exception as exc:
        slot.empty()
        down = unreachable(exc)
        if down is not None:
            database_down(down)
        show_error(exc)
        return None
    slot.empty()
    return result


EMPTY_DATABASE_NOTE = (
    "**No completed reconciliation yet.** An admin imports the month's Razorpay reports"
    " (Payments, Refunds, Settlements, Settlement Recon) and the bank statement on the"
    " **Data** page, then reconciles them there; or, on the server,"
    " `python -m core import-day FOLDER --db DATABASE_URL` imports a folder and reconciles it."
    " The figures appear here after the first run."
)


def empty_state_note() -> str:
    """What the Overview says before the first completed run: who imports, and where
    (docs/app.md, *An empty database*)."""
    note = EMPTY_DATABASE_NOTE
    if not auth.can("admin"):
        note += " (Importing needs the admin role: ask an admin.)"
    return note


def navigation(*, signed_in: bool = True) -> Any:
    """The pages this person may open, in the sidebar. Before anyone is signed in, every
    page is registered but hidden and none runs (the caller stops): the visitor sees the
    sign-in screen alone, and a link to a page (/investigation?exception=5) answers with
    it too, not with Streamlit's "page not found"."""
    pages = [
        st.Page(str(ROOT / path), title=title, icon=icon, default=(i == 0))
        for i, (path, title, icon) in enumerate(PAGES)
        if not signed_in or path not in PAGE_PERMISSION or auth.can(PAGE_PERMISSION[path])
    ]
    _frame.navigated = True
    return st.navigation(pages, position="sidebar" if signed_in else "hidden")


def sidebar(result: bootstrap.BootstrapResult | None, session: auth.Session) -> None:
    _frame.sidebar = True
    with st.sidebar:
        st.markdown("### ₹ RazorRecon")
        auth.sidebar_box(session)
        with guarded():
            run = read(latest_run)
            if run is None:
                label = "needs a reconciliation run" if result else "unavailable"
                if result is not None and result.status == "empty":
                    label = "empty, nothing imported yet"
                st.caption(f"Database {md(Path(database_path()).name)}: {label}")
            else:
                source = SOURCE_LABELS.get(run.source, run.source)
                st.markdown(f"**Data source:** {md(source)}")
                if run.location:
                    st.caption(md(run.location))
                if run.newer_location:
                    st.caption(
                        f"Imported since run #{run.id}, not yet reconciled: "
                        f"{md(run.newer_location)}"
                    )
                st.markdown(f"**As of:** {ist(run.as_of)}")
                took = "" if run.duration_s is None else f" in {max(1, round(run.duration_s))} s"
                took = " in under a second" if run.duration_s == 0 else took
                st.markdown(f"**Last run:** #{run.id}, {ist(run.finished_at)}{took}")
                if run.is_synthetic:
                    st.caption("Synthetic data: figures describe the benchmark, not a merchant.")
            my_work_box()


def my_work_box() -> None:
    """The signed-in reviewer's own queue: counts, and a button that filters the queue."""
    me = auth.actor_name()
    mine = read(my_work, me)
    if not mine.open:
        st.caption("Nothing is assigned to you.")
        return
    extra = f", **{mine.overdue:,}** overdue" if mine.overdue else ""
    extra += f", **{mine.needs_review:,}** need review" if mine.needs_review else ""
    st.markdown(f"**My work:** {mine.open:,} open{extra}")
    st.button(
        "Assigned to me",
        key=keys.MY_WORK,
        icon=":material/person:",
        on_click=open_queue,
        args=(list(OPEN_STATUSES), me),
    )


# The queue's filters a link to exactly some exceptions clears (besides status, assignee).
_NARROWING = (
    keys.QUEUE_SEARCH,
    keys.QUEUE_CODES,
    keys.QUEUE_CLASSES,
    keys.QUEUE_SETTLEMENT,
    keys.QUEUE_MIN_AGE,
    keys.QUEUE_MAX_AGE,
    keys.QUEUE_MIN_AMOUNT,
    keys.QUEUE_MAX_AMOUNT,
)


def open_queue(
    statuses: list[str], assignee: str | None = None, changed: tuple[str, int] | None = None
) -> None:
    """on_click: show the queue filtered to these statuses (and assignee), from any page.

    changed: (what, run id), exactly the exceptions that run's sync opened, auto-cleared or
    marked no longer found (QueueFilter.changed_in_run); the other filters are cleared."""
    st.session_state[keys.QUEUE_STATUSES] = statuses
    st.session_state[keys.QUEUE_ASSIGNEE] = assignee or "Anyone"
    st.session_state.pop(keys.QUEUE_CHANGED, None)
    if changed is not None:
        forget(*_NARROWING)
        st.session_state[keys.QUEUE_CHANGED] = changed
    st.session_state[keys.OPEN_QUEUE] = True


_frame = threading.local()


def run(page: Any) -> None:
    """Run the selected page inside the error boundary.

    A deep link to an exception is `/?exception=ID` (the root): opened as a first request,
    a page's own path (`/investigation?...`) makes Streamlit's frontend probe
    `/investigation/_stcore/health` and `/host-config` first, two 404s in the console
    (streamlit/streamlit#7074). From the root, the app switches to Investigation itself.
    """
    if st.session_state.pop(keys.OPEN_QUEUE, False):
        st.switch_page(str(ROOT / "pages/exceptions.py"))
    link = st.query_params.get("exception")
    if link and link.isdigit() and getattr(page, "url_path", None) == "":
        st.switch_page(str(ROOT / "pages/investigation.py"), query_params={"exception": link})
    restore_typed()
    show_flash()
    _frame.active = True
    try:
        with guarded():
            page.run()
    finally:
        _frame.active = False


def begin_run() -> None:
    """app.py's first step: forget what the last run drew of the frame (`database_down`
    reads it), and rerun at once, before drawing anything, a run that Streamlit started as
    a v1 multipage app.

    Once per server process under `streamlit run app.py`: the first session's first run
    starts before anything has imported `ui` (ui/__init__.py clears Streamlit's "a pages/
    folder means a v1 multipage app" flag; serve.py imports it before any session, so
    `make run` never sees this). Streamlit then wraps app.py in its own navigation: the
    sidebar lists the raw page files (app, admin, approvals, ...) to an anonymous visitor,
    and every widget of that run is keyed under the wrapper's page ("Sign in" among them),
    so its first click arrives at a rerun where the button has another key and is lost.
    Inside the wrapper app.py runs as a page: its active script is not the main script.
    """
    _frame.navigated = False
    _frame.sidebar = False
    ctx = get_script_run_ctx()
    if ctx is None:
        return
    active = ThreadState.get().active_script_hash
    if active and active != ctx.pages_manager.main_script_hash:
        st.rerun()


def require_frame() -> None:
    """First line of every page: a page run without app.py around it reruns through it.

    That happens once per server process, when its very first request is a page's URL:
    Streamlit treats a `pages/` folder as a v1 multipage app until `st.navigation` has
    been called (see ui/__init__.py), and runs the page script alone, without the cold
    start or the sidebar. The rerun goes through app.py.
    """
    if not getattr(_frame, "active", False):
        st.rerun()
