"""The Books page under AppTest: the month's roll-forward ties out on the builder's data,
and a reader (viewer) can see it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from core import access
from core.calendar import IST, month_bounds
from core.db import connect
from core.review import actions, resolve
from tests.books_app_support import books_database, open_books, open_tab
from ui import keys
from ui.format import inr

# AppTest and the v2 multipage app: see tests.conftest.streamlit_navigation_v2.
pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")


@pytest.fixture
def app_db(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The app's database: a SQLite file or a PostgreSQL URL (DATABASE_URL names either)."""
    yield books_database(db_url, monkeypatch, payments=800, seed=11)


def test_books_page_shows_a_month_that_ties_out_with_a_chart(app_db: str) -> None:
    at = open_books("admin@example.com")
    assert at.title[0].value == "Books"
    metrics = {m.label: m.value for m in at.metric}
    assert set(metrics) == {"Opening", "Closing", "Open items", "Residual"}
    assert metrics["Closing"] == metrics["Open items"]
    assert any("no unexplained residual" in s.value for s in at.success)
    assert [n for n in at.main if getattr(n, "type", "") == "vega_lite_chart"]
    at.button(key=keys.BOOKS_REPORT_BUILD).click().run()
    assert not at.exception, [e.value for e in at.exception]
    downloads = {b.key for b in at.get("download_button")}
    assert {keys.BOOKS_REPORT_ZIP, keys.BOOKS_REPORT_PDF} <= downloads
    open_tab(at, "Journal")
    at.button(key=keys.BOOKS_JOURNAL_BUILD).click().run()  # built on request
    assert keys.BOOKS_JOURNAL_TALLY in {b.key for b in at.get("download_button")}
    months = at.selectbox(key=keys.BOOKS_MONTH).options
    assert len(months) >= 1
    at.selectbox(key=keys.BOOKS_MONTH).select(months[-1]).run()
    assert not at.exception


def test_a_viewer_can_read_the_books_but_not_enter_a_pricing_plan(app_db: str) -> None:
    at = open_books("viewer@example.com")
    assert at.title[0].value == "Books"
    open_tab(at, "Pricing")
    assert not [b for b in at.button if b.key in (keys.BOOKS_PLAN_SAVE, keys.BOOKS_CLOSE)]
    assert any("No pricing plan yet" in i.value for i in at.info)


def test_an_admin_saves_a_pricing_plan_version_and_sees_it(app_db: str) -> None:
    at = open_tab(open_books("admin@example.com"), "Pricing")
    assert any(h.value == "New plan version" for h in at.subheader)
    at.session_state[keys.BOOKS_PLAN_EDITOR] = {
        "edited_rows": {"1": {"Percent": "1.70"}, "0": {"Fixed ₹": "0.50"}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.button(key=keys.BOOKS_PLAN_SAVE).click().run()
    assert not at.exception, [e.value for e in at.exception]
    conn = connect(app_db)
    try:
        from core.books.store import pricing_plans

        (plan,) = pricing_plans(conn)
    finally:
        conn.close()
    assert {(r.method, r.percent_bp, r.fixed_paise) for r in plan.rules} == {
        ("card", 170, 0),
        ("upi", 0, 50),
    }
    assert any("version 1 saved" in s.value for s in at.success)


def test_an_admin_closes_a_month_and_it_shows_as_closed(app_db: str) -> None:
    at = open_books("admin@example.com")
    month = at.selectbox(key=keys.BOOKS_MONTH).value
    at.button(key=keys.BOOKS_CLOSE).click().run()
    at.button(key=keys.BOOKS_CLOSE_CONFIRM).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"{month} is closed" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == keys.BOOKS_CLOSE]
    assert not any("Today's data move" in w.value for w in at.warning)  # nothing moved


def test_closing_a_month_asks_first_naming_its_open_exceptions_and_cancel_keeps_it_open(
    app_db: str,
) -> None:
    at = open_books("admin@example.com")
    month = at.selectbox(key=keys.BOOKS_MONTH).value
    first, following = (
        int(dt.datetime.combine(d, dt.time(0, 0), tzinfo=IST).timestamp())
        for d in month_bounds(month)
    )
    conn = connect(app_db)
    try:
        count, exposure = conn.execute(
            "SELECT count(*), sum(exposure_amount) FROM exceptions WHERE status IN "
            "('OPEN', 'ASSIGNED', 'INVESTIGATED', 'ESCALATED') "
            "AND entity_created_at >= ? AND entity_created_at < ?",
            (first, following),
        ).fetchone()
    finally:
        conn.close()
    assert count > 0
    at.button(key=keys.BOOKS_CLOSE).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not any(f"{month} is closed" in i.value for i in at.info)  # not closed yet
    assert any("cannot be undone" in m.value for m in at.markdown)
    said = [w.value for w in at.warning]
    assert any(f"{count:,} exceptions" in w and inr(exposure) in w for w in said), said
    at.button(key=keys.BOOKS_CLOSE_CANCEL).click().run()
    assert not [b for b in at.button if b.key == keys.BOOKS_CLOSE_CONFIRM]
    assert [b for b in at.button if b.key == keys.BOOKS_CLOSE]
    conn = connect(app_db)
    try:
        assert conn.execute("SELECT count(*) FROM month_closes").fetchone()[0] == 0
    finally:
        conn.close()


def test_a_write_off_final_by_the_months_end_is_named_under_its_roll_forward(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_books("admin@example.com")
    month = at.selectbox(key=keys.BOOKS_MONTH).value
    assert not [d for d in at.dataframe if "Written off" in d.value.columns]  # none yet
    _, following = month_bounds(month)
    month_end = int(dt.datetime.combine(following, dt.time(0, 0), tzinfo=IST).timestamp())
    conn = connect(app_db)
    try:
        exception, exposure, entity, reason = conn.execute(
            "SELECT id, exposure_amount, entity_id, reason_code FROM exceptions"
            " WHERE status = 'OPEN'"
            " AND exposure_amount > 0 ORDER BY id LIMIT 1"
        ).fetchone()
        # Decided an hour before the month's end: the review flow's clock set back.
        monkeypatch.setattr(actions, "time", SimpleNamespace(time=lambda: month_end - 3600))
        monkeypatch.setenv(access.FOUR_EYES_ENV, str(exposure))  # at the limit: final at once
        resolve(
            conn,
            exception,
            actor="asha@example.com",
            note="not recoverable; written off",
            request_id="books-page-write-off",
            resolution="written_off",
            amount=exposure,
        )
    finally:
        conn.close()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = [w.value for w in at.warning if "not posted in these books" in w.value]
    assert said == [
        f"1 write-off made final in the review queue by the end of {month},"
        f" {inr(exposure)} in all, is not posted in these books: the money is still in the"
        " open items above. Post each by hand: debit a bad-debts ledger, credit Razorpay"
        " receivable, dated its decision."
    ]
    (table,) = [d.value for d in at.dataframe if "Written off" in d.value.columns]
    assert table.to_dict("records") == [
        {
            "Exception": f"#{exception}",
            "Entity": entity,
            "Reason": reason,
            "Written off": inr(exposure),
            "Decided": dt.datetime.fromtimestamp(month_end - 3600, IST).strftime(
                "%d %b %Y, %H:%M IST"
            ),
            "Decided by": "asha@example.com",
            "Approval": "not needed",
        }
    ]


def test_the_gst_tab_ties_a_typed_invoice_out(app_db: str) -> None:
    at = open_tab(open_books("admin@example.com"), "GST on fees")
    at.button(key=keys.BOOKS_GST_COMPUTE).click().run()  # the month's bases, on request
    at.text_input(key=keys.BOOKS_GST_TAXABLE).input("1,000.00").run()
    at.text_input(key=keys.BOOKS_GST_AMOUNT).input("180.00").run()
    assert not at.exception, [e.value for e in at.exception]
    tables = [d.value for d in at.dataframe if "GST" in d.value.columns]
    assert len(tables) == 1 and "Invoice − by payment" in list(tables[0][""])
    assert any("Input tax credit (CGST+SGST)" in m.value for m in at.markdown)


def test_card_payments_the_plan_cannot_classify_are_listed_not_overcharged(app_db: str) -> None:
    # A plan that prices cards only by network and type (no `card` line); five of the
    # builder's (UPI) payments of the month shown become card payments with no card
    # details: they cannot be classified (the check is the month's).
    from core.books.pricing import PricingRule
    from core.books.store import save_pricing_plan
    from core.db.raw import month_seconds

    at = open_books("admin@example.com")
    month = at.selectbox(key=keys.BOOKS_MONTH).value
    conn = connect(app_db)
    try:
        with conn:
            conn.execute(
                "UPDATE payments SET method = 'card' WHERE id IN (SELECT id FROM payments"
                " WHERE created_at >= ? AND created_at < ? ORDER BY id LIMIT 5)",
                month_seconds(month),
            )
        save_pricing_plan(
            conn,
            effective_from=0,
            rules=(PricingRule("upi", 0), PricingRule("credit", 190), PricingRule("debit", 40)),
            actor="admin@example.com",
            request_id="req-cards",
        )
        cards = conn.execute(
            "SELECT count(*) FROM payments WHERE method = 'card' AND international = 0"
            " AND currency = 'INR' AND (captured = 1 OR status IN ('captured', 'refunded'))"
        ).fetchone()[0]
    finally:
        conn.close()
    open_tab(at, "Pricing")
    assert at.selectbox(key=keys.BOOKS_MONTH).value == month
    at.button(key=keys.BOOKS_FEES_CHECK).click().run()  # the month's fee check, on request
    assert cards == 5
    warned = [w.value for w in at.warning if "cannot be classified" in w.value]
    assert warned == [f"5 card payments of {month} cannot be classified (no `card` line)."]
    table = [d.value for d in at.dataframe if "Plan version" in d.value.columns]
    assert len(table) == 1 and len(table[0]) == cards and set(table[0]["Class"]) == {"card"}
    summary = [d.value for d in at.dataframe if "Overcharged" in d.value.columns]
    assert all("card" not in set(s["Class"]) for s in summary)


def test_books_runs_only_the_open_tab_and_builds_the_report_only_when_asked(
    app_db: str,
) -> None:
    at = open_books("admin@example.com")
    assert not at.get("download_button")  # no journal, no report on the first render
    assert not [d for d in at.dataframe if "GST" in d.value.columns]
    assert not [h for h in at.subheader if h.value == "New plan version"]
    open_tab(at, "GST on fees")
    assert not [d for d in at.dataframe if "GST" in d.value.columns]  # computed on request
    at.button(key=keys.BOOKS_GST_COMPUTE).click().run()
    assert [d for d in at.dataframe if "GST" in d.value.columns]
    assert not [m for m in at.metric if m.label == "Opening"]
    open_tab(at, "Roll-forward")
    assert not at.get("download_button")
    at.button(key=keys.BOOKS_REPORT_BUILD).click().run()
    zipped = [b for b in at.get("download_button") if b.key == keys.BOOKS_REPORT_ZIP]
    assert len(zipped) == 1


def test_the_close_report_splits_input_tax_credit_by_the_state_typed_on_the_gst_tab(
    app_db: str,
) -> None:
    import csv
    import io
    import zipfile

    at = open_tab(open_books(), "GST on fees")
    at.text_input(key=keys.BOOKS_GST_STATE).input("Maharashtra").run()
    open_tab(at, "Roll-forward")  # the GST tab's box is not drawn here: its state is kept
    at.button(key=keys.BOOKS_REPORT_BUILD).click().run()
    assert not at.exception, [e.value for e in at.exception]

    month, archive, _ = at.session_state[keys.BOOKS_REPORT]
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        tie = opened.read(f"close-{month}/gst_tie_out.csv").decode()
    lines = {row["line"] for row in csv.DictReader(io.StringIO(tie))}
    assert "itc_igst" in lines and "itc_cgst" not in lines
    open_tab(at, "GST on fees")
    assert at.text_input(key=keys.BOOKS_GST_STATE).value == "Maharashtra"


def test_closing_a_month_while_earlier_months_are_open_says_which(app_db: str) -> None:
    at = open_books("admin@example.com")
    months = sorted(at.selectbox(key=keys.BOOKS_MONTH).options)
    latest = months[-1]
    at.selectbox(key=keys.BOOKS_MONTH).select(latest).run()
    at.button(key=keys.BOOKS_CLOSE).click().run()
    assert not at.exception, [e.value for e in at.exception]

    said = [w.value for w in at.warning if "Earlier months are still open" in w.value]

    assert said == [
        f"Earlier months are still open: {', '.join(months[:-1])}. Months are closed oldest"
        f" first; closing {latest} now keeps its figures, and what later changes in them"
        " reaches the books as the next open month's prior-period adjustments."
    ]
    first = months[0]
    at.button(key=keys.BOOKS_CLOSE_CANCEL).click().run()
    at.selectbox(key=keys.BOOKS_MONTH).select(first).run()
    at.button(key=keys.BOOKS_CLOSE).click().run()
    assert not [w for w in at.warning if "Earlier months are still open" in w.value]
