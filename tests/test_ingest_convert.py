"""The vectorised cell converters: exact money, IST timestamps, booleans."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from core.ingest import convert
from core.money import format_rupees

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))
# Up to the amount ceiling (core.ingest.convert.MAX_PAISE, ₹1,000 crore); above it is refused
# (tests/test_ingest_amount_ceiling.py).
PAISE = st.integers(min_value=0, max_value=convert.MAX_PAISE)


def _strings(values: list[str | None]) -> pa.Array:
    return convert.clean_strings(pa.array(values, type=pa.string()))


@given(st.lists(PAISE, min_size=1, max_size=50))
def test_any_paise_amount_survives_rupee_formatting_and_vectorised_parsing(
    amounts: list[int],
) -> None:
    texts: list[str | None] = [format_rupees(a, symbol=i % 2 == 0) for i, a in enumerate(amounts)]
    parsed = convert.parse_rupees(_strings(texts))
    assert parsed.values.tolist() == amounts
    assert len(parsed.bad) == 0


@given(st.lists(PAISE, min_size=1, max_size=50))
def test_any_paise_amount_survives_as_a_whole_number(amounts: list[int]) -> None:
    parsed = convert.parse_paise(_strings([str(a) for a in amounts]))
    assert parsed.values.tolist() == amounts


def test_rupee_shapes() -> None:
    texts = ["1,35,000.00", "₹2,40,00,000", "Rs. 12.5", "INR 7", ".5", "0.01", None, "  9.90  "]
    parsed = convert.parse_rupees(_strings(texts))
    assert parsed.values.tolist() == [13500000, 2400000000, 1250, 700, 50, 1, 0, 990]
    assert parsed.present.tolist() == [True] * 6 + [False, True]


def test_bad_rupees_are_reported_not_guessed() -> None:
    parsed = convert.parse_rupees(_strings(["1.234", "-5.00", "12a", "1.2.3", "--1", "10"]))
    assert parsed.bad.rows.tolist() == [0, 1, 2, 3, 4]
    assert parsed.bad.messages[1] == "negative amount '-5.00'"
    assert parsed.values.tolist()[5] == 1000


@given(st.integers(min_value=0, max_value=4_102_444_800))
def test_dashboard_timestamps_are_ist(seconds: int) -> None:
    text = dt.datetime.fromtimestamp(seconds, IST).strftime("%d/%m/%Y %H:%M:%S")
    parsed = convert.parse_times(_strings([text]))
    assert parsed.seconds.tolist() == [seconds]
    assert len(parsed.bad) == 0


def test_date_forms() -> None:
    texts = [
        "1780000000",
        "01/06/2026",
        "01-06-2026 10:30",
        "01/06/26",
        "2026-06-01",
        "2026-06-01T04:30:00Z",
        "2026-06-01 10:00:00+05:30",
        "01 Jun 2026",
        "1-JUN-26",
        "01/06/2026 10:30:00 PM",
    ]
    parsed = convert.parse_times(_strings(texts))
    midnight = int(dt.datetime(2026, 6, 1, tzinfo=IST).timestamp())
    assert parsed.seconds.tolist() == [
        1780000000,
        midnight,
        midnight + 10 * 3600 + 1800,
        midnight,
        midnight,
        midnight + 10 * 3600,
        midnight + 10 * 3600,
        midnight,
        midnight,
        midnight + 22 * 3600 + 1800,
    ]
    assert len(parsed.bad) == 0
    assert parsed.styles == {"unix", "dmy", "dmy_time", "iso", "dmony"}


def test_impossible_dates_are_refused() -> None:
    parsed = convert.parse_times(_strings(["29/02/2025", "29/02/2024", "31/04/2026", "13/13/2026"]))
    assert parsed.bad.rows.tolist() == [0, 2, 3]
    assert parsed.bad.messages[0] == "impossible date '29/02/2025'"


def test_booleans() -> None:
    values, present, bad = convert.parse_bools(_strings(["true", "FALSE", "1", "0", None, "maybe"]))
    assert values.tolist()[:4] == [True, False, True, False]
    assert present.tolist() == [True, True, True, True, False, False]
    assert bad.messages == ("not a boolean 'maybe' (true/false/1/0)",)


def test_milliseconds_and_negative_timestamps_are_refused() -> None:
    parsed = convert.parse_times(_strings(["1780000000", "1780000000000", "-5"]))
    assert parsed.seconds.tolist()[0] == 1780000000
    assert parsed.bad.rows.tolist() == [1, 2]
    assert "out of range" in parsed.bad.messages[0]
    assert parsed.bad.messages[1] == "unparsable date '-5'"


def _first_repeats(values: list[str | None]) -> tuple[list[int], list[int]]:
    """Plain Python: each row repeating an earlier present value, and that value's first row."""
    first: dict[str, int] = {}
    repeats: list[int] = []
    firsts: list[int] = []
    for row, value in enumerate(values):
        if value is None:
            continue
        if value in first:
            repeats.append(row)
            firsts.append(first[value])
        else:
            first[value] = row
    return repeats, firsts


@given(
    st.lists(
        st.one_of(st.none(), st.text(alphabet="ab☕", max_size=20), st.sampled_from(["pay_1"])),
        max_size=60,
    ),
    st.integers(min_value=0, max_value=60),
    st.booleans(),
)
def test_duplicate_rows_finds_every_repeat_whatever_the_lengths_chunks_and_slices(
    values: list[str | None], cut: int, large: bool
) -> None:
    array = pa.array(values, type=pa.large_string() if large else pa.string())
    cut = min(cut, len(values))
    chunked = pa.chunked_array([array[:cut], array[cut:]], type=array.type)
    expected = _first_repeats(values)
    for column in (array, chunked):
        repeats, firsts = convert.duplicate_rows(column)
        assert (repeats.tolist(), firsts.tolist()) == expected
    repeats, firsts = convert.duplicate_rows(array.slice(cut))
    assert (repeats.tolist(), firsts.tolist()) == _first_repeats(values[cut:])


@given(
    st.lists(
        st.one_of(
            st.none(),
            st.text(alphabet=st.sampled_from(["a", " ", "\t", "\u00a0", "\u2003", "☕", "\x1f"])),
        ),
        max_size=30,
    ),
    st.integers(min_value=0, max_value=30),
)
def test_cleaning_skips_only_trims_that_would_change_nothing(
    values: list[str | None], cut: int
) -> None:
    array = pa.array(values, type=pa.string())
    for column in (array, pa.chunked_array([array[:cut], array[cut:]], type=pa.string())):
        expected = [
            None if v is None or v == "" else v for v in pc.utf8_trim_whitespace(column).to_pylist()
        ]
        assert convert.clean_strings(column).to_pylist() == expected


@given(st.lists(st.one_of(st.none(), st.text(alphabet="ab\x00☕", max_size=6)), max_size=30))
def test_nul_characters_are_found_in_any_cell(values: list[str | None]) -> None:
    found = convert.nul_cells(pa.array(values, type=pa.string()))
    expected = [row for row, v in enumerate(values) if v is not None and "\x00" in v]
    assert found.rows.tolist() == expected
