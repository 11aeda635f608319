"""Whole-column helpers: key lookups, null-safe comparisons, exact integer aggregation.

Key lookups use Arrow's hash kernels (`index_in`), which are several times faster on
string ids than a pandas Index built over Arrow strings. Aggregations over integer money
use `np.add.at` (exact int64), never `bincount` weights (float64).
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def arrow(values: pd.Series | pa.Array | pa.ChunkedArray) -> pa.Array:
    """The column as one Arrow string/number array (zero-copy for Arrow-backed columns)."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    array = values.array
    converted = pa.array(array) if hasattr(array, "__arrow_array__") else pa.array(values)
    if isinstance(converted, pa.ChunkedArray):
        return converted.combine_chunks()
    return converted


def text(values: pd.Series | pa.Array | pa.ChunkedArray) -> pa.Array:
    """The column as an Arrow large_string array."""
    array = arrow(values)
    if not pa.types.is_large_string(array.type):
        array = array.cast(pa.large_string())
    return array


def lookup(values: pd.Series | pa.Array, keys: pd.Series | pa.Array) -> IntArray:
    """Position of each value in `keys` (first occurrence), -1 when absent or null."""
    found = pc.index_in(text(values), value_set=text(keys)).fill_null(-1)
    result: IntArray = found.to_numpy(zero_copy_only=False).astype(np.int64)
    return result


def present(values: pd.Series | pa.Array) -> BoolArray:
    """True where the value is neither null nor an empty/blank string."""
    array = text(values)
    blank = pc.equal(pc.utf8_trim_whitespace(array), "")
    missing = pc.or_kleene(pc.is_null(array), blank)
    return ~np.asarray(missing.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool)


def differs(left: pa.Array, right: pa.Array) -> BoolArray:
    """True where both values are present and different."""
    unequal = pc.not_equal(left, right).fill_null(False)
    result: BoolArray = np.asarray(unequal.to_numpy(zero_copy_only=False), dtype=bool)
    return result


def take_text(values: pa.Array, positions: IntArray) -> pa.Array:
    """values[positions], null where the position is -1."""
    indices = pa.array(positions, mask=positions < 0, type=pa.int64())
    return values.take(indices)


def ints(series: pd.Series, fill: int = 0) -> IntArray:
    """An integer column as int64, nulls replaced by `fill`."""
    result: IntArray = series.to_numpy(dtype=np.int64, na_value=fill)
    return result


def nulls(series: pd.Series) -> BoolArray:
    result: BoolArray = series.isna().to_numpy(dtype=bool)
    return result


def bools(series: pd.Series) -> BoolArray:
    """A boolean column; nulls are False."""
    result: BoolArray = series.fillna(False).to_numpy(dtype=bool)
    return result


def sum_by(positions: IntArray, values: IntArray, size: int) -> IntArray:
    """Exact int64 sum of `values` per position (positions all >= 0)."""
    total = np.zeros(size, dtype=np.int64)
    np.add.at(total, positions, values)
    return total


def gather(values: np.ndarray, positions: IntArray, fill: int | bool = 0) -> np.ndarray:
    """values[positions], `fill` where the position is -1 or past the end (a recon row's
    `recon_settlement` that names an instant settlement; also when `values` is empty)."""
    if len(values) == 0:
        return np.full(len(positions), fill, dtype=values.dtype)
    inside = (positions >= 0) & (positions < len(values))
    result: np.ndarray = np.where(inside, values[np.where(inside, positions, 0)], fill)
    return result.astype(values.dtype, copy=False)


def count_by(positions: IntArray, size: int) -> IntArray:
    result: IntArray = np.bincount(positions, minlength=size).astype(np.int64)
    return result


def any_by(positions: IntArray, flags: BoolArray, size: int) -> BoolArray:
    result: BoolArray = np.bincount(positions[flags], minlength=size) > 0
    return result


_UTR_NOISE = re.compile(r"[ \t\-/]")


def normalise_utrs(values: pd.Series | pa.Array) -> pa.Array:
    """Vectorised `core.dataset.normalise_utr`: upper case, no spaces/dashes/slashes, no
    leading `UTR` label; empty becomes null."""
    array = pc.utf8_upper(text(values))
    array = pc.replace_substring_regex(array, pattern=_UTR_NOISE.pattern, replacement="")
    array = pc.replace_substring_regex(array, pattern=r"^UTR[:.#]*", replacement="")
    empty = pc.equal(array, "")
    return pc.if_else(empty, pa.scalar(None, pa.large_string()), array)
