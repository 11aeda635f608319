"""Vectorised cell conversions on Arrow string columns.

Every function takes a whole column (a `pyarrow.Array` of strings, null for an empty cell)
and returns numpy values plus the positions and messages of the cells it could not read.
Nothing here raises on bad data: the caller collects every problem of a file first and
then fails closed. No per-row Python runs on the happy path; the loops below run only over
cells already known to be bad.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from core.calendar import IST_OFFSET_SECONDS

MAX_UNIX_SECONDS = 4_102_444_800  # 2100-01-01: beyond it a number is not Unix seconds
MAX_RUPEE_DIGITS = 15  # 10^15 rupees is far beyond any real amount; keeps int64 exact

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class BadCells:
    """Cells that failed a conversion: row positions (0-based) and one message each."""

    rows: npt.NDArray[np.intp]
    messages: tuple[str, ...]

    @staticmethod
    def none() -> BadCells:
        return BadCells(np.empty(0, dtype=np.intp), ())

    def __len__(self) -> int:
        return len(self.messages)


def as_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Arrow compute takes Array and ChunkedArray alike; chunks are kept to avoid copies."""
    return column


def string_buffers(
    chunk: pa.Array,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint8]] | None:
    """(start, end) byte offsets of each cell and the data bytes of one string chunk, read
    in place (no copy of the strings); None for a chunk of another type."""
    if not (pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type)):
        return None
    _, offsets_buffer, data_buffer = chunk.buffers()
    if offsets_buffer is None or len(chunk) == 0:
        empty = np.zeros(len(chunk), dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.uint8)
    width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    raw_offsets = np.frombuffer(offsets_buffer, dtype=width)
    offsets = raw_offsets[chunk.offset : chunk.offset + len(chunk) + 1].astype(np.int64)
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8)
        if data_buffer is not None
        else np.zeros(0, dtype=np.uint8)
    )
    return offsets[:-1], offsets[1:], data


def _chunks(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(column.chunks) if isinstance(column, pa.ChunkedArray) else [column]


def may_need_trim(column: pa.Array | pa.ChunkedArray) -> bool:
    """Whether some cell may start or end with whitespace: its first or last byte is a
    control character, a space or not ASCII (a Unicode space). False means trimming would
    change nothing; True is only a maybe (a cell ending in '☕' is trimmed to itself)."""
    for chunk in _chunks(column):
        buffers = string_buffers(chunk)
        if buffers is None:
            return True
        starts, ends, data = buffers
        filled = ends > starts
        edges = np.concatenate([data[starts[filled]], data[ends[filled] - 1]])
        if bool(((edges <= 0x20) | (edges >= 0x7F)).any()):
            return True
    return False


def has_nul_byte(column: pa.Array | pa.ChunkedArray) -> bool:
    """Whether any cell's bytes hold a NUL (scanned in place)."""
    for chunk in _chunks(column):
        buffers = string_buffers(chunk)
        if buffers is None:
            return True
        starts, ends, data = buffers
        filled = len(starts) and int(ends[-1]) > int(starts[0])
        if filled and int(data[int(starts[0]) : int(ends[-1])].min()) == 0:
            return True
    return False


def _any(mask: pa.Array) -> bool:
    return bool(pc.any(mask).as_py())


def clean_strings(column: pa.Array | pa.ChunkedArray, *, trim: bool = True) -> pa.Array:
    """Trim whitespace (unless told the column needs none); an empty cell becomes null."""
    arr = as_array(column)
    if not pa.types.is_string(arr.type) and not pa.types.is_large_string(arr.type):
        arr = pc.cast(arr, pa.string())
    if trim and may_need_trim(arr):  # else the trim would copy the column unchanged
        arr = pc.utf8_trim_whitespace(arr)
    lengths = pc.binary_length(arr)
    shortest = pc.min(lengths).as_py()
    if shortest == 0:  # a reduction first: rebuilding the column is rarely needed
        arr = pc.if_else(pc.equal(lengths, 0), pa.scalar(None, pa.string()), arr)
    return arr


def to_bool_numpy(mask: pa.Array | pa.ChunkedArray) -> BoolArray:
    """An Arrow boolean array to numpy, null counting as False."""
    filled = pc.fill_null(as_array(mask), False)
    result: BoolArray = np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.bool_)
    return result


def valid_mask(column: pa.Array) -> BoolArray:
    return to_bool_numpy(pc.is_valid(column))


def try_int64(column: pa.Array) -> pa.Array | None:
    """The column cast to int64 when every cell is a plain integer (nulls allowed), else None.

    Arrow's cast is the fast path: it refuses signs other than '-', spaces, decimals and
    anything beyond int64, so a successful cast needs no regex.
    """
    try:
        return pc.cast(column, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _numpy_int(values: pa.Array) -> Int64Array:
    result: Int64Array = np.asarray(
        pc.fill_null(values, 0).to_numpy(zero_copy_only=False), dtype=np.int64
    )
    return result


def _int_numpy(column: pa.Array) -> Int64Array:
    """Digits-only strings (nulls and empty strings allowed) to int64, both as 0."""
    filled = pc.fill_null(column, "0")
    filled = pc.if_else(pc.equal(filled, ""), "0", filled)
    result: Int64Array = np.asarray(
        pc.cast(filled, pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64
    )
    return result


def _bad(rows: BoolArray, column: pa.Array, template: str) -> BadCells:
    """Messages for the flagged rows; `{value!r}` in the template names the cell."""
    positions = np.flatnonzero(rows)
    if len(positions) == 0:
        return BadCells.none()
    values = column.take(pa.array(positions)).to_pylist()
    shown = [_Shown(v) if isinstance(v, str) else v for v in values]
    return BadCells(positions, tuple(template.format(value=v) for v in shown))


class _Shown(str):
    """A cell in a message: `{value!r}` cuts a long one (a 5,000-digit amount) to its start
    and length, so one bad cell cannot flood the report."""

    __slots__ = ()
    LIMIT = 60

    def __repr__(self) -> str:
        text = str(self)
        if len(text) <= self.LIMIT:
            return repr(text)
        return f"{text[: self.LIMIT]!r}... ({len(text):,} characters)"


def merge_bad(parts: Iterable[BadCells]) -> BadCells:
    parts = [p for p in parts if len(p)]
    if not parts:
        return BadCells.none()
    rows = np.concatenate([p.rows for p in parts])
    messages = tuple(m for p in parts for m in p.messages)
    order = np.argsort(rows, kind="stable")
    return BadCells(rows[order], tuple(messages[i] for i in order))


def nul_cells(column: pa.Array) -> BadCells:
    """Cells holding a NUL character (a JSON `\\u0000`; raw NUL bytes are refused earlier)."""
    if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
        return BadCells.none()
    if not has_nul_byte(column):  # a scan of the bytes in place, not a match per cell
        return BadCells.none()
    found = to_bool_numpy(pc.match_substring(column, "\x00"))
    return _bad(found, column, "NUL character in the cell {value!r}")


# An id (a Razorpay id, a UTR, a settlement or recon entity id) is one token: no control
# (Cc) or format (Cf: bidi overrides and isolates, zero-width) characters, which display
# an id other than the one stored (`pay_\u202e1000009KAFEDUP` shows as `pay_PUDEFAK9000001`),
# no whitespace or line separators inside (a newline breaks line-oriented exports) and no
# path separators (`../../etc/passwd`). Otherwise any shape: the benchmark's and the
# dashboard's ids are not all `prefix_` + 14 alphanumerics. Free text keeps its text.
# Cc is U+0001-001F and U+007F-009F here: NUL has its own message (`nul_cells`).
_ID_REFUSED = r"[\x{01}-\x{1f}\x{7f}-\x{9f}\p{Cf}\p{Z}\s/\\]"


def is_id_column(name: str) -> bool:
    """An id column of a Razorpay table: `id`, `*_id`, `utr`, `*_utr`."""
    return name in ("id", "utr") or name.endswith(("_id", "_utr"))


def bad_id_cells(column: pa.Array) -> BadCells:
    """Id cells holding a control, format (bidi, zero-width), space or path-separator
    character (after the importer's trim)."""
    if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
        return BadCells.none()
    found = to_bool_numpy(pc.fill_null(pc.match_substring_regex(column, _ID_REFUSED), False))
    return _bad(
        found,
        column,
        "id {value!r} holds a control, invisible, bidi, space or path-separator character",
    )


# --- money -------------------------------------------------------------------------------

# The largest amount, fee or tax accepted, in paise: 10^12 paise is ₹1,000 crore, far above
# any single payment, refund, fee or daily settlement. With every cell at most 10^12, a
# 64-bit sum of up to 9.2 million cells (2^63 / 10^12) cannot wrap; an int64-edge amount
# (9223372036854775807) used to wrap a settlement's sum negative. A bank balance may be
# larger (a big company's account) and is never summed: its ceiling is 10^15 paise (₹10 lakh
# crore). See docs/ingest.md, "Amount ceiling".
MAX_PAISE = 10**12
MAX_BALANCE_PAISE = 10**15

_PAISE_SHAPE = r"^\d{1,18}$"
_RUPEE_SHAPE = r"^(?P<neg>-?)(?:₹|(?i:inr|rs\.?))?(?P<whole>\d{0,15})(?:\.(?P<frac>\d{1,2}))?$"
_NEGATIVE = r"^\s*-"


@dataclass(frozen=True)
class Parsed:
    """A converted column: values (0 where null or bad), which cells held a value, bad cells."""

    values: Int64Array
    present: BoolArray
    bad: BadCells


class IntCasts:
    """Memo of `try_int64` per column, so unit detection and parsing cast each column once."""

    def __init__(self) -> None:
        self._done: dict[int, tuple[pa.Array, pa.Array | None]] = {}

    def __call__(self, column: pa.Array) -> pa.Array | None:
        hit = self._done.get(id(column))
        if hit is not None and hit[0] is column:
            return hit[1]
        result = try_int64(column)
        self._done[id(column)] = (column, result)
        return result

    def forget(self, column: pa.Array) -> None:
        """Drop a column's cast (its converter has run): a large file's casts are not all
        held at once."""
        hit = self._done.get(id(column))
        if hit is not None and hit[0] is column:
            del self._done[id(column)]


def parse_paise(column: pa.Array, casts: IntCasts | None = None) -> Parsed:
    """Whole numbers of paise: '4712645' -> 4712645. Negatives and decimals are refused."""
    present = valid_mask(column)
    fast = (casts or try_int64)(column)
    if fast is not None and not to_bool_numpy(pc.less(fast, 0)).any():
        return cap_amounts(Parsed(_numpy_int(fast), present, BadCells.none()), column)
    good = to_bool_numpy(pc.match_substring_regex(column, _PAISE_SHAPE)) & present
    bad_rows = present & ~good
    negative = bad_rows & to_bool_numpy(pc.match_substring_regex(column, _NEGATIVE))
    too_large = bad_rows & ~negative & to_bool_numpy(pc.match_substring_regex(column, r"^\d+$"))
    rupee_like = pc.match_substring_regex(column, r"^₹?[\d,]*\d[\d,]*(\.\d*)?$")
    decimal = bad_rows & ~negative & ~too_large & to_bool_numpy(rupee_like)
    other = bad_rows & ~negative & ~decimal & ~too_large
    kept = pc.if_else(pa.array(good), column, pa.scalar(None, pa.string()))
    values = _int_numpy(kept)
    bad = merge_bad(
        [
            _bad(negative, column, "negative amount {value!r}"),
            _bad(
                decimal,
                column,
                "amount {value!r} has decimals or digit grouping but this file is read as"
                " paise (use --amount-unit rupees if it holds rupees)",
            ),
            _bad(too_large, column, "amount {value!r} is too large (more than 18 digits)"),
            _bad(other, column, "malformed amount {value!r}"),
        ]
    )
    return cap_amounts(Parsed(values, present & good, bad), column)


def parse_rupees(column: pa.Array, ceiling: int = MAX_PAISE) -> Parsed:
    """Rupees with up to two decimals, grouping commas and ₹/INR/Rs.: '1,35,000.50' -> 13500050."""
    present = valid_mask(column)
    compact = pc.replace_substring_regex(column, r"[,\s]", "")
    parts = pc.extract_regex(compact, _RUPEE_SHAPE)
    matched = to_bool_numpy(pc.is_valid(parts)) & present
    whole = pc.struct_field(parts, "whole")
    frac = pc.struct_field(parts, "frac")
    neg = to_bool_numpy(pc.equal(pc.struct_field(parts, "neg"), "-"))
    has_digits = to_bool_numpy(pc.or_(pc.not_equal(whole, ""), pc.not_equal(frac, "")))
    good = matched & has_digits & ~neg
    negative = present & (neg & matched)
    too_precise = (
        present
        & ~matched
        & to_bool_numpy(pc.match_substring_regex(compact, r"^-?[^.]*\d\.\d{3,}$"))
    )
    malformed = present & ~good & ~negative & ~too_precise
    whole_kept = pc.if_else(pa.array(good), whole, pa.scalar(None, pa.string()))
    frac_kept = pc.if_else(pa.array(good), pc.utf8_rpad(frac, 2, "0"), pa.scalar(None, pa.string()))
    values = _int_numpy(whole_kept) * 100 + _int_numpy(frac_kept)
    bad = merge_bad(
        [
            _bad(negative, column, "negative amount {value!r}"),
            _bad(
                too_precise,
                column,
                "amount {value!r} has more than two decimal places: not an exact paise amount",
            ),
            _bad(malformed, column, "malformed amount {value!r}"),
        ]
    )
    return cap_amounts(Parsed(np.where(good, values, 0), good, bad), column, ceiling)


def cap_amounts(parsed: Parsed, column: pa.Array, ceiling: int = MAX_PAISE) -> Parsed:
    """Refuse every cell above the ceiling (an int64-edge amount would wrap a sum)."""
    over = parsed.present & (parsed.values > ceiling)
    if not over.any():
        return parsed
    shown = f"₹{ceiling // 10**9:,} crore"
    too_large = _bad(
        over,
        column,
        f"amount {{value!r}} is above the ceiling of {ceiling:,} paise ({shown})",
    )
    return Parsed(
        np.where(over, 0, parsed.values),
        parsed.present & ~over,
        merge_bad([parsed.bad, too_large]),
    )


def parse_money(column: pa.Array, unit: str, casts: IntCasts | None = None) -> Parsed:
    return parse_rupees(column) if unit == "rupees" else parse_paise(column, casts)


def looks_like_rupees(column: pa.Array, casts: IntCasts | None = None) -> int | None:
    """Row of the first cell written the way rupees are (decimal point, grouping, ₹), else None."""
    if (casts or try_int64)(column) is not None:
        return None
    hits = to_bool_numpy(pc.match_substring_regex(column, r"[.,₹]|(?i:^(inr|rs))"))
    found = np.flatnonzero(hits)
    return int(found[0]) if len(found) else None


# --- timestamps --------------------------------------------------------------------------

_TIME_PART = (
    r"(?:[ T]+(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.\d+)?)?\s*(?P<ampm>(?i:am|pm))?)?"
)
_DMY = r"^(?P<d>\d{1,2})(?P<sep>[/\-.])(?P<m>\d{1,2})[/\-.](?P<y>\d{4}|\d{2})" + _TIME_PART + r"$"
_ISO = r"^(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})" + _TIME_PART + r"\s*(?P<tz>Z|[+-]\d{2}:?\d{2})?$"
_DMONY = (
    r"^(?P<d>\d{1,2})[ \-/]?(?P<mon>[A-Za-z]{3,9})[ \-/,]*(?P<y>\d{4}|\d{2})" + _TIME_PART + r"$"
)
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")

DATE_STYLES = {
    "unix": "Unix seconds",
    "dmy": "dd/mm/YYYY, dd-mm-YYYY or dd/mm/yy (IST)",
    "dmy_time": "dd/mm/YYYY HH:MM:SS (IST)",
    "iso": "ISO 8601",
    "dmony": "dd Mon YYYY (IST)",
}


def days_from_civil(y: Int64Array, m: Int64Array, d: Int64Array) -> Int64Array:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    result: Int64Array = era * 146097 + doe - 719468
    return result


def _days_in_month(y: Int64Array, m: Int64Array) -> Int64Array:
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    lengths = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)
    result: Int64Array = lengths[np.clip(m, 1, 12) - 1] + ((m == 2) & leap)
    return result


@dataclass(frozen=True)
class ParsedTimes:
    """Converted date-times: Unix seconds (UTC), the calendar date of the text, which cells held
    a value, bad cells, and the styles seen (keys of DATE_STYLES)."""

    seconds: Int64Array
    days: Int64Array  # days since epoch of the date as written (for bank dates)
    present: BoolArray
    bad: BadCells
    styles: frozenset[str]


def _group_int(parts: pa.StructArray, name: str) -> Int64Array:
    return _int_numpy(pc.struct_field(parts, name))


def parse_times(
    column: pa.Array, *, allow_unix: bool = True, casts: IntCasts | None = None
) -> ParsedTimes:
    """Unix seconds, dd/mm/YYYY[ HH:MM[:SS]], dd-mm-YYYY, dd/mm/yy, ISO 8601 (with or without an
    offset) or '01 Jun 2026'. Text without an offset is IST. Impossible dates are refused."""
    n = len(column)
    present = valid_mask(column)
    seconds = np.zeros(n, dtype=np.int64)
    days = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=np.bool_)
    impossible = np.zeros(n, dtype=np.bool_)
    styles: set[str] = set()

    out_of_range = np.zeros(n, dtype=np.bool_)
    if allow_unix:
        fast = (casts or try_int64)(column)
        if fast is not None:
            values = _numpy_int(fast)
            out_of_range = present & ((values < 0) | (values > MAX_UNIX_SECONDS))
            if not out_of_range.any():
                days = (values + IST_OFFSET_SECONDS) // 86400
                styles = {"unix"} if present.any() else set()
                return ParsedTimes(values, days, present, BadCells.none(), frozenset(styles))
        unix = present & to_bool_numpy(pc.match_substring_regex(column, r"^\d{1,13}$"))
        if unix.any():
            kept = pc.if_else(pa.array(unix), column, pa.scalar(None, pa.string()))
            values = _int_numpy(kept)
            out_of_range = unix & (values > MAX_UNIX_SECONDS)
            good_unix = unix & ~out_of_range
            seconds = np.where(good_unix, values, seconds)
            days = np.where(good_unix, (values + IST_OFFSET_SECONDS) // 86400, days)
            done |= unix
            styles.add("unix")

    for style, pattern in (("dmy", _DMY), ("iso", _ISO), ("dmony", _DMONY)):
        remaining = present & ~done
        if not remaining.any():
            break
        parts = pc.extract_regex(column, pattern)
        hit = remaining & to_bool_numpy(pc.is_valid(parts))
        if not hit.any():
            continue
        d = _group_int(parts, "d")
        y = _group_int(parts, "y")
        y = np.where(y < 100, y + 2000, y)
        if style == "dmony":
            mon = pc.utf8_slice_codeunits(pc.utf8_lower(pc.struct_field(parts, "mon")), 0, 3)
            index = np.asarray(
                pc.fill_null(pc.index_in(mon, pa.array(MONTHS)), -1).to_numpy(zero_copy_only=False),
                dtype=np.int64,
            )
            m = index + 1
        else:
            m = _group_int(parts, "m")
        hours = _group_int(parts, "H")
        minutes = _group_int(parts, "M")
        secs = _group_int(parts, "S")
        ampm = pc.utf8_lower(pc.fill_null(pc.struct_field(parts, "ampm"), ""))
        pm = to_bool_numpy(pc.equal(ampm, "pm"))
        am = to_bool_numpy(pc.equal(ampm, "am"))
        bad_clock = (am | pm) & ((hours < 1) | (hours > 12))
        hours = np.where(pm & (hours < 12), hours + 12, np.where(am & (hours == 12), 0, hours))
        ok = (
            (m >= 1)
            & (m <= 12)
            & (d >= 1)
            & (d <= _days_in_month(y, m))
            & (hours < 24)
            & (minutes < 60)
            & (secs < 60)
            & ~bad_clock
        )
        day_numbers = days_from_civil(y, m, d)
        local = day_numbers * 86400 + hours * 3600 + minutes * 60 + secs
        offset = np.full(n, IST_OFFSET_SECONDS, dtype=np.int64)
        if style == "iso":
            tz = pc.fill_null(pc.struct_field(parts, "tz"), "")
            tz_parts = pc.extract_regex(tz, r"^(?P<sign>[+-])(?P<hh>\d{2}):?(?P<mm>\d{2})$")
            has_tz = to_bool_numpy(pc.is_valid(tz_parts))
            sign = np.where(to_bool_numpy(pc.equal(pc.struct_field(tz_parts, "sign"), "-")), -1, 1)
            tz_seconds = sign * (
                _group_int(tz_parts, "hh") * 3600 + _group_int(tz_parts, "mm") * 60
            )
            is_utc = to_bool_numpy(pc.equal(tz, "Z"))
            offset = np.where(has_tz, tz_seconds, np.where(is_utc, 0, offset))
        good = hit & ok
        seconds = np.where(good, local - offset, seconds)
        days = np.where(good, day_numbers, days)
        impossible |= hit & ~ok
        done |= hit
        if good.any():
            has_time = to_bool_numpy(pc.not_equal(pc.struct_field(parts, "H"), ""))
            if style == "dmy" and (good & has_time).any():
                styles.add("dmy_time")
            if style != "dmy" or (good & ~has_time).any():
                styles.add(style)

    unreadable = present & ~done & ~out_of_range
    bad = merge_bad(
        [
            _bad(
                out_of_range,
                column,
                "timestamp {value!r} is out of range (Unix seconds up to 2100; milliseconds?)",
            ),
            _bad(impossible, column, "impossible date {value!r}"),
            _bad(unreadable, column, "unparsable date {value!r}"),
        ]
    )
    good_all = done & ~impossible & ~out_of_range
    return ParsedTimes(seconds, days, good_all, bad, frozenset(styles))


def looks_like_dashboard_dates(column: pa.Array, casts: IntCasts | None = None) -> int | None:
    """Row of the first cell written dd/mm/YYYY as dashboard exports write dates, else None."""
    if (casts or try_int64)(column) is not None:
        return None
    hits = to_bool_numpy(pc.match_substring_regex(column, r"^\d{1,2}[/\-.]\d{1,2}[/\-.]\d{2,4}"))
    found = np.flatnonzero(hits)
    return int(found[0]) if len(found) else None


# --- booleans and enumerations ----------------------------------------------------------

_TRUE = pa.array(["true", "1", "yes", "y", "t"])
_FALSE = pa.array(["false", "0", "no", "n", "f"])


def parse_bools(column: pa.Array) -> tuple[BoolArray, BoolArray, BadCells]:
    """true/false/1/0 (also yes/no), any case. Returns values, presence and bad cells."""
    lower = pc.utf8_lower(column)
    true = to_bool_numpy(pc.is_in(lower, value_set=_TRUE))
    false = to_bool_numpy(pc.is_in(lower, value_set=_FALSE))
    present = valid_mask(column)
    bad = present & ~true & ~false
    return true, present & ~bad, _bad(bad, column, "not a boolean {value!r} (true/false/1/0)")


def normalise_choice(column: pa.Array) -> pa.Array:
    return pc.utf8_lower(column)


def check_choices(column: pa.Array, choices: frozenset[str], what: str) -> BadCells:
    allowed = pa.array(sorted(choices))
    bad = valid_mask(column) & ~to_bool_numpy(pc.is_in(column, value_set=allowed))
    expected = ", ".join(sorted(choices))
    return _bad(bad, column, f"unknown {what} {{value!r}} (expected one of: {expected})")


_MIX = (
    np.uint64(0x9E3779B97F4A7C15),
    np.uint64(0xC2B2AE3D27D4EB4F),
    np.uint64(0x165667B19E3779F9),
    np.uint64(0xD6E8FEB86659FD93),
)


def _chunk_words(chunk: pa.Array) -> npt.NDArray[np.uint64] | None:
    """A hash of each string of one chunk from its length and its first, middle and last
    8 bytes (read in place from the data buffer: no copy of the strings); None when the
    chunk is not a string array this can read."""
    buffers = string_buffers(chunk)
    if buffers is None:
        return None
    starts, ends, data = buffers
    lengths = ends - starts
    if len(data) < 8:
        data = np.concatenate([data, np.zeros(8, dtype=np.uint8)])
    # Every (unaligned) 8-byte word of the buffer, in place: words[p] holds bytes p..p+7.
    words = np.ndarray(shape=(len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    last_start = len(data) - 8

    def word_at(position: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
        clamped = np.minimum(position, last_start)
        shift = ((position - clamped) * 8).astype(np.uint64)
        value: npt.NDArray[np.uint64] = words[clamped] >> shift
        return value

    short = np.minimum(lengths, 8)
    keep = np.where(
        short >= 8,
        np.uint64(0xFFFFFFFFFFFFFFFF),
        (np.uint64(1) << (np.minimum(short, 7) * 8).astype(np.uint64)),
    )
    keep[short < 8] -= np.uint64(1)
    first = word_at(starts) & keep
    middle = np.where(lengths > 8, word_at(starts + np.maximum(lengths - 8, 0) // 2), 0)
    last = np.where(lengths > 8, word_at(np.maximum(ends - 8, starts)), 0)
    mixed: npt.NDArray[np.uint64] = (
        first * _MIX[0]
        ^ np.asarray(middle, dtype=np.uint64) * _MIX[1]
        ^ np.asarray(last, dtype=np.uint64) * _MIX[2]
        ^ lengths.astype(np.uint64) * _MIX[3]
    )
    return mixed


def _candidate_rows(column: pa.Array | pa.ChunkedArray, present: BoolArray) -> BoolArray | None:
    """Rows whose string may repeat another present row's (a superset of the repeats, found
    by a 64-bit hash of each string computed in numpy: a few bytes a row, where Arrow's
    unique/value_counts build a hash table of copies, ~50 MB at 300k ids). None when the
    column is not plain strings."""
    parts: list[npt.NDArray[np.uint64]] = []
    for chunk in _chunks(column):
        words = _chunk_words(chunk)
        if words is None:
            return None
        parts.append(words)
    hashes = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    if len(hashes) != len(present):
        return None
    ordered = np.sort(hashes[present])
    repeated = np.unique(ordered[1:][ordered[1:] == ordered[:-1]])
    if len(repeated) == 0:
        return np.zeros(len(present), dtype=np.bool_)
    # `repeated` is sorted: a binary search per row (np.isin would sort every hash again).
    at = np.minimum(np.searchsorted(repeated, hashes), len(repeated) - 1)
    found: BoolArray = (repeated[at] == hashes) & present
    return found


def duplicate_rows(
    column: pa.Array, *, expect_repeats: bool = False
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """(rows that repeat an earlier value, row of that value's first occurrence); nulls ignored.

    Candidate rows come from a hash of each string (rows whose hash repeats); only they are
    compared exactly, in file order. `expect_repeats` is kept for callers: both cases take
    the same path.
    """
    del expect_repeats
    present = valid_mask(column)
    candidates = _candidate_rows(column, present)
    if candidates is None:
        counts = pc.value_counts(column)
        repeated_values = pc.drop_null(
            pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))
        )
        candidates = to_bool_numpy(pc.is_in(column, value_set=repeated_values)) & present
    rows = np.flatnonzero(candidates)
    first_seen: dict[str, int] = {}
    repeats: list[int] = []
    firsts: list[int] = []
    for row, value in zip(rows.tolist(), column.take(pa.array(rows)).to_pylist(), strict=True):
        if value in first_seen:
            repeats.append(row)
            firsts.append(first_seen[value])
        else:
            first_seen[value] = row
    return np.asarray(repeats, dtype=np.intp), np.asarray(firsts, dtype=np.intp)
