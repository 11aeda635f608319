"""The checks on a model's prose: every record id and amount it names must be in its
evidence, and it may neither hide characters from the reader nor claim what only a person
decides.

`clean_model_text` is applied to a model's summary and recommendation before anything
else: NFKC (full-width digits, ligatures and compatibility forms become plain ones), then
every invisible format character (Unicode category Cf: zero-width space and joiners, word
joiner, soft hyphen, BOM, tag characters) and control character is removed, so the checks
and the reader see one and the same string. Bidirectional controls (U+061C, U+200E/F,
U+202A-U+202E, U+2066-U+2069) are kept so that `text_problem` refuses the answer: they
reorder what a browser displays (`₹` + RLO + `00.000,01` shows as ₹10,000.00), and no
explanation needs them. Stored text (the cache, the packet) that is not already in that
form is refused the same way.

Ids: any token shaped like a Razorpay id (pay_, rfnd_, setl_, setlod_, order_, disp_,
trf_, rvrsl_, adj_, ...), found case-insensitively and after mapping look-alike Cyrillic
and Greek letters to Latin (`PAY_X`, `рay_X` with a Cyrillic р), bank line ids
(`file.csv:12`) and UTR-like tokens (12-22 letters and digits, any case) must equal an id
held in an id field of the evidence exactly. Free text (narrations, descriptions, notes)
never counts: that is how an injected id would arrive.

Amounts: every number a reader would take for money: with ₹, Rs, INR, `/-` or the word
rupees (before or after), with lakh/lac/L, crore/Cr, thousand/k, million/mn, billion/bn,
in paise, with Indian or western grouping, or a bare number with grouping, two decimals
or four or more digits (a bare number verifies as rupees or as paise). An amount in
another currency (USD, $, EUR, ...) or written in words ("five lakh rupees") always
fails: the evidence is in rupees and a figure in words cannot be checked. Dates (ISO,
d/m/y, "2 June 2026"), times, percentages, `#` references and tokens that are ids are not
amounts. An amount verifies when the evidence holds it, or when it is the sum or
difference of two amounts the evidence holds (a settlement's shortfall, two duplicate
debits together); only pairs, over at most `MAX_PAIRED_AMOUNTS` distinct evidence
amounts, so a figure built from three or more, or invented, still fails.

Claims (`status_claims`): the model only explains; a claim that the exception is
resolved, closed, approved, written off or waived, or that no review or action is needed,
fails the answer (even negated: the prompt tells the model not to use these words, and
the rules' answer carries any write-off the policy allows). Direction
(`direction_contradiction`): money said to have been settled, credited, received or paid
more than expected (or over-settled, overpaid) when the difference is negative, or less
or short (short-settled, shortfall, underpaid) when it is positive, fails.

`specificity_gap` is the other half of "a model must earn its place": its answer is shown
only when it names the exception's entity and, when amounts disagree, the difference.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from core.investigate.evidence import BANK_LINE_ID, Evidence
from core.investigate.result import Answer
from core.money import SHORT_UNITS, format_inr

MAX_PAIRED_AMOUNTS = 400

# --- what the reader sees ---------------------------------------------------------------

BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
# Letters that render as nothing (Hangul fillers) and variation selectors.
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u180b\u180c\u180d\u180f") | frozenset(
    chr(c) for c in range(0xFE00, 0xFE10)
)


def _hidden(ch: str) -> bool:
    if ch in BIDI_CONTROLS:
        return False  # kept, so that text_problem refuses the answer
    if ch in "\n\t":
        return False
    category = unicodedata.category(ch)
    return category in ("Cf", "Cc", "Co", "Cn") or ch in _INVISIBLE or 0xE0100 <= ord(ch) <= 0xE01EF


def clean_model_text(text: str) -> str:
    """`text` as checked and shown: NFKC, line and paragraph separators as newlines, every
    invisible format or control character removed (bidirectional controls kept: see
    `text_problem`)."""
    normal = unicodedata.normalize("NFKC", text).replace("\u2028", "\n").replace("\u2029", "\n")
    return "".join(ch for ch in normal if not _hidden(ch))


def text_problem(text: str) -> str:
    """Why `text` may not be shown as a model's words (empty: it may): bidirectional
    controls, or characters `clean_model_text` would change (stored text from before)."""
    bidi = sorted({f"U+{ord(ch):04X}" for ch in text if ch in BIDI_CONTROLS})
    if bidi:
        return (
            "bidirectional control characters (" + ", ".join(bidi) + ") would reorder what "
            "the reader sees"
        )
    if text != clean_model_text(text):
        return "invisible or non-normalised characters the reader would not see"
    return ""


# --- ids --------------------------------------------------------------------------------

# Cyrillic and Greek letters that look like Latin ones (a subset of UTS #39 confusables,
# one character for one, so positions in the skeleton are positions in the text).
_CONFUSABLE = str.maketrans(
    "аАвВеЕкКмМнНоОрРсСтТуУхХѕЅіІјЈԁԛԝһɡαΑβΒεΕζΖηΗιΙκΚμΜνΝοΟρΡτΤυΥχΧıℓɑ",
    "aABBeEkKmMHHoOpPcCTTyYxXsSiIjJdqwhgaABBeEZZnHiIkKuMvNoOpPTTuYxXila",
)
_PREFIXES = (
    "setlodp|setlod|setl|pay|rfnd|order|disp|trf|rvrsl|acc|adj|txn|cust|inv|plink|rcpt"
    "|pout|fa|va|cont|qr|sub"
)
ID_SHAPED = re.compile(
    rf"(?<!\w)(?:{_PREFIXES})(?:_\w{{4,}}|-(?=[\w-]*\d)[A-Za-z0-9]{{4,}}(?!\w))", re.IGNORECASE
)
UTR_SHAPED = re.compile(
    r"(?<!\w)(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{12,22}(?!\w)"
    r"|(?<!\w)\d{12,22}(?!\w)"
)


def skeleton(text: str) -> str:
    """`text` with look-alike Cyrillic and Greek letters mapped to Latin (same length)."""
    return text.translate(_CONFUSABLE)


def ids_in_text(text: str) -> list[str]:
    """Every id-shaped token in `text`, as written: Razorpay-prefixed ids in any case or
    with look-alike letters, bank line ids and UTR-like tokens."""
    shape = skeleton(text)
    found = [m.group(0) for m in BANK_LINE_ID.finditer(text)]
    for pattern in (ID_SHAPED, UTR_SHAPED):
        found += [text[m.start() : m.end()] for m in pattern.finditer(shape)]
    return found


# --- amounts ----------------------------------------------------------------------------

_FOREIGN = (
    r"US\$|\$|€|£|¥|(?<![A-Za-z])(?:USD|EUR|GBP|JPY|AED|SGD|AUD|CAD|CHF|CNY|HKD)(?![A-Za-z])"
    r"|(?<![A-Za-z])(?:dollars?|euros?|pounds?|dirhams?)(?![A-Za-z])"
)
_INR_BEFORE = r"₹|(?<![A-Za-z])(?:Rs\.?|INR|rupees?)(?![A-Za-z])"
_INR_AFTER = r"₹|(?:rupees?|Rs\.?|INR)(?![A-Za-z])|/-"
_PAISE_AFTER = r"paise\b|paisa\b"
_SCALES = {
    **SHORT_UNITS,
    "mn": 1_000_000,
    "million": 1_000_000,
    "millions": 1_000_000,
    "bn": 1_000_000_000,
    "billion": 1_000_000_000,
    "billions": 1_000_000_000,
}
_SCALE = r"lakhs?|lacs?|crores?|cr\b\.?|l\b|k\b|thousand|millions?|mn\b|billions?|bn\b"
AMOUNT = re.compile(
    rf"(?:(?P<before>{_INR_BEFORE}|{_FOREIGN})\s?(?P<sign1>[-+])?\s?(?P<n1>\d[\d,]*(?:\.\d+)?)"
    rf"|(?<![\w.,#/:@])(?P<n2>\d[\d,]*(?:\.\d+)?))"
    rf"(?!\d)(?:\s?(?P<scale>{_SCALE}))?"
    rf"(?:\s?(?P<after>{_PAISE_AFTER}|{_INR_AFTER}|{_FOREIGN}))?",
    re.IGNORECASE,
)
_NUMBER_WORD = (
    r"zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
    r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|"
    r"sixty|seventy|eighty|ninety|hundred|thousand|lakhs?|lacs?|crores?|million|billion|"
    r"half|a|an"
)
IN_WORDS = re.compile(
    rf"(?<![\d.,])(?<![\d.,]\s)\b(?:(?:{_NUMBER_WORD})[\s-]+(?:and[\s-]+)?)+"
    r"(?:rupees?|paise|lakhs?|lacs?|crores?|dollars?|euros?|pounds?)\b",
    re.IGNORECASE,
)
_ORPHAN_RUPEE = re.compile(r"₹(?!\s?[-+]?\s?\d)")
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
NOT_AMOUNTS = re.compile(
    r"\b\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?)?"  # ISO dates (and times)
    r"|\b20\d{2}-(?:0[1-9]|1[0-2])\b(?![-.,]?\d)"  # a month, as the books name it: 2026-05
    r"|\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b"  # d/m/y
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}}\b"  # 2 June 2026
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"  # June 2, 2026
    rf"|\b{_MONTH}\s+\d{{4}}\b"  # June 2026
    r"|\bFY\s?\d{2,4}(?:-\d{2,4})?\b"
    r"|\b\d{1,2}:\d{2}(?::\d{2})?\b"  # times
    r"|\d+(?:\.\d+)?\s?(?:%|percent\b|per cent\b)"  # percentages
    r"|\bT\s?\+\s?\d+\b",  # T+2
    re.IGNORECASE,
)


@dataclass(frozen=True)
class AmountMention:
    """One amount as written, and the paise it may stand for (empty: unreadable, or in a
    currency other than rupees: it can never verify)."""

    written: str
    candidates: tuple[int, ...]
    why: str = ""


def amount_mentions(text: str, ids: frozenset[str] = frozenset()) -> list[AmountMention]:
    """Every amount a reader would see in `text` (ids in `ids` are not amounts)."""
    found: list[AmountMention] = []
    rest = text
    for match in IN_WORDS.finditer(rest):
        found.append(AmountMention(match.group(0), (), "written in words"))
    rest = IN_WORDS.sub(" ", rest)
    for token in ids_in_text(rest):
        rest = rest.replace(token, " ")
    rest = NOT_AMOUNTS.sub(" ", rest)
    for match in AMOUNT.finditer(rest):
        mention = _mention(match, ids, rest)
        if mention is not None:
            found.append(mention)
    rest = AMOUNT.sub(" ", rest)
    for match in _ORPHAN_RUPEE.finditer(rest):
        found.append(
            AmountMention(rest[match.start() : match.start() + 12].strip(), (), "unreadable")
        )
    return found


def _mention(match: re.Match[str], ids: frozenset[str], text: str) -> AmountMention | None:
    written = match.group(0).strip()
    number = match.group("n1") or match.group("n2") or ""
    before = (match.group("before") or "").lower()
    after = (match.group("after") or "").lower()
    scale_word = (match.group("scale") or "").lower().rstrip(".")
    foreign = any(x and not _is_inr(x) and x not in ("paise", "paisa") for x in (before, after))
    if foreign:
        return AmountMention(written, (), "not in rupees")
    digits = number.replace(",", "")
    try:
        value = Decimal(digits)
    except InvalidOperation:
        return AmountMention(written, (), "unreadable")
    scale = _SCALES.get(scale_word, 1)
    if after in ("paise", "paisa"):
        return AmountMention(written, _whole(value * scale))
    if before or after or scale_word:
        return AmountMention(written, _whole(value * scale * 100))
    # A bare number: an amount when it is grouped, has two decimals or four or more digits.
    end = match.end()
    if end < len(text) and text[end].isalpha():
        return None  # 10am, 3rd, 24h: not money
    if number in ids or digits in ids:
        return None
    if "." in number:
        fraction = number.partition(".")[2]
        if len(fraction) != 2:
            return None
        return AmountMention(written, _whole(value * 100))
    if "," in number:
        groups = number.split(",")[1:]
        if not all(len(g) in (2, 3) for g in groups):
            return None  # a list: 1,2,3
    elif len(digits) < 4:
        return None
    return AmountMention(written, _whole(value * 100) + _whole(value))


def _is_inr(marker: str) -> bool:
    return marker in ("₹", "inr", "/-") or marker.startswith(("rs", "rupee"))


def _whole(value: Decimal) -> tuple[int, ...]:
    return (int(value),) if value == value.to_integral_value() else ()


def amounts_in_text(text: str) -> list[tuple[str, int | None]]:
    """(as written, paise) for each amount mentioned in `text`; paise None if unreadable or
    not in rupees. A bare number is read as rupees here (it also verifies as paise)."""
    return [(m.written, m.candidates[0] if m.candidates else None) for m in amount_mentions(text)]


# --- claims -----------------------------------------------------------------------------

STATUS_CLAIM = re.compile(
    r"\b(?:resolved|resolves|approved?|approving|approval|closed|close (?:it|this|the exception)"
    r"|written[\s-]?off|write[\s-]?offs?|writing[\s-]?off|waived?|waiver)\b"
    r"|\bno (?:\w+ ){0,2}(?:review|action|follow[\s-]?up)s?\b"
    r"|\b(?:review|action|follow[\s-]?up) (?:is |are )?(?:not|no longer|un)\s?"
    r"(?:needed|required|necessary)\b",
    re.IGNORECASE,
)


def status_claims(text: str) -> list[str]:
    """The words in `text` that claim a status or an approval only a person may give."""
    return [m.group(0) for m in STATUS_CLAIM.finditer(text)]


_GAP = r"(?:[^.;!?\n]|\.(?=\d)){0,40}?"
_MOVED = r"\b(?:settled|credited|received|paid|paid out|deposited|arrived|came in|remitted)\b"
_TAIL = r"(?:\s+than\s+(?:expected|due|owed|it should)\b|(?=\s*(?:[,;:()!?\n]|\.(?!\d)|$)))"
SAID_MORE = re.compile(
    rf"{_MOVED}{_GAP}\b(?:(?:more|higher|greater){_TAIL}|(?:extra|in excess|too much)\b)"
    r"|\bover[\s-]?(?:settled|credited|paid|settlement|credit|payment)\b"
    r"|\bexcess (?:credit|settlement|payout)\b|\bsettled in excess\b",
    re.IGNORECASE,
)
SAID_LESS = re.compile(
    rf"{_MOVED}{_GAP}\b(?:(?:less|lower){_TAIL}|(?:short|too little)\b)"
    r"|\bshort[\s-]?(?:settled|credited|paid|settlement|credit|payment)\b"
    r"|\bunder[\s-]?(?:settled|credited|paid)\b|\bshortfall\b",
    re.IGNORECASE,
)


def direction_contradiction(text: str, difference: int | None) -> str:
    """What in `text` says the money moved the other way than `difference` (actual -
    expected) shows; empty when nothing does or there is no difference."""
    if not isinstance(difference, int) or isinstance(difference, bool) or not difference:
        return ""
    wrong = SAID_MORE if difference < 0 else SAID_LESS
    found = wrong.search(text)
    if found is None:
        return ""
    way = "less" if difference < 0 else "more"
    return (
        f"says {found.group(0).strip()!r} but {way} arrived than expected "
        f"(difference {difference} paise)"
    )


# --- the citation check -----------------------------------------------------------------


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


def check_citations(answer: Answer, evidence: Evidence) -> CitationCheck:
    """Compare an answer's ids and amounts with what the evidence holds. Ids are matched
    against the evidence's id fields only, never its free text."""
    ids = evidence.record_ids()
    amounts = evidence.amounts()
    free_text = f"{answer.summary}\n{answer.recommendation}"

    unknown_ids: list[str] = [c for c in answer.citations if c not in ids]
    unknown_ids += [token for token in ids_in_text(free_text) if token not in ids]

    unknown_amounts = [str(a) for a in answer.cited_amounts if not derivable(a, amounts)]
    for mention in amount_mentions(free_text, ids):
        if not any(derivable(p, amounts) for p in mention.candidates):
            why = f" ({mention.why})" if mention.why else ""
            unknown_amounts.append(mention.written + why)
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
    return any(abs(p) == wanted for m in amount_mentions(free_text) for p in m.candidates)


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


# --- claims about the state of the money --------------------------------------------------

# The exception's statuses in which it is no longer open (core.db.review.CLOSED).
_CLOSED = frozenset({"RESOLVED", "AUTO_CLEARED"})
_CLAUSE = re.compile(r"(?:[^.,;:!?\n]|[.,](?=\d))+")
_NEGATION = re.compile(
    r"\b(?:not|never|no|nothing|none|nor|neither|without|yet to|cannot|unless|if)\b|n't\b",
    re.IGNORECASE,
)
# Arrival: the money at stake has reached the merchant (the bank, the account).
ARRIVED = re.compile(
    r"\b(?:received|arrived|landed|deposited|came in|credited"
    r"|reached (?:the |our |your |its )?(?:bank|account|merchant)"
    r"|(?:is|are|was|were|sits?|now|already) (?:now |already |safely )?in (?:the|our|your) "
    r"(?:bank(?: account)?|account)"
    r"|hit (?:the|our|your) (?:bank|account))\b",
    re.IGNORECASE,
)
# Not the merchant's receipt: money that went back to a balance, or came from the customer.
_NOT_RECEIPT = re.compile(
    r"\b(?:back to|to the (?:razorpay )?balance|from the customer|by the customer|"
    r"to the customer|debited|reversed)\b",
    re.IGNORECASE,
)
# Completeness: all of the money moved.
COMPLETE = re.compile(
    r"\b(?:in full|fully|completely|in its entirety|entirely|in entirety|the whole amount|"
    r"the full amount|all of (?:it|the money|the amount))\b",
    re.IGNORECASE,
)
_MOVED_ANY = re.compile(
    r"\b(?:settled|credited|received|paid|deposited|arrived|remitted|reached|came in)\b",
    re.IGNORECASE,
)
# Nothing at stake: no money missing, owed or at risk; the difference is only on paper.
NOTHING_AT_STAKE = re.compile(
    r"\b(?:nothing|no money|no amount|no funds?|none of (?:it|the money)) "
    r"(?:is |are |was |has been )?(?:missing|owed|outstanding|at risk|at stake|lost|short|due)\b"
    r"|\bno (?:money|amount|funds?|loss|shortfall|real difference|real gap) "
    r"(?:is |was )?(?:at (?:risk|stake)|missing|outstanding|owed|lost)\b"
    r"|\b(?:only|just|merely|purely|simply) (?:an? )?(?:\w+ ){0,2}(?:matching|booking|recording|"
    r"reporting|timing|bookkeeping|reconciliation|data|display|reference|labell?ing) "
    r"(?:gap|issue|difference|error|problem|mismatch|artefact|artifact)s?\b"
    r"|\bthe money is (?:safe|there|fine|accounted for)\b",
    re.IGNORECASE,
)
# No action: nothing to do, nobody to ask, the exception can be left.
NO_ACTION = re.compile(
    r"\bnothing (?:\w+ ){0,2}to (?:chase|do|follow[\s-]?up|recover|claim|raise|ask|collect|"
    r"fix|correct|pursue|worry about|escalate|investigate)\b"
    r"|\bnothing (?:further|more|else) (?:is )?(?:needed|required|to be done)\b"
    r"|\bno (?:need|reason) (?:\w+ ){0,2}to (?:\w+ )?(?:chase|contact|raise|ask|follow|do|act|"
    r"pursue|escalate|recover|claim|call|write|worry|check|investigate)\b"
    r"|\b(?:need not|needn't|does not need to|doesn't need to|do not need to|don't need to) "
    r"(?:be )?(?:chase|contact|raise|ask|follow|act|pursue|escalate|recover|claim|investigat)\w*"
    r"|\b(?:can|may|could|should) (?:\w+ )?be (?:\w+ )?(?:ignored|disregarded|dismissed|dropped|"
    r"left (?:as it is|alone))\b"
    r"|\bsafe to (?:ignore|disregard|leave)\b|\bignore (?:it|this|the exception)\b"
    r"|\bno (?:further |other |more )?(?:steps?|work|chasing|escalation|follow[\s-]?ups?) "
    r"(?:is |are )?(?:needed|required|necessary)\b",
    re.IGNORECASE,
)


def _affirmed(clause: str, match: re.Match[str]) -> bool:
    """True unless a negation stands in the six words before `match` in its clause."""
    before = clause[: match.start()].split()[-6:]
    return not _NEGATION.search(" ".join(before))


def _as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def state_contradiction(text: str, exception: Mapping[str, Any]) -> str:
    """What in `text` contradicts the state the exception's facts give (empty: nothing).

    The facts: whether the exception is open (its status is not RESOLVED or AUTO_CLEARED;
    absent counts as open), the money it puts at stake (`exposure_amount`), and what
    arrived against what was expected (`actual_amount`, `expected_amount`, `difference`).
    The claims, each a kind of statement about state rather than a list of phrases:

    - **arrival** (received, credited, arrived, landed, deposited, reached the bank, is in
      the account), affirmed, when nothing of the expected money arrived (actual 0);
    - **completeness** (in full, fully, the whole amount) beside a movement, affirmed,
      when less than expected arrived or nothing did;
    - **nothing at stake** (nothing missing or owed, no money at risk, only a matching or
      booking gap) while the exception is open with money at stake;
    - **no action** (nothing to chase or do, no need to contact anyone, can be ignored)
      while the exception is open with money at stake.

    A claim is affirmed unless a negation stands in the six words before it in its clause
    (clauses end at . , ; : ! ? and new lines, not inside a number)
    ("has not been received", "was never credited", "no credit has arrived"); arrival that
    is the money going back to a balance or to or from the customer is not a receipt. The
    check is a net, not a parser: a sentence built to slip it ("it would be wrong to say
    the money is missing") still passes, and the page shows the rules' answer beside
    every model answer for that reason.
    """
    status = str(exception.get("status") or "OPEN").upper()
    open_ = status not in _CLOSED
    at_stake = _as_int(exception.get("exposure_amount")) or 0
    expected = _as_int(exception.get("expected_amount"))
    actual = _as_int(exception.get("actual_amount"))
    difference = _as_int(exception.get("difference"))
    nothing_arrived = actual == 0 and expected is not None and expected > 0
    short = nothing_arrived or (difference is not None and difference < 0)
    facts = (
        f"the exception is {status.lower()}, actual {format_inr(actual or 0)} against "
        f"expected {format_inr(expected or 0)}, {format_inr(at_stake)} at stake"
    )
    for clause in _CLAUSE.findall(text):
        if nothing_arrived:
            for found in ARRIVED.finditer(clause):
                if _affirmed(clause, found) and not _NOT_RECEIPT.search(clause[found.end() :]):
                    return f"says {found.group(0)!r} but nothing arrived ({facts})"
        if short:
            for found in COMPLETE.finditer(clause):
                if _MOVED_ANY.search(clause) and _affirmed(clause, found):
                    return f"says {found.group(0)!r} but less arrived than expected ({facts})"
        if open_ and at_stake > 0:
            for pattern, what in ((NOTHING_AT_STAKE, "money is at stake"), (NO_ACTION, "")):
                claim = pattern.search(clause)
                if claim is not None:
                    why = what or "the open exception with money at stake needs action"
                    return f"says {claim.group(0)!r} but {why} ({facts})"
    return ""
