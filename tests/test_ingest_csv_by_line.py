"""A CSV parsed line by line (`read_csv_table(..., scan=scan_csv_file(path))`: Arrow splits
the file at newlines and parses its blocks on all cores) gives the table, the row lines and
the problems the quote-aware parse gives, whatever the file holds: quoted line breaks, blank
lines, CR LF and bare CR line ends, a BOM, blank lines before the header, ragged rows."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.ingest.readers import RawTable, ReadFailure, read_csv_table, scan_csv_file

WANTED = ["id", "amount", "notes"]
CELL = st.text(alphabet=st.sampled_from('ab1 ,"\r\n€'), max_size=6)
LINE_END = st.sampled_from(["\n", "\r\n", "\r"])


def _quoted(cell: str) -> str:
    return '"' + cell.replace('"', '""') + '"' if any(c in cell for c in ',"\r\n') else cell


@st.composite
def csv_files(draw: st.DrawFn) -> bytes:
    width = draw(st.integers(2, 3))
    header = ["id", "amount", "notes"][:width]
    ends = draw(st.lists(LINE_END, min_size=1, max_size=2))
    rows = draw(st.lists(st.lists(CELL, min_size=width - 1, max_size=width + 1), max_size=8))
    lines = [",".join(header)]
    for cells in rows:
        lines.append(",".join(_quoted(c) for c in cells))
        if draw(st.booleans()) and draw(st.booleans()):
            lines.append("")  # a blank line
    lead = "\n" * draw(st.integers(0, 2))
    bom = "\ufeff" if draw(st.booleans()) else ""
    text = bom + lead + "".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
    if draw(st.booleans()):
        text = text.rstrip("\r\n")  # no line end after the last row
    return text.encode()


def _read(path: Path, *, by_line: bool) -> RawTable | list[str]:
    scan = scan_csv_file(path, hashing=False, chunk_bytes=7) if by_line else None
    try:
        table = read_csv_table(path.name, path, WANTED, scan=scan)
    except ReadFailure as failure:
        return [str(p) for p in failure.problems]
    table.lines()  # computed now, from whichever parse was kept
    return table


def _same(a: RawTable | list[str], b: RawTable | list[str]) -> None:
    if isinstance(a, list) or isinstance(b, list):
        assert a == b
        return
    assert a.n_rows == b.n_rows
    assert a.lines().tolist() == b.lines().tolist()
    assert a.columns.keys() == b.columns.keys()
    for name in a.columns:
        assert pa.chunked_array(a.columns[name]).to_pylist() == b.columns[name].to_pylist()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(csv_files())
def test_a_csv_parsed_by_line_gives_the_rows_lines_and_problems_of_the_quote_aware_parse(
    content: bytes,
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "payments.csv"
        path.write_bytes(content)
        _same(_read(path, by_line=True), _read(path, by_line=False))


@pytest.mark.parametrize(
    "content",
    [
        b'id,amount,notes\npay_1,100,"two\nlines"\npay_2,200,x\n',  # a quoted line break
        b"id,amount,notes\npay_1,100,x\n\npay_2,200,y\n",  # a blank line
        b"id,amount,notes\rpay_1,100,x\rpay_2,200,y\r",  # bare CR line ends
        b"\n\nid,amount,notes\r\npay_1,100,x\r\npay_2,200,y",  # blank lines before the header
    ],
)
def test_a_file_whose_lines_are_not_its_rows_is_parsed_quote_aware_with_each_rows_line(
    content: bytes, tmp_path: Path
) -> None:
    path = tmp_path / "payments.csv"
    path.write_bytes(content)
    table = read_csv_table(path.name, path, WANTED, scan=scan_csv_file(path, hashing=False))
    assert table.n_rows == 2
    assert table.columns["id"].to_pylist() == ["pay_1", "pay_2"]
    physical = content.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    assert [physical[line - 1].split(b",")[0] for line in table.lines().tolist()] == [
        b"pay_1",
        b"pay_2",
    ]


def test_a_ragged_row_is_refused_with_its_line_when_parsed_by_line(tmp_path: Path) -> None:
    path = tmp_path / "payments.csv"
    path.write_bytes(b"id,amount,notes\npay_1,100,x\npay_2,200\npay_3,300,z\n")
    with pytest.raises(ReadFailure) as refused:
        read_csv_table(path.name, path, WANTED, scan=scan_csv_file(path, hashing=False))
    assert [(p.line, p.message) for p in refused.value.problems] == [
        (3, "expected 3 fields like the header, found 2")
    ]


def test_a_file_whose_every_line_is_a_row_names_each_rows_line_without_reading_it_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "payments.csv"
    path.write_bytes(b'\xef\xbb\xbf\nid,amount,notes\r\npay_1,100,"{""a"": 1}"\r\npay_2,200,y')

    def no_second_read() -> bytes:
        raise AssertionError("the file was read again for its line numbers")

    scan = scan_csv_file(path, hashing=False)
    table = read_csv_table(path.name, path, WANTED, reread=no_second_read, scan=scan)
    assert table.columns["notes"].to_pylist() == ['{"a": 1}', "y"]
    assert table.lines().tolist() == [3, 4]
    # Without the scan the rows are the same, their lines found by reading the file again.
    again = read_csv_table(path.name, path, WANTED, reread=path.read_bytes)
    assert again.lines().tolist() == [3, 4]


@pytest.mark.parametrize("by_line", [True, False])
def test_a_bom_after_blank_lines_starts_the_header_instead_of_crashing_the_parse(
    by_line: bool, tmp_path: Path
) -> None:
    path = tmp_path / "payments.csv"
    path.write_bytes(b"\n\xef\xbb\xbfid,amount,notes\npay_1,100,x\n")
    scan = scan_csv_file(path, hashing=False) if by_line else None
    table = read_csv_table(path.name, path, WANTED, scan=scan)
    assert table.columns["id"].to_pylist() == ["pay_1"]
    assert table.column_label("id") == "id"
    assert table.lines().tolist() == [3]
