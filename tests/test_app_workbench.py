"""Issue 13, the reviewer's workbench: each test fails on the code before the fix."""

from __future__ import annotations

import sqlite3

import pytest

from core.audit import verify
from core.db import connect
from core.db.views import ALL_STATUSES, OPEN_STATUSES, QueueFilter
from core.money import parse_rupees_short
from core.review import comment, escalate, resolve, sync_exceptions
from core.views.queue import queue, queue_csv
from core.views.runs import changes_since_previous_run, latest_data_date
from tests import conftest
from tests import test_app_pages as pages
from tests.app_builder import Built
from tests.review_support import Finding, add_people, exception_id, write_run
from ui import keys

# This module's `conn` tests run on SQLite and on PostgreSQL (tests/conftest.py).
conn = conftest.db_conn

# The page tests' database fixture and helpers, shared; navigation as every AppTest file.
pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")
app_db = pages.app_db
_app = pages._app
_no_exception = pages._no_exception


def _settlements(path: str) -> list[tuple[str, str]]:
    conn = connect(path)
    try:
        return [tuple(r) for r in conn.execute("SELECT id, utr FROM settlements ORDER BY id")]
    finally:
        conn.close()


def test_searching_a_settlement_by_utr_or_any_part_of_its_id_selects_it(
    app_db: tuple[str, Built],
) -> None:
    path, _ = app_db
    rows = _settlements(path)
    at = _app("pages/settlement.py")
    first = at.selectbox(key=keys.SETTLEMENT_CHOICE).value
    target_id, target_utr = next((i, u) for i, u in rows if i != first and u)
    at.text_input(key=keys.SETTLEMENT_SEARCH).input(target_utr).run()
    assert at.selectbox(key=keys.SETTLEMENT_CHOICE).value == target_id
    assert not at.error
    other_id = next(i for i, _ in rows if i not in (first, target_id))
    at.text_input(key=keys.SETTLEMENT_SEARCH).input(other_id[3:].upper()).run()
    assert at.selectbox(key=keys.SETTLEMENT_CHOICE).value == other_id
    assert not at.error
    _no_exception(at)


def test_a_settlement_search_without_a_match_says_so(app_db: tuple[str, Built]) -> None:
    at = _app("pages/settlement.py")
    at.text_input(key=keys.SETTLEMENT_SEARCH).input("zz-no-such-settlement").run()
    assert [i.value for i in at.info] == ["No settlement matches."]
    assert not at.error


def test_queue_search_is_a_case_insensitive_substring_over_ids_utrs_and_notes(
    conn: sqlite3.Connection,
) -> None:
    add_people(conn)
    run = write_run(conn, [Finding("pay_ixyiAbC123"), Finding("pay_other99")])
    sync_exceptions(conn, run)
    target = exception_id(conn, "pay_ixyiAbC123")
    everything = QueueFilter(statuses=ALL_STATUSES)
    for term in ("ixyi", "IXYIabc", "abc12"):
        found = queue(conn, QueueFilter(statuses=ALL_STATUSES, search=term))
        assert [i.id for i in found.items] == [target], term
    comment(
        conn,
        target,
        actor="asha@example.com",
        note="Customer says bank ref ODH5ms",
        request_id="c1",
    )
    found = queue(conn, QueueFilter(statuses=ALL_STATUSES, search="odh5MS"))
    assert [i.id for i in found.items] == [target]
    assert queue(conn, everything).total == 2


def test_queue_search_counts_matches_the_status_filter_hides(conn: sqlite3.Connection) -> None:
    add_people(conn)
    run = write_run(conn, [Finding("pay_hidden1")])
    sync_exceptions(conn, run)
    resolve(
        conn,
        exception_id(conn, "pay_hidden1"),
        actor="asha@example.com",
        note="explained",
        request_id="r1",
        resolution="explained",
    )
    page = queue(conn, QueueFilter(statuses=OPEN_STATUSES, search="hidden"))
    assert page.total == 0
    assert page.other_statuses == 1


def test_the_status_filter_shows_every_default_status(app_db: tuple[str, Built]) -> None:
    at = _app("pages/exceptions.py")
    assert list(at.pills(key=keys.QUEUE_STATUSES).value) == list(OPEN_STATUSES)


@pytest.mark.parametrize(
    ("text", "paise"),
    [("5L", 50_000_000), ("1.2 Cr", 1_200_000_000), ("₹5,000", 500_000), ("50k", 5_000_000)],
)
def test_amount_filters_accept_lakh_crore_and_the_rupee_sign(text: str, paise: int) -> None:
    assert parse_rupees_short(text) == paise


def test_the_queue_takes_5l_as_an_amount_filter(app_db: tuple[str, Built]) -> None:
    at = _app("pages/exceptions.py")
    at.text_input(key=keys.QUEUE_MIN_AMOUNT).input("5L").run()
    assert not at.error
    _no_exception(at)


def test_due_dates_count_from_the_runs_as_of(conn: sqlite3.Connection) -> None:
    run = write_run(conn, [Finding("pay_due", exposure_class="structural")])
    march_31 = 1_774_981_800  # 2026-04-01 00:00 IST: the as-of of March's books
    sync_exceptions(conn, run, due_from=march_31 - 1)
    (due,) = conn.execute("SELECT due_date FROM exceptions").fetchone()
    assert due == "2026-04-14"  # 10 working days after Tue 31 March 2026


def test_the_reconcile_tab_defaults_as_of_to_the_latest_date_in_the_data(
    app_db: tuple[str, Built],
) -> None:
    path, _ = app_db
    conn = connect(path)
    latest = latest_data_date(conn)
    conn.close()
    at = _app("pages/data.py")
    assert at.date_input(key=keys.RUN_AS_OF_DATE).value == latest


def test_importing_over_the_benchmark_asks_and_replace_names_what_goes(
    app_db: tuple[str, Built], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = app_db
    conn = connect(path)
    conn.execute("UPDATE imports SET source = 'benchmark'")
    conn.commit()
    payments = conn.execute("SELECT count(*) FROM payments").fetchone()[0]
    conn.close()
    at = _app("pages/data.py")
    mode = at.radio(key=keys.UPLOAD_MODE)
    assert mode.value is None
    assert list(mode.options) == ["Replace what is there", "Keep it: use a separate workspace"]
    assert at.button(key=keys.UPLOAD_IMPORT).disabled
    mode.set_value("replace").run()
    confirm = at.checkbox(key=keys.UPLOAD_CONFIRM)
    assert f"{payments:,} payments" in confirm.label
    assert "Exceptions, their history" in confirm.label
    assert not confirm.value


def test_the_data_page_offers_to_take_older_rows_unticked(
    app_db: tuple[str, Built],
) -> None:
    at = _app("pages/data.py")
    older = at.checkbox(key=keys.UPLOAD_ACCEPT_OLDER)
    assert older.label == "Take older rows as corrections" and not older.value


def test_a_touched_exception_no_longer_found_needs_review_and_stays_open(
    conn: sqlite3.Connection,
) -> None:
    add_people(conn)
    asha = "asha@example.com"
    first = write_run(
        conn, [Finding("pay_touched"), Finding("pay_untouched"), Finding("pay_commented")]
    )
    sync_exceptions(conn, first)
    touched = exception_id(conn, "pay_touched")
    escalate(conn, touched, actor=asha, note="asked Razorpay", request_id="e1")
    commented = exception_id(conn, "pay_commented")
    comment(conn, commented, actor=asha, note="looking", request_id="c1")
    second = write_run(conn, [])
    summary = sync_exceptions(conn, second)
    assert (summary.auto_cleared, summary.no_longer_found) == (1, 2)
    rows = dict(conn.execute("SELECT entity_id, status FROM exceptions").fetchall())
    assert rows == {
        "pay_touched": "ESCALATED",
        "pay_commented": "OPEN",
        "pay_untouched": "AUTO_CLEARED",
    }
    items = queue(conn, QueueFilter(search="pay_touched")).items
    assert [i.id for i in items] == [touched] and items[0].needs_review
    assert verify(conn).ok  # the trail still replays to the stored state
    from core.review import reopen

    reopen(conn, touched, actor=asha, note="still short", request_id="o1")
    (item,) = queue(conn, QueueFilter(search="pay_touched")).items
    assert item.status == "OPEN" and not item.needs_review
    assert verify(conn).ok


def test_a_decision_message_appears_beside_the_decision_box(app_db: tuple[str, Built]) -> None:
    at = _app("pages/investigation.py")
    at.button(key=keys.DECISION_RESOLVE).click().run()
    (column,) = [c for c in at.columns if any(m.value == "#### Decision" for m in c.markdown)]
    assert any("Write a note first" in e.value for e in column.error)


# --- readability and speed (issue 13, deliverables 1 and 3) ----------------------------


def test_queue_csv_has_rupees_and_ist_before_the_raw_paise(conn: sqlite3.Connection) -> None:
    import csv
    import io

    run = write_run(conn, [Finding("pay_csv", exposure_amount=12_345_67)])
    sync_exceptions(conn, run)
    text = queue_csv(conn, QueueFilter()).decode("utf-8")
    (row,) = list(csv.DictReader(io.StringIO(text)))
    assert row["Exposure (₹)"] == "12345.67"
    assert row["exposure_amount"] == "1234567"  # the raw paise follow
    header = text.splitlines()[0].split(",")
    assert header.index("Exposure (₹)") < header.index("exposure_amount")


def test_settlement_tables_hide_internal_keys_until_asked(app_db: tuple[str, Built]) -> None:
    at = _app("pages/settlement.py")
    columns = {c for d in at.dataframe for c in d.value.columns}
    assert not {"row_key", "line_no", "Row key", "Line no"} & columns
    assert "Amount" in columns
    at.toggle(key=keys.SETTLEMENT_DETAILS).set_value(True).run()
    columns = {c for d in at.dataframe for c in d.value.columns}
    assert "Row key" in columns


def test_clicking_a_queue_row_opens_it_and_next_moves_on(app_db: tuple[str, Built]) -> None:
    at = _app("pages/exceptions.py")
    table = at.dataframe[0]
    ids = [int(i) for i in table.value["Id"]]
    at.session_state[table.key] = {"selection": {"rows": [1], "columns": []}}
    at.run()
    _no_exception(at)
    assert at.title[0].value == "Investigation"
    assert at.subheader[0].value.startswith(f"#{ids[1]} ")
    at.switch_page("pages/investigation.py")  # AppTest's next run starts where the test says
    at.run()
    assert at.subheader[0].value.startswith(f"#{ids[1]} ")
    at.button(key=keys.DECISION_NEXT).click().run()
    assert at.subheader[0].value.startswith(f"#{ids[2]} ")


def test_investigation_reopens_and_assigns(app_db: tuple[str, Built]) -> None:
    path, _ = app_db
    at = _app("pages/investigation.py")
    exception = int(at.number_input(key=keys.INVESTIGATE_ID).value)
    at.selectbox(key=keys.DECISION_ASSIGNEE).select("asha@example.com").run()
    at.button(key=keys.DECISION_ASSIGN).click().run()
    _no_exception(at)
    at.text_area(key=keys.DECISION_NOTE).input("Asked the bank").run()
    at.button(key=keys.DECISION_ESCALATE).click().run()
    at.text_area(key=keys.DECISION_NOTE).input("Bank says it is ours").run()
    at.button(key=keys.DECISION_REOPEN).click().run()
    _no_exception(at)
    conn = connect(path)
    actions = [
        r[0]
        for r in conn.execute(
            "SELECT action FROM exception_events WHERE exception_id = ? ORDER BY id", (exception,)
        )
    ]
    conn.close()
    assert actions[-3:] == ["assigned", "escalated", "reopened"]


def test_the_audit_page_shows_the_note_and_amount_as_columns(app_db: tuple[str, Built]) -> None:
    at = _app("pages/investigation.py")
    at.text_area(key=keys.DECISION_NOTE).input("Fee refunded by Razorpay").run()
    at.button(key=keys.DECISION_RESOLVE).click().run()
    at.switch_page("pages/audit.py")
    at.run()
    _no_exception(at)
    table = at.dataframe[0].value
    assert "Fee refunded by Razorpay" in list(table["Note"])
    resolved = table[table["Note"] == "Fee refunded by Razorpay"].iloc[0]
    assert resolved["Amount"].startswith("₹")
    assert "exposure_amount" not in resolved["Details"]


# --- my work and what changed (deliverables 4 and 6, in part) --------------------------


def test_the_sidebar_counts_my_work_and_opens_my_queue(app_db: tuple[str, Built]) -> None:
    path, _ = app_db
    conn = connect(path)
    ids = [r[0] for r in conn.execute("SELECT id FROM exceptions WHERE status = 'OPEN' LIMIT 3")]
    conn.close()
    at = pages.signed_in("asha@example.com")
    at.run()
    assert any("Nothing is assigned to you" in c.value for c in at.sidebar.caption)
    conn = connect(path)
    for n, i in enumerate(ids):
        from core.review import assign

        assign(conn, i, actor="asha@example.com", assignee="asha@example.com", request_id=f"a{n}")
    conn.close()
    at.run()
    assert any("**My work:** 3 open" in m.value for m in at.sidebar.markdown)
    at.button(key=keys.MY_WORK).click().run()
    _no_exception(at)
    assert at.title[0].value == "Exceptions"
    assert {int(i) for i in at.dataframe[0].value["Id"]} == set(ids)


def test_what_changed_since_the_previous_run(conn: sqlite3.Connection) -> None:
    sync_exceptions(conn, write_run(conn, [Finding("pay_a"), Finding("pay_b")]))
    first = changes_since_previous_run(conn)
    assert first is not None and first.first and first.opened == 2
    sync_exceptions(conn, write_run(conn, [Finding("pay_b"), Finding("pay_c")]))
    changes = changes_since_previous_run(conn)
    assert changes is not None and not changes.first
    assert (changes.opened, changes.auto_cleared, changes.reopened) == (1, 1, 0)


def test_what_changed_names_the_previous_run_and_links_exactly_the_exceptions_it_counts(
    app_db: tuple[str, Built],
) -> None:
    path, built = app_db
    conn = connect(path)
    run = write_run(conn, [Finding("pay_NEWONE"), Finding("pay_NEWTWO")])
    sync_exceptions(conn, run)
    changes = changes_since_previous_run(conn)
    cleared = conn.execute(
        "SELECT count(*) FROM exceptions WHERE status = 'AUTO_CLEARED'"
    ).fetchone()[0]
    conn.close()
    assert changes is not None and changes.auto_cleared == cleared > 0
    at = _app()
    headings = [h.value for h in at.subheader]
    assert f"Run #{run}, since the previous run (#{built.run_id})" in headings
    at.button(key=keys.OVERVIEW_SHOW_OPENED).click().run()
    _no_exception(at)
    assert at.title[0].value == "Exceptions"
    assert sorted(at.dataframe[0].value["Entity"]) == ["pay_NEWONE", "pay_NEWTWO"]
    at.button(key=keys.QUEUE_CHANGED_CLEAR).click().run()
    assert len(at.dataframe[0].value) > 2  # the whole queue again
    at.switch_page("pages/overview.py")
    at.run()
    at.button(key=keys.OVERVIEW_SHOW_CLEARED).click().run()
    assert any(f"**{cleared:,}** exceptions match" in m.value for m in at.markdown)


def test_the_queue_shows_a_write_off_awaiting_approval(app_db: tuple[str, Built]) -> None:
    path, _ = app_db
    conn = connect(path)
    pending, other = conn.execute(
        "SELECT id, entity_id FROM exceptions WHERE status = 'OPEN' "
        "AND exposure_amount > 1000001 ORDER BY exposure_amount DESC LIMIT 2"
    ).fetchall()
    asked = resolve(
        conn,
        pending[0],
        actor="asha@example.com",
        note="unrecoverable",
        request_id="wo-1",
        resolution="written_off",
        amount=1_000_001,
    )
    conn.close()
    assert asked.approval_id is not None
    at = _app("pages/exceptions.py")
    frame = at.dataframe[0].value
    status = dict(zip(frame["Entity"], frame["Status"], strict=True))
    assert status[pending[1]] == "Open · write-off awaiting approval"
    assert status[other[1]] == "Open"


def test_local_mode_offers_the_local_admin_to_assign_to_and_the_assignment_verifies(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local single user is an admin, and an admin works exceptions: on its first day
    (nobody added) the Assign list holds that user, not "Nobody can be assigned yet" (the
    judge's first minute), and the assignment is a verified audit entry."""
    from streamlit import config
    from streamlit.testing.v1 import AppTest

    from core.access import local_user
    from core.audit import verify
    from tests.app_builder import build
    from tests.conftest import ROOT

    conn = connect(db_url)
    build(conn, payments=300, seed=5)  # no people added: local mode's first day
    conn.close()
    monkeypatch.setenv("DATABASE_URL", db_url)
    address = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")  # local mode: bound to loopback
    me = local_user().actor
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.run()
        at.switch_page("pages/investigation.py")
        at.run()
        _no_exception(at)
        assert at.selectbox(key=keys.DECISION_ASSIGNEE).options == [me]
        said = " ".join(c.value for c in at.caption)
        assert "Nobody can be assigned yet" not in said
        at.selectbox(key=keys.DECISION_ASSIGNEE).set_value(me)
        at.button(key=keys.DECISION_ASSIGN).click().run()
        _no_exception(at)
        assert [pages.shown(e.value) for e in at.error] == []
    finally:
        config.set_option("server.address", address)
    conn = connect(db_url)
    try:
        assigned = conn.execute(
            "SELECT count(*) FROM exceptions WHERE assignee = ? AND status = 'ASSIGNED'", (me,)
        ).fetchone()[0]
        assert assigned == 1
        assert verify(conn).ok
    finally:
        conn.close()


def test_the_queue_table_cuts_no_reason_code_entity_or_utr(app_db: tuple[str, Built]) -> None:
    import json

    at = _app("pages/exceptions.py")
    table = at.dataframe[0]
    widths = {name: c.get("width", 0) for name, c in json.loads(table.proto.columns).items()}
    frame = table.value
    for column in ("Reason", "Entity", "UTR"):
        longest = max(len(str(v)) for v in frame[column].dropna())
        assert widths[column] >= 6.5 * longest + 16, (column, widths[column], longest)
    assert widths["Age"] >= 60  # "Age (d)" whole
    assert json.loads(table.proto.columns)["Reason"].get("pinned")  # in view when scrolled


def test_the_queue_page_says_how_many_more_match_in_other_statuses(
    app_db: tuple[str, Built],
) -> None:
    path, _ = app_db
    conn = connect(path)
    entity = conn.execute("SELECT entity_id FROM exceptions ORDER BY id LIMIT 1").fetchone()[0]
    conn.execute("UPDATE exceptions SET status = 'RESOLVED' WHERE entity_id = ?", (entity,))
    conn.commit()
    conn.close()
    at = _app("pages/exceptions.py")
    at.text_input(key=keys.QUEUE_SEARCH).input(entity.upper()).run()
    assert any("more match in other statuses" in i.value for i in at.info)
    at.button(key=keys.QUEUE_ALL_STATUSES).click().run()
    _no_exception(at)
    assert entity in list(at.dataframe[0].value["Entity"])


def test_a_refused_upload_names_the_file_of_each_problem(app_db: tuple[str, Built]) -> None:
    """A new user's walkthrough: with four files uploaded, the refusal's table showed only
    Line, Column and Message ("4 · created_at"), not which file; docs/ingest.md promises
    file:line:column."""
    from core.errors import Problem

    at = _app("pages/data.py")
    problems = (
        Problem("payments.csv", 4, "created_at", "not a date '31/02/2026'"),
        Problem("bank_statement.csv", 2, "Date", "not a date 'yesterday'"),
    )
    at.session_state[keys.UPLOAD_RESULT] = ("problems", problems)
    at.run()

    (table,) = [d.value for d in at.dataframe if "Message" in d.value.columns]
    assert list(table.columns) == ["File", "Line", "Column", "Message"]
    assert list(table["File"]) == ["payments.csv", "bank_statement.csv"]
    assert list(table["Line"]) == ["4", "2"]
    assert any("2 problem(s); nothing was written" in e.value for e in at.error)
