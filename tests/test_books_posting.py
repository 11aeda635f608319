"""The journal a close keeps and the prior-period adjustment vouchers (core.books.posting):
the kept journal reads back as it was, under any ledger names; an adjustment voucher always
balances, and what was posted plus the adjustments is today's journal, ledger by ledger,
for any change (a voucher changed, arrived or gone, adjusted before or not)."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from core.books.journal import Ledgers, Line, Voucher
from core.books.posting import (
    PRIOR_PERIOD_KIND,
    ClosedPart,
    adjustment_vouchers,
    decode_journal,
    encode_journal,
)

NAMES = Ledgers()
LEDGERS = (NAMES.bank, NAMES.receivable, NAMES.charges, NAMES.gst, NAMES.sales, NAMES.suspense)


def _voucher(number: str, amounts: list[int], rows: list[str], kind: str = "settlement") -> Voucher:
    """A balanced voucher: a debit or credit per amount on the ledgers in turn, the rest on
    suspense."""
    lines = [
        Line(LEDGERS[i % 5], max(a, 0), max(-a, 0), tuple(rows[: i + 1]))
        for i, a in enumerate(amounts)
        if a
    ]
    gap = sum(x.credit - x.debit for x in lines)
    if gap:
        lines.append(Line(NAMES.suspense, max(gap, 0), max(-gap, 0), tuple(rows)))
    return Voucher(number, dt.date(2026, 5, 31), kind, number, f"voucher {number}", tuple(lines))


def _by_ledger(vouchers: list[Voucher]) -> Counter[tuple[str, str]]:
    """(voucher adjusted, ledger) -> debit − credit, zeros left out."""
    out: Counter[tuple[str, str]] = Counter()
    for v in vouchers:
        ref = v.reference if v.kind == PRIOR_PERIOD_KIND else v.number
        for line in v.lines:
            out[(ref, line.ledger)] += line.debit - line.credit
    return Counter({k: n for k, n in out.items() if n})


def test_a_kept_journal_reads_back_as_it_was_under_other_ledger_names() -> None:
    vouchers = [
        _voucher("RZP-setl_A", [5000, -4000, 100], ["a:1", "a:2"]),
        _voucher("RZP-CAPTURED-2026-05", [7000, -7000], ["pay_1"], kind="captured"),
    ]
    blob = encode_journal(vouchers, NAMES)
    assert list(decode_journal(blob, NAMES)) == vouchers
    renamed = Ledgers(bank="HDFC Current A/c", sales="Sales - Online")
    back = decode_journal(blob, renamed)
    assert [x.ledger for v in back for x in v.lines] == [
        {NAMES.bank: renamed.bank, NAMES.sales: renamed.sales}.get(x.ledger, x.ledger)
        for v in vouchers
        for x in v.lines
    ]


def test_a_voucher_that_arrived_after_the_close_is_adjusted_whole_and_one_gone_reversed() -> None:
    kept = (_voucher("RZP-setl_GONE", [300, -300], ["g:1"]),)
    came = _voucher("RZP-setl_LATE", [900, -850, -50], ["l:1", "l:2"])
    (arrived, reversed_) = adjustment_vouchers(
        "2026-06", [ClosedPart("2026-05", "closed by a at t", kept, (came,))]
    )
    assert arrived.lines == came.lines and arrived.reference == "RZP-setl_LATE"
    assert arrived.narration.endswith("of 2026-05 (closed by a at t), arrived after the close")
    assert [(x.debit, x.credit) for x in reversed_.lines] == [(0, 300), (300, 0)]
    assert reversed_.narration.endswith("no longer in the data: the posted voucher reversed")
    assert {v.date for v in (arrived, reversed_)} == {dt.date(2026, 6, 1)}
    assert {v.number for v in (arrived, reversed_)} == {
        "RZP-setl_LATE-PPA-2026-06",
        "RZP-setl_GONE-PPA-2026-06",
    }


_AMOUNTS = st.lists(st.integers(-(10**9), 10**9), min_size=1, max_size=5)
_ROWS = st.lists(st.sampled_from(["r1", "r2", "r3", "r4"]), min_size=1, max_size=4, unique=True)
_VOUCHER = st.tuples(_AMOUNTS, _ROWS)


@given(
    kept=st.dictionaries(st.sampled_from("ABCD"), _VOUCHER, max_size=4),
    posted=st.dictionaries(st.sampled_from("ABCDE"), _VOUCHER, max_size=3),
    today=st.dictionaries(st.sampled_from("ABCDF"), _VOUCHER, max_size=4),
)
def test_posted_vouchers_plus_the_adjustments_are_todays_journal_and_each_balances(
    kept: dict[str, tuple[list[int], list[str]]],
    posted: dict[str, tuple[list[int], list[str]]],
    today: dict[str, tuple[list[int], list[str]]],
) -> None:
    # April's vouchers as kept at its close; May's close posted adjustments for some of them
    # (kind prior_period, referencing them); today's data give April's vouchers as `today`.
    april = tuple(_voucher(f"RZP-{n}", *v) for n, v in kept.items())
    may = tuple(
        Voucher(
            f"RZP-{n}-PPA-2026-05", dt.date(2026, 5, 1), PRIOR_PERIOD_KIND, f"RZP-{n}", "", v.lines
        )
        for n, v in ((n, _voucher(f"RZP-{n}", *p)) for n, p in posted.items())
    )
    now = tuple(_voucher(f"RZP-{n}", *v) for n, v in today.items())
    parts = [
        ClosedPart("2026-04", "closed by a at t", april, now),
        ClosedPart("2026-05", "closed by a at u", may, ()),
    ]
    adjustments = list(adjustment_vouchers("2026-06", parts))
    for v in adjustments:
        assert v.debits == v.credits > 0
        assert v.kind == PRIOR_PERIOD_KIND and v.date == dt.date(2026, 6, 1)
        assert all((x.debit == 0) != (x.credit == 0) for x in v.lines)
    assert _by_ledger([*april, *may, *adjustments]) == _by_ledger(list(now))
    assert len({v.number for v in adjustments}) == len(adjustments)
