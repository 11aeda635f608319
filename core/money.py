"""Exact money: integer paise in, integer paise out. Never float.

Rupee strings are parsed with `decimal.Decimal` at the import boundary and converted once;
display converts back with Indian digit grouping (₹1,35,000.00) or short forms (₹1.35 L).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

PAISE_PER_RUPEE = 100
PAISE_PER_LAKH = 100_000 * PAISE_PER_RUPEE
PAISE_PER_CRORE = 10_000_000 * PAISE_PER_RUPEE

# Column and record fields that hold integer paise across the raw tables and outcomes.
MONEY_FIELDS = frozenset(
    {
        "amount",
        "fee",
        "fees",
        "tax",
        "credit",
        "debit",
        "balance",
        "amount_refunded",
        "expected_amount",
        "actual_amount",
        "difference",
        "exposure_amount",
    }
)

_RUPEE_NOISE = re.compile(r"[₹,\s]|^INR|^Rs\.?", re.IGNORECASE)
_RUPEE_SHAPE = re.compile(r"^[+-]?(\d+(\.\d{0,2})?|\.\d{1,2})$")
_PAISE_SHAPE = re.compile(r"^[+-]?\d+$")


class MoneyFormatError(ValueError):
    """A string that is not an exact amount; the message says why."""


def parse_rupees(text: str) -> int:
    """'1,35,000.00' -> 13500000. Accepts ₹, INR, Rs., grouping commas and spaces.

    More than two decimal places is refused: it cannot be an exact paise amount.
    """
    cleaned = _RUPEE_NOISE.sub("", text.strip())
    if not _RUPEE_SHAPE.match(cleaned):
        raise MoneyFormatError(f"not a rupee amount: {text!r}")
    try:
        value = Decimal(cleaned) * PAISE_PER_RUPEE
    except InvalidOperation as exc:  # pragma: no cover - the regex already guards this
        raise MoneyFormatError(f"not a rupee amount: {text!r}") from exc
    return int(value)


SHORT_UNITS = {  # the words a rupee amount is scaled by, as people type and write them
    "k": 1_000,
    "thousand": 1_000,
    "l": 100_000,
    "lac": 100_000,
    "lacs": 100_000,
    "lakh": 100_000,
    "lakhs": 100_000,
    "cr": 10_000_000,
    "crore": 10_000_000,
    "crores": 10_000_000,
}
_SHORT_SHAPE = re.compile(r"^(?P<number>[+-]?[\d.]+)\s*(?P<unit>[a-z]+)\.?$", re.IGNORECASE)


def parse_rupees_short(text: str) -> int:
    """An amount as people type it: '₹5,000', '5L', '1.2 Cr', '50k', '2.5 lakh' -> paise.
    Without a unit it is parse_rupees; with one, the result must be whole paise."""
    cleaned = _RUPEE_NOISE.sub("", text.strip())
    found = _SHORT_SHAPE.match(cleaned)
    if found is None:
        return parse_rupees(text)
    unit = SHORT_UNITS.get(found["unit"].lower())
    if unit is None:
        raise MoneyFormatError(f"not a rupee amount: {text!r}")
    try:
        value = Decimal(found["number"]) * unit * PAISE_PER_RUPEE
    except InvalidOperation as exc:
        raise MoneyFormatError(f"not a rupee amount: {text!r}") from exc
    if value != value.to_integral_value():
        raise MoneyFormatError(f"not a whole number of paise: {text!r}")
    return int(value)


def parse_paise(text: str) -> int:
    """'13500000' -> 13500000. Only whole numbers: a paise field never has decimals."""
    cleaned = text.strip().replace(",", "")
    if not _PAISE_SHAPE.match(cleaned):
        raise MoneyFormatError(f"not a whole number of paise: {text!r}")
    return int(cleaned)


def group_indian(whole: int) -> str:
    """12345678 -> '1,23,45,678': the last three digits, then groups of two."""
    digits = str(whole)
    if len(digits) <= 3:
        return digits
    head, tail = digits[:-3], digits[-3:]
    groups: list[str] = []
    while len(head) > 2:
        groups.insert(0, head[-2:])
        head = head[:-2]
    if head:
        groups.insert(0, head)
    return ",".join(groups) + "," + tail


def format_rupees(paise: int, *, symbol: bool = False) -> str:
    """13500000 -> '1,35,000.00' (or '₹1,35,000.00'); negatives as '-1,35,000.00'."""
    sign = "-" if paise < 0 else ""
    rupees, rest = divmod(abs(int(paise)), PAISE_PER_RUPEE)
    return f"{sign}{'₹' if symbol else ''}{group_indian(rupees)}.{rest:02d}"


def format_inr(paise: int) -> str:
    """13500000 -> '₹1,35,000.00'."""
    return format_rupees(paise, symbol=True)


def _round_half_up(numerator: int, denominator: int) -> int:
    return (2 * numerator + denominator) // (2 * denominator)


def format_inr_short(paise: int) -> str:
    """Short forms for cards: '₹2.40 Cr', '₹1.35 L', below a lakh '₹45,000'."""
    sign = "-" if paise < 0 else ""
    value = abs(int(paise))
    for unit, label in ((PAISE_PER_CRORE, "Cr"), (PAISE_PER_LAKH, "L")):
        if value >= unit:
            hundredths = _round_half_up(value * 100, unit)
            return f"{sign}₹{hundredths // 100}.{hundredths % 100:02d} {label}"
    return f"{sign}₹{group_indian(_round_half_up(value, PAISE_PER_RUPEE))}"


# Decimal places of each currency's minor unit (ISO 4217): Razorpay amounts are integers in
# the minor unit (cents, yen, fils). Used to show an amount and an implied rate, never to
# decide an outcome.
MINOR_UNIT_EXPONENT: dict[str, int] = {
    "JPY": 0,
    "BHD": 3,
    "KWD": 3,
    "OMR": 3,
    "JOD": 3,
    "TND": 3,
}
DEFAULT_MINOR_UNIT_EXPONENT = 2


def minor_unit_exponent(currency: str | None) -> int:
    """Decimal places of `currency`'s minor unit (2 when unknown or absent)."""
    code = (currency or "").strip().upper()
    return MINOR_UNIT_EXPONENT.get(code, DEFAULT_MINOR_UNIT_EXPONENT)


def minor_to_decimal(amount: int, currency: str | None) -> Decimal:
    """6000 USD cents -> Decimal('60.00'); 6000 JPY -> Decimal('6000'); exact."""
    exponent = minor_unit_exponent(currency)
    return Decimal(int(amount)).scaleb(-exponent)


def format_minor(amount: int, currency: str | None) -> str:
    """A minor-unit amount of any currency, exactly: 'USD 60.00', 'JPY 6000', 'KWD 1.234';
    INR with Indian grouping ('₹1,35,000.00')."""
    code = (currency or "INR").strip().upper() or "INR"
    if code == "INR":
        return format_inr(int(amount))
    return f"{code} {minor_to_decimal(amount, code):f}"


def implied_rate(amount: int, currency: str | None, base_amount_paise: int) -> Decimal | None:
    """Rupees per unit of `currency` implied by a conversion (`base_amount` in INR paise),
    to six decimal places; None when the foreign amount is 0."""
    foreign = minor_to_decimal(amount, currency)
    if foreign == 0:
        return None
    rupees = Decimal(int(base_amount_paise)).scaleb(-2)
    return (rupees / foreign).quantize(Decimal("0.000001"))
