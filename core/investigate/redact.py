"""Personal data out before anything leaves the machine: emails, VPAs, phones, card numbers.

Free text (narrations, notes, descriptions, references) is where personal data hides in
reconciliation evidence; ids and amounts are kept so the answer can still cite them. The
patterns lean towards redacting too much in free text: a reviewer still sees the original
evidence locally, only the model's copy is redacted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# A UPI VPA is handle@provider with no dot in the provider (an email has one).
VPA = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z][A-Za-z0-9]+\b")
# Indian mobile numbers: optional +91 / 0091 / 91 / 0 prefix, then 10 digits from 6-9.
PHONE_IN = re.compile(
    r"(?<![\w+])(?:\+91[\s-]?|0091[\s-]?|91[\s-]?(?=[6-9]\d{4}[\s-]?\d{5}(?!\d))|0)?"
    r"[6-9]\d{4}[\s-]?\d{5}(?![\w])"
)
# Other international numbers written with a plus sign.
PHONE_INTL = re.compile(r"(?<![\w+])\+\d{1,3}[\s-]?\d(?:[\s-]?\d){6,13}(?!\d)")
# Card numbers: 13-19 digits, optionally in groups; masked middles (XXXX, ****) included.
CARD = re.compile(r"(?<![\w])\d{4}(?:[ -]?(?:\d|[Xx*]){4}){2}[ -]?\d{1,7}(?![\w])")
CARD_PLAIN = re.compile(r"(?<!\d)\d{13,19}(?!\d)")

PLACEHOLDERS = {"email": "[EMAIL]", "vpa": "[VPA]", "phone": "[PHONE]", "card": "[CARD]"}


def _luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = re.sub(r"\D", "", text)
    masked = any(c in "Xx*" for c in text)
    grouped = len(re.findall(r"[ -]", text)) >= 2
    if masked or grouped or _luhn_ok(digits):
        return PLACEHOLDERS["card"]
    return text


def _plain_card(match: re.Match[str]) -> str:
    return PLACEHOLDERS["card"] if _luhn_ok(match.group(0)) else match.group(0)


def redact_text(text: str) -> str:
    """`text` with every email, VPA, phone number and card number replaced by a marker."""
    out = EMAIL.sub(PLACEHOLDERS["email"], text)
    out = VPA.sub(PLACEHOLDERS["vpa"], out)
    out = CARD.sub(_card, out)
    out = CARD_PLAIN.sub(_plain_card, out)
    out = PHONE_INTL.sub(PLACEHOLDERS["phone"], out)
    out = PHONE_IN.sub(PLACEHOLDERS["phone"], out)
    return out


def redact_contact_handles(text: str) -> str:
    """Only emails and VPAs: safe on a whole request, since no id or amount contains '@'."""
    return VPA.sub(PLACEHOLDERS["vpa"], EMAIL.sub(PLACEHOLDERS["email"], text))


def redact_value(value: Any, *, keep: frozenset[str]) -> Any:
    """Redact strings inside a JSON-like value, except under the keys in `keep` (ids)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {
            k: (v if k in keep and not _has_handle(v) else redact_value(v, keep=keep))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(v, keep=keep) for v in value]
    return value


def _has_handle(value: Any) -> bool:
    return isinstance(value, str) and "@" in value
