"""A vectorised reader for large JSON entity files, exact to `readers.read_json_table`'s.

`json.loads` builds a Python object for every value of a 1M-item file (tens of seconds). Here
numpy indexes the bytes instead, simdjson-style: unescaped quotes delimit strings, the
structural characters outside strings give the nesting depth, and every gap between two
structurals must hold nothing, one string or one scalar. The whole grammar is checked on that
token stream, so a file is read here only when `json.loads` would accept it; anything this
reader cannot vouch for raises `NotFast` and the caller uses `json.loads`, the oracle.

The file is indexed in chunks that end on an item boundary, so memory stays a few times the
chunk size on top of the bytes and the columns. Cell texts are taken straight from the bytes
(a number's text is what `parse_float=str` gives); strings with escapes and objects (notes)
go through `json` once per distinct raw text.
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
MAX_DEPTH = 100  # deeper nesting: json.loads's recursion limit decides, so leave it to json
MAX_SCALAR_CHARS = 4000  # int() refuses more than 4300 digits: leave those to json

UTF8_BOM = b"\xef\xbb\xbf"
WHITESPACE = b" \t\n\r"  # exactly json's whitespace

# Token codes of the merged stream.
OPEN_OBJ, CLOSE_OBJ, OPEN_ARR, CLOSE_ARR, COLON, COMMA, KEY, STRING, SCALAR = range(9)
IN_OBJECT, IN_ARRAY, IN_ITEMS = range(3)

_STRUCTURAL = np.full(256, -1, dtype=np.int8)
for _code, _char in enumerate(b"{}[]:,"):
    _STRUCTURAL[_char] = _code
_CLASSES = bytearray(256)
for _code, _char in enumerate(b"{}[]:,"):
    _CLASSES[_char] = _code + 1
C_LAST_STRUCTURAL, C_QUOTE, C_BACKSLASH, C_WHITESPACE_CONTROL, C_CONTROL = 6, 7, 8, 9, 10
_CLASSES[34], _CLASSES[92] = C_QUOTE, C_BACKSLASH
for _char in range(32):
    _CLASSES[_char] = C_WHITESPACE_CONTROL if _char in b"\t\n\r" else C_CONTROL
_CLASS_TABLE = bytes(_CLASSES)
_DEPTH_DELTA = np.array([1, -1, 1, -1, 0, 0, 0, 0, 0], dtype=np.int64)


def _transitions() -> npt.NDArray[np.bool_]:
    """valid[context, previous token, token]: json's grammar as pairs of neighbouring tokens."""
    valid = np.zeros((3, 9, 9), dtype=np.bool_)
    value_start = [OPEN_OBJ, OPEN_ARR, STRING, SCALAR]
    value_end = [CLOSE_OBJ, CLOSE_ARR, STRING, SCALAR]
    for prev in [OPEN_OBJ, *value_end]:
        valid[IN_OBJECT, prev, CLOSE_OBJ] = True
    for prev in (OPEN_OBJ, COMMA):
        valid[IN_OBJECT, prev, KEY] = True
    valid[IN_OBJECT, KEY, COLON] = True
    for cur in value_start:
        valid[IN_OBJECT, COLON, cur] = True
    for prev in value_end:
        valid[IN_OBJECT, prev, COMMA] = True
    for prev in [OPEN_ARR, *value_end]:
        valid[IN_ARRAY, prev, CLOSE_ARR] = True
    for cur in value_start:
        for prev in (OPEN_ARR, COMMA):
            valid[IN_ARRAY, prev, cur] = True
    for prev in value_end:
        valid[IN_ARRAY, prev, COMMA] = True
    # The items array: objects only (anything else is the oracle's problem to report).
    valid[IN_ITEMS, OPEN_ARR, OPEN_OBJ] = valid[IN_ITEMS, COMMA, OPEN_OBJ] = True
    valid[IN_ITEMS, CLOSE_OBJ, COMMA] = True
    valid[IN_ITEMS, OPEN_ARR, CLOSE_ARR] = valid[IN_ITEMS, CLOSE_OBJ, CLOSE_ARR] = True
    return valid


_VALID_FLAT = _transitions().ravel()
_SCALAR_RE = r"^(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null)$"

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
    candidates = following[quoted]
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


def _whitespace_around(
    buffer: pa.Buffer, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Leading and trailing whitespace bytes of each span [lo, hi) (adjacent, in order)."""
    n = lo.size
    offsets = np.empty(2 * n + 1, dtype=np.int32)
    offsets[0 : 2 * n : 2] = lo
    offsets[1 : 2 * n : 2] = hi
    offsets[2 * n] = hi[-1]
    view = pa.StringArray.from_buffers(2 * n, pa.py_buffer(offsets), buffer)
    length = hi - lo
    chars = WHITESPACE.decode()
    lead = length - np.asarray(pc.binary_length(pc.ascii_ltrim(view, chars)))[0::2]
    trail = length - np.asarray(pc.binary_length(pc.ascii_rtrim(view, chars)))[0::2]
    return lead, trail


def _contexts(
    kind: npt.NDArray[np.int64], depth_after: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """The container (object, array or the items array) each token sits in or closes."""
    delta = _DEPTH_DELTA[kind]
    brackets = np.flatnonzero(delta)
    bracket_kind = kind[brackets]
    bracket_depth = depth_after[brackets]
    openers = np.flatnonzero(delta[brackets] > 0)
    # The container open just after each bracket: an opener's own, a closer's parent.
    after = np.full(brackets.size + 1, IN_ITEMS, dtype=np.int64)
    for level in range(1, int(bracket_depth.max(initial=0)) + 1):
        at_level = openers[bracket_depth[openers] == level]
        members = np.flatnonzero(bracket_depth == level)
        owner = at_level[np.searchsorted(at_level, members, side="right") - 1]
        after[members + 1] = np.where(bracket_kind[owner] == OPEN_OBJ, IN_OBJECT, IN_ARRAY)
    latest = np.zeros(kind.size, dtype=np.int64)
    latest[brackets] = np.arange(1, brackets.size + 1)
    np.maximum.accumulate(latest, out=latest)
    before = np.empty(kind.size, dtype=np.int64)
    before[0] = 0
    before[1:] = latest[:-1]
    context: npt.NDArray[np.int64] = after[before]
    return context


@dataclass(frozen=True)
class _Scan:
    """A chunk's bytes [start, start + limit] classified: the marked bytes (quotes,
    backslashes, structurals, control characters) with whether each is in a string, and the
    structurals outside strings up to the last complete item (or the items' ']')."""

    start: int
    limit: int
    ended: bool
    marked: npt.NDArray[np.int64]
    mark: npt.NDArray[np.uint8]
    in_string: npt.NDArray[np.bool_]
    is_quote: npt.NDArray[np.bool_]
    structural: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int64]


def _scan_chunk(data: bytes, whole: npt.NDArray[np.uint8], start: int, end: int) -> _Scan | None:
    """Scan [start, end) up to its last complete item; None when no item ends in it."""
    classes = np.frombuffer(data[start:end].translate(_CLASS_TABLE), dtype=np.uint8)
    marked = np.flatnonzero(classes.view(np.bool_))  # any non-zero byte counts as true
    mark = classes[marked]
    is_quote = mark == C_QUOTE
    backslash_marks = np.flatnonzero(mark == C_BACKSLASH)
    if backslash_marks.size:
        is_quote[_escaped_quotes(marked, mark, backslash_marks)] = False
    in_string = (np.cumsum(is_quote, dtype=np.int32) & 1).astype(np.bool_)
    is_structural = (mark <= C_LAST_STRUCTURAL) & ~in_string
    structural = marked[is_structural]
    codes = mark[is_structural].astype(np.int64) - 1
    depth = np.cumsum(_DEPTH_DELTA[codes])
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
    return _Scan(
        start,
        limit,
        ended,
        marked[:used],
        mark[:used],
        in_string[:used],
        is_quote[:used],
        structural,
        codes,
    )


def _index_chunk(
    scan: _Scan,
    buffer: pa.Buffer,
    whole: npt.NDArray[np.uint8],
    after_item: bool,
    wanted: set[str],
    notes: set[str],
    normalise: Callable[[str], str],
) -> _Chunk:
    """Check a scanned chunk is JSON and classify its items' top-level cells."""
    start, limit = scan.start, scan.limit
    chunk = whole[start : start + limit + 1]
    marked, mark, in_string, is_quote = scan.marked, scan.mark, scan.in_string, scan.is_quote
    structural, codes = scan.structural, scan.codes
    cut = structural.size - 1
    used = int(np.searchsorted(marked, limit))
    mark, in_string, is_quote, marked = (
        mark[:used],
        in_string[:used],
        is_quote[:used],
        marked[:used],
    )
    if np.any(mark == C_CONTROL):
        raise NotFast("a control character")
    if np.any((mark == C_WHITESPACE_CONTROL) & in_string):
        raise NotFast("a control character in a string")
    if np.any((mark == C_BACKSLASH) & ~in_string):
        raise NotFast("a backslash outside a string")
    quotes = marked[is_quote]
    if quotes.size % 2:
        raise NotFast("unterminated string")
    opens, closes = quotes[0::2], quotes[1::2]
    backslashes = marked[mark == C_BACKSLASH]

    # Gaps: gap g is the bytes before structural g (after structural g - 1). Each must hold
    # whitespace around at most one value: exactly one string, or one scalar (checked below).
    n_gaps = cut + 1
    gap_lo = np.empty(n_gaps, dtype=np.int64)
    gap_lo[0] = 0
    gap_lo[1:] = structural[:-1] + 1
    gap_hi = structural
    lead, trail = _whitespace_around(buffer, gap_lo + start, gap_hi + start)
    first_sig = gap_lo + lead
    last_sig = gap_hi - 1 - trail
    string_gap = np.searchsorted(structural, opens)
    if np.any(first_sig[string_gap] != opens) or np.any(last_sig[string_gap] != closes):
        raise NotFast("stray characters around a string")
    has_string = np.zeros(n_gaps, dtype=np.bool_)
    has_string[string_gap] = True
    scalar_gap = np.flatnonzero((first_sig < gap_hi) & ~has_string)
    scalar_lo = first_sig[scalar_gap]
    scalar_hi = last_sig[scalar_gap] + 1
    scalars = spans_to_strings(buffer, scalar_lo + start, scalar_hi + start)
    if len(scalars):
        if not pc.all(pc.match_substring_regex(scalars, _SCALAR_RE)).as_py():
            raise NotFast("not a JSON scalar")
        if pc.max(pc.utf8_length(scalars)).as_py() > MAX_SCALAR_CHARS:
            raise NotFast("a very long number")

    # The merged token stream: each gap's value (if any) then its structural.
    gap_value = np.full(n_gaps, -1, dtype=np.int64)
    gap_value[string_gap] = STRING
    gap_value[scalar_gap] = SCALAR
    has_value = gap_value >= 0
    values_through = np.cumsum(has_value)
    structural_at = np.arange(n_gaps) + values_through
    value_gaps = np.flatnonzero(has_value)
    value_at = structural_at[value_gaps] - 1
    n_tokens = n_gaps + value_gaps.size
    kind = np.empty(n_tokens, dtype=np.int64)
    kind[structural_at] = codes
    kind[value_at] = gap_value[value_gaps]
    token_lo = np.empty(n_tokens, dtype=np.int64)
    token_hi = np.empty(n_tokens, dtype=np.int64)
    token_lo[structural_at] = structural
    token_hi[structural_at] = structural + 1
    string_at = structural_at[string_gap] - 1
    token_lo[string_at] = opens
    token_hi[string_at] = closes + 1
    scalar_at = structural_at[scalar_gap] - 1
    token_lo[scalar_at] = scalar_lo
    token_hi[scalar_at] = scalar_hi

    depth_after = np.cumsum(_DEPTH_DELTA[kind])
    depth_before = depth_after - _DEPTH_DELTA[kind]
    if depth_after.max(initial=0) > MAX_DEPTH:
        raise NotFast("deep nesting")
    context = _contexts(kind, depth_after)
    previous = np.empty(n_tokens, dtype=np.int64)
    previous[0] = CLOSE_OBJ if after_item else OPEN_ARR
    previous[1:] = kind[:-1]
    is_key = (
        (kind == STRING) & (context == IN_OBJECT) & ((previous == OPEN_OBJ) | (previous == COMMA))
    )
    kind[is_key] = KEY
    previous[1:] = kind[:-1]
    if not _VALID_FLAT[(context * 9 + previous) * 9 + kind].all():
        raise NotFast("not JSON")

    # Strings with escapes: every one must decode (nested ones too, as json.loads checks).
    escaped_string = np.zeros(opens.size, dtype=np.bool_)
    if backslashes.size:
        escaped_string[np.searchsorted(opens, backslashes, side="right") - 1] = True
    token_string = np.full(n_tokens, -1, dtype=np.int64)
    token_string[string_at] = np.arange(opens.size)
    escaped_rows = np.flatnonzero(escaped_string)
    decoded_escapes = _decode_each_distinct(
        spans_to_strings(buffer, opens[escaped_rows] + 1 + start, closes[escaped_rows] + start),
        _string_content,
    )
    escape_index = np.full(opens.size, -1, dtype=np.int64)
    escape_index[escaped_rows] = np.arange(escaped_rows.size)

    # Items and their top-level keys.
    item_tokens = np.flatnonzero((kind == OPEN_OBJ) & (depth_before == 0))
    n_items = item_tokens.size
    key_tokens = np.flatnonzero((kind == KEY) & (depth_before == 1))
    key_strings = token_string[key_tokens]
    key_texts = spans_to_strings(
        buffer, opens[key_strings] + 1 + start, closes[key_strings] + start
    )
    key_escaped = escape_index[key_strings]
    if np.any(key_escaped >= 0):
        rows = np.flatnonzero(key_escaped >= 0)
        key_texts = _replace_rows(
            key_texts, rows, decoded_escapes.take(pa.array(key_escaped[rows]))
        )
    encoded = key_texts.dictionary_encode()
    key_ids = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    names: list[str] = encoded.dictionary.to_pylist()
    key_item = np.searchsorted(item_tokens, key_tokens, side="right") - 1
    if key_ids.size and np.bincount(key_item * len(names) + key_ids).max() > 1:
        raise NotFast("a key repeated within an item")
    first_keys = [names[i] for i in key_ids[key_item == 0]] if n_items else None

    item_starts = token_lo[item_tokens] + start
    result = _Chunk(n_items, item_starts, names, first_keys)
    closers = np.flatnonzero(depth_after <= 1)
    for key_id in np.unique(key_ids):
        name = names[int(key_id)]
        normal = normalise(name)
        if normal not in wanted:
            continue
        selected = np.flatnonzero(key_ids == key_id)
        result.columns[name] = _cell_part(
            start,
            key_item[selected],
            key_tokens[selected] + 2,
            kind,
            token_lo,
            token_hi,
            closers,
            chunk,
            token_string,
            escape_index,
            decoded_escapes,
            notes=normal in notes,
        )
    return result


@dataclass(frozen=True)
class _CellPart:
    """One key's cells in one chunk: item rows (in the chunk), cell kinds, byte spans of the
    texts (global positions), and the decoded texts of its escaped strings, in order."""

    rows: npt.NDArray[np.int64]
    cell: npt.NDArray[np.int8]
    lo: npt.NDArray[np.int64]
    hi: npt.NDArray[np.int64]
    escaped: pa.Array


def _cell_part(
    start: int,
    rows: npt.NDArray[np.int64],
    tokens: npt.NDArray[np.int64],
    kind: npt.NDArray[np.int64],
    token_lo: npt.NDArray[np.int64],
    token_hi: npt.NDArray[np.int64],
    closers: npt.NDArray[np.int64],
    chunk: npt.NDArray[np.uint8],
    token_string: npt.NDArray[np.int64],
    escape_index: npt.NDArray[np.int64],
    decoded_escapes: pa.Array,
    *,
    notes: bool,
) -> _CellPart:
    """Classify one key's values (`tokens`) as the oracle's `values_to_strings` reads them."""
    value_kind = kind[tokens]
    lo = token_lo[tokens]
    hi = token_hi[tokens]
    is_string = value_kind == STRING
    lo[is_string] += 1  # the content, between the quotes
    hi[is_string] -= 1
    is_container = (value_kind == OPEN_OBJ) | (value_kind == OPEN_ARR)
    if is_container.any():
        if not notes:
            raise NotFast("an object in a column that is not notes")
        ends = closers[np.searchsorted(closers, tokens[is_container], side="right")]
        hi[is_container] = token_hi[ends]
    cell = np.full(tokens.size, CELL_TEXT, dtype=np.int8)
    cell[is_container] = CELL_OBJECT
    escape_rows = np.full(tokens.size, -1, dtype=np.int64)
    escape_rows[is_string] = escape_index[token_string[tokens[is_string]]]
    escaped = escape_rows >= 0
    cell[escaped] = CELL_ESCAPED
    is_scalar = np.flatnonzero(value_kind == SCALAR)
    first = chunk[lo[is_scalar]]
    width = hi[is_scalar] - lo[is_scalar]
    cell[is_scalar[first == ord("n")]] = CELL_NULL
    minus_zero = (width == 2) & (first == ord("-")) & (chunk[lo[is_scalar] + 1] == ord("0"))
    cell[is_scalar[minus_zero]] = CELL_MINUS_ZERO
    texts = decoded_escapes.take(pa.array(escape_rows[escaped]))
    return _CellPart(rows, cell, lo + start, hi + start, texts)


def _build_column(
    buffer: pa.Buffer, item_starts: npt.NDArray[np.int64], parts: list[tuple[int, _CellPart]]
) -> pa.Array:
    """A key's cells over all chunks (`parts` with the row of each chunk's first item)."""
    rows = np.concatenate([offset + part.rows for offset, part in parts])
    cell = np.concatenate([part.cell for _, part in parts])
    lo = np.concatenate([part.lo for _, part in parts])
    hi = np.concatenate([part.hi for _, part in parts])
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
    wanted_set, notes_set = set(wanted), set(notes_columns)
    pending: list[Future[_Chunk]] = []
    position, size = items_open + 1, CHUNK_BYTES
    with ThreadPoolExecutor(max_workers=INDEX_THREADS) as pool:
        try:
            while True:
                if len(pending) > INDEX_THREADS:
                    pending[-INDEX_THREADS - 1].result()  # bound the scans held in memory
                scan = _scan_chunk(data, whole, position, min(position + size, len(data)))
                if scan is None:
                    size *= 2
                    continue
                pending.append(
                    pool.submit(
                        _index_chunk,
                        scan,
                        buffer,
                        whole,
                        bool(pending),
                        wanted_set,
                        notes_set,
                        normalise,
                    )
                )
                position, size = scan.start + scan.limit + 1, CHUNK_BYTES
                if scan.ended:
                    break
            chunks = [future.result() for future in pending]
        finally:
            for future in pending:
                future.cancel()
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
    columns: dict[str, pa.Array] = {}
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
        columns[name] = _build_column(buffer, starts, parts)
        written[name] = source
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
