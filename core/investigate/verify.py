"""The citation check: every record id and amount in a model's answer must be in its evidence.

Checked are the answer's declared citations and whatever its free text (summary,
recommendation) mentions: ids with a Razorpay prefix (pay_, setl_, ...), bank line ids
(`file.csv:12`), UTR-like tokens, and amounts written with ₹/Rs/INR, with grouping commas
or two decimals, or in paise. Prefixed ids must come from an id field of a record (an id
that appears only inside a narration does not count: that is how an injected id would
arrive). Bare integers and ISO dates are not treated as amounts.

An amount verifies when the evidence holds it, or when it is the sum or difference of two
amounts the evidence holds (a settlement's shortfall, two duplicate debits together);
only pairs, over at most `MAX_PAIRED_AMOUNTS` distinct evidence amounts, so a figure
built from three or more, or invented, still fails.

`specificity_gap` is the other half of "a model must earn its place": its answer is shown
only when it names the exception's entity and, when amounts disagree, the difference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.investigate.evidence import BANK_LINE_ID, PREFIXED_ID, UTR_LIKE, Evidence
from core.investigate.result import Answer
from core.money import (
    PAISE_PER_CRORE,
    PAISE_PER_LAKH,
    MoneyFormatError,
    format_inr,
    parse_rupees,
)

MAX_PAIRED_AMOUNTS = 400

_NUMBER = r"-?\d[\d,]*(?:\.\d{1,2})?"
_SCALE = r"(?:\s?(?P<scale>L|lakh|lakhs|Cr|crore|crores)\b)?"
RUPEES = re.compile(rf"(?:₹|\bRs\.?|\bINR)\s?(?P<number>{_NUMBER}){_SCALE}", re.IGNORECASE)
PAISE = re.compile(r"(?P<number>\d[\d,]*)\s?paise\b", re.IGNORECASE)
BARE_DECIMAL = re.compile(
    r"(?<![\w.,])(?P<number>\d{1,3}(?:,\d{2,3})+(?:\.\d{2})?|\d+\.\d{2})(?![\d%])"
)


@dataclass(frozen=True)
class CitationCheck:
    """What the answer names that the evidence does not hold (empty tuples: it passed)."""

    unknown_ids: tuple[str, ...]
    unknown_amounts: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.unknown_ids and not self.unknown_amounts

    @property
    def reason(self) -> str:
        parts = []
        if self.unknown_ids:
            parts.append("ids not in the evidence: " + ", ".join(self.unknown_ids[:5]))
        if self.unknown_amounts:
            parts.append("amounts not in the evidence: " + ", ".join(self.unknown_amounts[:5]))
        return "; ".join(parts)


def amounts_in_text(text: str) -> list[tuple[str, int | None]]:
    """(as written, paise) for each amount mentioned in `text`; paise None if unreadable."""
    found: list[tuple[str, int | None]] = []
    rest = text
    for match in RUPEES.finditer(text):
        found.append((match.group(0), _rupees(match.group("number"), match.group("scale"))))
    rest = RUPEES.sub(" ", rest)
    for match in PAISE.finditer(rest):
        found.append((match.group(0), int(match.group("number").replace(",", ""))))
    rest = PAISE.sub(" ", rest)
    for match in BARE_DECIMAL.finditer(rest):
        found.append((match.group(0), _rupees(match.group("number"), None)))
    return found


def _rupees(number: str, scale: str | None) -> int | None:
    try:
        paise = parse_rupees(number)
    except MoneyFormatError:
        return None
    if scale:
        unit = PAISE_PER_CRORE if scale.lower().startswith("cr") else PAISE_PER_LAKH
        paise = paise * unit // 100
    return paise


def check_citations(answer: Answer, evidence: Evidence) -> CitationCheck:
    """Compare an answer's ids and amounts with what the evidence holds."""
    ids = evidence.record_ids()
    text_blob = evidence.text()
    amounts = evidence.amounts()
    free_text = f"{answer.summary}\n{answer.recommendation}"

    unknown_ids: list[str] = [c for c in answer.citations if c not in ids]
    for pattern in (PREFIXED_ID, BANK_LINE_ID):
        unknown_ids += [m.group(0) for m in pattern.finditer(free_text) if m.group(0) not in ids]
    for match in UTR_LIKE.finditer(free_text):
        token = match.group(0)
        if token not in ids and token not in text_blob:
            unknown_ids.append(token)

    unknown_amounts = [str(a) for a in answer.cited_amounts if not derivable(a, amounts)]
    for written, paise in amounts_in_text(free_text):
        if paise is None or not derivable(paise, amounts):
            unknown_amounts.append(written.strip())
    return CitationCheck(
        unknown_ids=tuple(dict.fromkeys(unknown_ids)),
        unknown_amounts=tuple(dict.fromkeys(unknown_amounts)),
    )


def derivable(paise: int, amounts: frozenset[int]) -> bool:
    """True when `paise` is an evidence amount, or the sum or difference of two of them
    (the first `MAX_PAIRED_AMOUNTS` distinct magnitudes, largest first)."""
    if paise in amounts:
        return True
    pool = sorted({abs(a) for a in amounts if a}, reverse=True)[:MAX_PAIRED_AMOUNTS]
    members = set(pool)
    target = abs(paise)
    for a in pool:
        if (target - a) in members or (a - target) in members or (target + a) in members:
            return True
    return False


def _names_id(answer: Answer, token: str) -> bool:
    return token in answer.citations or token in f"{answer.summary}\n{answer.recommendation}"


def _names_amount(answer: Answer, paise: int) -> bool:
    wanted = abs(paise)
    if any(abs(a) == wanted for a in answer.cited_amounts):
        return True
    free_text = f"{answer.summary}\n{answer.recommendation}"
    return any(p is not None and abs(p) == wanted for _, p in amounts_in_text(free_text))


def specificity_gap(answer: Answer, exception: Mapping[str, Any]) -> str:
    """What a model's answer fails to name that a reviewer needs (empty: specific enough):
    the exception's entity id, and the difference when amounts disagree. The rules' answer
    names both, so a vaguer model answer never replaces it."""
    missing: list[str] = []
    entity = str(exception.get("entity_id") or "")
    if entity and not _names_id(answer, entity):
        missing.append(f"the entity {entity}")
    difference = exception.get("difference")
    named = isinstance(difference, int) and _names_amount(answer, difference)
    if (
        isinstance(difference, int)
        and not isinstance(difference, bool)
        and difference
        and not named
    ):
        missing.append(f"the difference {format_inr(abs(difference))}")
    if not missing:
        return ""
    return "less specific than the rules' answer: it does not name " + " or ".join(missing)
