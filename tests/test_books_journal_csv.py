"""The journal CSV, written cell by cell (core.books.journal.journal_csv), is the text
csv.writer writes for the same rows, whatever the cells hold (commas, quotes, line breaks,
non-ASCII letters, nothing), each text cell made safe for a spreadsheet as every CSV the
app writes (core.outputs.safe_cell: a leading ' before = + - @ tab CR)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from core.books.journal import CSV_COLUMNS, Line, Voucher, journal_csv, rupees, tally_xml
from core.outputs import safe_cell

cell = st.text(alphabet=st.sampled_from(list('ab ,;"\r\n\té&<=+-@')), max_size=8)


def _written_by_csv_writer(vouchers: list[Voucher]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for v in vouchers:
        for line in v.lines:
            writer.writerow(
                (
                    safe_cell(v.number),
                    v.date.isoformat(),
                    safe_cell(v.kind),
                    safe_cell(v.reference),
                    safe_cell(line.ledger),
                    rupees(line.debit) if line.debit else "",
                    rupees(line.credit) if line.credit else "",
                    safe_cell(";".join(line.source_rows)),
                    safe_cell(v.narration),
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


def test_an_id_a_spreadsheet_would_run_is_written_as_text_and_tally_gets_it_whole() -> None:
    # An attacker's settlement id and payment id (independent check F2, F9): in the CSV
    # they start with ' (a spreadsheet shows them, never runs them); in Tally's XML the
    # voucher's REMOTEID attribute holds the id whole, never an attribute of its own.
    hostile = "=2+2*cmd|'/c calc'!A0"
    quoted = 'RZP-setl_A" VCHKEY="injected'
    lines = (
        Line("Bank", 1000, 0, ("@pay_1", "pay_2")),
        Line("Razorpay receivable", 0, 1000, ("+pay_3",)),
    )
    vouchers = [Voucher(quoted, dt.date(2026, 6, 1), "settlement", hostile, "-narration", lines)]
    rows = list(csv.reader(io.StringIO(journal_csv(vouchers))))[1:]
    assert [r[3] for r in rows] == ["'" + hostile] * 2
    assert [r[7] for r in rows] == ["'@pay_1;pay_2", "'+pay_3"]
    assert {r[8] for r in rows} == {"'-narration"}
    assert [r[5] for r in rows] == ["10.00", ""]  # amounts stay numbers
    voucher = ET.fromstring(tally_xml(vouchers)).find(".//VOUCHER")
    assert voucher is not None
    assert voucher.attrib == {"VCHTYPE": "Journal", "ACTION": "Create", "REMOTEID": quoted}
