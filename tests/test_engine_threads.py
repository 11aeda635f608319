"""The engine on two threads (a worker pool beside the calling thread) gives exactly the
outcomes of the serial engine: whole generated datasets, and `assemble` on random parts."""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.benchmark import generate
from core.engine import codes as C
from core.engine import reconcile
from core.engine.columns import sort_text
from core.engine.params import EngineParams
from core.engine.part import Part, TextRef, assemble
from core.errors import InputError
from core.pipeline import load_folder

AS_OFS = (
    "2026-06-30T23:59:59+05:30",
    "2026-06-10T12:00:00+05:30",
    "2026-07-20T00:00:00+05:30",
)


def _as_of(text: str) -> int:
    return int(pd.Timestamp(text).timestamp())


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    payments=st.integers(200, 500),
    as_of=st.sampled_from(AS_OFS),
    faults=st.booleans(),
)
def test_reconcile_on_two_threads_gives_the_serial_outcomes(
    seed: int, payments: int, as_of: str, faults: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        generate(Path(folder) / "ds", payments=payments, seed=seed, faults=faults)
        dataset = load_folder(Path(folder) / "ds", hashing=False).dataset
    params = EngineParams()
    serial = reconcile(dataset, params, _as_of(as_of), threads=1)
    for threads in (2, 3):
        threaded = reconcile(dataset, params, _as_of(as_of), threads=threads)
        pd.testing.assert_frame_equal(threaded, serial)
    assert len(serial) > payments // 2


IDS = st.text(alphabet="ab☕", min_size=0, max_size=6).map(lambda tail: "pay_" + tail)


@st.composite
def parts(draw: st.DrawFn) -> list[Part]:
    made: list[Part] = []
    for entity_type in draw(st.lists(st.sampled_from(["payment", "refund", "recon_row"]))):
        source = draw(st.lists(IDS, min_size=1, max_size=40))
        whole = draw(st.booleans())
        size = len(source) if whole else draw(st.integers(0, 40))
        rows = (
            None
            if whole
            else np.array(
                draw(st.lists(st.integers(-1, len(source) - 1), min_size=size, max_size=size)),
                dtype=np.int64,
            )
        )
        ids = pa.array(source, type=pa.large_string())
        n = size
        codes = C.PAYMENT_CODES
        mask = np.array(
            draw(st.lists(st.integers(0, (1 << len(codes)) - 1), min_size=n, max_size=n)),
            dtype=np.int64,
        )
        amounts = st.lists(st.integers(-(10**9), 10**9), min_size=n, max_size=n)
        made.append(
            Part(
                entity_type=entity_type,
                codes=codes,
                entity_id=TextRef(ids, rows),
                mask=mask,
                pending=np.array(
                    draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=np.int8
                ),
                settlement_id=TextRef(ids, rows),
                expected=np.array(draw(amounts), dtype=np.int64),
                actual=np.array(draw(amounts), dtype=np.int64),
                method=np.zeros(n, dtype=np.int8),
                order_id=TextRef(pa.array(source[::-1], type=pa.large_string()), rows),
                utr=TextRef(pa.nulls(n, type=pa.large_string())),
                created_at=np.arange(n, dtype=np.int64),
                created_at_null=np.zeros(n, dtype=bool),
            )
        )
    return made


def _assembled(made: list[Part], pool: ThreadPoolExecutor | None, early: bool) -> object:
    orders = {}
    if pool is not None and early:
        for part in made:
            orders[id(part.entity_id.source)] = pool.submit(sort_text, part.entity_id.source).result
    try:
        return assemble(made, pool, orders)
    except InputError as refused:
        return [(p.file, p.line, p.column, p.message) for p in refused.problems]


@settings(max_examples=60, deadline=None)
@given(parts(), st.booleans())
def test_assemble_on_a_pool_with_an_early_sort_is_the_serial_frame(
    made: list[Part], early: bool
) -> None:
    serial = _assembled(made, None, False)
    with ThreadPoolExecutor(2) as pool:
        threaded = _assembled(made, pool, early)
    if isinstance(serial, pd.DataFrame):
        assert isinstance(threaded, pd.DataFrame)
        pd.testing.assert_frame_equal(threaded, serial)
    else:
        assert threaded == serial


def test_a_refused_duplicate_id_is_the_same_refusal_on_two_threads() -> None:
    ids = pa.array(["pay_b", "pay_a", "pay_b"], type=pa.large_string())
    n = 3
    part = Part(
        entity_type="payment",
        codes=C.PAYMENT_CODES,
        entity_id=TextRef(ids),
        mask=np.zeros(n, dtype=np.int64),
        pending=np.zeros(n, dtype=np.int8),
        settlement_id=TextRef(ids),
        expected=np.zeros(n, dtype=np.int64),
        actual=np.zeros(n, dtype=np.int64),
        method=np.zeros(n, dtype=np.int8),
        order_id=TextRef(ids),
        utr=TextRef(ids),
        created_at=np.zeros(n, dtype=np.int64),
        created_at_null=np.zeros(n, dtype=bool),
    )
    with ThreadPoolExecutor(2) as pool, pytest.raises(InputError) as refused:
        assemble([part], pool, {id(ids): pool.submit(sort_text, ids).result})
    assert [(p.file, p.column, p.message) for p in refused.value.problems] == [
        ("payments", "id", "duplicate id 'pay_b'")
    ]
