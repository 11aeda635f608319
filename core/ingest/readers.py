"""Reading entity files (CSV or JSON) into Arrow string columns, with exact line numbers.

A `RawTable` holds every wanted column as strings (null for an empty cell) keyed by its
normalised name, and can tell the physical line of any row. Line numbers are computed only
when a problem needs them: on the happy path the CSV is parsed once, by Arrow.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from core.errors import ConfigError, Problem
from core.ingest import json_index
from core.ingest.failure import ReadFailure as ReadFailure
from core.ingest.headers import repeated_column
from core.ingest.sheets import read_sheet

UTF8_BOM = b"\xef\xbb\xbf"
# The csv module's own default field limit: a longer cell is refused, by every reader, with
# its line and column. The module's limit itself is raised (once, for the process) so that
# the csv module never raises mid-file: we find such a cell and name it instead.
MAX_CELL_CHARS = 131_072
csv.field_size_limit(max(csv.field_size_limit(), (1 << 31) - 1))
# Deeper JSON than this is refused (json.loads would run out of recursion near 1,000).
MAX_JSON_DEPTH = 64
# Python's int() refuses longer digit strings (sys.get_int_max_str_digits()).
MAX_NUMBER_DIGITS = 4300
# Small JSON files are scanned for those two before json.loads; a larger one only when it
# fails (a deep one either fails or shows a run of brackets).
DEPTH_SCAN_MAX_CHARS = 4 << 20


def normalise_header(name: str) -> str:
    """'Created At ' -> 'created_at': case-, space- and BOM-insensitive."""
    return "_".join(name.replace("\ufeff", "").strip().lower().split())


@dataclass
class RawTable:
    """One input file's cells as Arrow strings.

    file: the file's name as shown in problems; fmt: 'csv', 'json' or 'items';
    columns: normalised column name -> string array (null = empty cell);
    written_names: normalised name -> the name as the file writes it;
    ignored: columns present in the file but not read; n_rows: data rows;
    header_line: physical line of the CSV header (0 for JSON);
    line_finder: computes the physical line of every row (called only when needed).
    """

    file: str
    fmt: str
    columns: dict[str, pa.Array]
    written_names: dict[str, str]
    ignored: tuple[str, ...]
    n_rows: int
    header_line: int
    line_finder: Callable[[], npt.NDArray[np.int64]]
    aliased: bool = False  # some header was a dashboard name mapped to an API field
    # No cell can hold a NUL: the file's bytes were searched before parsing (CSV has no
    # escapes), so the per-cell NUL search is skipped.
    nul_free: bool = False
    _lines: npt.NDArray[np.int64] | None = field(default=None, repr=False)

    def lines(self) -> npt.NDArray[np.int64]:
        if self._lines is None:
            self._lines = self.line_finder()
        return self._lines

    @property
    def by_line(self) -> bool:
        """Rows are lines of a text or sheet (else items of a JSON list)."""
        return self.fmt not in ("json", "items")

    def column_label(self, name: str) -> str:
        return self.written_names.get(name, name)


def _utf8_problem(file: str, data: bytes, exc: UnicodeDecodeError) -> Problem:
    line = data.count(b"\n", 0, exc.start) + 1
    column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
    return Problem(file, line, str(column), "not UTF-8 text (save the file as UTF-8)")


def position_of(data: bytes | str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a byte (or character) offset."""
    newline = b"\n" if isinstance(data, bytes) else "\n"
    line = data.count(newline, 0, offset) + 1  # type: ignore[arg-type]
    column = offset - (data.rfind(newline, 0, offset) + 1) + 1  # type: ignore[arg-type]
    return line, column


def nul_problem(file: str, data: bytes) -> Problem | None:
    """A NUL byte has no place in a CSV, JSON or text file: the first one, named, or None."""
    at = data.find(b"\0")
    if at < 0:
        return None
    line, column = position_of(data, at)
    count = data.count(b"\0")
    more = f" ({count} NUL bytes in the file)" if count > 1 else ""
    return Problem(file, line, str(column), f"NUL byte: not a text file{more}")


def refuse_nul(file: str, data: bytes) -> None:
    problem = nul_problem(file, data)
    if problem is not None:
        raise ReadFailure([problem])


def oversize_cells(
    file: str,
    records: Sequence[tuple[int, Sequence[str]]],
    names: Mapping[int, str] | None = None,
    header_line: int = 0,
    *,
    only_named: bool = False,
) -> list[Problem]:
    """Cells longer than MAX_CELL_CHARS. A cell below `header_line` whose column has a name in
    `names` (0-based position -> the name as the file writes it) is named by it, any other
    by its 1-based column number; `only_named`: only cells of named columns (the ones read)."""
    names = names or {}
    problems: list[Problem] = []
    for line, cells in records:
        for position, cell in enumerate(cells):
            if len(cell) <= MAX_CELL_CHARS:
                continue
            name = names.get(position) if line > header_line else None
            if only_named and name is None:
                continue
            message = (
                f"cell of {len(cell):,} characters: longer than the {MAX_CELL_CHARS:,} allowed"
            )
            problems.append(Problem(file, line, name or str(position + 1), message))
    return problems


def decode_text(file: str, data: bytes) -> str:
    refuse_nul(file, data)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReadFailure([_utf8_problem(file, data, exc)]) from exc


def csv_record_lines(text: str) -> list[tuple[int, list[str]]]:
    """(first physical line, cells) of every CSV record, blank lines left out.

    Quoted cells may span lines: `line_num` counts physical lines consumed, so a record's first
    line is one past the previous record's last line.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    records: list[tuple[int, list[str]]] = []
    previous_end = 0
    for cells in reader:
        start = previous_end + 1
        previous_end = reader.line_num
        if not cells:
            continue
        records.append((start, cells))
    return records


HEADER_PROBE_BYTES = 1 << 20
# Arrow's largest block (an int32): a file with a row longer than 1 MB is parsed in one block.
MAX_BLOCK_BYTES = (1 << 31) - 1
STREAM_CHUNK_BYTES = 1 << 20


def _header_of(text: str) -> tuple[int, list[str]]:
    """The first non-blank record of `text` (the start of a file): (line, names)."""
    offset = 0
    line = 1
    while offset < len(text):
        end = text.find("\n", offset)
        end = len(text) if end < 0 else end
        if text[offset:end].strip():
            # A quoted header cell could span lines; parse from here with the csv module.
            reader = csv.reader(io.StringIO(text[offset:], newline=""))
            return line, next(reader)
        offset = end + 1
        line += 1
    return 0, []


def _header_fields(
    header: Sequence[str], aliases: Mapping[str, str] | None
) -> list[tuple[int, str, str]]:
    """(position, name as written, field) of each header cell that is not blank: the name
    normalised (`normalise_header`: case, spaces, BOM) and a dashboard alias mapped to its
    API field, so `Payment ID` and `id` are the same field."""
    cells = ((position, name, normalise_header(name)) for position, name in enumerate(header))
    return [
        (position, name, (aliases or {}).get(normal, normal))
        for position, name, normal in cells
        if normal
    ]


def header_keys(
    header: Sequence[str],
    wanted: Sequence[str],
    aliases: Mapping[str, str] | None,
    *,
    file: str,
    line: int,
) -> tuple[dict[str, int], dict[str, str], tuple[str, ...], bool]:
    """Map a header row to wanted fields: (field -> cell index, field -> written name,
    ignored names, whether a dashboard alias was used). Blank header cells are skipped.

    Every Razorpay table's header (CSV, sheet, streamed CSV) passes here. Two cells naming
    one wanted field (the same name twice, or two spellings of one field) refuse the file:
    ReadFailure naming `file`:`line` (the header's) and both columns, rather than read one
    of the two. A repeated column the importer ignores is listed twice among the ignored,
    and neither copy is read."""
    index: dict[str, int] = {}
    written: dict[str, str] = {}
    ignored: list[str] = []
    repeated: list[Problem] = []
    aliased = False
    for position, name, key in _header_fields(header, aliases):
        if key not in wanted:
            ignored.append(name)
        elif key in index:
            first = index[key]
            repeated.append(repeated_column(file, line, position, name, first, header[first], key))
        else:
            index[key] = position
            written[key] = name
            aliased = aliased or key != normalise_header(name)
    if repeated:
        raise ReadFailure(repeated)
    return index, written, tuple(ignored), aliased


def read_sheet_table(
    file: str,
    data: bytes,
    wanted: Sequence[str],
    aliases: Mapping[str, str] | None = None,
    fmt: str = "xlsx",
) -> RawTable:
    """The first sheet of a workbook: the header is the first row naming two or more wanted
    fields (banner rows above it are skipped); blank leading columns are ignored."""
    rows = read_sheet(file, data).rows  # an unreadable workbook raises ReadFailure
    if not rows:
        raise ReadFailure([Problem(file, 0, "", "the sheet is empty: no header row")])
    header_at = 0
    for position, (_, cells) in enumerate(rows[:50]):
        if len({key for _, _, key in _header_fields(cells, aliases) if key in wanted}) >= 2:
            header_at = position
            break
    header_line, header = rows[header_at]
    index, written, ignored, aliased = header_keys(
        header, wanted, aliases, file=file, line=header_line
    )
    body = rows[header_at + 1 :]
    columns: dict[str, pa.Array] = {}
    for key, position in index.items():
        values = [cells[position] if position < len(cells) else "" for _, cells in body]
        columns[key] = pa.array([v if v != "" else None for v in values], type=pa.string())
    lines = np.asarray([line for line, _ in body], dtype=np.int64)
    return RawTable(
        file=file,
        fmt=fmt,
        columns=columns,
        written_names=written,
        ignored=ignored,
        n_rows=len(body),
        header_line=header_line,
        line_finder=lambda: lines,
        aliased=aliased,
    )


def file_has_nul(path: Path) -> bool:
    """Whether a file holds a NUL byte, read 1 MB at a time (never the whole file at once)."""
    return scan_file(path, hashing=False)[1]


@dataclass(frozen=True)
class FileScan:
    """What one read of a file tells before Arrow parses it: its sha256 ('' when not asked),
    whether it holds a NUL byte, its physical lines (LF bytes, plus one for a last line
    without one) and whether it holds a CR not followed by LF (Arrow ends a row there too)."""

    sha256: str
    has_nul: bool
    lines: int
    bare_cr: bool


def scan_file(
    path: Path, *, hashing: bool = True, chunk_bytes: int = STREAM_CHUNK_BYTES
) -> tuple[str, bool]:
    """(sha256 hex digest, whether it holds a NUL byte) of a file, read once, `chunk_bytes` at
    a time into one reused buffer (never the whole file at once). The digest is '' when not
    `hashing`; without it the scan stops at the first NUL."""
    scan = scan_csv_file(path, hashing=hashing, chunk_bytes=chunk_bytes)
    return scan.sha256, scan.has_nul


def scan_csv_file(
    path: Path, *, hashing: bool = True, chunk_bytes: int = STREAM_CHUNK_BYTES
) -> FileScan:
    """`scan_file`, counting the file's lines and CR bytes in the same read (`bytearray.count`
    in place in the reused buffer). Without `hashing` the scan stops at the first NUL (the
    file is refused: its line count is then partial and never used)."""
    digest = hashlib.sha256() if hashing else None
    has_nul = False
    newlines = carriage_returns = crlf = 0
    last = -1  # the previous chunk's last byte (a CR LF may straddle two chunks); -1: none
    buffer = bytearray(chunk_bytes)
    view = memoryview(buffer)
    octets = np.frombuffer(buffer, dtype=np.uint8)  # the same bytes, for a vectorised count
    with path.open("rb", buffering=0) as stream:
        while size := stream.readinto(buffer):
            has_nul = has_nul or buffer.find(b"\0", 0, size) >= 0
            # numpy counts LF bytes ~6x faster than bytearray.count (0.07 s for 350 MB); a
            # CR is looked for first (memchr) and counted only when there is one.
            newlines += int(np.count_nonzero(octets[:size] == 0x0A))
            if buffer.find(b"\r", 0, size) >= 0:
                carriage_returns += buffer.count(b"\r", 0, size)
                crlf += buffer.count(b"\r\n", 0, size)
            if last == 0x0D and buffer[0] == 0x0A:
                crlf += 1
            last = buffer[size - 1]
            if digest is None:
                if has_nul:
                    break
                continue
            digest.update(view[:size])
    lines = newlines + (1 if last not in (-1, 0x0A) else 0)
    return FileScan(
        sha256="" if digest is None else digest.hexdigest(),
        has_nul=has_nul,
        lines=lines,
        bare_cr=carriage_returns != crlf,
    )


MAX_FILE_MB_ENV = "RAZORRECON_MAX_FILE_MB"
DEFAULT_MAX_FILE_MB = 512


def max_file_bytes() -> int:
    """The largest input file accepted, from RAZORRECON_MAX_FILE_MB (default 512 MB).
    A file's bytes, its text and its columns are in memory together while it is read."""
    text = os.environ.get(MAX_FILE_MB_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_FILE_MB << 20
    try:
        megabytes = int(text)
    except ValueError:
        megabytes = 0
    if megabytes <= 0:
        raise ConfigError(f"{MAX_FILE_MB_ENV} must be a whole number of MB above 0, not {text!r}")
    return megabytes << 20


# Files at least this large take turns in core.ingest.load (import memory), or a thread of
# their own when the load overlaps them; `prefetch_large_csvs` parses them early.
LARGE_FILE_BYTES = 32 << 20


def prefetch_large_csvs(folder: Path) -> None:
    """`prefetch_csv` every `<table>.csv` of the folder that is a regular file of at least
    LARGE_FILE_BYTES and within `max_file_bytes` (a file over the cap is never read: the
    load refuses it first). Only for a load that hashes nothing (`reconcile` without --db);
    whatever the load does not take is dropped (`discard_prefetched`)."""
    from core.ingest.layouts import ALIASES, wanted_columns
    from core.ingest.tables import TABLES

    try:
        limit = max_file_bytes()
    except ConfigError:
        return  # the load reports it
    for spec in TABLES.values():
        path = folder / f"{spec.stem}.csv"
        try:
            size = path.stat().st_size if path.is_file() else 0
        except OSError:
            continue
        if LARGE_FILE_BYTES <= size <= limit:
            prefetch_csv(path, wanted_columns(spec), ALIASES.get(spec.kind))


# CSV files whose parse a caller started early (`prefetch_csv`): `reconcile` without --db
# starts its big files' scan and parse before pandas and the engine are imported.
_PREFETCHED: dict[str, tuple[tuple[Any, ...], Future[RawTable]]] = {}
_PREFETCH_LOCK = threading.Lock()


def _prefetch_key(
    path: Path, wanted: Sequence[str], aliases: Mapping[str, str] | None
) -> tuple[str, tuple[Any, ...]]:
    """The file's real path, and what must not change for its early parse to stand: the
    file's identity, size and modification time, the columns asked for and their aliases."""
    info = path.stat()
    identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    return os.path.realpath(path), (identity, tuple(wanted), tuple(sorted((aliases or {}).items())))


def prefetch_csv(path: Path, wanted: Sequence[str], aliases: Mapping[str, str] | None) -> None:
    """Start `read_csv_table(path.name, path, wanted, ...)` of a file that will not be hashed
    (scanned without sha256) on a thread of its own; `take_prefetched_csv` hands over its
    result, or raises the same ReadFailure (file, line, column) the caller's own read would.
    A daemon thread: a process that ends without taking it does not wait for it."""
    real, key = _prefetch_key(path, wanted, aliases)
    done: Future[RawTable] = Future()

    def work() -> None:
        try:
            scan = scan_csv_file(path, hashing=False)
            done.set_result(
                read_csv_table(
                    path.name, path, wanted, reread=path.read_bytes, aliases=aliases, scan=scan
                )
            )
        except BaseException as exc:  # handed to the taker, raised there
            done.set_exception(exc)

    with _PREFETCH_LOCK:
        _PREFETCHED[real] = (key, done)
    threading.Thread(target=work, name=f"prefetch {path.name}", daemon=True).start()


def take_prefetched_csv(
    path: Path, wanted: Sequence[str], aliases: Mapping[str, str] | None
) -> Future[RawTable] | None:
    """The early parse of this file with these columns, if one was started and the file is
    still the one it read (same inode, size, mtime); None otherwise. Taken once."""
    with _PREFETCH_LOCK:
        if not _PREFETCHED:
            return None
    try:
        real, key = _prefetch_key(path, wanted, aliases)
    except OSError:
        return None
    with _PREFETCH_LOCK:
        found = _PREFETCHED.pop(real, None)
    return found[1] if found is not None and found[0] == key else None


def discard_prefetched() -> None:
    """Forget early parses nobody took (their threads finish; their tables are dropped)."""
    with _PREFETCH_LOCK:
        _PREFETCHED.clear()


def text_columns(written: dict[str, str], keep: list[str]) -> pa_csv.ConvertOptions:
    """Arrow's CSV options for reading the `keep` columns (by their header as `written`)
    as text, an empty cell as null: the importer converts and checks every cell itself."""
    return pa_csv.ConvertOptions(
        column_types={written[k]: pa.string() for k in keep},
        include_columns=[written[k] for k in keep],
        null_values=[""],
        strings_can_be_null=True,
        quoted_strings_can_be_null=True,
    )


def read_csv_table(
    file: str,
    data: bytes | Path,
    wanted: Sequence[str],
    reread: Callable[[], bytes] | None = None,
    aliases: Mapping[str, str] | None = None,
    *,
    has_nul: bool | None = None,
    scan: FileScan | None = None,
) -> RawTable:
    """Parse a CSV whose header holds API field names; keep the `wanted` columns as strings.

    Arrow parses the bytes (and validates UTF-8); the whole text is decoded in Python only
    when a problem needs line numbers. `reread` gives the bytes again for that, so the caller
    need not keep a large file in memory while its columns are converted. has_nul: whether the
    file at `data` holds a NUL byte, when the caller has scanned it already (`scan_file`).

    scan: the file's `scan_csv_file`, when the caller made it. Then Arrow first parses the
    file as if no cell held a line break (`newlines_in_values=False`: its blocks are found by
    newline alone and parsed on all cores at once, instead of one thread finding quoted
    line breaks ahead of them; 1M wide payments: 2.3-2.5 -> 1.5-1.6 CPU s, 3.4 -> 1.7-2.2 s
    wall). That parse is kept only when every physical line after the header is one row
    (`scan.lines == header_line + rows`, no bare CR): then no cell holds a line break and the
    table is the one the quote-aware parse gives. Otherwise (a quoted line break, a blank
    line, any parse error) the file is parsed again exactly as without `scan`.
    """
    if scan is not None:
        has_nul = scan.has_nul
    if isinstance(data, Path):
        # Streamed from the file: its bytes are never held whole while Arrow parses them.
        path = data
        if file_has_nul(path) if has_nul is None else has_nul:
            refuse_nul(file, path.read_bytes())
        with path.open("rb") as stream:
            first = stream.read(HEADER_PROBE_BYTES)
        source = reread or path.read_bytes
    else:
        refuse_nul(file, data)
        first = data[:HEADER_PROBE_BYTES]
        source = reread or (lambda: data)
    head = first.decode("utf-8-sig", errors="replace")
    header_line, header = _header_of(head)
    if not header:
        raise ReadFailure([Problem(file, 0, "", "the file is empty: no header row")])
    offset = len(UTF8_BOM) if first.startswith(UTF8_BOM) else 0
    if header_line > 1:  # blank lines before the header: hand Arrow the bytes from the header
        offset = 0
        for _ in range(header_line - 1):
            offset = first.index(b"\n", offset) + 1
        if first.startswith(UTF8_BOM, offset):  # Arrow drops a BOM that starts its input
            offset += len(UTF8_BOM)
            header = [header[0].removeprefix("\ufeff"), *header[1:]]

    def body() -> pa.NativeFile:
        if isinstance(data, Path):
            stream: pa.NativeFile = pa.input_stream(str(data))
            stream.read(offset)
            return stream
        return pa.BufferReader(pa.py_buffer(data)[offset:])

    _, written, ignored, aliased = header_keys(header, wanted, aliases, file=file, line=header_line)
    keep = [key for key in wanted if key in written]

    def parse(newlines_in_values: bool, block_size: int = 1 << 20) -> pa.Table:
        return pa_csv.read_csv(
            body(),
            parse_options=pa_csv.ParseOptions(newlines_in_values=newlines_in_values),
            convert_options=text_columns(written, keep),
            read_options=pa_csv.ReadOptions(block_size=block_size),
        )

    table = _parsed_by_line(parse, header_line, scan)
    one_row_per_line = table is not None
    if table is None:
        try:
            table = parse(True)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raw = source()
            text = decode_text(file, raw)  # raises with the position of any non-UTF-8 byte
            read = {header.index(written[k]): written[k] for k in keep}
            problems = _csv_shape_problems(file, text, header_line, len(header), read)
            if problems:
                raise ReadFailure(problems) from exc
            # Well formed, but a row longer than Arrow's 1 MB block (a huge cell in a column
            # we ignore: it is not read, as a shorter one is not): parsed in one block.
            try:
                table = parse(True, min(len(raw) + 1, MAX_BLOCK_BYTES))
            except (pa.ArrowInvalid, pa.ArrowTypeError) as again:
                message = f"not a readable CSV file: {exc}"
                raise ReadFailure([Problem(file, 0, "", message)]) from again
    n_rows = table.num_rows

    def find_lines() -> npt.NDArray[np.int64]:
        if one_row_per_line:  # every line after the header is one row
            return np.arange(header_line + 1, header_line + 1 + n_rows, dtype=np.int64)
        records = csv_record_lines(source().decode("utf-8-sig", errors="replace"))
        starts = [start for start, _ in records if start > header_line]
        return np.asarray(starts, dtype=np.int64)

    columns = {k: table.column(written[k]) for k in keep}
    long_cells = [
        (k, rows) for k in keep if len(columns[k]) and len(rows := long_cell_rows(columns[k]))
    ]
    if long_cells:
        lines = find_lines()
        raise ReadFailure(
            [
                Problem(
                    file,
                    int(lines[row]) if row < len(lines) else 0,
                    written[k],
                    f"cell of {len(columns[k][row].as_py()):,} characters: longer than the"
                    f" {MAX_CELL_CHARS:,} allowed",
                )
                for k, rows in long_cells
                for row in rows.tolist()
            ]
        )
    return RawTable(
        file=file,
        fmt="csv",
        columns=columns,
        written_names={k: written[k] for k in keep},
        ignored=ignored,
        n_rows=table.num_rows,
        header_line=header_line,
        line_finder=find_lines,
        aliased=aliased,
        nul_free=True,  # refused above when the file holds a NUL byte
    )


def _parsed_by_line(
    parse: Callable[[bool], pa.Table], header_line: int, scan: FileScan | None
) -> pa.Table | None:
    """The newline-split parse of a file whose every line after the header is one row, or
    None (no scan, a bare CR, a parse error, or a row count other than the line count: a
    quoted line break or a blank line). See `read_csv_table`."""
    if scan is None or scan.bare_cr or scan.has_nul:
        return None
    try:
        table = parse(False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None  # parsed again, quote-aware, for the same table or the same problems
    return table if scan.lines == header_line + table.num_rows else None


def long_cell_rows(column: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.int64]:
    """Rows of a text column whose cell has more than MAX_CELL_CHARS characters. A UTF-8
    cell has at least as many bytes as characters, so the characters are counted (a pass
    over every byte) only when some cell has more bytes than that; the byte lengths come
    from the offsets alone (1M wide payments: 0.09 CPU s against 0.74 for 24 columns)."""
    longest = pc.max(pc.binary_length(column)).as_py()
    if longest is None or longest <= MAX_CELL_CHARS:
        return np.zeros(0, dtype=np.int64)
    lengths = pc.fill_null(pc.utf8_length(column), 0).to_numpy()
    return np.flatnonzero(lengths > MAX_CELL_CHARS).astype(np.int64)


def _csv_shape_problems(
    file: str, text: str, header_line: int, width: int, read: Mapping[int, str]
) -> list[Problem]:
    """Why Arrow could not parse a CSV: rows not as wide as the header, and cells too long
    in the columns read (`read`: position -> name as written, which names them). None when
    the file is well formed (the caller then parses it in one block)."""
    records = csv_record_lines(text)
    problems = [
        Problem(file, start, "", f"expected {width} fields like the header, found {len(cells)}")
        for start, cells in records
        if start > header_line and len(cells) != width
    ]
    problems.extend(oversize_cells(file, records, read, header_line, only_named=True))
    problems.sort(key=lambda p: p.line)
    return problems


# --- JSON --------------------------------------------------------------------------------


class _Repeated(dict[str, Any]):
    """A JSON object that wrote a key more than once (json keeps the last value)."""

    repeated: str = ""


def _pairs_to_dict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    made = dict(pairs)
    if len(made) == len(pairs):
        return made
    seen: set[str] = set()
    repeated = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
    marked = _Repeated(made)
    marked.repeated = repeated
    return marked


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|-?\d{' + str(MAX_NUMBER_DIGITS + 1) + ",}")


def _scan_json(text: str) -> tuple[int, int, int]:
    """(offset of the first bracket deeper than MAX_JSON_DEPTH or -1, offset of the first number
    longer than MAX_NUMBER_DIGITS digits or -1, its digits). Strings are skipped."""
    depth = 0
    deep = long_at = -1
    digits = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        first = token[0]
        if first == '"':
            continue
        if first in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH and deep < 0:
                deep = match.start()
        elif first in "]}":
            depth -= 1
        elif long_at < 0:
            long_at, digits = match.start(), len(token.lstrip("-"))
        if deep >= 0 and long_at >= 0:
            break
    return deep, long_at, digits


def _json_limits(file: str, text: str) -> list[Problem]:
    """Nesting deeper than MAX_JSON_DEPTH and numbers longer than Python's int() reads."""
    deep, long_at, digits = _scan_json(text)
    problems = []
    if deep >= 0:
        line, column = position_of(text, deep)
        problems.append(
            Problem(file, line, str(column), f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
        )
    if long_at >= 0:
        line, column = position_of(text, long_at)
        problems.append(
            Problem(
                file,
                line,
                str(column),
                f"number of {digits:,} digits: longer than the {MAX_NUMBER_DIGITS:,} allowed",
            )
        )
    return sorted(problems, key=lambda p: (p.line, int(p.column)))


def _nests_deeper_than(document: Any, limit: int) -> bool:
    """Whether a parsed JSON value has more than `limit` levels of arrays and objects; walked
    without recursion, visiting containers only."""
    stack: list[tuple[Any, int]] = [(document, 1)] if isinstance(document, dict | list) else []
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _json_said(message: str) -> str:
    """The decoder's message as a sentence: "Unterminated string starting at" points at
    the line and column the Problem already names ("...starting here")."""
    return message[: -len(" at")] + " here" if message.endswith(" at") else message


def _json_items(file: str, text: str) -> list[Any]:
    """The items of a collection envelope or list. Refused (ReadFailure, with line and column):
    invalid JSON, nesting deeper than MAX_JSON_DEPTH, numbers longer than MAX_NUMBER_DIGITS
    digits, and a key written twice in one object (json.loads would keep the last silently)."""
    scanned = len(text) <= DEPTH_SCAN_MAX_CHARS or "[[[[" in text or "{{{{" in text
    if scanned:
        limits = _json_limits(file, text)
        if limits:
            raise ReadFailure(limits)
    try:
        document = json.loads(text, parse_float=str, object_pairs_hook=_pairs_to_dict)
    except json.JSONDecodeError as exc:
        raise ReadFailure(
            [Problem(file, exc.lineno, str(exc.colno), f"invalid JSON: {_json_said(exc.msg)}")]
        ) from None
    except (RecursionError, ValueError) as exc:
        limits = _json_limits(file, text)
        raise ReadFailure(
            limits or [Problem(file, 0, "", f"not a readable JSON file: {exc}")]
        ) from None
    if not scanned and _nests_deeper_than(document, MAX_JSON_DEPTH):
        # Brackets spaced apart or between keys: json.loads reads up to ~990 levels.
        raise ReadFailure(_json_limits(file, text))
    if isinstance(document, dict) and isinstance(document.get("items"), list):
        items: list[Any] = document["items"]
    elif isinstance(document, list):
        items = document
    else:
        raise ReadFailure(
            [
                Problem(
                    file,
                    1,
                    "",
                    'expected a Razorpay collection {"entity": "collection", "items": [...]}'
                    " or a list of items",
                )
            ]
        )
    if isinstance(document, _Repeated):
        raise ReadFailure(
            [Problem(file, 1, "", f"key {document.repeated!r} is written twice in the envelope")]
        )
    # An item's own fields (a notes object keeps json's rule, as the fast reader does).
    repeated = [(i, item.repeated) for i, item in enumerate(items) if isinstance(item, _Repeated)]
    if repeated:
        lines = json_item_lines(text)
        raise ReadFailure(
            [
                Problem(
                    file,
                    int(lines[i]) if i < len(lines) else 0,
                    key,
                    f"item {i + 1}: key {key!r} is written twice in one object"
                    " (refused rather than keep one of the values)",
                )
                for i, key in repeated
            ]
        )
    return items


def json_item_lines(text: str) -> npt.NDArray[np.int64]:
    """Physical line on which each item of the collection (or list) starts.

    Walks the top level with the C decoder's raw_decode, so it costs about one json.loads.
    """
    decoder = json.JSONDecoder()
    ws = " \t\r\n"
    starts: list[int] = []
    i = len(text) - len(text.lstrip(ws + "\ufeff"))

    def skip(pos: int) -> int:
        while pos < len(text) and text[pos] in ws:
            pos += 1
        return pos

    def walk_array(pos: int) -> int:
        pos = skip(pos + 1)  # past '['
        if pos < len(text) and text[pos] == "]":
            return pos + 1
        while pos < len(text):
            starts.append(pos)
            _, pos = decoder.raw_decode(text, pos)
            pos = skip(pos)
            if pos < len(text) and text[pos] == ",":
                pos = skip(pos + 1)
                continue
            return pos + 1
        return pos

    if i < len(text) and text[i] == "[":
        walk_array(i)
    elif i < len(text) and text[i] == "{":
        pos = skip(i + 1)
        while pos < len(text) and text[pos] != "}":
            key, pos = decoder.raw_decode(text, pos)
            pos = skip(pos)
            pos = skip(pos + 1)  # past ':'
            if key == "items" and text[pos] == "[":
                pos = walk_array(pos)
            else:
                _, pos = decoder.raw_decode(text, pos)
            pos = skip(pos)
            if pos < len(text) and text[pos] == ",":
                pos = skip(pos + 1)
    lines = np.empty(len(starts), dtype=np.int64)
    line = 1
    previous = 0
    for index, start in enumerate(starts):
        line += text.count("\n", previous, start)
        previous = start
        lines[index] = line
    return lines


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _cell_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return _json_text(value)
    return str(value)


def _notes_texts(values: list[Any]) -> list[str | None]:
    """Notes objects to JSON text. Notes repeat a lot ({}, Razorpay's [] and a few shapes), so
    the text of each distinct flat object is made once."""
    cache: dict[tuple[Any, ...], str] = {}
    texts: list[str | None] = []
    for value in values:
        if value is None or isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            try:
                # Types are part of the key: True == 1 but their JSON differs.
                key = (*value.items(), *map(type, value.values()))
                text = cache.get(key)
                if text is None:
                    text = cache[key] = _json_text(value)
            except TypeError:  # nested values are unhashable
                text = _json_text(value)
            texts.append(text)
        else:
            texts.append(_json_text(value))
    return texts


def values_to_strings(values: list[Any], *, notes: bool = False) -> pa.Array:
    """Python values from JSON to an Arrow string array; objects become JSON text."""
    if notes:
        return pa.array(_notes_texts(values), type=pa.string())
    try:
        inferred = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([_cell_text(v) for v in values], type=pa.string())
    kind = inferred.type
    if pa.types.is_string(kind) or pa.types.is_null(kind):
        return pc_cast_string(inferred)
    if pa.types.is_integer(kind):
        return pc_cast_string(inferred)
    if pa.types.is_boolean(kind):
        import pyarrow.compute as pc

        return pc.if_else(inferred, "true", "false")
    return pa.array([_cell_text(v) for v in values], type=pa.string())


def pc_cast_string(array: pa.Array) -> pa.Array:
    import pyarrow.compute as pc

    return pc.cast(array, pa.string())


def table_from_items(
    file: str,
    items: list[Any],
    wanted: Sequence[str],
    notes_columns: Sequence[str],
    line_finder: Callable[[], npt.NDArray[np.int64]] | None = None,
    fmt: str = "items",
) -> RawTable:
    """API-shaped dicts to a RawTable. Items that are not objects are problems."""
    not_objects = [i for i, item in enumerate(items) if not isinstance(item, dict)]
    finder = line_finder or (lambda: np.arange(1, len(items) + 1, dtype=np.int64))
    if not_objects:
        lines = finder()
        raise ReadFailure(
            [
                Problem(file, int(lines[i]), "", f"item {i + 1} is not an object")
                for i in not_objects
            ]
        )
    all_keys: set[str] = set().union(*items) if items else set()
    first = list(items[0]) if items else []
    keys = first + sorted(k for k in all_keys if k not in set(first))
    seen: dict[str, str] = {}
    for key in keys:
        seen.setdefault(normalise_header(str(key)), str(key))
    columns: dict[str, pa.Array] = {}
    written: dict[str, str] = {}
    for key in wanted:
        source = seen.get(key, key)
        values = [item.get(source) for item in items]
        if all(v is None for v in values) and key not in seen:
            continue
        columns[key] = values_to_strings(values, notes=key in notes_columns)
        written[key] = source
    ignored = tuple(name for normal, name in seen.items() if normal not in wanted)
    return RawTable(
        file=file,
        fmt=fmt,
        columns=columns,
        written_names=written,
        ignored=ignored,
        n_rows=len(items),
        header_line=0,
        line_finder=finder,
    )


def read_json_table(
    file: str,
    data: bytes,
    wanted: Sequence[str],
    notes_columns: Sequence[str],
    reread: Callable[[], bytes] | None = None,
) -> RawTable:
    """A collection envelope or a list of items; `reread` as for `read_csv_table`.

    Files of `json_index.FAST_JSON_MIN_BYTES` or more are read by the vectorised reader when
    it can vouch for them; otherwise (and for small files) `json.loads` reads them.
    """
    source = reread or (lambda: data)
    if len(data) >= json_index.FAST_JSON_MIN_BYTES:
        fast = _read_json_fast(file, data, wanted, notes_columns, source)
        if fast is not None:
            return fast
    items = _json_items(file, decode_text(file, data))

    def find_lines() -> npt.NDArray[np.int64]:
        return json_item_lines(decode_text(file, source()))

    return table_from_items(file, items, wanted, notes_columns, line_finder=find_lines, fmt="json")


def _read_json_fast(
    file: str,
    data: bytes,
    wanted: Sequence[str],
    notes_columns: Sequence[str],
    source: Callable[[], bytes],
) -> RawTable | None:
    """The vectorised reader's table, or None when it cannot vouch for the file."""
    try:
        fast = json_index.read_items_fast(data, wanted, notes_columns, normalise_header)
    except json_index.NotFast:
        return None
    starts = fast.item_starts

    def find_lines() -> npt.NDArray[np.int64]:
        return json_index.item_lines(source(), starts)

    return RawTable(
        file=file,
        fmt="json",
        columns=fast.columns,
        written_names=fast.written_names,
        ignored=fast.ignored,
        n_rows=fast.n_rows,
        header_line=0,
        line_finder=find_lines,
    )
