"""The Books ledger's integer-code helpers (core.books.ledger.group_detail,
core.books.rollforward's owner codes and line codes): each answers what the text lookups
and the pandas groupby it replaces answer, missing values and repeated ids included."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from core.books.ledger import group_detail
from core.books.rollforward import (
    FLAGGED,
    HELD,
    LINE_TYPE,
    UNEXPLAINED,
    _first_at,
    _owned_rows,
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
    rows, id_code, row_code, size = _owned_rows(recon, kind, ids)
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
    rows, id_code, row_code, size = _owned_rows(recon, kind, id_text)
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
