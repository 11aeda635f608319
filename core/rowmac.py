"""Keyed MACs of raw rows: every writer of a raw table stores one beside each row it writes
(column `row_mac`, migration 0120), and `audit verify` recomputes them (core.audit.rawcheck).

A row's MAC is BLAKE2b (16 bytes, hex) keyed with a key derived from RAZORRECON_ANCHOR_KEY,
over the table's name and the row's canonical bytes (`canonical_rows`): each of the table's
Dataset columns (core.dataset, the key included), then `import_id`: a flag byte and 8 bytes
(the integer, or the text's length) per column, then the texts' bytes. Built over whole
columns with numpy and Arrow; only the hashing is a loop over rows (1.5-3 us a row).

Without RAZORRECON_ANCHOR_KEY (or in the public demo) the key is a fixed one written below:
anyone who reads this file can then compute a row's MAC, so the MACs catch careless edits
(an UPDATE by hand, a restored row from another database) and not a deliberate forger.
With the key set, only someone holding the key can make a row whose MAC verifies. Changing
the key makes every stored row's MAC wrong: import the data again with replace after.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core import demo_mode
from core.db.staging import arrow_column

MAC_COLUMN = "row_mac"
_EMPTY = pa.scalar(b"", pa.large_binary())
ANCHOR_KEY_ENV = "RAZORRECON_ANCHOR_KEY"  # core.audit.anchor's (not imported: a cycle)
# The key when RAZORRECON_ANCHOR_KEY is not set: public, so it detects careless edits only.
_FIXED_KEY = b"razorrecon raw rows: no RAZORRECON_ANCHOR_KEY configured"


def mac_key() -> bytes:
    """The 32-byte key of the row MACs: derived from RAZORRECON_ANCHOR_KEY (domain-separated
    from the anchors' HMAC), else from the fixed public key."""
    configured = "" if demo_mode.enabled() else os.environ.get(ANCHOR_KEY_ENV, "").strip()
    secret = configured.encode("utf-8") if configured else _FIXED_KEY
    return hashlib.blake2b(b"razorrecon raw row mac v1\0" + secret, digest_size=32).digest()


def canonical_rows(arrays: Sequence[pa.Array | pa.ChunkedArray]) -> pa.Array:
    """Every row's canonical bytes, from its columns' Arrow values in table order (int64 or
    large_string, as core.db.staging.arrow_column makes them): a flag byte per column (0
    NULL, 1 integer, 2 text), then 8 bytes per column (the integer, or the text's length
    in UTF-8 bytes; 0 for NULL), little-endian, then the texts' bytes in column order. One
    large_binary value per row, built over whole columns (numpy, and Arrow joining each
    row's parts in C): no loop over rows."""
    rows = len(arrays[0]) if arrays else 0
    width = len(arrays)
    flags = np.zeros((width, rows), dtype=np.uint8)
    numbers = np.zeros((width, rows), dtype="<i8")
    texts: list[pa.Array] = []
    for j, column in enumerate(arrays):
        values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        valid = ~np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        if pa.types.is_integer(values.type):
            numbers[j] = values.fill_null(0).to_numpy(zero_copy_only=False)
            flags[j] = valid
            continue
        values = pc.cast(values, pa.large_string())
        numbers[j] = pc.binary_length(values).fill_null(0).to_numpy(zero_copy_only=False)
        flags[j] = valid * 2
        texts.append(pc.cast(values, pa.large_binary()))
    size = 9 * width
    fixed = np.empty((rows, size), dtype=np.uint8)
    fixed[:, :width] = flags.T
    fixed[:, width:] = np.ascontiguousarray(numbers.T).view(np.uint8).reshape(rows, 8 * width)
    offsets = np.arange(0, size * (rows + 1), size, dtype=np.int64)
    head = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(fixed)]
    )
    # NULL texts as nothing: the lengths above tell a NULL from an empty text.
    joined = pc.binary_join_element_wise(
        head, *texts, _EMPTY, null_handling="replace", null_replacement=b""
    )
    return joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined


def macs_of_arrays(
    table: str, arrays: Sequence[pa.Array | pa.ChunkedArray], key: bytes | None = None
) -> list[str]:
    """The MAC of each row of raw table `table`, its columns given as Arrow arrays."""
    base = hashlib.blake2b(key=key or mac_key(), digest_size=16)
    base.update(table.encode("ascii") + b"\0")
    rows = canonical_rows(arrays)
    _, offset_buffer, data_buffer = rows.buffers()
    edges = np.frombuffer(offset_buffer, dtype="<i8")[rows.offset : rows.offset + len(rows) + 1]
    data = memoryview(data_buffer) if data_buffer is not None else memoryview(b"")
    out: list[str] = []
    append = out.append
    for start, stop in itertools.pairwise(edges.tolist()):
        h = base.copy()
        h.update(data[start:stop])
        append(h.hexdigest())
    return out


def row_macs(
    table: str,
    frame: pd.DataFrame,
    columns: dict[str, str],
    import_ids: int | pd.Series,
    key: bytes | None = None,
) -> list[str]:
    """The MAC of each row of a Dataset frame as raw table `table` stores it: its
    `columns` (name -> Dataset dtype) then `import_ids` (one id for every row, or each
    row's)."""
    arrays = [arrow_column(frame[name], dtype) for name, dtype in columns.items()]
    if isinstance(import_ids, int):
        arrays.append(pa.array(np.full(len(frame), import_ids, dtype=np.int64)))
    else:
        arrays.append(arrow_column(import_ids, "Int64"))
    return macs_of_arrays(table, arrays, key)
