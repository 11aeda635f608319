"""The Books ledger's integer-code helpers (core.books.ledger.group_detail,
core.books.rollforward's owner codes and line codes): each answers what the text lookups
and the pandas groupby it replaces answer, missing values and repeated ids included."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from core.books.ledger import group_detail, nonzero_detail
from core.books.rollforward import (
    FLAGGED,
    HELD,
    LINE_TYPE,
    UNEXPLAINED,
    _events,
    _first_at,
    _owned_rows,
    coded,
    event_frame,
    line_codes,
    text_isin,
)

_KEYS = st.one_of(st.none(), st.sampled_from(["pay_1", "pay_2", "rfnd_1", "", " pay_1"]))


def _detail(days: list[int], kinds: list[str], ids: list[str | None], amounts: list[int]):
    return pd.DataFrame(
        {
            "day": np.array(days, dtype=np.int64),
            "entity_type": pd.Series(kinds, dtype=object).astype(str).array,
            "entity_id": pd.Series(ids, dtype=object).astype(str).array,
            "amount": np.array(amounts, dtype=np.int64),
        }
    )


def _by_pandas(detail: pd.DataFrame) -> pd.DataFrame:
    return detail.groupby(
        ["day", "entity_type", "entity_id"], as_index=False, sort=False, dropna=False
    ).agg(amount=("amount", "sum"))


def test_the_detail_is_summed_per_day_and_entity_in_the_order_of_first_appearance() -> None:
    detail = _detail(
        [20_000, 20_001, 20_000, 20_000, 20_000, 20_001, 20_000],
        ["payment", "payment", "refund", "payment", "payment", "payment", "payment"],
        ["pay_2", "pay_1", "pay_2", "pay_2", None, "pay_1", None],
        [100, 7, 50, -100, 3, 8, 4],
    )
    grouped = group_detail(detail)
    expected = _detail(
        [20_000, 20_001, 20_000, 20_000],
        ["payment", "payment", "refund", "payment"],
        ["pay_2", "pay_1", "pay_2", None],
        [0, 15, 50, 7],
    )
    pd.testing.assert_frame_equal(grouped, expected, check_exact=True)
    pd.testing.assert_frame_equal(grouped, _by_pandas(detail), check_exact=True)


def test_days_too_far_apart_for_one_int_key_are_grouped_alike() -> None:
    far = 2**61
    detail = _detail(
        [far, 0, far, 0, far],
        ["refund", "payment", "refund", "payment", "payment"],
        ["r1", "p1", "r1", None, "r1"],
        [5, 6, 7, 8, 9],
    )
    expected = _detail(
        [far, 0, 0, far],
        ["refund", "payment", "payment", "payment"],
        ["r1", "p1", None, "r1"],
        [12, 6, 8, 9],
    )
    pd.testing.assert_frame_equal(group_detail(detail), expected, check_exact=True)
    pd.testing.assert_frame_equal(group_detail(detail), _by_pandas(detail), check_exact=True)


@given(
    rows=st.lists(
        st.tuples(
            st.integers(19_000, 19_003),
            st.sampled_from(["payment", "refund"]),
            _KEYS,
            st.integers(-3, 3),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_the_detail_grouped_by_codes_is_the_pandas_groupby(
    rows: list[tuple[int, str, str | None, int]],
) -> None:
    days, kinds, ids, amounts = (list(c) for c in zip(*rows, strict=True))
    detail = _detail(days, kinds, ids, amounts)
    pd.testing.assert_frame_equal(group_detail(detail), _by_pandas(detail), check_exact=True)


def test_line_codes_pick_the_first_true_choice_or_the_default() -> None:
    lines = line_codes(
        [np.array([True, False, False]), np.array([True, True, False])],
        [FLAGGED, HELD],
        UNEXPLAINED,
    )
    assert lines.dtype == LINE_TYPE
    assert list(lines) == [FLAGGED, HELD, UNEXPLAINED]


def test_first_at_gives_each_codes_first_position() -> None:
    assert _first_at(np.array([2, -1, 0, 2, 0]), 4).tolist() == [2, -1, 0, -1]


def test_the_owned_rows_and_their_codes_for_repeated_and_missing_ids() -> None:
    ids = pd.Series(["pay_1", "pay_2", "pay_1", None], dtype=object).astype(str)
    recon = pd.DataFrame(
        {
            "entity_id": pd.Series(["pay_2", "pay_9", None, "pay_1", "pay_1"], dtype=object),
            "amount": [1, 2, 3, 4, 5],
            "fee": 0,
            "settle_ts": np.nan,
            "net": 0,
            "held": False,
        }
    )
    kind = np.array([True, True, True, True, False])
    rows, id_code, row_code, texts = _owned_rows(recon, kind, ids)
    size = len(texts)
    assert rows.index.tolist() == [0, 2, 3]  # pay_9 is no id; row 4 is not of the kind
    assert rows["owner"].tolist()[0::2] == ["pay_2", "pay_1"]
    assert size == 3
    assert id_code.tolist() == [0, 1, 0, 2]
    assert row_code.tolist() == [1, 2, 0]


@given(ids=st.lists(_KEYS, max_size=12), owners=st.lists(_KEYS, max_size=12))
def test_the_owner_codes_answer_what_the_text_lookups_answer(
    ids: list[str | None], owners: list[str | None]
) -> None:
    id_text = pd.Series(ids, dtype=object).astype(str)
    recon = pd.DataFrame(
        {
            "entity_id": pd.Series(owners, dtype=object).astype(str),
            "amount": np.arange(len(owners)),
            "fee": 0,
            "settle_ts": np.nan,
            "net": 0,
            "held": False,
        }
    )
    kind = np.ones(len(owners), dtype=np.bool_)
    rows, id_code, row_code, texts = _owned_rows(recon, kind, id_text)
    size = len(texts)
    owned = text_isin(recon["entity_id"], id_text).to_numpy()
    assert rows.index.tolist() == recon.index[owned].tolist()
    # Codes are equal exactly when the texts are (two missing values alike), and each id's
    # first row is the first owned row of the same text.
    held = rows["owner"].tolist()
    first = _first_at(row_code, size)[id_code]
    for i, text in enumerate(ids):
        same = [(text is None and pd.isna(o)) or text == o for o in held]
        assert [id_code[i] == c for c in row_code] == same
        assert first[i] == (same.index(True) if any(same) else -1)
    assert (first >= 0).tolist() == text_isin(id_text, rows["owner"]).tolist()


_TEXTS = pa.array(["pay_1", "pay_2", None, "pay_3"], type=pa.large_string())


def test_a_coded_part_is_the_same_event_frame_as_its_text() -> None:
    codes = np.array([1, 0, 2, 3, 1])
    texts = pd.Series(["pay_2", "pay_1", None, "pay_3", "pay_2"], dtype=object).astype(str)
    amounts = np.array([5, 0, 7, -7, 9])
    made = _events(np.arange(5), UNEXPLAINED, "payment", coded(codes, _TEXTS), amounts)
    plain = _events(np.arange(5), UNEXPLAINED, "payment", texts, amounts)
    assert len(made) == 4  # the zero amount left out, as for text ids
    pd.testing.assert_frame_equal(event_frame([made]), event_frame([plain]), check_exact=True)
    kept = event_frame([made], keep_codes=True)["entity_id"]
    assert kept.dtype != event_frame([made])["entity_id"].dtype


def _coded_detail(days: list[int], kind: str, codes: list[int], amounts: list[int]):
    return pd.DataFrame(
        {
            "day": np.array(days, dtype=np.int64),
            "entity_type": pd.Series([kind] * len(days), dtype=object).astype(str).array,
            "entity_id": coded(np.array(codes), _TEXTS),
            "amount": np.array(amounts, dtype=np.int64),
        }
    )


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["day", "entity_type", "entity_id"], ignore_index=True)


def test_the_nonzero_detail_of_coded_and_text_parts_sums_across_parts() -> None:
    parts = [
        _coded_detail([1, 1, 2], "payment", [0, 2, 0], [10, 4, 5]),
        _coded_detail([1, 1, 2], "payment", [0, 2, 3], [-10, 1, 6]),
        _detail([1, 1], ["settlement", "settlement"], ["pay_1", "setl_1"], [3, 0]),
    ]
    expected = _detail(
        [1, 1, 2, 2],
        ["payment", "settlement", "payment", "payment"],
        [None, "pay_1", "pay_1", "pay_3"],
        [5, 3, 5, 6],
    )
    pd.testing.assert_frame_equal(_sorted(nonzero_detail(parts)), expected, check_exact=True)


def test_one_types_ids_coded_and_in_text_are_still_one_entity() -> None:
    parts = [
        _coded_detail([1, 1], "payment", [0, 1], [10, 4]),
        _detail([1, 1], ["payment", "payment"], ["pay_1", "pay_2"], [-10, 1]),
    ]
    expected = _detail([1], ["payment"], ["pay_2"], [5])
    pd.testing.assert_frame_equal(_sorted(nonzero_detail(parts)), expected, check_exact=True)


def test_no_nonzero_detail_is_an_empty_text_frame() -> None:
    parts = [_coded_detail([1], "payment", [0], [10]), _coded_detail([1], "payment", [0], [-10])]
    empty = nonzero_detail(parts)
    assert len(empty) == 0
    assert list(empty.dtypes) == list(_detail([], [], [], []).dtypes)
