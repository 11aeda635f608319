"""The long-cell check counts characters only when some cell has more bytes than the limit,
and names exactly the cells Arrow's character count names."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.ingest import readers

CELLS = st.lists(st.one_of(st.none(), st.text(alphabet="a☕é\x00", max_size=9)), max_size=30)


@settings(deadline=None)
@given(CELLS, st.integers(0, 8), st.integers(1, 4))
def test_long_cell_rows_are_the_cells_with_more_characters_than_the_limit(
    cells: list[str | None], limit: int, chunks: int
) -> None:
    values = pa.array(cells, type=pa.string())
    step = max(1, len(cells) // chunks)
    column = pa.chunked_array(
        [values.slice(i, step) for i in range(0, len(cells), step)] or [values],
        type=pa.string(),
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(readers, "MAX_CELL_CHARS", limit)
        found = readers.long_cell_rows(column)
    lengths = pc.fill_null(pc.utf8_length(values), 0).to_numpy()
    assert found.tolist() == np.flatnonzero(lengths > limit).tolist()
