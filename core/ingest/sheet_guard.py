"""What a workbook would make the spreadsheet reader allocate, checked before it reads it.

python-calamine builds each worksheet it reads as one dense rectangle, and our call
(`to_python(skip_empty_area=False)`) widens it to start at A1: a sheet whose farthest cell
is row R, column C costs R x C cells (~40 bytes each) whatever lies between. A native
allocation that fails aborts the whole process (SIGABRT), the app server included, so a
6 KB file with one cell at XFD1048576 took the server down (independent attackers, rounds
2 and 3). The reader chooses the format by the bytes, never by the file's name, so this
check does too:

- a zip (XLSX; the reader would also try XLSB and ODS, which we do not read and refuse):
  every member is streamed through expat, capped at MAX_UNPACKED_BYTES in all. In every
  member that holds a `sheetData` element, the cells are placed the way the reader places
  them (a cell's `r`, else the running position of its row and column) and the farthest
  row and column bound the rectangle. A member that holds `sheetData` but is not
  well-formed XML, or whose rows and cells are not nested row-in-sheetData and
  cell-in-row, is refused: the reader's parser is more lenient than expat, and a cell we
  could not place is a cell we could not bound.
- an OLE2 compound file (XLS): the BIFF records of its Workbook/Book stream: each sheet's
  substream (where its BoundSheet8 record points, as the reader does) is walked for cell
  records and for the Dimensions record, whose row and column range the reader reserves
  room for before it reads a cell.
- anything else is no workbook the reader can open: refused here, so that it never tries.

Every refusal names the file and, where there is one, the place: the sheet row and column
(`bank_statement.xls:1048576:XFD: ...`), or the member, line and column of the XML
(`bank_statement.xlsx: not a readable XLSX/XLS workbook: xl/worksheets/sheet1.xml:2:10:
...`).
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
from collections.abc import Iterator
from xml.parsers import expat

from core.errors import Problem

# The most cells a worksheet's rectangle (from A1 to its farthest row and column) may span.
# A statement of a million lines and 30 columns spans 3e7 (~1.2 GB in the reader).
MAX_SHEET_CELLS = 30_000_000
# The most bytes the check unpacks from a zip workbook, all members together (a million-line
# statement's sheet XML is a few hundred MB). Above it the workbook is refused unread.
MAX_UNPACKED_BYTES = 1 << 30
EXCEL_ROWS = 1_048_576
EXCEL_COLUMNS = 16_384
_CHUNK = 1 << 20
_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_REF = re.compile(r"([A-Za-z]*)([0-9]+)")
_SHEET_DATA = (b"sheetData", "sheetData".encode("utf-16-le"), "sheetData".encode("utf-16-be"))
_NOT_READABLE = "not a readable XLSX/XLS workbook"


class _Refused(Exception):
    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def column_letters(number: int) -> str:
    letters = ""
    while number > 0:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _span_message(rows: int, columns: int, what: str) -> str:
    return (
        f"{what} makes a worksheet span {rows:,} rows by {columns:,} columns"
        f" ({rows * columns:,} cells from A1), more than the {MAX_SHEET_CELLS:,} a statement"
        " may span: copy the statement's own cells into a new workbook"
    )


class _Extent:
    """The farthest row and column (1-based) seen in one worksheet."""

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name
        self.rows = 0
        self.columns = 0

    def add(self, row: int, column: int, what: str) -> None:
        if row > EXCEL_ROWS or column > EXCEL_COLUMNS:
            raise _Refused(
                Problem(
                    self.file_name,
                    0,
                    "",
                    f"{_NOT_READABLE}: {what} lies beyond XFD1048576, the last cell a"
                    " worksheet has",
                )
            )
        if row <= self.rows and column <= self.columns:
            return
        self.rows, self.columns = max(self.rows, row), max(self.columns, column)
        if self.rows * self.columns > MAX_SHEET_CELLS:
            raise _Refused(
                Problem(
                    self.file_name,
                    row,
                    column_letters(column),
                    f"{_NOT_READABLE}: {_span_message(self.rows, self.columns, what)}",
                )
            )


def workbook_problem(file_name: str, data: bytes) -> Problem | None:
    """Why the reader must not be given these bytes (see the module docstring), or None."""
    try:
        if data[:8] == _CFB_MAGIC:
            _check_xls(file_name, data)
        if zipfile.is_zipfile(io.BytesIO(data)):
            _check_zip(file_name, data)
        elif data[:8] != _CFB_MAGIC:
            return Problem(
                file_name, 0, "", f"{_NOT_READABLE}: its bytes are neither an XLSX nor an XLS"
            )
    except _Refused as refused:
        return refused.problem
    return None


# --- XLSX ------------------------------------------------------------------------------


def _check_zip(file_name: str, data: bytes) -> None:
    def refuse(message: str) -> _Refused:
        return _Refused(Problem(file_name, 0, "", f"{_NOT_READABLE}: {message}"))

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as exc:
        raise refuse(f"its zip is damaged ({exc})") from exc
    with archive:
        members = archive.infolist()
        names = {m.filename.lower() for m in members}
        if {"mimetype", "content.xml"} & names or any(n.endswith("workbook.bin") for n in names):
            raise refuse("an XLSB or OpenDocument workbook: save it as XLSX or XLS")
        declared = sum(m.file_size for m in members)
        if declared > MAX_UNPACKED_BYTES:
            raise refuse(
                f"it unpacks to {declared:,} bytes, more than the {MAX_UNPACKED_BYTES:,} a"
                " statement may"
            )
        budget = [MAX_UNPACKED_BYTES]
        for member in members:
            if not member.is_dir():
                _scan_member(file_name, archive, member, budget)


def _chunks(
    file_name: str, archive: zipfile.ZipFile, member: zipfile.ZipInfo, budget: list[int]
) -> Iterator[bytes]:
    try:
        with archive.open(member) as stream:
            while chunk := stream.read(_CHUNK):
                budget[0] -= len(chunk)
                if budget[0] < 0:
                    raise _Refused(
                        Problem(
                            file_name,
                            0,
                            "",
                            f"{_NOT_READABLE}: it unpacks to more than the"
                            f" {MAX_UNPACKED_BYTES:,} bytes a statement may",
                        )
                    )
                yield chunk
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError) as exc:
        raise _Refused(
            Problem(
                file_name, 0, "", f"{_NOT_READABLE}: {member.filename} cannot be unpacked ({exc})"
            )
        ) from exc


def _cell_ref(text: str) -> tuple[int, int] | None:
    """(row, column), 1-based, of an A1-style reference as the reader parses it (letters of
    either case, then digits; no letters: column 0); None when it is not one."""
    found = _REF.fullmatch(text)
    if found is None or int(found.group(2)) == 0:
        return None
    column = 0
    for letter in found.group(1).upper():
        column = column * 26 + ord(letter) - 64
    return int(found.group(2)), column


class _SheetXml:
    """Places the cells of one XML member as the reader does (see the module docstring)."""

    def __init__(self, file_name: str, member: str, parser: expat.XMLParserType) -> None:
        self.file_name = file_name
        self.member = member
        self.parser = parser
        self.extent = _Extent(file_name)
        self.stack: list[str] = []
        self.inside = 0  # how many open sheetData elements contain the current element
        self.row = 0  # the reader's running row and column, 0-based
        self.column = 0

    def where(self) -> str:
        return f"{self.member}:{self.parser.CurrentLineNumber}:{self.parser.CurrentColumnNumber}"

    def refuse(self, message: str) -> _Refused:
        return _Refused(
            Problem(self.file_name, 0, "", f"{_NOT_READABLE}: {self.where()}: {message}")
        )

    def start(self, name: str, attrs: dict[str, str]) -> None:
        local = name.split(":", 1)[-1]
        parent = self.stack[-1] if self.stack else ""
        self.stack.append(local)
        if local == "sheetData":
            self.inside += 1
            return
        if not self.inside:
            return
        if local == "row":
            if parent != "sheetData":
                raise self.refuse("a row that is not directly inside sheetData")
            if (r := attrs.get("r")) is not None:
                place = _cell_ref(r)
                if place is None:
                    raise self.refuse(f"row number {r[:20]!r} is not a number")
                self.row = place[0] - 1
        elif local == "c":
            if parent != "row":
                raise self.refuse("a cell that is not directly inside a row")
            if (r := attrs.get("r")) is not None:
                place = _cell_ref(r)
                if place is None or place[1] == 0:
                    raise self.refuse(f"cell reference {r[:20]!r} is not A1-style")
                row, column = place
                self.column = column - 1
                what = f"the cell {r} at {self.where()}"
            else:
                row, column = self.row + 1, self.column + 1
                what = f"the cell at {self.where()} (row {row:,}, column {column:,})"
            self.extent.add(row, column, what)

    def end(self, name: str) -> None:
        local = self.stack.pop()
        if local == "sheetData":
            self.inside -= 1
        elif self.inside and local == "row":
            self.row += 1
            self.column = 0
        elif self.inside and local == "c":
            self.column += 1


def _scan_member(
    file_name: str, archive: zipfile.ZipFile, member: zipfile.ZipInfo, budget: list[int]
) -> None:
    parser = expat.ParserCreate()
    sheet = _SheetXml(file_name, member.filename, parser)
    parser.StartElementHandler = sheet.start
    parser.EndElementHandler = sheet.end

    def no_doctype(*_: object) -> None:
        raise expat.ExpatError("a DOCTYPE, which no workbook part has")

    parser.StartDoctypeDeclHandler = no_doctype
    failed: str | None = None
    mentions = False
    tail = b""
    for chunk in _chunks(file_name, archive, member, budget):
        window = tail + chunk
        mentions = mentions or any(marker in window for marker in _SHEET_DATA)
        tail = window[-32:]
        if failed is None:
            try:
                parser.Parse(chunk, False)
            except expat.ExpatError as exc:
                failed = f"{sheet.where()}: not well-formed XML ({exc})"
        if failed is not None and mentions:
            break
    if failed is None:
        try:
            parser.Parse(b"", True)
        except expat.ExpatError as exc:
            failed = f"{sheet.where()}: not well-formed XML ({exc})"
    if failed is not None and mentions:
        # the reader may still find cells in it; we cannot place them, so it is not read
        raise _Refused(Problem(file_name, 0, "", f"{_NOT_READABLE}: {failed}"))


# --- XLS -------------------------------------------------------------------------------

_ENDOFCHAIN = 0xFFFFFFFE
_CELL_RECORDS = {0x0006, 0x0203, 0x0204, 0x00D6, 0x0205, 0x027E, 0x00FD}
_MULTI_RECORDS = {0x00BD, 0x00BE}  # MulRk, MulBlank: row, first column, ..., last column
_BOF, _EOF, _BOUNDSHEET, _DIMENSIONS = 0x0809, 0x000A, 0x0085, 0x0200


def _check_xls(file_name: str, data: bytes) -> None:
    try:
        streams = _cfb_workbook_streams(data)
    except (struct.error, IndexError, ValueError) as exc:
        raise _Refused(
            Problem(file_name, 0, "", f"{_NOT_READABLE}: its compound file is damaged ({exc})")
        ) from exc
    for stream in streams:
        _check_biff(file_name, stream)


def _cfb_workbook_streams(data: bytes) -> list[bytes]:
    """The streams named Workbook or Book (any case) of an OLE2 compound file: the ones the
    reader looks for."""
    shift, mini_shift = struct.unpack_from("<HH", data, 0x1E)
    if shift not in (9, 12) or mini_shift != 6:
        raise ValueError(f"sector shift {shift}/{mini_shift}")
    size = 1 << shift
    sectors = (len(data) - 512 + size - 1) // size
    n_fat, first_dir = struct.unpack_from("<II", data, 0x2C)
    cutoff, first_mini, n_mini, first_difat, n_difat = struct.unpack_from("<IIIII", data, 0x38)

    def sector(n: int) -> bytes:
        if n >= sectors:
            raise ValueError(f"sector {n} beyond the file")
        return data[512 + n * size : 512 + (n + 1) * size]

    difat = list(struct.unpack_from("<109I", data, 0x4C))
    seen: set[int] = set()
    at = first_difat
    while at != _ENDOFCHAIN and len(seen) < n_difat + 1 and at < sectors:
        seen.add(at)
        pointers = struct.unpack(f"<{size // 4}I", sector(at))
        difat += pointers[:-1]
        at = pointers[-1]
    fat: list[int] = []
    for n in difat[: max(n_fat, 0)]:
        fat += struct.unpack(f"<{size // 4}I", sector(n))

    def chain(start: int, table: list[int], limit: int) -> list[int]:
        out: list[int] = []
        while start != _ENDOFCHAIN:
            if start >= len(table) or len(out) > limit:
                raise ValueError("a broken sector chain")
            out.append(start)
            start = table[start]
        return out

    directory = b"".join(sector(n) for n in chain(first_dir, fat, sectors))
    entries: list[tuple[str, int, int, int]] = []
    for offset in range(0, len(directory) - 127, 128):
        entry = directory[offset : offset + 128]
        length = min(struct.unpack_from("<H", entry, 64)[0], 64)
        name = entry[: max(length - 2, 0)].decode("utf-16-le", "replace")
        kind = entry[66]
        start, low, high = struct.unpack_from("<III", entry, 116)
        entries.append((name, kind, start, low if shift == 9 else low | high << 32))
    if not entries:
        raise ValueError("no directory")
    mini_fat: list[int] = []
    for n in chain(first_mini, fat, sectors) if n_mini else []:
        mini_fat += struct.unpack(f"<{size // 4}I", sector(n))
    root = entries[0]
    mini_stream = b"".join(sector(n) for n in chain(root[2], fat, sectors)) if root[3] else b""
    found: list[bytes] = []
    for name, kind, start, length in entries:
        if kind != 2 or name.lower() not in ("workbook", "book"):
            continue
        if length < cutoff:
            blocks = chain(start, mini_fat, len(mini_stream) // 64 + 1)
            body = b"".join(mini_stream[n * 64 : (n + 1) * 64] for n in blocks)
        else:
            body = b"".join(sector(n) for n in chain(start, fat, sectors))
        found.append(body[:length])
    return found


def _records(stream: bytes, at: int) -> Iterator[tuple[int, int, bytes]]:
    """(offset, type, data) of the BIFF records from `at`, as the reader splits them."""
    while at + 4 <= len(stream):
        kind, length = struct.unpack_from("<HH", stream, at)
        yield at, kind, stream[at + 4 : at + 4 + length]
        at += 4 + length


def _check_biff(file_name: str, stream: bytes) -> None:
    sheets = [
        struct.unpack_from("<I", body)[0]
        for _, kind, body in _records(stream, 0)
        if kind == _BOUNDSHEET and len(body) >= 4
    ]
    for number, start in enumerate(sheets, 1):
        if start >= len(stream):
            raise _Refused(
                Problem(
                    file_name,
                    0,
                    "",
                    f"{_NOT_READABLE}: sheet {number} starts at byte {start:,}, beyond its"
                    f" {len(stream):,}-byte workbook stream",
                )
            )
        extent = _Extent(file_name)
        depth = 0
        seen_bof = False
        for offset, kind, body in _records(stream, start):
            where = f"the {_record_name(kind)} record at byte {offset:,} of sheet {number}"
            if kind == _BOF:
                depth += 1 if seen_bof else 0
                seen_bof = True
            elif kind == _EOF:
                if depth == 0:
                    break
                depth -= 1
            elif kind in _CELL_RECORDS and len(body) >= 4:
                row, column = struct.unpack_from("<HH", body)
                extent.add(row + 1, column + 1, where)
            elif kind in _MULTI_RECORDS and len(body) >= 6:
                row, first = struct.unpack_from("<HH", body)
                (last,) = struct.unpack_from("<H", body, len(body) - 2)
                count = (len(body) - 6) // (6 if kind == 0x00BD else 2)
                extent.add(row + 1, max(first + count, last + 1, first + 1), where)
            elif kind == _DIMENSIONS and len(body) in (10, 14):
                _check_dimensions(body, extent, where)


def _check_dimensions(body: bytes, extent: _Extent, where: str) -> None:
    """The reader reserves room for the rows and columns a Dimensions record names (its
    arithmetic wraps at 2^32): refuse a range it could not hold."""
    if len(body) == 10:
        first_row, last_row, first_col, last_col = struct.unpack_from("<HHHH", body)
    else:
        first_row, last_row, first_col, last_col = struct.unpack_from("<IIHH", body)
    if first_col > 0xFF or last_col < first_col:
        first_col = 0
    if last_row < 1 or last_col < 1:
        return
    rows = (last_row - first_row) % (1 << 32)
    columns = (last_col - first_col) % (1 << 32)
    if rows * columns > MAX_SHEET_CELLS:
        raise _Refused(
            Problem(
                extent.file_name,
                0,
                "",
                f"{_NOT_READABLE}: {where} names rows {first_row + 1:,} to {last_row:,} and"
                f" {columns:,} columns ({rows * columns:,} cells), more than the"
                f" {MAX_SHEET_CELLS:,} a statement may span",
            )
        )


def _record_name(kind: int) -> str:
    names = {
        0x0006: "Formula",
        0x0203: "Number",
        0x0204: "Label",
        0x00D6: "RString",
        0x0205: "BoolErr",
        0x027E: "RK",
        0x00FD: "LabelSst",
        0x00BD: "MulRk",
        0x00BE: "MulBlank",
        0x0200: "Dimensions",
    }
    return names.get(kind, f"0x{kind:04X}")
