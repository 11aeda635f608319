"""Finding the UTR of a bank line (spec section 3).

Rule, in order:
1. A labelled UTR in the narration (`UTR: X`, `UTR NO. X`, `UTR-X`).
2. The first UTR-shaped token of the narration, splitting on `-`, `/`, `*`, `:`, `|`, `,` and
   spaces (so `NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-AXISCN1153863727`,
   `RTGS CR-HDFCR52026...-...`, `IMPS/P2A/623412341234/...`, `UPI/612345678901/...` and
   SBI's `NEFT*UTIB0000123*AXISCN...*` all work). If the reference column holds a longer
   UTR that starts with that token (the narration was truncated), the reference wins.
3. Otherwise the reference column, if it is UTR-shaped.

An account number is never a UTR: before step 1 and 2, an account number written after an
account label (`A/C 50200012345678`, `A/C NO: ...`, `AC NO ...`, `ACCOUNT NO ...`,
`ACCT ...`, `ACC NO ...`, masked `TO A/C XXXXXXXX5678`) is taken out of the narration, so
the real UTR elsewhere in the line is still found and a line that carries only an account
number has no UTR from its narration. The same number written elsewhere in the narration
without its label is taken out too. A token of zeros only is never a UTR.

UTR-shaped: 12 to 22 digits, or 4 letters then 6 to 18 letters/digits holding at least 6
digits (NEFT `HDFCN57935380338`, RTGS `HDFCR52026...`, also truncated ones), never an IFSC
(`UTIB0000123`: 4 letters, a zero, 6 characters). The result is normalised with
`core.dataset.normalise_utr`.
"""

from __future__ import annotations

import re

from core.dataset import normalise_utr

_LABELLED = re.compile(r"\bUTR\s*(?:NO\.?|NUMBER|REF\.?)?\s*[:#.\-]?\s*([A-Z0-9]{8,22})\b")
_SPLIT = re.compile(r"[-/*:|,\s]+")
_DIGITS = re.compile(r"^\d{12,22}$")
_BANK_STYLE = re.compile(r"^[A-Z]{4}[A-Z0-9]{6,18}$")
_IFSC = re.compile(r"^[A-Z]{4}0[A-Z0-9]{6}$")
_ZEROS = re.compile(r"^0+$")
# An account label, an optional 'NO'/'NUMBER', optional punctuation, then the number (digits,
# or digits masked with X or *), ending at a non-alphanumeric character.
_ACCOUNT = re.compile(
    r"(?<![A-Z0-9])(?:A/C|A/CS|AC|ACC|ACCT|ACCOUNT)\.?"
    r"(?:\s*(?:NO|NUMBER|NUM|NBR)\.?)?\s*[:#.\-]?\s*"
    r"(?P<number>[0-9X*]*[0-9][0-9X*]*)(?![A-Z0-9])"
)


def is_utr_shaped(token: str) -> bool:
    if _ZEROS.match(token):
        return False  # banks write zeros for "no reference"
    if _DIGITS.match(token):
        return True
    if not _BANK_STYLE.match(token) or _IFSC.match(token):
        return False
    return sum(ch.isdigit() for ch in token) >= 6


def account_numbers(text: str) -> tuple[str, ...]:
    """Each account number written after an account label in the (upper-case) `text`, as
    written (digits, or digits masked with X or *): what `without_account_numbers` takes
    out. The investigator's redaction uses it, so both agree on what an account is."""
    return tuple(m.group("number") for m in _ACCOUNT.finditer(text))


def without_account_numbers(text: str) -> str:
    """The (upper-case) narration with every labelled account number replaced by a space,
    and every other occurrence of such a number too (HDFC writes `FT - DR - 50200012345678 -
    NAME A/C 50200012345678`)."""
    numbers = {re.sub(r"\D", "", m.group(0)) for m in _ACCOUNT.finditer(text)}
    text = _ACCOUNT.sub(" ", text)
    for number in sorted(n for n in numbers if len(n) >= 6 and not _ZEROS.match(n)):
        text = re.sub(rf"(?<![A-Z0-9]){number}(?![A-Z0-9])", " ", text)
    return text


def utr_in_narration(narration: str | None) -> str | None:
    if not narration:
        return None
    text = without_account_numbers(narration.upper())
    labelled = _LABELLED.search(text)
    if labelled and is_utr_shaped(labelled.group(1)):
        return labelled.group(1)
    for token in _SPLIT.split(text):
        if is_utr_shaped(token):
            return token
    return None


def utr_in_reference(reference: str | None) -> str | None:
    if not reference:
        return None
    candidate = normalise_utr(reference)
    return candidate if candidate and is_utr_shaped(candidate) else None


def extract_utr(narration: str | None, reference: str | None) -> str | None:
    """The normalised UTR a bank line carries, or None (rule in the module docstring)."""
    from_narration = utr_in_narration(narration)
    from_reference = utr_in_reference(reference)
    if from_narration and from_reference and from_reference != from_narration:
        if from_reference.startswith(from_narration):
            return from_reference
        return normalise_utr(from_narration)
    return normalise_utr(from_narration or from_reference)
