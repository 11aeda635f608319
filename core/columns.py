"""Whole-column helpers (the Books month products, the run summary a command stores, the
month read): text columns as Arrow strings, membership and grouping by integer codes
instead of Python sets, and money as int64 paise. Each keeps the semantics of the pandas
idiom it replaces, noted on it: a missing value is a value of its own (`astype(str)` keeps
it missing, and `isin` of a set holding a missing value matches a missing value).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.dataset import CAPTURED_STATUSES

Codes = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


def text(column: pd.Series) -> pa.LargeStringArray:
    """The column as one Arrow large_string array, missing values null (`astype(str)`)."""
    values = column.array
    if not (isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow"):
        values = column.astype("string[pyarrow]").array
    arrow = pa.array(values)
    if isinstance(arrow, pa.ChunkedArray):
        arrow = arrow.combine_chunks()
    if arrow.type != pa.large_string():
        arrow = arrow.cast(pa.large_string())
    return arrow


def arrow(column: pd.Series) -> Any:
    """A frame's column as Arrow, its chunks as they are (no copy of Arrow-backed text)."""
    return pa.array(column.array)


def equals(values: Any, value: str) -> Mask:
    """`astype(str) == value` (a missing value is unequal), for any Arrow string array."""
    return np.asarray(pc.fill_null(pc.equal(values, value), False), dtype=bool)


def among(values: pa.Array, options: tuple[str, ...]) -> Mask:
    """`astype(str).isin(options)` for a few options (a missing value is in none)."""
    result = pc.is_in(values, value_set=pa.array(options, pa.large_string())).fill_null(False)
    return np.asarray(result.to_numpy(zero_copy_only=False), dtype=bool)


def captured(payments: pd.DataFrame) -> Mask:
    """The captured payments: `captured`, or a status of captured or refunded (the engine's
    CAPTURED_STATUSES; `captured_totals` in SQL)."""
    flag = payments["captured"].to_numpy(dtype=bool, na_value=False)
    return flag | among(text(payments["status"]), CAPTURED_STATUSES)


def foreign(currency: pd.Series) -> Mask:
    """`currency.astype("string").str.upper().fillna("INR") != "INR"`."""
    upper = pc.utf8_upper(text(currency)).fill_null("INR")
    result = pc.not_equal(upper, pa.scalar("INR", pa.large_string()))
    return np.asarray(result.to_numpy(zero_copy_only=False), dtype=bool)


def sorted_text(values: pa.Array) -> npt.NDArray[np.object_]:
    """The strings in Python's order (`sorted`: by code point, which is UTF-8's byte
    order), as Python str."""
    order = pc.sort_indices(values)
    result: npt.NDArray[np.object_] = values.take(order).to_numpy(zero_copy_only=False)
    return result


def per_value(
    column: pd.Series, function: Callable[[pd.Series], pd.Series], dtype: type
) -> npt.NDArray[Any]:
    """An elementwise `function` of a text column (given it as pandas "string"), computed
    on the column's distinct values (and a missing one) and spread back to its rows."""
    encoded = text(column).dictionary_encode()
    values = pd.Series(pd.array([*encoded.dictionary.to_pylist(), None], dtype="string[pyarrow]"))
    results: npt.NDArray[Any] = np.asarray(function(values).to_numpy(), dtype=dtype)
    missing = len(values) - 1
    indices = encoded.indices.fill_null(missing).to_numpy(zero_copy_only=False)
    spread: npt.NDArray[Any] = results[indices]
    return spread


def shared_codes(*columns: pa.Array) -> tuple[list[Codes], int]:
    """Integer codes of the columns' values in one dictionary (equal text, equal code; every
    missing value one code of its own), and the number of codes."""
    lengths = [len(c) for c in columns]
    joined = pa.concat_arrays(list(columns)) if len(columns) > 1 else columns[0]
    encoded = joined.dictionary_encode(null_encoding="encode")
    indices = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    bounds = np.cumsum([0, *lengths])
    parts = [indices[a:b] for a, b in itertools.pairwise(bounds)]
    return parts, len(encoded.dictionary) + 1


def member(codes: Codes, of: Codes, size: int) -> Mask:
    """`isin`: whether each code is one of `of` (codes of one dictionary of `size`)."""
    table = np.zeros(size, dtype=bool)
    table[of] = True
    found: Mask = table[codes]
    return found


def first_of_each(codes: Codes) -> npt.NDArray[np.intp]:
    """The positions of each code's first occurrence, in position order (`drop_duplicates`)."""
    _, first = np.unique(codes, return_index=True)
    return np.sort(first)


def paise(column: pd.Series) -> npt.NDArray[np.int64]:
    """An int64 or Int64 money column as int64 paise, missing as 0 (`astype("Int64")
    .fillna(0).astype(np.int64)`)."""
    values: npt.NDArray[np.int64] = column.to_numpy(dtype=np.int64, na_value=0)
    return values


def seconds(column: pd.Series, missing: pd.Series | int = 0) -> npt.NDArray[np.int64]:
    """Unix seconds (int64 or Int64), a missing value taken from `missing` (a column of the
    same rows, or a number): `astype("Int64").fillna(missing)`."""
    values = column.to_numpy(dtype=np.int64, na_value=0)
    gaps = column.isna().to_numpy(dtype=bool)
    if gaps.any():
        fill = (
            missing.to_numpy(dtype=np.int64)
            if isinstance(missing, pd.Series)
            else np.full(len(values), missing, dtype=np.int64)
        )
        values = np.where(gaps, fill, values)
    out: npt.NDArray[np.int64] = values
    return out
