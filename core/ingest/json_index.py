"""A vectorised reader for large JSON entity files, exact to `readers.read_json_table`'s.

`json.loads` builds a Python object for every value of a 1M-item file (tens of seconds). Here
numpy indexes the bytes instead, simdjson-style: quotes not escaped delimit strings, and the
structural characters outside strings give the nesting depth, hence the items. Each item must
then match json's grammar as an RE2 regular expression (nesting bounded), and the bytes
between items a comma, so a file is read here only when `json.loads` would accept it; the
envelope around the items goes through `json.loads` itself. Anything this reader cannot
vouch for raises `NotFast` and the caller uses `json.loads`, the oracle.

The file is indexed in chunks that end on an item, so memory stays a few times the chunk
size on top of the bytes and the columns. A top-level value is the bytes between its key's
':' and the next ',' or '}' of the item: a number's text is what `parse_float=str` gives;
strings with escapes and objects (notes) go through `json` once per distinct raw text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

FAST_JSON_MIN_BYTES = 1 << 20
CHUNK_BYTES = 16 << 20
INDEX_THREADS = 2  # numpy and Arrow release the GIL: chunks are checked two at a time
MAX_SCALAR_CHARS = 1000  # int() refuses over 4300 digits: long numbers are left to json
MAX_BLANK_RUN = 64
NESTED_LEVELS = 2  # values may nest two levels (notes {"a": {"b": 1}}); deeper is left to json

UTF8_BOM = b"\xef\xbb\xbf"
WHITESPACE = b" \t\n\r"  # exactly json's whitespace

# Structural characters, in the order of their codes.
OPEN_OBJ, CLOSE_OBJ, OPEN_ARR, CLOSE_ARR, COLON, COMMA = range(6)

_CLASSES = bytearray(256)
for _code, _char in enumerate(b"{}[]:,"):
    _CLASSES[_char] = _code + 1
C_LAST_STRUCTURAL, C_QUOTE, C_BACKSLASH = 6, 7, 8
_CLASSES[34], _CLASSES[92] = C_QUOTE, C_BACKSLASH
_CLASS_TABLE = bytes(_CLASSES)
_IS_BLANK = np.zeros(256, dtype=np.bool_)
_IS_BLANK[list(WHITESPACE)] = True
_DEPTH_DELTA = np.array([1, -1, 1, -1, 0, 0], dtype=np.int8)  # by structural code


_BLANK = r"[ \t\n\r]*"
_STRING = r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_SCALAR = f"(?:{_STRING}|{_NUMBER}|true|false|null)"


def _object_re(value: str) -> str:
    member = f"{_STRING}{_BLANK}:{_BLANK}{value}{_BLANK}"
    return rf"\{{{_BLANK}(?:{member}(?:,{_BLANK}{member})*)?\}}"


def _array_re(value: str) -> str:
    element = f"{value}{_BLANK}"
    return rf"\[{_BLANK}(?:{element}(?:,{_BLANK}{element})*)?\]"


def _item_re(levels: int) -> str:
    """json's grammar for an object whose values nest at most `levels` deep (RE2 has no
    recursion: each level repeats the one below)."""
    value = _SCALAR
    for _ in range(levels):
        value = f"(?:{_SCALAR}|{_object_re(value)}|{_array_re(value)})"
    return f"^{_object_re(value)}$"


ITEM_RE = _item_re(NESTED_LEVELS)
SEPARATOR_RE = f"^{_BLANK},{_BLANK}$"
BLANK_RE = f"^{_BLANK}$"
LONG_DIGITS_RE = "[0-9]{1000}"  # int() refuses over 4300 digits: such files are json's

# Cell kinds of item-level values.
CELL_TEXT, CELL_ESCAPED, CELL_NULL, CELL_MINUS_ZERO, CELL_OBJECT = range(5)


class NotFast(Exception):
    """The fast reader cannot vouch for this input: read it with json.loads instead."""


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def spans_to_strings(
    buffer: pa.Buffer,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    valid: npt.NDArray[np.bool_] | None = None,
) -> pa.Array:
    """The byte spans [starts, ends) of one buffer as a string array, in one gather.

    Spans must be in order and not overlap. The buffer is viewed as a string array whose
    even elements are the spans and odd ones the bytes between them; taking the even ones
    copies just the spans.
    """
    n = len(starts)
    if n == 0:
        return pa.array([], type=pa.string())
    offsets = np.empty(2 * n + 1, dtype=np.int32)
    offsets[0 : 2 * n : 2] = starts
    offsets[1 : 2 * n : 2] = ends
    offsets[2 * n] = ends[-1]
    bitmap = None
    if valid is not None and not valid.all():
        bits = np.ones(2 * n, dtype=np.bool_)
        bits[0::2] = valid
        bitmap = pa.py_buffer(np.packbits(bits, bitorder="little"))
    view = pa.StringArray.from_buffers(2 * n, pa.py_buffer(offsets), buffer, bitmap)
    return view.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int64)))


def _replace_rows(base: pa.Array, rows: npt.NDArray[np.int64], texts: pa.Array) -> pa.Array:
    if len(rows) == 0:
        return base
    n = len(base)
    index = np.arange(n, dtype=np.int64)
    index[rows] = n + np.arange(len(rows), dtype=np.int64)
    return pa.concat_arrays([base, texts.cast(pa.string())]).take(pa.array(index))


def _decode_each_distinct(texts: pa.Array, decode: Callable[[str], str]) -> pa.Array:
    """`decode` applied to every text, called once per distinct text."""
    encoded = texts.dictionary_encode()
    try:
        decoded = [decode(text) for text in encoded.dictionary.to_pylist()]
        for text in decoded:
            text.encode("utf-8")  # a lone surrogate from \\ud800: leave it to the oracle
    except (ValueError, RecursionError, UnicodeEncodeError) as exc:
        raise NotFast(str(exc)) from None
    return pa.array(decoded, type=pa.string()).take(encoded.indices)


def _string_content(text: str) -> str:
    value = json.loads('"' + text + '"')
    assert isinstance(value, str)
    return value


def _notes_text(text: str) -> str:
    return _json_text(json.loads(text, parse_float=str))


def _skip_ws(data: bytes, pos: int) -> int:
    while pos < len(data) and data[pos] in WHITESPACE:
        pos += 1
    return pos


def _head_ends_with_items_key(head: str) -> bool:
    """Whether `head` is `{` then members, ending with the key "items" and its colon."""
    decoder = json.JSONDecoder()

    def skip(pos: int) -> int:
        while pos < len(head) and head[pos] in " \t\n\r":
            pos += 1
        return pos

    pos = skip(0)
    if pos >= len(head) or head[pos] != "{":
        return False
    pos = skip(pos + 1)
    try:
        while pos < len(head) and head[pos] == '"':
            key, pos = decoder.raw_decode(head, pos)
            pos = skip(pos)
            if pos >= len(head) or head[pos] != ":":
                return False
            pos = skip(pos + 1)
            if pos == len(head):
                return bool(key == "items")
            _, pos = decoder.raw_decode(head, pos)
            pos = skip(pos)
            if pos >= len(head) or head[pos] != ",":
                return False
            pos = skip(pos + 1)
    except (ValueError, RecursionError):
        return False
    return False


def _items_array_start(data: bytes, start: int) -> int:
    """Position of the '[' that opens the items: the document itself or the envelope's."""
    first = _skip_ws(data, start)
    if first < len(data) and data[first : first + 1] == b"[":
        return first
    if first >= len(data) or data[first : first + 1] != b"{":
        raise NotFast("neither a list nor an object")
    search = first
    for _ in range(8):
        found = data.find(b'"items"', search)
        if found < 0:
            break
        pos = _skip_ws(data, found + len(b'"items"'))
        if data[pos : pos + 1] == b":":
            pos = _skip_ws(data, pos + 1)
            if data[pos : pos + 1] == b"[" and _head_ends_with_items_key(
                data[:pos].decode("utf-8-sig")
            ):
                return pos
        search = found + 1
    raise NotFast('no "items" array found')


def _check_envelope(data: bytes, items_open: int, items_close: int) -> None:
    """The document with its items emptied must be valid JSON with exactly one "items"."""
    text = (data[: items_open + 1] + data[items_close:]).decode("utf-8-sig")
    objects: list[list[tuple[str, Any]]] = []

    def keep_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        objects.append(pairs)
        return dict(pairs)

    try:
        document = json.loads(text, parse_float=str, object_pairs_hook=keep_pairs)
    except (ValueError, RecursionError) as exc:
        raise NotFast(str(exc)) from None
    if isinstance(document, list):
        if document or data[_skip_ws(data, 3 if data.startswith(UTF8_BOM) else 0)] != 91:
            raise NotFast("unexpected list")
        return
    if not isinstance(document, dict) or document.get("items") != []:
        raise NotFast("unexpected envelope")
    if sum(1 for key, _ in objects[-1] if key == "items") != 1:
        raise NotFast('"items" more than once')


def _check_utf8(data: bytes) -> None:
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int64))
    whole = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), 1, [None, offsets, pa.py_buffer(data)]
    )
    try:
        whole.cast(pa.large_string())
    except pa.ArrowInvalid as exc:
        raise NotFast("not UTF-8") from exc


@dataclass
class _Chunk:
    """The items of one chunk: their count, start positions, the keys met (in order of first
    appearance), the first item's keys, and the cells of each wanted key."""

    n_items: int
    item_starts: npt.NDArray[np.int64]
    names: list[str]
    first_keys: list[str] | None
    columns: dict[str, _CellPart] = field(default_factory=dict)


def _escaped_quotes(
    marked: npt.NDArray[np.int64],
    mark: npt.NDArray[np.uint8],
    backslash_marks: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Indexes (into `marked`) of the quotes escaped by an odd run of backslashes before them."""
    following = backslash_marks + 1
    following = following[following < marked.size]
    before = following - 1
    quoted = (mark[following] == C_QUOTE) & (marked[following] == marked[before] + 1)
    candidates: npt.NDArray[np.int64] = following[quoted]
    if candidates.size == 0:
        return candidates
    positions = marked[backslash_marks]
    run_first = np.ones(positions.size, dtype=np.bool_)
    run_first[1:] = np.diff(positions) != 1
    run_start = np.maximum.accumulate(np.where(run_first, np.arange(positions.size), 0))
    last = np.searchsorted(backslash_marks, candidates - 1)
    run_length = last - run_start[last] + 1
    escaped: npt.NDArray[np.int64] = candidates[run_length % 2 == 1]
    return escaped


@dataclass(frozen=True)
class _Scan:
    """A chunk's bytes [start, start + limit] scanned: its real quotes (not escaped), its
    backslashes, and the structurals outside strings up to the last complete item (or the
    items' ']') with their codes and the depth after each."""

    start: int
    limit: int
    ended: bool
    quotes: npt.NDArray[np.int64]
    backslashes: npt.NDArray[np.int64]
    structural: npt.NDArray[np.int64]
    codes: npt.NDArray[np.uint8]
    depth: npt.NDArray[np.int32]


def _scan_chunk(data: bytes, whole: npt.NDArray[np.uint8], start: int, end: int) -> _Scan | None:
    """Scan [start, end) up to its last complete item; None when no item ends in it."""
    classes = np.frombuffer(data[start:end].translate(_CLASS_TABLE), dtype=np.uint8)
    marked = np.flatnonzero(classes.view(np.bool_))  # any non-zero byte counts as true
    mark = classes[marked]
    is_quote = mark == C_QUOTE
    backslash_marks = np.flatnonzero(mark == C_BACKSLASH)
    if backslash_marks.size:
        is_quote[_escaped_quotes(marked, mark, backslash_marks)] = False
    in_string = np.logical_xor.accumulate(is_quote)  # odd number of quotes so far
    is_structural = (mark <= C_LAST_STRUCTURAL) & ~in_string
    structural = marked[is_structural]
    codes = mark[is_structural] - 1
    depth = np.cumsum(_DEPTH_DELTA[codes], dtype=np.int32)
    below = np.flatnonzero(depth < 0)
    if below.size:
        cut = int(below[0])
        if codes[cut] != CLOSE_ARR:
            raise NotFast("unbalanced brackets")
        ended = True
    else:
        item_ends = np.flatnonzero((codes == CLOSE_OBJ) & (depth == 0))
        if item_ends.size == 0:
            if end == len(whole):
                raise NotFast("the items array never closes")
            return None
        cut = int(item_ends[-1])
        ended = False
    structural = structural[: cut + 1]
    codes = codes[: cut + 1]
    limit = int(structural[cut])  # local position of the last token used

    used = int(np.searchsorted(marked, limit))
    marked, mark, is_quote = marked[:used], mark[:used], is_quote[:used]
    return _Scan(
        start,
        limit,
        ended,
        marked[is_quote],
        marked[mark == C_BACKSLASH],
        structural,
        codes,
        depth[: cut + 1],
    )


@dataclass(frozen=True)
class _CellPart:
    """One key's cells in one chunk: item rows (in the chunk), cell kinds, byte spans of the
    texts (global positions), and the decoded texts of its escaped strings, in order."""

    rows: npt.NDArray[np.int32]
    cell: npt.NDArray[np.int8]
    lo: npt.NDArray[np.int32]
    hi: npt.NDArray[np.int32]
    escaped: pa.Array


def _index_chunk(
    scan: _Scan,
    buffer: pa.Buffer,
    whole: npt.NDArray[np.uint8],
    after_item: bool,
    wanted: set[str],
    notes: set[str],
    normalise: Callable[[str], str],
) -> _Chunk:
    """Check a scanned chunk is JSON and classify its items' top-level cells.

    Each item must match `ITEM_RE` (json's grammar, nesting bounded) and the bytes between
    items a comma in whitespace; once that holds, the scan's structurals are json's, and each
    top-level value is the bytes between its key's ':' and the next ',' or '}' of the item.
    """
    start, limit = scan.start, scan.limit
    chunk = whole[start : start + limit + 1]
    structural, codes = scan.structural, scan.codes
    depth_after = scan.depth
    depth_before = np.empty_like(depth_after)
    depth_before[0] = 0
    depth_before[1:] = depth_after[:-1]
    top = depth_before == 0
    item_open = np.flatnonzero(top & (codes == OPEN_OBJ))
    item_close = np.flatnonzero((depth_after == 0) & (codes == CLOSE_OBJ))
    if np.any(top & (codes != OPEN_OBJ) & (codes != COMMA) & (codes != CLOSE_ARR)):
        raise NotFast("an item that is not an object")
    if item_open.size != item_close.size:
        raise NotFast("unbalanced items")
    item_lo = structural[item_open]
    item_hi = structural[item_close] + 1
    n_items = item_open.size

    # The chunk as gap, item, gap, item, ..., gap: items objects, gaps ', ' (or blank).
    bounds = np.empty(2 * n_items + 2, dtype=np.int64)
    bounds[0] = 0
    bounds[1 : 2 * n_items : 2] = item_lo
    bounds[2 : 2 * n_items + 1 : 2] = item_hi
    bounds[-1] = limit if scan.ended else limit + 1
    if np.any(np.diff(bounds) < 0):  # a broken document: spans must stay in order for Arrow
        raise NotFast("items out of order")
    parts = pa.StringArray.from_buffers(  # a view: the parts tile the chunk
        2 * n_items + 1, pa.py_buffer((bounds + start).astype(np.int32)), buffer
    )
    gaps = parts.take(pa.array(np.arange(0, 2 * n_items + 1, 2)))
    expected = np.full(n_items + 1, True)
    if not after_item:
        expected[0] = False  # right after the items' '['
    expected[-1] = False  # before the items' ']', or empty (the chunk ends with an item)
    separated = np.asarray(pc.match_substring_regex(gaps, SEPARATOR_RE))
    blank = np.asarray(pc.match_substring_regex(gaps, BLANK_RE))
    if not np.all(np.where(expected, separated, blank)):
        raise NotFast("something between items")
    if n_items:
        matched = np.asarray(pc.match_substring_regex(parts, ITEM_RE))  # a gap fails at once
        if not matched[1::2].all():
            raise NotFast("an item that is not JSON (or nests too deep)")

    # Top-level members: key ':' value, value up to the next ',' or '}' of the item.
    member = depth_before == 1
    colon_at = np.flatnonzero(member & (codes == COLON))
    separator_at = np.flatnonzero(member & ((codes == COMMA) | (codes == CLOSE_OBJ)))
    colons = structural[colon_at]
    separators = structural[separator_at[np.searchsorted(separator_at, colon_at)]]
    quotes, backslashes = scan.quotes, scan.backslashes
    close_index = np.searchsorted(quotes, colons) - 1
    key_lo = quotes[close_index - 1] + 1
    key_hi = quotes[close_index]
    key_item = np.searchsorted(item_lo, colons, side="right") - 1
    value_lo = _skip_blank(chunk, colons + 1, separators, 1)
    value_hi = _skip_blank(chunk, separators - 1, colons, -1) + 1

    # Keys (decoded when escaped); no key twice in an item.
    key_escaped = _holds_any(key_lo, key_hi, backslashes)
    key_texts = spans_to_strings(buffer, key_lo + start, key_hi + start)
    if key_escaped.any():
        rows = np.flatnonzero(key_escaped)
        decoded = _decode_each_distinct(key_texts.take(pa.array(rows)), _string_content)
        key_texts = _replace_rows(key_texts, rows, decoded)
    encoded = key_texts.dictionary_encode()
    key_ids = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    names: list[str] = encoded.dictionary.to_pylist()
    if key_ids.size and np.bincount(key_item * len(names) + key_ids).max() > 1:
        raise NotFast("a key repeated within an item")
    first_keys = [names[i] for i in key_ids[key_item == 0]] if n_items else None

    # Values: what the oracle's json.loads would have made of each.
    first = chunk[value_lo]
    is_string = first == ord('"')
    is_container = (first == ord("{")) | (first == ord("["))
    is_number = ~is_string & ~is_container & (first != ord("n")) & (first != ord("t"))
    is_number &= first != ord("f")
    if np.any(is_number & (value_hi - value_lo > MAX_SCALAR_CHARS)):
        raise NotFast("a very long number")
    containers = np.flatnonzero(is_container)
    if containers.size:
        raw = spans_to_strings(buffer, value_lo[containers] + start, value_hi[containers] + start)
        if pc.any(pc.match_substring_regex(raw, LONG_DIGITS_RE)).as_py():
            raise NotFast("a very long number")
    text_lo = np.where(is_string, value_lo + 1, value_lo)
    text_hi = np.where(is_string, value_hi - 1, value_hi)
    escaped = is_string & _holds_any(text_lo, text_hi, backslashes)
    cell = np.full(colons.size, CELL_TEXT, dtype=np.int8)
    cell[first == ord("n")] = CELL_NULL
    cell[is_container] = CELL_OBJECT
    cell[escaped] = CELL_ESCAPED
    minus_zero = (value_hi - value_lo == 2) & (first == ord("-"))
    minus_zero &= chunk[np.minimum(value_lo + 1, limit)] == ord("0")
    cell[minus_zero] = CELL_MINUS_ZERO

    item_starts = item_lo + start
    result = _Chunk(n_items, item_starts, names, first_keys)
    for key_id in np.unique(key_ids):
        name = names[int(key_id)]
        normal = normalise(name)
        if normal not in wanted:
            continue
        selected = np.flatnonzero(key_ids == key_id)
        if normal not in notes and np.any(is_container[selected]):
            raise NotFast("an object in a column that is not notes")
        chosen_escaped = selected[escaped[selected]]
        texts = _decode_each_distinct(
            spans_to_strings(
                buffer, text_lo[chosen_escaped] + start, text_hi[chosen_escaped] + start
            ),
            _string_content,
        )
        result.columns[name] = _CellPart(  # int32: positions are under 2 GB
            key_item[selected].astype(np.int32),
            cell[selected],
            (text_lo[selected] + start).astype(np.int32),
            (text_hi[selected] + start).astype(np.int32),
            texts,
        )
    return result


def _holds_any(
    lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], points: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Whether each span [lo, hi) (in order, disjoint) holds one of the sorted `points`."""
    holds = np.zeros(lo.size, dtype=np.bool_)
    if points.size and lo.size:
        span = np.searchsorted(lo, points, side="right") - 1
        inside = (span >= 0) & (points < hi[np.maximum(span, 0)])
        holds[span[inside]] = True
    return holds


def _skip_blank(
    chunk: npt.NDArray[np.uint8],
    begin: npt.NDArray[np.int64],
    stop: npt.NDArray[np.int64],
    step: int,
) -> npt.NDArray[np.int64]:
    """From each begin, step over whitespace towards stop: the first other byte, else stop.

    Whitespace around a value is short (a space, an indentation), so this loops a few times
    over ever fewer positions; a very long run is left to json.
    """
    position = begin.copy()
    active = np.flatnonzero(position != stop)
    for _ in range(MAX_BLANK_RUN):
        if active.size == 0:
            return position
        blank = _IS_BLANK[chunk[position[active]]]
        active = active[blank]
        position[active] += step
        active = active[position[active] != stop[active]]
    raise NotFast("a very long run of whitespace")


def _build_column(
    buffer: pa.Buffer, item_starts: npt.NDArray[np.int64], parts: list[tuple[int, _CellPart]]
) -> pa.Array:
    """A key's cells over all chunks (`parts` with the row of each chunk's first item)."""
    rows = np.concatenate([offset + part.rows.astype(np.int64) for offset, part in parts])
    cell = np.concatenate([part.cell for _, part in parts])
    lo = np.concatenate([part.lo for _, part in parts]).astype(np.int64)
    hi = np.concatenate([part.hi for _, part in parts]).astype(np.int64)
    starts = item_starts.copy()
    ends = item_starts.copy()
    valid = np.zeros(item_starts.size, dtype=np.bool_)
    plain = cell == CELL_TEXT
    starts[rows[plain]] = lo[plain]
    ends[rows[plain]] = hi[plain]
    valid[rows[plain]] = True
    column = spans_to_strings(buffer, starts, ends, valid)
    texts: list[pa.Array] = []
    order: list[npt.NDArray[np.int64]] = []
    escaped = np.flatnonzero(cell == CELL_ESCAPED)
    if escaped.size:
        texts.append(pa.concat_arrays([part.escaped for _, part in parts]))
        order.append(escaped)
    zeros = np.flatnonzero(cell == CELL_MINUS_ZERO)
    if zeros.size:
        texts.append(pa.array(["0"] * zeros.size, type=pa.string()))
        order.append(zeros)
    objects = np.flatnonzero(cell == CELL_OBJECT)
    if objects.size:
        raw = spans_to_strings(buffer, lo[objects], hi[objects])
        texts.append(_decode_each_distinct(raw, _notes_text))
        order.append(objects)
    if not texts:
        return column
    return _replace_rows(column, rows[np.concatenate(order)], pa.concat_arrays(texts))


@dataclass(frozen=True)
class FastTable:
    """What the fast reader found: per wanted name, the key it reads, and its cells.

    columns: normalised name -> string array; written_names: normalised name -> key;
    ignored: keys not read; n_rows: items; item_starts: byte offset of each item's '{'.
    """

    columns: dict[str, pa.Array]
    written_names: dict[str, str]
    ignored: tuple[str, ...]
    n_rows: int
    item_starts: npt.NDArray[np.int64]


def read_items_fast(
    data: bytes,
    wanted: Sequence[str],
    notes_columns: Sequence[str],
    normalise: Callable[[str], str],
) -> FastTable:
    """The items of a collection envelope or list, as the oracle would read them.

    Raises NotFast whenever the input is not something this reader handles with certainty.
    """
    if len(data) >= (1 << 31) - 1:
        raise NotFast("over 2 GB")
    _check_utf8(data)
    begin = 3 if data.startswith(UTF8_BOM) else 0
    items_open = _items_array_start(data, begin)
    whole = np.frombuffer(data, dtype=np.uint8)
    buffer = pa.py_buffer(data)
    pool = ThreadPoolExecutor(max_workers=INDEX_THREADS)
    try:
        return _read_items(data, whole, buffer, items_open, wanted, notes_columns, normalise, pool)
    finally:
        pool.shutdown(cancel_futures=True)


def _read_items(
    data: bytes,
    whole: npt.NDArray[np.uint8],
    buffer: pa.Buffer,
    items_open: int,
    wanted: Sequence[str],
    notes_columns: Sequence[str],
    normalise: Callable[[str], str],
    pool: ThreadPoolExecutor,
) -> FastTable:
    """Scan chunks in order; check and classify them, then build the columns, on `pool`."""
    wanted_set, notes_set = set(wanted), set(notes_columns)
    pending: list[Future[_Chunk]] = []
    position, size = items_open + 1, CHUNK_BYTES
    while True:
        if len(pending) > INDEX_THREADS:
            pending[-INDEX_THREADS - 1].result()  # bound the scans held in memory
        scan = _scan_chunk(data, whole, position, min(position + size, len(data)))
        if scan is None:
            size *= 2
            continue
        pending.append(
            pool.submit(
                _index_chunk, scan, buffer, whole, bool(pending), wanted_set, notes_set, normalise
            )
        )
        position, size = scan.start + scan.limit + 1, CHUNK_BYTES
        if scan.ended:
            break
    chunks = [future.result() for future in pending]
    _check_envelope(data, items_open, position - 1)

    key_order: dict[str, None] = {}
    for chunk in chunks:
        key_order.update(dict.fromkeys(chunk.names))
    first = next((c.first_keys for c in chunks if c.first_keys is not None), [])
    ordered = first + sorted(k for k in key_order if k not in set(first))
    seen: dict[str, str] = {}
    for key in ordered:
        seen.setdefault(normalise(key), key)
    starts = np.concatenate([c.item_starts for c in chunks]) if chunks else np.empty(0, np.int64)
    first_rows = np.cumsum([0] + [c.n_items for c in chunks])
    builds: dict[str, Future[pa.Array]] = {}
    written: dict[str, str] = {}
    for name in wanted:
        source = seen.get(name)
        if source is None:
            continue
        parts = [
            (int(first_rows[i]), c.columns[source])
            for i, c in enumerate(chunks)
            if source in c.columns
        ]
        builds[name] = pool.submit(_build_column, buffer, starts, parts)
        written[name] = source
    columns = {name: build.result() for name, build in builds.items()}
    ignored = tuple(key for normal, key in seen.items() if normal not in wanted_set)
    return FastTable(columns, written, ignored, sum(c.n_items for c in chunks), starts)


def item_lines(data: bytes, item_starts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """1-based line of each item start: one plus the newlines before it."""
    whole = np.frombuffer(data, dtype=np.uint8)
    lines = np.empty(item_starts.size, dtype=np.int64)
    before = 0
    for lo in range(0, max(len(whole), 1), CHUNK_BYTES * 4):
        hi = lo + CHUNK_BYTES * 4
        newlines = np.flatnonzero(whole[lo:hi] == 10)
        inside = (item_starts >= lo) & (item_starts < hi)
        lines[inside] = 1 + before + np.searchsorted(newlines, item_starts[inside] - lo)
        before += newlines.size
    return lines
