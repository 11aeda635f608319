"""A closed month on the Books page under AppTest (docs/books.md section 4): May is closed,
then a payment captured on 29 May (₹7,777.00, fee ₹183.54) arrives. May shows what was in
the books at the close by default, its roll-forward, balance by day and journal alike;
today's data are one choice away, with what changed since the close named; June's journal
opens with the late payment's prior-period adjustment voucher."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from core.books.close import ClosedMonth, change_details, month_bank_credits, month_journal
from core.books.journal import journal_csv, month_vouchers
from core.books.ledger import ledger_status
from core.db import connect
from core.db.raw import read_dataset
from tests.books_app_support import open_books, open_tab
from tests.books_late_support import (
    LATE,
    LATE_AMOUNT,
    LATE_ID,
    closed_then_late,
    corrected_day,
    import_day,
)
from tests.review_support import add_people
from ui import keys
from ui.format import inr, inr_short

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")
MAY, JUNE = "2026-05", "2026-06"


@pytest.fixture
def late(
    db_url: str, benchmark_1500: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[ClosedMonth, str]]:
    """The app's database (SQLite or PostgreSQL) after May was closed and the late payment
    came: May's close and May's journal as it was at the close (the CSV `journal` printed)."""
    conn = connect(db_url)
    try:
        add_people(conn)
        may, then = closed_then_late(
            conn,
            benchmark_1500,
            tmp_path / "late-day",
            lambda c: journal_csv(
                month_vouchers(read_dataset(c), MAY, credits=month_bank_credits(c, MAY))
            ),
        )
        assert ledger_status(conn).current  # the day carried the books' ledger forward
    finally:
        conn.close()
    monkeypatch.setenv("DATABASE_URL", db_url)
    yield may, then


def _month(at: AppTest, month: str) -> AppTest:
    at.selectbox(key=keys.BOOKS_MONTH).select(month).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _basis(at: AppTest, basis: str) -> AppTest:
    at.radio(key=keys.BOOKS_BASIS).set_value(basis).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _chart_closings(at: AppTest) -> list[int]:
    """The chart's closing balance by day (whole rupees), in day order."""
    (chart,) = [n for n in at.main if getattr(n, "type", "") == "vega_lite_chart"]
    (data,) = chart.proto.datasets  # the chart's frame, as Arrow IPC
    frame = pa.ipc.open_stream(data.data.data).read_all().to_pandas()
    closing = frame[frame["Series"] == "Closing balance"].sort_values("Day")
    return [int(v) for v in closing["Rupees"]]


def _table(at: AppTest, column: str) -> list[dict[str, object]]:
    """The rows of the first table with `column` (AppTest gives a table no key)."""
    frame = next(d.value for d in at.dataframe if column in d.value.columns)
    rows: list[dict[str, object]] = frame.to_dict("records")
    return rows


def test_a_closed_month_shows_its_books_as_closed_by_default_and_todays_on_request(
    late: tuple[ClosedMonth, str],
) -> None:
    may, _ = late
    snap = may.snapshot
    at = _month(open_books(), MAY)
    assert at.radio(key=keys.BOOKS_BASIS).value == "closed"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Closing"] == inr_short(snap.closing)
    movements = _table(at, "Amount")
    assert {
        "Line": "Captured payments",
        "Amount": inr(dict(snap.movements)["captured"]),
    } in movements
    # The balance by day is the one kept at the close: May's days, ending at its closing.
    closings = _chart_closings(at)
    assert len(closings) == 31 and closings[-1] == snap.closing // 100
    assert any(c.value == "The balance by day of 2026-05 as kept at the close." for c in at.caption)
    moved = [w.value for w in at.warning if "Today's data move 2026-05's closing" in w.value]
    assert moved == [
        f"Today's data move 2026-05's closing by {inr(LATE)} (data that arrived or changed"
        " after the close): choose **Today's data** above to see which lines moved."
    ]

    _basis(at, "current")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Closing"] == inr_short(snap.closing + LATE)
    since = {r["Line"]: r["Difference"] for r in _table(at, "As closed")}
    assert since == {
        "Captured payments": inr(LATE_AMOUNT),
        "Fees (incl. GST)": inr(LATE - LATE_AMOUNT),
        "Closing": inr(LATE),
        "Unsettled captured payments": inr(LATE),
    }
    closings = _chart_closings(at)
    assert len(closings) == 31 and closings[-1] == (snap.closing + LATE) // 100
    assert any(
        "Shown: today's data, including what arrived after the close" in w.value for w in at.warning
    )


def test_the_journal_of_a_closed_month_is_the_one_kept_then_todays_names_what_came_later(
    late: tuple[ClosedMonth, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.db.raw

    _, then = late
    at = open_tab(_month(open_books(), MAY), "Journal")
    reads: list[str] = []
    real = core.db.raw.read_month_dataset
    monkeypatch.setattr(
        core.db.raw,
        "read_month_dataset",
        lambda conn, month, product: reads.append(month) or real(conn, month, product),
    )
    assert (
        at.button(key=keys.BOOKS_JOURNAL_BUILD).label == "Prepare the journal for 2026-05 as closed"
    )
    at.button(key=keys.BOOKS_JOURNAL_BUILD).click().run()
    kept = at.session_state[keys.BOOKS_JOURNAL].value
    assert kept.csv == then.encode("utf-8") and reads == []  # kept at the close: no rows read
    assert any(c.value.startswith("2026-05 journal, basis closed:") for c in at.caption)

    _basis(at, "current")
    at.button(key=keys.BOOKS_JOURNAL_BUILD).click().run()
    today = at.session_state[keys.BOOKS_JOURNAL].value.csv.decode()
    assert LATE_ID in today and LATE_ID not in then and reads == [MAY]
    (changed,) = _table(at, "Rows new or changed since the close")
    assert changed["Voucher"] == "RZP-CAPTURED-2026-05" and changed["Change"] == "changed"
    assert str(changed["Rows new or changed since the close"]).startswith(f"{LATE_ID} (import ")
    assert any(c.value.startswith("2026-05 journal, basis current:") for c in at.caption)


def test_todays_journal_names_the_lines_and_the_row_a_correction_after_the_close_moved(
    late: tuple[ClosedMonth, str], db_url: str, benchmark_1500: Path, tmp_path: Path
) -> None:
    # A kept recon row sent again after the close with its GST 0: its settlement's voucher
    # keeps its debits; the table names the two lines that moved and the corrected row with
    # its import, in the words `journal --basis current` prints (one core function).
    conn = connect(db_url)
    try:
        folder, payment, settlement, _ = corrected_day(tmp_path / "fix", benchmark_1500)
        import_day(conn, folder)
        journal = month_journal(conn, MAY, "current")
    finally:
        conn.close()
    (change,) = [c for c in journal.changes if c.number == f"RZP-{settlement}"]
    lines, rows = change_details(change, journal.arrivals)
    at = _basis(open_tab(_month(open_books(), MAY), "Journal"), "current")
    at.button(key=keys.BOOKS_JOURNAL_BUILD).click().run()
    assert not at.exception, [e.value for e in at.exception]
    (shown,) = [r for r in _table(at, "Lines that differ") if r["Voucher"] == change.number]
    assert shown["Debits as closed"] == shown["Debits today"] == inr(change.today_debits)
    assert shown["Lines that differ"] == lines
    assert lines.startswith("Payment gateway charges Dr ") and ", GST input credit Dr " in lines
    assert shown["Rows new or changed since the close"] == rows
    assert rows.startswith(f"payment:{payment}:{settlement}:") and " (import " in rows


def test_the_journal_of_the_month_after_a_closed_one_opens_with_its_adjustment_voucher(
    late: tuple[ClosedMonth, str],
) -> None:
    at = open_tab(_month(open_books(), JUNE), "Journal")
    assert not [r for r in at.radio if r.key == keys.BOOKS_BASIS]  # June is open
    at.button(key=keys.BOOKS_JOURNAL_BUILD).click().run()
    assert not at.exception, [e.value for e in at.exception]
    rows = list(
        csv.DictReader(io.StringIO(at.session_state[keys.BOOKS_JOURNAL].value.csv.decode()))
    )
    first = rows[0]
    assert (first["voucher"], first["kind"], first["date"]) == (
        "RZP-CAPTURED-2026-05-PPA-2026-06",
        "prior_period",
        "2026-06-01",
    )
    (shown,) = _table(at, "Adjusts")
    amount = inr(LATE_AMOUNT)
    assert shown["Lines"] == (
        f"Razorpay receivable Dr {amount}; Sales (Razorpay collections) Cr {amount}"
    )
    assert shown["Adjusts"] == "RZP-CAPTURED-2026-05"
    assert any(
        c.value.startswith(
            f"The roll-forward's prior-period adjustment for 2026-06 is {inr(LATE)}; the"
            f" adjustment vouchers move Razorpay receivable by {inr(LATE_AMOUNT)}."
        )
        for c in at.caption
    )


@pytest.mark.parametrize("tab", ["Pricing", "GST on fees"])
def test_the_fee_check_and_gst_tabs_of_a_closed_month_say_they_show_todays_data(
    late: tuple[ClosedMonth, str], tab: str
) -> None:
    # The basis choice above the tabs reads "As closed" by default; these two tabs are not
    # kept by a close, so each says it is built from today's data (June, open, says nothing).
    said = "2026-05 is closed, but the"
    at = open_tab(_month(open_books(), MAY), tab)
    assert at.radio(key=keys.BOOKS_BASIS).value == "closed"
    notes = [i.value for i in at.info if i.value.startswith(said)]
    assert len(notes) == 1 and "built from today's data" in notes[0]
    at = open_tab(_month(at, JUNE), tab)
    assert not [i.value for i in at.info if "is closed, but the" in i.value]


def test_the_month_after_a_closed_one_shows_every_movement_line_whole(
    late: tuple[ClosedMonth, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.delta_generator import DeltaGenerator

    heights: dict[str, object] = {}
    real = DeltaGenerator.dataframe

    def dataframe(self: DeltaGenerator, data: object = None, *args: object, **kw: object) -> object:
        heights[str(kw.get("key"))] = (kw.get("height", "auto"), len(data))  # type: ignore[arg-type]
        return real(self, data, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(DeltaGenerator, "dataframe", dataframe)
    _month(open_books(), JUNE)
    height, rows = heights[keys.BOOKS_MOVEMENTS]  # type: ignore[misc]
    assert rows == 11  # the prior-period adjustments line first, Instant settlements last
    # st.dataframe shows ten rows by default and scrolls the rest out of sight
    assert isinstance(height, int) and height >= 35 * (rows + 1)
