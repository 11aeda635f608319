"""The vectorised JSON reader gives exactly the json.loads reader's table, or steps aside."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import InputError
from core.ingest import json_index, load_dataset
from core.ingest.readers import RawTable, ReadFailure, normalise_header, read_json_table
from core.ingest.tables import TABLES

from .conftest import SPEC_EXAMPLE

PAYMENTS = TABLES["payments"]
WANTED = [c.name for c in PAYMENTS.columns]
NOTES = [c.name for c in PAYMENTS.columns if c.kind == "notes"]
KEYS = ["id", "amount", "status", "created_at", "notes", "fee", "description", "captured"]
KEYS += ["entity", "Amount", "Created At", "extra", "n\u00f8te"]


def _oracle(data: bytes) -> RawTable:
    saved = json_index.FAST_JSON_MIN_BYTES
    json_index.FAST_JSON_MIN_BYTES = 1 << 62
    try:
        return read_json_table("payments.json", data, WANTED, NOTES)
    finally:
        json_index.FAST_JSON_MIN_BYTES = saved


def _fast(data: bytes) -> json_index.FastTable:
    return json_index.read_items_fast(data, WANTED, NOTES, normalise_header)


def _assert_same(oracle: RawTable, fast: json_index.FastTable, data: bytes) -> None:
    assert list(fast.columns) == list(oracle.columns)
    for name, column in oracle.columns.items():
        assert fast.columns[name].type == column.type == pa.string()
        assert fast.columns[name].to_pylist() == column.to_pylist(), name
    assert fast.written_names == oracle.written_names
    assert fast.ignored == oracle.ignored
    assert fast.n_rows == oracle.n_rows
    assert json_index.item_lines(data, fast.item_starts).tolist() == oracle.lines().tolist()


# --- documents -----------------------------------------------------------------------------

_texts = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",))
    | st.sampled_from('"\\/\n\t\x00\u2028'),
    max_size=12,
)


@st.composite
def _string_json(draw: st.DrawFn) -> str:
    text = draw(_texts)
    plain = json.dumps(text, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        return plain
    # Escape some plain characters too (\u0061, \/): json accepts any character escaped.
    out = ['"']
    for char in text:
        if char == "/" or (draw(st.integers(0, 5)) == 0 and char.isascii()):
            out.append("\\/" if char == "/" and draw(st.booleans()) else f"\\u{ord(char):04x}")
        else:
            out.append(json.dumps(char, ensure_ascii=False)[1:-1])
    out.append('"')
    return "".join(out)


_numbers = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(["0", "-0", "12.50", "1e3", "1E+3", "-0.0", "2.5e-3", "455600", "-7"]),
)
_scalars = st.one_of(
    _numbers,
    st.sampled_from(["true", "false", "null"]),
    _string_json(),
)


def _container(depth: int) -> st.SearchStrategy[str]:
    inner = (
        _scalars if depth > 1 else st.one_of(_scalars, st.deferred(lambda: _container(depth + 1)))
    )
    objects = st.lists(st.tuples(_string_json(), inner), max_size=3).map(
        lambda pairs: "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    )
    arrays = st.lists(inner, max_size=3).map(lambda vs: "[" + ",".join(vs) + "]")
    return st.one_of(objects, arrays)


@st.composite
def _item(draw: st.DrawFn) -> list[tuple[str, str]]:
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=8))
    pairs = []
    for key in keys:
        if key == "notes":
            value = draw(st.one_of(_container(1), _scalars, st.sampled_from(["{}", "[]"])))
        else:
            value = draw(_scalars)
        pairs.append((json.dumps(key, ensure_ascii=draw(st.booleans())), value))
    return pairs


def _layout(pairs: list[tuple[str, str]], indent: int | None, pad: str) -> str:
    if indent is None:
        return "{" + ", ".join(f"{k}:{pad}{v}" for k, v in pairs) + "}"
    inner = "\n" + " " * (indent * 2)
    body = ",".join(f"{inner}{k}:{pad}{v}" for k, v in pairs)
    return "{" + body + ("\n" + " " * indent if pairs else "") + "}"


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    items = draw(st.lists(_item(), max_size=6))
    indent = draw(st.sampled_from([None, 0, 2]))
    pad = draw(st.sampled_from(["", " ", " \t "]))
    sep = ",\n" if indent is not None else draw(st.sampled_from([",", ", ", " ,\r\n "]))
    body = "[" + sep.join(_layout(i, indent, pad) for i in items) + "]"
    if draw(st.booleans()):
        count = draw(st.sampled_from(["1", "1e2", '"x"', '{"a": [1, {}]}', "null"]))
        head = draw(st.sampled_from(['"entity": "collection", ', "", '"\\u0065ntity": 5, ']))
        tail = draw(st.sampled_from(["", ', "more": [[]]', ', "x": "items"']))
        text = "{" + head + f'"count": {count}, "items": ' + body + tail + "}"
    else:
        text = body
    text = draw(st.sampled_from(["", "\n", " \r\n"])) + text + draw(st.sampled_from(["", "\n"]))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8")
    return (b"\xef\xbb\xbf" + data) if draw(st.booleans()) else data


# --- properties ----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_json_fast_reader_reads_every_valid_document_exactly_as_json_loads(data: bytes) -> None:
    oracle = _oracle(data)
    _assert_same(oracle, _fast(data), data)


_MUTATIONS = [
    "",
    ",",
    "]",
    "}",
    "[",
    "{",
    ":",
    '"',
    "\\",
    " ",
    "\x01",
    "\xef\xbb\xbf",
    "0",
    "-",
    ".",
]
_MUTATIONS += ["NaN", "tru", "\u00e9", "\n", "\t"]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.data())
def test_json_fast_reader_accepts_a_mutated_document_only_when_json_loads_does(
    data: bytes, draw: st.DataObject
) -> None:
    text = data.decode("utf-8")
    at = draw.draw(st.integers(0, len(text)))
    width = draw.draw(st.integers(0, 2))
    mutated = (text[:at] + draw.draw(st.sampled_from(_MUTATIONS)) + text[at + width :]).encode()
    try:
        fast = _fast(mutated)
    except json_index.NotFast:
        fast = None
    try:
        oracle: RawTable | None = _oracle(mutated)
    except (ReadFailure, UnicodeEncodeError):  # a split surrogate pair: the oracle fails too
        oracle = None
    if fast is not None:
        assert oracle is not None, mutated
        _assert_same(oracle, fast, mutated)


# --- examples ------------------------------------------------------------------------------


def _problems(data: bytes, *, fast: bool, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(json_index, "FAST_JSON_MIN_BYTES", 0 if fast else 1 << 62)
    with pytest.raises(ReadFailure) as failure:
        read_json_table("payments.json", data, WANTED, NOTES)
    return [str(p) for p in failure.value.problems]


def test_json_fast_reader_reads_the_spec_example_payments_exactly(tmp_path: Path) -> None:
    data = (SPEC_EXAMPLE / "dataset" / "payments.json").read_bytes()
    oracle = _oracle(data)
    assert oracle.n_rows == 400
    _assert_same(oracle, _fast(data), data)


def test_json_reader_uses_the_fast_reader_above_the_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = (SPEC_EXAMPLE / "dataset" / "payments.json").read_bytes()
    calls: list[int] = []
    real = json_index.read_items_fast

    def counting(*args: object, **kwargs: object) -> json_index.FastTable:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(json_index, "read_items_fast", counting)
    monkeypatch.setattr(json_index, "FAST_JSON_MIN_BYTES", len(data) + 1)
    small = read_json_table("payments.json", data, WANTED, NOTES)
    assert calls == []
    monkeypatch.setattr(json_index, "FAST_JSON_MIN_BYTES", len(data))
    large = read_json_table("payments.json", data, WANTED, NOTES)
    assert calls == [1]
    assert {k: v.to_pylist() for k, v in large.columns.items()} == {
        k: v.to_pylist() for k, v in small.columns.items()
    }
    assert large.lines().tolist() == small.lines().tolist()


def test_json_fast_reader_spans_many_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    items = [
        {"id": f"pay_{i}", "amount": i * 100 - 5, "notes": {"k": 'v"' * (i % 3)}, "fee": None}
        for i in range(300)
    ]
    data = json.dumps({"entity": "collection", "items": items}, indent=2).encode()
    monkeypatch.setattr(json_index, "CHUNK_BYTES", 1000)
    _assert_same(_oracle(data), _fast(data), data)
    monkeypatch.setattr(json_index, "CHUNK_BYTES", 7)  # smaller than an item: the chunk grows
    _assert_same(_oracle(data), _fast(data), data)


@pytest.mark.parametrize(
    "text",
    [
        '[{"id": "pay_1", "id": "pay_2"}]',  # a key twice in one item
        '{"items": [], "items": [{"id": "pay_1"}]}',  # the envelope's items twice
        '[{"id": "pay_1"}, "pay_2"]',  # an item that is not an object
        '[{"id": "pay_1"}, [1]]',
        '[{"amount": NaN}]',
        '[{"amount": 01}]',
        '[{"id": "a\x01b"}]',
        '[{"id": "\\ud800"}]',  # a lone surrogate
        '[{"id": "pay_1"},]',
        '{"entity": "collection", "items": {}}',
        '{"entity": "collection"}',
        "\ufeff[]",  # a second BOM
        '[{"amount": [1]}]',  # an array outside notes: left to json
    ],
)
def test_json_fast_reader_steps_aside_for_what_it_cannot_vouch_for(text: str) -> None:
    with pytest.raises(json_index.NotFast):
        _fast(b"\xef\xbb\xbf" + text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize(
    "text",
    [
        '{"entity": "collection",\n "items": [\n  {"id": "pay_1"},\n  {"id": "pay_2",}\n]}',
        '[\n{"id": "pay_1"},\n{"id": "pay_2" "amount": 5}\n]',
        '[\n  {"id": "pay_1"},\n  "pay_2"\n]',
        '[\n  {"id": "pay_1", "id": 7}\n]\n',
        '[\n  {"id": "pay_1"}\n]\n]',
        '{"entity": "collection"}',
    ],
)
def test_json_reader_reports_the_same_problems_whichever_reader_tries_first(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = text.encode()
    try:
        expected = _problems(data, fast=False, monkeypatch=monkeypatch)
    except pytest.fail.Exception:  # the oracle reads it: the fast reader must read it alike
        monkeypatch.setattr(json_index, "FAST_JSON_MIN_BYTES", 1 << 62)
        oracle = read_json_table("payments.json", data, WANTED, NOTES)
        monkeypatch.setattr(json_index, "FAST_JSON_MIN_BYTES", 0)
        table = read_json_table("payments.json", data, WANTED, NOTES)
        assert {k: v.to_pylist() for k, v in table.columns.items()} == {
            k: v.to_pylist() for k, v in oracle.columns.items()
        }
        return
    assert _problems(data, fast=True, monkeypatch=monkeypatch) == expected


def test_json_fast_reader_lines_match_on_crlf_and_bom() -> None:
    text = '\r\n[\r\n  {"id": "a"},\r\n\r\n  {\r\n "id": "b\\n"}]'
    data = b"\xef\xbb\xbf" + text.encode()
    fast = _fast(data)
    assert json_index.item_lines(data, fast.item_starts).tolist() == [3, 5]
    assert _oracle(data).lines().tolist() == [3, 5]


def test_spans_to_strings_gathers_spans_with_nulls() -> None:
    buffer = pa.py_buffer(b"abcdefgh")
    starts = np.array([0, 3, 3, 6], dtype=np.int64)
    ends = np.array([2, 3, 5, 8], dtype=np.int64)
    valid = np.array([True, False, True, True])
    result = json_index.spans_to_strings(buffer, starts, ends, valid)
    assert result.to_pylist() == ["ab", None, "de", "gh"]


def test_json_fast_reader_steps_aside_for_deep_nesting_and_long_numbers() -> None:
    deep = '[{"id": "pay_1", "notes": {"a": {"b": {"c": 1}}}}]'
    long_number = '[{"id": "pay_1", "fee": ' + "7" * 1200 + "}]"
    nested_long = '[{"id": "pay_1", "extra": [' + "7" * 1200 + "]}]"
    for text in (deep, long_number, nested_long):
        with pytest.raises(json_index.NotFast):
            _fast(text.encode())
        assert read_json_table("payments.json", text.encode(), WANTED, NOTES).n_rows == 1


def test_json_fast_reader_steps_aside_for_bytes_that_are_not_utf8(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = b'[\n  {"id": "pay_\xff"}\n]'
    with pytest.raises(json_index.NotFast):
        _fast(data)
    assert _problems(data, fast=True, monkeypatch=monkeypatch) == _problems(
        data, fast=False, monkeypatch=monkeypatch
    )


def test_import_problems_name_the_same_lines_with_the_fast_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    path = folder / "payments.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["items"][4]["amount"] = "12x"
    document["items"][250]["created_at"] = "soon"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")

    def problems(threshold: int) -> list[str]:
        monkeypatch.setattr(json_index, "FAST_JSON_MIN_BYTES", threshold)
        with pytest.raises(InputError) as caught:
            load_dataset(folder)
        return [str(p) for p in caught.value.problems]

    expected = problems(1 << 62)
    assert len(expected) == 2 and all(p.startswith("payments.json:") for p in expected)
    assert problems(0) == expected
