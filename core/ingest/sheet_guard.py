"""What a workbook would make the spreadsheet reader allocate, checked before it reads it.

python-calamine builds each worksheet it reads as one dense rectangle, and our call
(`to_python(skip_empty_area=False)`) widens it to start at A1: a sheet whose farthest cell
is row R, column C costs R x C cells (~40 bytes each) whatever lies between. A native
allocation that fails aborts the whole process (SIGABRT), the app server included, so a
6 KB file with one cell at XFD1048576 took the server down (independent attackers, rounds
2 and 3). The reader chooses the format by the bytes, never by the file's name, so this
check does too:

- a zip (XLSX; the reader would also try XLSB and ODS, which we do not read and refuse):
  every member is streamed through expat (no DOCTYPE), capped at MAX_UNPACKED_BYTES in
  all. A member that holds `sheetData` but is not well-formed XML is refused: the reader's
  parser is more lenient than expat, and a cell we could not place is a cell we could not
  bound. Cells are placed the way the reader places them (a cell's `r`, else the running
  position of its row and column): a fast pass takes the largest row and column of the
  `r`s by regex (`_ExplicitCells`, exact when every cell tag has one); when it cannot
  decide, the exact pass (`_Tokenizer` into `_Cells`) walks the sheetData, row and c tags
  in order, refuses rows and cells nested other than row-in-sheetData and cell-in-row, and
  names the cell that goes too far.
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
from collections.abc import Callable, Iterator
from functools import partial
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

    def add(self, row: int, column: int, what: Callable[[], str]) -> None:
        """Take a cell at (row, column); `what()` names it, asked only for a refusal."""
        if row <= self.rows and column <= self.columns:
            return
        if row > EXCEL_ROWS or column > EXCEL_COLUMNS:
            raise _Refused(
                Problem(
                    self.file_name,
                    0,
                    "",
                    f"{_NOT_READABLE}: {what()} lies beyond XFD1048576, the last cell a"
                    " worksheet has",
                )
            )
        self.rows, self.columns = max(self.rows, row), max(self.columns, column)
        if self.rows * self.columns > MAX_SHEET_CELLS:
            raise _Refused(
                Problem(
                    self.file_name,
                    row,
                    column_letters(column),
                    f"{_NOT_READABLE}: {_span_message(self.rows, self.columns, what())}",
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
    if found is None or not found.group(2).strip("0"):
        return None
    letters, digits = found.group(1).upper(), found.group(2).lstrip("0")
    if len(letters) > 3 or len(digits) > 7:  # past XFD1048576 (and int()'s digit limit)
        return (EXCEL_ROWS + 1 if len(digits) > 7 else int(digits)), EXCEL_COLUMNS + 1
    column = 0
    for letter in letters:
        column = column * 26 + ord(letter) - 64
    return int(digits), column


class _Cells:
    """Places the cells of one XML member as the reader does (see the module docstring):
    fed the start and end of its `sheetData`, `row` and `c` elements only (local names,
    any prefix); `where()` names the current place for a refusal."""

    def __init__(self, file_name: str, where: Callable[[], str]) -> None:
        self.file_name = file_name
        self.where = where
        self.extent = _Extent(file_name)
        self.stack: list[str] = []  # the open sheetData, row and c elements
        self.row = 0  # the reader's running row and column, 0-based
        self.column = 0

    def refuse(self, message: str) -> _Refused:
        said = f"{_NOT_READABLE}: {self.where()}: {message}"
        return _Refused(Problem(self.file_name, 0, "", said))

    def start(self, local: str, r: str | None) -> None:
        parent = self.stack[-1] if self.stack else ""
        self.stack.append(local)
        if local == "sheetData" or "sheetData" not in self.stack:
            return
        if local == "row":
            if parent != "sheetData":
                raise self.refuse("a row that is not inside sheetData alone")
            if r is not None:
                place = _cell_ref(r)
                if place is None:
                    raise self.refuse(f"row number {r[:20]!r} is not a number")
                self.row = place[0] - 1
        elif local == "c":
            if parent != "row":
                raise self.refuse("a cell that is not inside a row alone")
            if r is not None:
                place = _cell_ref(r)
                if place is None or place[1] == 0:
                    raise self.refuse(f"cell reference {r[:20]!r} is not A1-style")
                row, column = place
                self.column = column - 1
                self.extent.add(row, column, lambda: f"the cell {r[:20]} at {self.where()}")
            else:
                row, column = self.row + 1, self.column + 1
                self.extent.add(
                    row,
                    column,
                    lambda: f"the cell at {self.where()} (row {row:,}, column {column:,})",
                )

    def end(self, local: str) -> None:
        if not self.stack or self.stack[-1] != local:
            raise self.refuse(f"an end of {local} that closes nothing")
        self.stack.pop()
        if "sheetData" not in self.stack:
            return
        if local == "row":
            self.row += 1
            self.column = 0
        elif local == "c":
            self.column += 1


_WANTED = frozenset(("sheetData", "row", "c"))
# The markup the tokenizer stops at in well-formed XML without a DOCTYPE (where '<' opens
# markup and nothing else): comments, CDATA and processing instructions (skipped whole,
# since they may hold text that looks like tags), and the tags of sheetData, row and c.
_MARKUP = re.compile(
    rb"<(?:(!--)|(!\[CDATA\[)|(\?)|(/?)(?:[^\s/>:<]+:)?(sheetData|row|c)(?=[\s/>]))"
)
_TAG_REST = re.compile(rb"((?:[^>\"']|\"[^\"]*\"|'[^']*')*?)(/?)>")
_ATTRIBUTE = re.compile(rb"\s*([^\s=/>]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_MAX_TAG = 1 << 16


def _attribute_r(text: bytes) -> str | None:
    """The raw value of the attribute named exactly `r` (as the reader reads it: no
    entities replaced), or None."""
    at = 0
    while (found := _ATTRIBUTE.match(text, at)) is not None:
        if found.group(1) == b"r":
            raw = found.group(2) if found.group(2) is not None else found.group(3)
            return raw.decode("utf-8", "replace")
        at = found.end()
    return None


class _Tokenizer:
    """Feeds _Cells from raw bytes (chunk by chunk): a C-speed regex finds the few tags that
    matter while expat, with no element handlers, proves the member well-formed. Used for
    ASCII-compatible encodings; the tokenizer is exact only for well-formed XML, and a member
    that is not is refused whatever the tokenizer said."""

    def __init__(self, file_name: str, member: str) -> None:
        self.member = member
        self.cells = _Cells(file_name, self.where)
        self.buffer = b""
        self.position = 0
        self.lines = 1  # the line the buffer starts on
        self.column_base = 0  # the column the buffer starts at
        self.skip_to: bytes | None = None

    def where(self) -> str:
        before = self.buffer[: self.position]
        newlines = before.count(b"\n")
        if newlines:
            column = self.position - before.rfind(b"\n") - 1
        else:
            column = self.column_base + self.position
        return f"{self.member}:{self.lines + newlines}:{column}"

    def _keep(self, start: int) -> None:
        done = self.buffer[:start]
        newlines = done.count(b"\n")
        if newlines:
            self.column_base = len(done) - done.rfind(b"\n") - 1
        else:
            self.column_base += len(done)
        self.lines += newlines
        self.buffer = self.buffer[start:]
        self.position = 0

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        buffer = self.buffer
        at = self.position
        while True:
            if self.skip_to is not None:
                end = buffer.find(self.skip_to, at)
                if end < 0:
                    self.position = at
                    self._keep(max(at, len(buffer) - len(self.skip_to) + 1))
                    return
                at = end + len(self.skip_to)
                self.skip_to = None
            found = _MARKUP.search(buffer, at)
            if found is None:
                last = buffer.rfind(b"<", at)
                self.position = at
                self._keep(last if last >= 0 else len(buffer))
                return
            if found.group(1) or found.group(2) or found.group(3):
                self.skip_to = b"-->" if found.group(1) else b"]]>" if found.group(2) else b"?>"
                at = found.end()
                continue
            rest = _TAG_REST.match(buffer, found.end())
            if rest is None:
                self.position = found.start()
                if len(buffer) - found.start() > _MAX_TAG:
                    raise self.cells.refuse(f"a tag longer than {_MAX_TAG:,} bytes")
                self._keep(found.start())
                return
            self.position = found.start()
            local = found.group(5).decode()
            if found.group(4):
                self.cells.end(local)
            else:
                self.cells.start(local, _attribute_r(rest.group(1)))
                if rest.group(2):
                    self.cells.end(local)
            at = rest.end()


def _utf16(head: bytes) -> bool:
    return head[:2] in (b"\xff\xfe", b"\xfe\xff", b"<\x00", b"\x00<")


# Fast path: when every `c` start tag of a member carries an `r` (Excel, openpyxl and every
# export seen write one), the reader places each cell at its `r`, and the rectangle only
# needs the largest row and column: two regex passes in C per chunk, no Python per cell.
# A tag never holds '<' (not in a value either), so a match stays between one '<' and the
# next and cannot swallow a real tag; a comment or CDATA holding tag-like text only adds
# matches, which makes the count differ (the exact tokenizer then runs) or adds cells.
_C_OPEN = re.compile(rb"<(?:[^\s/>:<]+:)?c(?=[\s/>])")
_C_WITH_R = re.compile(
    rb"<(?:[^\s/>:<]+:)?c\s+(?:[^\s=/><]+\s*=\s*(?:\"[^\"<]*\"|'[^'<]*')\s+)*?"
    rb"r\s*=\s*(?:\"([A-Za-z]{0,3})([0-9]{1,7})\"|'([A-Za-z]{0,3})([0-9]{1,7})')"
)
_WHOLE_TAG = re.compile(rb"<[^<>\"']*(?:(?:\"[^\"<]*\"|'[^'<]*')[^<>\"']*)*>")


class _ExplicitCells:
    """The largest row and column of `c` tags that all carry an `r`; `implicit` once one
    does not (or its `r` is no A1 reference): the caller then places cells one by one."""

    def __init__(self) -> None:
        self.rows = 0
        self.columns = 0
        self.implicit = False
        self.tail = b""

    def feed(self, chunk: bytes, final: bool = False) -> None:
        buffer = self.tail + chunk
        cut = len(buffer) if final else buffer.rfind(b"<")
        if 0 <= cut < len(buffer) and _WHOLE_TAG.match(buffer, cut):
            cut = len(buffer)
        if cut < 0:
            cut = len(buffer)
        done, self.tail = buffer[:cut], buffer[cut:]
        if len(self.tail) > _MAX_TAG:
            self.implicit = True  # a tag this long: leave it to the tokenizer's refusal
            return
        refs = _C_WITH_R.findall(done)
        if len(refs) != len(_C_OPEN.findall(done)):
            self.implicit = True
            return
        if not refs:
            return
        rows = max(int(r[1] or r[3]) for r in refs)
        letters = [(r[0] or r[2]).upper() for r in refs]
        width = max(map(len, letters))
        widest = max(x for x in letters if len(x) == width)
        column = _cell_ref(widest.decode("ascii") + "1")
        if column is None or column[1] == 0:
            self.implicit = True
            return
        self.rows, self.columns = max(self.rows, rows), max(self.columns, column[1])

    def too_far(self) -> bool:
        return (
            self.rows > EXCEL_ROWS
            or self.columns > EXCEL_COLUMNS
            or self.rows * self.columns > MAX_SHEET_CELLS
        )


def _scan_member(
    file_name: str, archive: zipfile.ZipFile, member: zipfile.ZipInfo, budget: list[int]
) -> None:
    """Refuse the member if the reader could find cells in it that we cannot bound, or that
    span too much (fast path first; the exact tokenizer when it cannot decide)."""
    if not _scan(file_name, archive, member, budget, exact=False):
        _scan(file_name, archive, member, budget, exact=True)


def _scan(
    file_name: str,
    archive: zipfile.ZipFile,
    member: zipfile.ZipInfo,
    budget: list[int],
    *,
    exact: bool,
) -> bool:
    """One pass over the member; False when the fast path cannot decide (cells without an
    `r`, UTF-16, or cells too far: the exact pass then places them and names the cell)."""
    parser = expat.ParserCreate()

    def no_doctype(*_: object) -> None:
        raise expat.ExpatError("a DOCTYPE, which no workbook part has")

    def expat_where() -> str:
        return f"{member.filename}:{parser.CurrentLineNumber}:{parser.CurrentColumnNumber}"

    parser.StartDoctypeDeclHandler = no_doctype
    tokenizer: _Tokenizer | None = None
    explicit = _ExplicitCells()
    failed: str | None = None
    mentions = False
    tail = b""
    for chunk in _chunks(file_name, archive, member, budget):
        window = tail + chunk
        mentions = mentions or any(marker in window for marker in _SHEET_DATA)
        if not tail and _utf16(chunk):  # not ASCII-compatible: expat calls back instead
            if not exact:
                return False
            _expat_cells(parser, _Cells(file_name, expat_where))
        elif not tail and exact:
            tokenizer = _Tokenizer(file_name, member.filename)
        tail = window[-32:]
        if failed is None:
            try:
                parser.Parse(chunk, False)
            except expat.ExpatError as exc:
                failed = f"{expat_where()}: not well-formed XML ({exc})"
        if failed is None and tokenizer is not None:
            tokenizer.feed(chunk)
        elif failed is None and not exact:
            explicit.feed(chunk)
            if explicit.implicit or explicit.too_far():
                return False
        if failed is not None and mentions:
            break
    if failed is None:
        try:
            parser.Parse(b"", True)
        except expat.ExpatError as exc:
            failed = f"{expat_where()}: not well-formed XML ({exc})"
    if failed is not None and mentions:
        # the reader may still find cells in it; we cannot place them, so it is not read
        raise _Refused(Problem(file_name, 0, "", f"{_NOT_READABLE}: {failed}"))
    if not exact:
        explicit.feed(b"", final=True)
        if explicit.implicit or explicit.too_far():
            return False
    return True


def _expat_cells(parser: expat.XMLParserType, cells: _Cells) -> None:
    """Feed `cells` from expat's callbacks (slower: one call per element)."""

    def start(name: str, attrs: dict[str, str]) -> None:
        local = name.split(":", 1)[-1]
        if local in _WANTED:
            cells.start(local, attrs.get("r"))

    def end(name: str) -> None:
        local = name.split(":", 1)[-1]
        if local in _WANTED:
            cells.end(local)

    parser.StartElementHandler = start
    parser.EndElementHandler = end


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
            where = partial(_record_where, kind, offset, number)
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
                _check_dimensions(body, extent, where())


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


def _record_where(kind: int, offset: int, sheet: int) -> str:
    return f"the {_record_name(kind)} record at byte {offset:,} of sheet {sheet}"


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
