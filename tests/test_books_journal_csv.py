"""The journal CSV, written cell by cell (core.books.journal.journal_csv), is the text
csv.writer writes for the same rows, whatever the cells hold (commas, quotes, line breaks,
non-ASCII letters, nothing)."""

from __future__ import annotations

import csv
import datetime as dt
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from core.books.journal import CSV_COLUMNS, Line, Voucher, journal_csv, rupees

cell = st.text(alphabet=st.sampled_from(list('ab ,;"\r\n\té&<')), max_size=8)


def _written_by_csv_writer(vouchers: list[Voucher]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for v in vouchers:
        for line in v.lines:
            writer.writerow(
                (
                    v.number,
                    v.date.isoformat(),
                    v.kind,
                    v.reference,
                    line.ledger,
                    rupees(line.debit) if line.debit else "",
                    rupees(line.credit) if line.credit else "",
                    ";".join(line.source_rows),
                    v.narration,
                )
            )
    return out.getvalue()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            cell,
            cell,
            cell,
            st.lists(
                st.tuples(cell, st.integers(-(10**6), 10**6), st.lists(cell, max_size=3)),
                max_size=3,
            ),
        ),
        max_size=3,
    )
)
def test_the_journal_csv_is_what_csv_writer_writes_for_any_cells(
    drawn: list[tuple[str, str, str, list[tuple[str, int, list[str]]]]],
) -> None:
    vouchers = []
    for number, reference, narration, lines in drawn:
        shared = tuple(f"k{n}" for n in range(3))  # lines sharing one tuple of keys
        vouchers.append(
            Voucher(
                number=number,
                date=dt.date(2026, 6, 30),
                kind="settlement",
                reference=reference,
                narration=narration,
                lines=tuple(
                    Line(ledger, max(amount, 0), max(-amount, 0), tuple(keys) or shared)
                    for ledger, amount, keys in lines
                ),
            )
        )
    assert journal_csv(vouchers) == _written_by_csv_writer(vouchers)
