"""The Books page's Journal, Pricing and GST tabs under AppTest: rendering them never reads
the raw tables; what needs them (the journal, the fee check, the GST bases) is built when
its button is pressed, from one read of the month's rows (core.db.raw.read_month_dataset),
equal to what the page used to compute from every raw table, and kept for the session
while the month (and the plan versions) and the data are the same."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

import core.db.raw
from core.books import journal
from core.books.close import month_bank_credits
from core.books.gst import Invoice, tie_out
from core.books.journal import (
    BankCredit,
    journal_csv,
    journal_sources_csv,
    month_vouchers,
    tally_xml,
)
from core.books.pricing import PricingRule, fee_check, overcharge_summary
from core.books.store import pricing_plans, save_pricing_plan
from core.dataset import Dataset
from core.db import connect
from core.db.raw import MonthProduct
from tests.books_app_support import (
    books_database,
    edit_behind_the_engines_back,
    open_books,
    open_tab,
)
from ui import keys
from ui.books import overcharges_table
from ui.format import inr

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")


@pytest.fixture
def app_db(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    books_database(db_url, monkeypatch, payments=600, seed=5)
    conn = connect(db_url)
    # A plan below what the builder charges, so the fee check lists overcharges.
    _save_plan(conn, percent_bp=100)
    conn.close()
    yield db_url


def _save_plan(conn: object, *, percent_bp: int) -> None:
    rules = tuple(PricingRule(m, percent_bp) for m in ("card", "upi", "netbanking", "wallet"))
    save_pricing_plan(
        conn,  # type: ignore[arg-type]
        effective_from=0,
        rules=rules,
        actor="admin@example.com",
        request_id=f"req-plan-{percent_bp}",
    )


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The page's reads of the raw tables as a Dataset, as (month, product), or ("", "every
    table") for a read of them all: the page and ui.books look both reads up on core.db.raw
    when they run."""
    calls: list[tuple[str, str]] = []
    whole, month_read = core.db.raw.read_dataset, core.db.raw.read_month_dataset

    def reading(conn: object) -> Dataset:
        calls.append(("", "every table"))
        return whole(conn)  # type: ignore[arg-type]

    def reading_month(conn: object, month: str, product: MonthProduct) -> Dataset:
        calls.append((month, product))
        return month_read(conn, month, product)  # type: ignore[arg-type]

    monkeypatch.setattr(core.db.raw, "read_dataset", reading)
    monkeypatch.setattr(core.db.raw, "read_month_dataset", reading_month)
    return calls


def _dataset(app_db: str) -> Dataset:
    conn = connect(app_db)
    try:
        return core.db.raw.read_dataset(conn)
    finally:
        conn.close()


def _credits(app_db: str, month: str) -> tuple[BankCredit, ...]:
    """The bank lines of `month` the stored run matched (the journal's Bank vouchers)."""
    conn = connect(app_db)
    try:
        return month_bank_credits(conn, month)
    finally:
        conn.close()


def _run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _buttons(at: AppTest) -> set[str | None]:
    return {b.key for b in at.button}


def _downloads(at: AppTest) -> set[str | None]:
    return {b.key for b in at.get("download_button")}


def _select_month(at: AppTest, month: str) -> AppTest:
    at.selectbox(key=keys.BOOKS_MONTH).select(month)
    return _run(at)


def test_rendering_the_journal_pricing_and_gst_tabs_reads_no_raw_table(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_reads(monkeypatch)
    at = open_books("viewer@example.com")
    for label, button in (
        ("Journal", keys.BOOKS_JOURNAL_BUILD),
        ("Pricing", keys.BOOKS_FEES_CHECK),
        ("GST on fees", keys.BOOKS_GST_COMPUTE),
    ):
        open_tab(at, label)
        _run(at)
        assert calls == [], label
        assert button in _buttons(at), label
    assert not _downloads(at)
    assert not [d for d in at.dataframe if "GST" in d.value.columns]
    open_tab(at, "Pricing")
    assert [d for d in at.dataframe if "Version" in d.value.columns]  # the plans, as before
    assert not [d for d in at.dataframe if "Overcharged" in d.value.columns]
    assert calls == []


def test_source_rows_too_many_for_a_spreadsheet_cell_are_offered_as_their_own_file(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_tab(open_books(), "Journal")
    month = at.selectbox(key=keys.BOOKS_MONTH).value
    at.button(key=keys.BOOKS_JOURNAL_BUILD).click()
    _run(at)
    assert keys.BOOKS_JOURNAL_SOURCES not in _downloads(at)  # the benchmark's rows fit
    assert at.session_state[keys.BOOKS_JOURNAL].value.listed == 0

    monkeypatch.setattr(journal, "SPREADSHEET_CELL_LIMIT", 200)  # a larger merchant's month
    other = next(m for m in at.selectbox(key=keys.BOOKS_MONTH).options if m != month)
    _select_month(at, other)
    at.button(key=keys.BOOKS_JOURNAL_BUILD).click()
    _run(at)
    vouchers = month_vouchers(_dataset(app_db), other, credits=_credits(app_db, other))

    kept = at.session_state[keys.BOOKS_JOURNAL].value
    assert keys.BOOKS_JOURNAL_SOURCES in _downloads(at)
    assert kept.sources == journal_sources_csv(vouchers).encode("utf-8")
    assert kept.listed == kept.sources.count(b"\n") - 1 > 0
    assert any(f"lists all {kept.listed:,}, one per row" in c.value for c in at.caption)


def test_the_journal_is_built_once_when_asked_as_before_and_offered_again_for_another_month(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_tab(open_books(), "Journal")
    months = at.selectbox(key=keys.BOOKS_MONTH).options
    assert len(months) >= 2
    month = at.selectbox(key=keys.BOOKS_MONTH).value
    vouchers = month_vouchers(_dataset(app_db), month, credits=_credits(app_db, month))
    calls = _count_reads(monkeypatch)
    at.button(key=keys.BOOKS_JOURNAL_BUILD).click()
    _run(at)
    assert calls == [(month, "journal")]
    assert {keys.BOOKS_JOURNAL_CSV, keys.BOOKS_JOURNAL_TALLY} <= _downloads(at)
    kept = at.session_state[keys.BOOKS_JOURNAL].value
    assert kept.csv == journal_csv(vouchers).encode("utf-8")
    assert kept.xml == tally_xml(vouchers).encode("utf-8")
    assert any(c.value.startswith(f"{len(vouchers):,} balanced vouchers") for c in at.caption)
    _run(at)  # a rerun shows the kept journal, reading nothing
    assert calls == [(month, "journal")] and keys.BOOKS_JOURNAL_CSV in _downloads(at)
    other = next(m for m in months if m != month)
    _select_month(at, other)
    assert not _downloads(at) and keys.BOOKS_JOURNAL_BUILD in _buttons(at)
    _select_month(at, month)  # the data are as they were: the kept journal is shown again
    assert calls == [(month, "journal")] and keys.BOOKS_JOURNAL_CSV in _downloads(at)


def test_a_change_to_the_data_offers_the_journal_button_again(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_tab(open_books(), "Journal")
    at.button(key=keys.BOOKS_JOURNAL_BUILD).click()
    _run(at)
    assert keys.BOOKS_JOURNAL_CSV in _downloads(at)
    edit_behind_the_engines_back(app_db)
    calls = _count_reads(monkeypatch)
    _run(at)
    assert not _downloads(at) and keys.BOOKS_JOURNAL_BUILD in _buttons(at)
    assert keys.BOOKS_JOURNAL not in at.session_state  # the stale journal is dropped
    assert calls == []


def test_the_fee_check_is_computed_when_asked_and_a_new_plan_version_makes_it_stale(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_tab(open_books(), "Pricing")
    month = at.selectbox(key=keys.BOOKS_MONTH).value
    conn = connect(app_db)
    try:
        plans = pricing_plans(conn)
    finally:
        conn.close()
    summary = overcharge_summary(fee_check(_dataset(app_db), plans))
    assert set(summary["month"]) > {month}  # the plan is below what the builder charges
    calls = _count_reads(monkeypatch)
    at.button(key=keys.BOOKS_FEES_CHECK).click()
    _run(at)
    assert calls == [(month, "fees")]
    assert any(h.value == f"Overcharges in {month} by payment class" for h in at.subheader)
    (shown,) = [d.value for d in at.dataframe if "Overcharged" in d.value.columns]
    in_month = summary[summary["month"] == month].reset_index(drop=True)
    assert shown.reset_index(drop=True).equals(overcharges_table(in_month))
    _run(at)
    assert calls == [(month, "fees")]
    assert [d for d in at.dataframe if "Overcharged" in d.value.columns]
    other = next(m for m in at.selectbox(key=keys.BOOKS_MONTH).options if m != month)
    _select_month(at, other)  # the check is the month's: another month is checked anew
    assert not [d for d in at.dataframe if "Overcharged" in d.value.columns]
    assert keys.BOOKS_FEES_CHECK in _buttons(at)
    _select_month(at, month)
    assert [d for d in at.dataframe if "Overcharged" in d.value.columns]
    conn = connect(app_db)
    try:
        _save_plan(conn, percent_bp=300)
    finally:
        conn.close()
    _run(at)
    assert calls == [(month, "fees")]
    assert not [d for d in at.dataframe if "Overcharged" in d.value.columns]
    assert keys.BOOKS_FEES_CHECK in _buttons(at)
    (versions,) = [d.value for d in at.dataframe if "Version" in d.value.columns]
    assert set(versions["Version"]) == {1, 2}


def test_the_gst_figures_are_computed_once_and_a_typed_invoice_is_applied_without_a_read(
    app_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_tab(open_books(), "GST on fees")
    month = at.selectbox(key=keys.BOOKS_MONTH).value
    expected = tie_out(
        _dataset(app_db),
        month,
        Invoice(month, 100_000, igst=18_000),
        merchant_state="Maharashtra",
    )
    calls = _count_reads(monkeypatch)
    at.button(key=keys.BOOKS_GST_COMPUTE).click()
    _run(at)
    assert calls == [(month, "gst")]
    at.text_input(key=keys.BOOKS_GST_STATE).input("Maharashtra")
    at.text_input(key=keys.BOOKS_GST_TAXABLE).input("1,000.00")
    _run(at)
    at.text_input(key=keys.BOOKS_GST_AMOUNT).input("180.00")
    _run(at)
    assert calls == [
        (month, "gst")
    ]  # every keystroke's rerun applies the invoice to the kept bases
    (table,) = [d.value for d in at.dataframe if "GST" in d.value.columns]
    rows = dict(zip(table[""], zip(table["Fees"], table["GST"], strict=True), strict=True))
    assert rows["Fees by payment (captured, refunds, instant)"] == (
        inr(expected.payment_fees),
        inr(expected.payment_gst),
    )
    assert rows["Fees by settlement (recon rows settled)"] == (
        inr(expected.settlement_fees),
        inr(expected.settlement_gst),
    )
    assert rows["Invoice − by payment"] == (
        inr(expected.invoice_fee_difference or 0),
        inr(expected.invoice_gst_difference or 0),
    )
    assert rows["… of which a real difference"] == (
        inr(expected.invoice_real_fees),
        inr(expected.invoice_real_gst),
    )
    assert any("Input tax credit (IGST):** IGST ₹180.00" in m.value for m in at.markdown)
    other = next(m for m in at.selectbox(key=keys.BOOKS_MONTH).options if m != month)
    _select_month(at, other)
    assert keys.BOOKS_GST_COMPUTE in _buttons(at)
    assert not [d for d in at.dataframe if "GST" in d.value.columns]
    assert calls == [(month, "gst")]
