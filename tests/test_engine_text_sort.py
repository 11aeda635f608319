"""The engine's keyed text sort and one-chunk columns against the plain computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from core.engine.columns import (
    _lookup_few,
    arrow,
    lookup,
    sort_text,
    text_sort_key,
)
from core.engine.part import TextRef, _sort_order
from core.ingest.entities import string_series

# Few letters, a NUL, a multi-byte character and long shared beginnings: equal 64-bit keys,
# cells that are prefixes of others and exact repeats all come up often.
CELL = st.text(alphabet="ab\x00☕z", max_size=14)
PREFIXED = st.builds(
    lambda head, tail: head + tail, st.sampled_from(["", "pay_", "pay_aaaaaaaa"]), CELL
)


def _array(cells: list[str], large: bool, skip: int) -> pa.Array:
    kind = pa.large_string() if large else pa.string()
    return pa.array(["x"] * skip + cells, type=kind).slice(skip)


@settings(deadline=None)
@given(st.lists(PREFIXED, max_size=60), st.booleans(), st.integers(0, 3))
def test_keyed_text_sort_is_arrows_stable_sort_for_any_cells(
    cells: list[str], large: bool, skip: int
) -> None:
    values = _array(cells, large, skip)
    expected = pc.sort_indices(values).to_numpy()
    assert sort_text(values, min_rows=0).tolist() == expected.tolist()


@settings(deadline=None)
@given(st.lists(st.text(alphabet="ab\x00☕", min_size=3, max_size=3), max_size=40))
def test_keyed_text_sort_of_equal_length_cells_is_arrows_sort(cells: list[str]) -> None:
    values = _array(cells, True, 1)
    expected = pc.sort_indices(values).to_numpy()
    assert sort_text(values, min_rows=0).tolist() == expected.tolist()


@settings(deadline=None)
@given(st.lists(PREFIXED, min_size=2, max_size=40))
def test_text_sort_key_never_orders_two_cells_against_their_text(cells: list[str]) -> None:
    values = _array(cells, True, 0)
    key = text_sort_key(values).tolist()
    raw = [c.encode() for c in cells]
    for i in range(len(cells)):
        for j in range(len(cells)):
            if key[i] < key[j]:
                assert raw[i] < raw[j]
            if raw[i] < raw[j]:
                assert key[i] <= key[j]


def test_text_with_nulls_sorts_as_arrow_does_nulls_last() -> None:
    values = pa.array(["b", None, "a", "b", None, "a"] * 1000, type=pa.large_string())
    expected = pc.sort_indices(values).to_numpy()
    assert sort_text(values, min_rows=0).tolist() == expected.tolist()


@settings(deadline=None)
@given(st.lists(PREFIXED, min_size=1, max_size=30, unique=True), st.data())
def test_a_parts_sort_order_over_selected_rows_is_the_sort_of_those_rows(
    cells: list[str], data: st.DataObject
) -> None:
    source = pa.array(cells, type=pa.large_string())
    rows = np.array(
        data.draw(st.lists(st.integers(0, len(cells) - 1), min_size=len(cells) // 4 + 1)),
        dtype=np.int64,
    )
    order, ids = _sort_order(TextRef(source, rows))
    selected = source.take(pa.array(rows))
    expected = pc.sort_indices(selected).to_numpy()
    assert order.tolist() == expected.tolist()
    assert ids.to_pylist() == selected.take(pa.array(expected)).to_pylist()


def test_a_parsed_text_column_becomes_one_chunk_and_is_read_without_a_copy() -> None:
    chunked = pa.chunked_array([pa.array(["a", None]), pa.array(["b"])])
    series = string_series(chunked)
    assert series.tolist() == ["a", pd.NA, "b"]
    first = arrow(series)
    assert first.to_pylist() == ["a", None, "b"]
    assert arrow(series).buffers()[2].address == first.buffers()[2].address


@settings(deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.text(alphabet="abc", max_size=3)), max_size=8),
    st.lists(st.one_of(st.none(), st.text(alphabet="abc", max_size=3)), max_size=120),
)
def test_a_lookup_of_few_values_in_many_keys_is_arrows_index_in(
    values: list[str | None], keys: list[str | None]
) -> None:
    value_array = pa.array(values, type=pa.large_string())
    key_array = pa.array(keys, type=pa.large_string())
    expected = pc.index_in(value_array, value_set=key_array).fill_null(-1).to_pylist()
    assert lookup(value_array, key_array).tolist() == expected
    assert _lookup_few(value_array, key_array).tolist() == expected
