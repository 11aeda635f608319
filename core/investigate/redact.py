"""Personal data out before anything leaves the machine.

Replaced in free text (narrations, notes, descriptions, references): emails, VPAs, phone
numbers, card numbers, PAN (`ABCDE1234F`), Aadhaar numbers (12 digits, Verhoeff-valid, or
written 4-4-4), bank account numbers (after an account label, found by the importer's own
classifier in `core.ingest.utr`, and any other long digit run that is not a UTR), an IFSC
written next to an account number, and personal names: the name field of UPI/IMPS/NEFT
narrations (`UPI/123456789012/JOHN DOE/...`, `IMPS/P2A/...`, `NEFT-UTR-NAME-...`) and the
customer's name wherever the data holds it (name keys of records and of their notes JSON),
each name then replaced everywhere else it is written.

Ids and amounts are kept so the answer can still cite them: every value of an id field
and every line's UTR (the importer's `extract_utr`) is protected from the patterns above,
so citations keep their UTRs. The patterns lean towards redacting too much in free text: a
reviewer still sees the original evidence locally, only the model's copy is redacted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from core.ingest.utr import account_numbers, extract_utr, is_utr_shaped

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

# PAN: five letters, four digits, a letter (the fourth letter is the holder type).
PAN = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z]{5}\d{4}[A-Za-z](?![A-Za-z0-9_])")
# Aadhaar written 4-4-4 (never a card: cards are replaced first and have 13+ digits).
AADHAAR_GROUPED = re.compile(r"(?<![\w])(?<!\d[ -])[2-9]\d{3}[ -]\d{4}[ -]\d{4}(?![\w])(?![ -]\d)")
AADHAAR_PLAIN = re.compile(r"(?<!\d)[2-9]\d{11}(?!\d)")
# Any other run of 9-18 digits in free text (an unlabelled account number, HDFC's
# `FT - DR - 50200012345678 - NAME`), unless it is a protected UTR or id.
LONG_DIGITS = re.compile(r"(?<![\dA-Za-z])\d{9,18}(?![\dA-Za-z])")
IFSC = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{4}0[A-Za-z0-9]{6}(?![A-Za-z0-9])")
IFSC_LABEL = re.compile(r"\bIFSC\b", re.IGNORECASE)

PLACEHOLDERS = {
    "email": "[EMAIL]",
    "vpa": "[VPA]",
    "phone": "[PHONE]",
    "card": "[CARD]",
    "pan": "[PAN]",
    "aadhaar": "[AADHAAR]",
    "account": "[ACCOUNT]",
    "ifsc": "[IFSC]",
    "name": "[NAME]",
}

# Verhoeff tables (the Aadhaar check digit).
_VERHOEFF_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 2, 3, 4, 0, 6, 7, 8, 9, 5),
    (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7),
    (4, 0, 1, 2, 3, 9, 5, 6, 7, 8),
    (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2),
    (7, 6, 5, 9, 8, 2, 1, 0, 4, 3),
    (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)
_VERHOEFF_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 5, 7, 6, 2, 8, 3, 0, 9, 4),
    (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7),
    (9, 4, 5, 3, 1, 2, 6, 8, 7, 0),
    (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5),
    (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)
_VERHOEFF_INV = (0, 4, 3, 2, 1, 5, 6, 7, 8, 9)


def verhoeff_ok(digits: str) -> bool:
    """True when the last digit of `digits` is its Verhoeff check digit."""
    check = 0
    for index, char in enumerate(reversed(digits)):
        check = _VERHOEFF_D[check][_VERHOEFF_P[index % 8][int(char)]]
    return check == 0


def verhoeff_digit(digits: str) -> str:
    """The Verhoeff check digit to append to `digits`."""
    check = 0
    for index, char in enumerate(reversed(digits)):
        check = _VERHOEFF_D[check][_VERHOEFF_P[(index + 1) % 8][int(char)]]
    return str(_VERHOEFF_INV[check])


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


# Narration name fields. A narration starting with a channel keeps its UTR and codes; the
# first segment made only of letters after them is the counterparty's name (unless it is a
# business, such as RAZORPAY SOFTWARE PVT LTD, which is what identifies a gateway credit).
_CHANNEL = re.compile(r"^\s*(?:UPI|IMPS|NEFT|RTGS|MMT|FT|IFT|BIL)\b", re.IGNORECASE)
_SEGMENTS = re.compile(r"\s*[-/*|:]\s*")
_NAME_SHAPED = re.compile(r"^[A-Za-z][A-Za-z .'&]{1,79}$")
CHANNEL_CODES = frozenset(
    [
        "UPI",
        "IMPS",
        "NEFT",
        "RTGS",
        "MMT",
        "FT",
        "IFT",
        "BIL",
        "CR",
        "DR",
        "NEFT",
        "CR",
        "NEFT",
        "DR",
        "RTGS",
        "CR",
        "RTGS",
        "DR",
        "P2A",
        "P2M",
        "P2P",
        "INW",
        "INWARD",
        "OUTWARD",
        "OUT",
        "IN",
        "RRN",
        "REF",
        "UTR",
        "NA",
        "TXN",
        "TRF",
        "TRANSFER",
        "REV",
        "RET",
        "RTN",
        "PAY",
        "PAYMENT",
        "PAYMENTS",
        "CREDIT",
        "DEBIT",
        "COLLECT",
        "INTENT",
        "MOB",
        "NET",
        "BY",
        "TO",
        "FROM",
    ]
) | frozenset({"NEFT CR", "NEFT DR", "RTGS CR", "RTGS DR", "IMPS CR", "UPI CR"})
BUSINESS_WORDS = frozenset(
    [
        "RAZORPAY",
        "PVT",
        "PRIVATE",
        "LTD",
        "LIMITED",
        "LLP",
        "INC",
        "CORP",
        "CORPORATION",
        "COMPANY",
        "CO",
        "BANK",
        "SOFTWARE",
        "PAYMENTS",
        "PAYMENT",
        "TECHNOLOGIES",
        "TECHNOLOGY",
        "SOLUTIONS",
        "SERVICES",
        "ENTERPRISES",
        "TRADERS",
        "INDUSTRIES",
        "INDIA",
        "STORE",
        "STORES",
        "SETTLEMENT",
        "SETTLEMENTS",
        "INSTANT",
        "GATEWAY",
        "NODAL",
        "ESCROW",
        "CASHFREE",
        "PAYU",
        "PAYTM",
        "PHONEPE",
        "GOOGLE",
        "AMAZON",
    ]
)
_NAME_KEYS = re.compile(
    r"(?:^|_)(?:name|customer|holder|beneficiary|payer|payee|billing|shipping)(?:$|_)",
    re.IGNORECASE,
)
_NOT_NAME_KEYS = frozenset(
    {"file", "file_name", "filename", "bank_name", "merchant_name", "method", "tool", "tool_name"}
)
# Words of a name-shaped field that are not names: never replaced elsewhere on their own
# (a remark such as "SALARY FOR JUNE" must not blank every "for" in the evidence).
_COMMON_WORDS = frozenset(
    [
        "MR",
        "MRS",
        "MS",
        "SHRI",
        "SMT",
        "THE",
        "AND",
        "FOR",
        "WITH",
        "OF",
        "ON",
        "AT",
        "ORDER",
        "REFUND",
        "SALARY",
        "RENT",
        "FEE",
        "FEES",
        "BILL",
        "INVOICE",
        "SELF",
        "CASH",
        "CHARGES",
        "CHARGE",
        "ADVANCE",
        "BALANCE",
        "AMOUNT",
        "NOTE",
        "REMARK",
        "MONTH",
        "JAN",
        "FEB",
        "MAR",
        "APR",
        "MAY",
        "JUN",
        "JUNE",
        "JUL",
        "JULY",
        "AUG",
        "SEP",
        "SEPT",
        "OCT",
        "NOV",
        "DEC",
    ]
)
_NAME_WORD_STOP = CHANNEL_CODES | BUSINESS_WORDS | _COMMON_WORDS


def _is_business(name: str) -> bool:
    return any(word in BUSINESS_WORDS for word in re.split(r"[\s.&']+", name.upper()))


def narration_name(narration: str) -> str | None:
    """The counterparty name in a UPI/IMPS/NEFT/RTGS narration, or None (a business name,
    such as the gateway's, is not a person's and is kept)."""
    if not narration or not _CHANNEL.match(narration):
        return None
    for segment in _SEGMENTS.split(narration.strip())[1:]:
        token = segment.strip()
        if not token or token.upper() in CHANNEL_CODES:
            continue
        if not _NAME_SHAPED.match(token):
            continue  # a UTR, an IFSC, a VPA, a number: not the name field
        return None if _is_business(token) else token
    return None


def _name_value(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not _NAME_SHAPED.match(text) or _is_business(text) or "_" in text:
        return None
    return text


def names_in(record: Mapping[str, Any], *, skip: frozenset[str] = frozenset()) -> list[str]:
    """Personal names a record holds: values under name-like keys (also inside a notes
    JSON text) and the name field of its narration."""
    found: list[str] = []
    for key, value in record.items():
        key_text = str(key)
        if key_text in skip:
            continue
        if key_text == "narration" and isinstance(value, str):
            name = narration_name(value)
            if name:
                found.append(name)
        elif key_text == "notes":
            notes = _notes(value)
            if notes:
                found += names_in(notes)
        elif isinstance(value, Mapping):
            found += names_in(value)
        elif _NAME_KEYS.search(key_text) and key_text.lower() not in _NOT_NAME_KEYS:
            name = _name_value(value)
            if name:
                found.append(name)
    return found


def _notes(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        return parsed if isinstance(parsed, Mapping) else None
    return None


def _tokens_pattern(tokens: Iterable[str], *, letters_only: bool) -> re.Pattern[str] | None:
    unique = sorted({t for t in tokens if t}, key=lambda t: (-len(t), t))
    if not unique:
        return None
    edge = "A-Za-z" if letters_only else "A-Za-z0-9"
    body = "|".join(re.escape(t).replace(r"\ ", r"\s+") for t in unique)
    flags = re.IGNORECASE if letters_only else 0
    return re.compile(rf"(?<![{edge}])(?:{body})(?![{edge}])", flags)


def _name_tokens(names: Iterable[str]) -> set[str]:
    tokens: set[str] = set()
    for name in names:
        tokens.add(name.strip())
        for word in re.split(r"[\s.&']+", name):
            if len(word) >= 3 and word.upper() not in _NAME_WORD_STOP:
                tokens.add(word)
    return tokens


@dataclass(frozen=True)
class Redactor:
    """Redaction that knows the evidence: the tokens to protect (ids, UTRs) and the
    personal names found anywhere in it (replaced wherever they are written).

    protected: exact tokens never replaced (record ids, each line's UTR); names: personal
    names found in the records; strict: also replace every other run of 9-18 digits
    (possible account numbers) -- safe only when every UTR is in `protected`.
    """

    protected: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()
    strict: bool = False

    @classmethod
    def for_records(
        cls, records: Iterable[Mapping[str, Any]], id_fields: frozenset[str]
    ) -> Redactor:
        return cls(strict=True).extended(records, id_fields)

    def extended(self, records: Iterable[Mapping[str, Any]], id_fields: frozenset[str]) -> Redactor:
        """This redactor plus the ids, UTRs and names of more records."""
        protected = set(self.protected)
        names = set(self.names)
        for record in records:
            _collect_ids(record, id_fields, protected)
            names.update(names_in(record, skip=id_fields))
        return Redactor(frozenset(protected), frozenset(names), self.strict)

    @cached_property
    def _guard(self) -> re.Pattern[str] | None:
        return _tokens_pattern(
            (p for p in self.protected if len(p) >= 6 and "@" not in p), letters_only=False
        )

    @cached_property
    def _names(self) -> re.Pattern[str] | None:
        return _tokens_pattern(_name_tokens(self.names), letters_only=True)

    def text(self, text: str) -> str:
        """`text` with every kind of personal data replaced by its marker."""
        guard = self._guard
        saved: list[str] = []

        def hide(match: re.Match[str]) -> str:
            saved.append(match.group(0))
            return f"\ue000{chr(0xE100 + len(saved) - 1)}\ue001"

        out = guard.sub(hide, text) if guard else text
        out = _patterns(out, strict=self.strict)
        names = self._names
        if names:
            out = names.sub(PLACEHOLDERS["name"], out)
        if saved:
            out = re.sub("\ue000(.)\ue001", lambda m: saved[ord(m.group(1)) - 0xE100], out)
        return out

    def value(self, value: Any, *, keep: frozenset[str]) -> Any:
        """Redact strings inside a JSON-like value, except under the keys in `keep` (ids)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                k: (v if k in keep and not _has_handle(v) else self.value(v, keep=keep))
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.value(v, keep=keep) for v in value]
        return value


def _collect_ids(value: Any, id_fields: frozenset[str], into: set[str], key: str = "") -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _collect_ids(v, id_fields, into, str(k))
        if "narration" in value or "reference" in value:
            stored = value.get("utr")
            utr = stored or extract_utr(
                _str_or_none(value.get("narration")), _str_or_none(value.get("reference"))
            )
            if utr:
                into.add(str(utr))
    elif isinstance(value, list | tuple):
        for v in value:
            _collect_ids(v, id_fields, into, key)
    elif key in id_fields and value not in (None, "") and not isinstance(value, bool):
        into.add(str(value))


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _patterns(text: str, *, strict: bool) -> str:
    # An IFSC identifies a person's account only next to an account number: decide before
    # the number is replaced (it may leave as [ACCOUNT], [CARD], [AADHAAR] or [PHONE]).
    with_account = bool(
        account_numbers(text.upper()) or (strict and LONG_DIGITS.search(text))
    ) or bool(IFSC_LABEL.search(text))
    out = EMAIL.sub(PLACEHOLDERS["email"], text)
    out = VPA.sub(PLACEHOLDERS["vpa"], out)
    out = CARD.sub(_card, out)
    out = CARD_PLAIN.sub(_plain_card, out)
    out = AADHAAR_GROUPED.sub(PLACEHOLDERS["aadhaar"], out)
    out = _accounts(out)
    out = PAN.sub(PLACEHOLDERS["pan"], out)
    out = AADHAAR_PLAIN.sub(_aadhaar, out)
    out = PHONE_INTL.sub(PLACEHOLDERS["phone"], out)
    out = PHONE_IN.sub(PLACEHOLDERS["phone"], out)
    out = LONG_DIGITS.sub(_long_digits if strict else _short_account, out)
    if with_account or PLACEHOLDERS["account"] in out:
        out = IFSC.sub(PLACEHOLDERS["ifsc"], out)
    return out


def _accounts(text: str) -> str:
    """Account numbers after an account label, as the importer's classifier finds them."""
    numbers = {n for n in account_numbers(text.upper()) if sum(c.isdigit() for c in n) >= 4}
    for number in sorted(numbers, key=len, reverse=True):
        pattern = re.escape(number).replace("X", "[Xx]")
        text = re.sub(rf"(?<![A-Za-z0-9]){pattern}(?![A-Za-z0-9])", PLACEHOLDERS["account"], text)
    return text


def _aadhaar(match: re.Match[str]) -> str:
    return PLACEHOLDERS["aadhaar"] if verhoeff_ok(match.group(0)) else match.group(0)


def _long_digits(match: re.Match[str]) -> str:
    return PLACEHOLDERS["account"]


def _short_account(match: re.Match[str]) -> str:
    """Without the evidence's UTRs at hand, only digit runs too short to be a UTR."""
    return match.group(0) if is_utr_shaped(match.group(0)) else PLACEHOLDERS["account"]


def redact_text(text: str) -> str:
    """`text` with every email, VPA, phone, card, PAN, Aadhaar and account number, and a
    narration's name field, replaced by a marker; the text's own UTR (the importer's
    reading of a UPI/IMPS/NEFT/RTGS narration) is kept."""
    utr = extract_utr(text, None) if text and _CHANNEL.match(text) else None
    protected = frozenset({utr} if utr else set()) | frozenset(
        t for t in re.findall(r"[A-Za-z0-9]+", text) if t.upper() == utr
    )
    name = narration_name(text) if text else None
    return Redactor(protected, frozenset({name} if name else set())).text(text)


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
