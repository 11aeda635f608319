from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.money import (
    MINOR_UNIT_EXPONENT,
    MoneyFormatError,
    format_inr,
    format_inr_short,
    format_minor,
    format_rupees,
    implied_rate,
    minor_to_decimal,
    parse_paise,
    parse_rupees,
)


@pytest.mark.parametrize(
    ("text", "paise"),
    [
        ("1,35,000.00", 13_500_000),
        ("135000", 13_500_000),
        ("₹1,35,000.00", 13_500_000),
        ("0.5", 50),
        ("12.05", 1205),
        (" 1,00,00,000.99 ", 1_000_000_099),
        ("-250.10", -25010),
        ("INR 10", 1000),
    ],
)
def test_parse_rupees_is_exact(text: str, paise: int) -> None:
    assert parse_rupees(text) == paise


@pytest.mark.parametrize("text", ["", "abc", "1.234", "1.2.3", "12e3", "nan", "--5"])
def test_parse_rupees_refuses_inexact_or_malformed(text: str) -> None:
    with pytest.raises(MoneyFormatError):
        parse_rupees(text)


def test_parse_paise_refuses_decimals() -> None:
    assert parse_paise("13500000") == 13_500_000
    with pytest.raises(MoneyFormatError):
        parse_paise("135.00")


@pytest.mark.parametrize(
    ("paise", "text"),
    [
        (13_500_000, "₹1,35,000.00"),
        (0, "₹0.00"),
        (5, "₹0.05"),
        (99_999, "₹999.99"),
        (12_345_678_901, "₹12,34,56,789.01"),
        (-13_500_000, "-₹1,35,000.00"),
    ],
)
def test_format_inr_uses_indian_grouping(paise: int, text: str) -> None:
    assert format_inr(paise) == text


@pytest.mark.parametrize(
    ("paise", "text"),
    [
        (13_500_000, "₹1.35 L"),
        (2_400_000_000, "₹2.40 Cr"),
        (4_500_000, "₹45,000"),
        (10_000_000, "₹1.00 L"),
        (-2_400_000_000, "-₹2.40 Cr"),
    ],
)
def test_format_inr_short_uses_lakh_and_crore(paise: int, text: str) -> None:
    assert format_inr_short(paise) == text


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_any_paise_amount_survives_format_then_parse(paise: int) -> None:
    assert parse_rupees(format_rupees(paise)) == paise
    assert parse_rupees(format_inr(paise)) == paise


@pytest.mark.parametrize(
    ("amount", "currency", "text"),
    [
        (6_000, "USD", "USD 60.00"),
        (6_000, "jpy", "JPY 6000"),
        (1_234, "KWD", "KWD 1.234"),
        (5, "BHD", "BHD 0.005"),
        (-5, "EUR", "EUR -0.05"),
        (13_500_000, "INR", "₹1,35,000.00"),
        (100, None, "₹1.00"),
    ],
)
def test_format_minor_shows_any_currency_exactly(amount: int, currency: str, text: str) -> None:
    assert format_minor(amount, currency) == text


def test_minor_unit_exponents() -> None:
    assert MINOR_UNIT_EXPONENT["JPY"] == 0
    assert {MINOR_UNIT_EXPONENT[c] for c in ("BHD", "KWD", "OMR", "JOD", "TND")} == {3}
    assert minor_to_decimal(6_000, "USD") == Decimal("60.00")
    assert implied_rate(6_000, "USD", 501_000) == Decimal("83.500000")
    assert implied_rate(0, "USD", 501_000) is None


@given(
    st.integers(min_value=-(10**15), max_value=10**15),
    st.sampled_from(["USD", "JPY", "KWD", "EUR", "OMR"]),
)
def test_minor_amounts_round_trip_exactly(amount: int, currency: str) -> None:
    text = format_minor(amount, currency)
    exponent = MINOR_UNIT_EXPONENT.get(currency, 2)
    assert int(Decimal(text.split(" ")[1]).scaleb(exponent)) == amount
