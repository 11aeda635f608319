"""The escalation packet: what Razorpay support, the bank or an auditor needs for one exception.

`build_packet(conn, exception_id, *, as_of, anchor)` reads, at one moment: the exception's
ids, UTR, expected and received amounts and dates; the evidence (as the Investigation page
shows it, `core.views.exception.evidence`); the investigator's answer (a verified cached
model answer for exactly this evidence, checked again now with the investigator's own
`model_answer_problem`, else the deterministic rules' answer: no network, nothing
written); the history (`core.views.exception.exception_history`); the audit
chain's head and the latest anchor outside the database (its file, and whether its HMAC
checks); and a ready-to-send message, addressed to Razorpay support or to the bank
depending on the code. The message quotes the rules' summary, never a model's prose, even
a verified one: it goes out in the merchant's name, and the checks verify ids, amounts,
direction and status words, not every claim prose can make (an event, a date, a reason).

Customer identifiers are masked everywhere in the packet: emails, phones, UPI VPAs and
card numbers (`core.investigate.redact`), and bank account numbers (fields named like an
account, and "A/C 1234..." in free text) down to their last four digits. Record ids, UTRs
and amounts are kept: they are what support needs; so are the names of the merchant's own
people who acted (actor, assignee), which an auditor needs.

`render_pdf(packet)` and `render_zip(packet)` (summary.csv, evidence_NN_<section>.csv,
history.csv, audit_head.csv, investigator.csv, message.txt) give the same bytes for the
same packet: fixed ZIP entry times, the PDF's creation date is the packet's `as_of`.
CSV cells: rupees first (two decimals), integer paise in `<field>_paise` columns after,
times in IST, every text cell through `core.outputs.safe_cell`.

`export_packet(conn, exception_id, fmt, *, actor, ...)` is what the CLI and the app call:
it requires the reviewer role, renders, and records the export in the audit trail
(`packet.exported` on the exception: format, sha256 of the bytes, the head it carries),
then anchors the new head (`core.audit.write_anchor`).
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import hmac
import io
import json
import re
import sqlite3
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from core import access
from core.audit.anchor import (
    anchor_file,
    anchor_hmac,
    anchor_key,
    linked_default_folder,
    open_anchor_text,
    write_anchor,
)
from core.audit.chain import GENESIS_HASH, append
from core.calendar import IST
from core.db import audit as audit_sql
from core.db import transaction
from core.errors import InputError, NotFoundError, Problem
from core.investigate.redact import redact_text
from core.investigate.tools import MONEY_FIELDS as TOOL_MONEY_FIELDS
from core.money import format_inr
from core.outputs import safe_cell
from core.pdf import Document

FORMATS = ("pdf", "zip")
ZIP_TIME = (2026, 1, 1, 0, 0, 0)
EXPORT_ACTION = "packet.exported"

# Codes whose next step is the bank's (a credit to trace or confirm), not Razorpay's.
BANK_CODES = frozenset(
    {
        "UNMATCHED_BANK_CREDIT",
        "DUPLICATE_BANK_CREDIT",
        "BANK_UTR_AMOUNT_MISMATCH",
        "MISSING_BANK_ENTRY",
    }
)
RAZORPAY = "Razorpay support"
BANK = "the bank"

# Fields that hold ids, UTRs or file names: kept as they are (an '@' in one still masks it).
KEEP_FIELDS = frozenset(
    {
        "id",
        "entity_id",
        "entity_type",
        "payment_id",
        "refund_id",
        "order_id",
        "settlement_id",
        "settlement_utr",
        "utr",
        "dispute_id",
        "row_key",
        "exception_id",
        "instant_settlement_id",
        "transfer_id",
        "recipient_settlement_id",
        "source",
        "recipient",
        "file",
        "line_id",
        "reason_code",
        "reason_codes",
        "request_id",
    }
)
# Who acted or owns the work: the merchant's own people, named for the auditor.
STAFF_FIELDS = frozenset({"actor", "assignee", "requested_by", "decided_by", "closed_by"})
# Amounts in paise: every money field the investigator's tools return, and the exception's
# and bank lines' own.
MONEY = TOOL_MONEY_FIELDS | frozenset(
    {
        "expected_amount",
        "actual_amount",
        "exposure_amount",
        "difference",
        "credit",
        "debit",
        "balance",
        "fee",
        "tax",
        "fees",
    }
)
ACCOUNT_FIELD = re.compile(
    r"(?i)(?:^|_)(?:account|acct|a_c|ac_no|account_number|beneficiary)(?:_|$)"
)
ACCOUNT_TEXT = re.compile(
    r"(?i)\b(?P<lead>a/?c|acct|account)(?P<gap>(?:\s*(?:no|number|num)\.?)?[\s:#.-]*)"
    r"(?P<number>[0-9Xx*]{6,18})\b"
)


# --- masking ---------------------------------------------------------------------------


def _mask_digits(number: str) -> str:
    return "X" * max(0, len(number) - 4) + number[-4:]


def mask_text(text: str) -> str:
    """Free text with customer identifiers masked: emails, phones, VPAs, cards (the
    investigator's redaction) and bank account numbers after A/C, ACCT or ACCOUNT."""
    # The last four digits stay (support needs to know which account); the investigator's
    # redaction, which would take the whole number, runs with them set aside.
    kept: list[str] = []

    def set_aside(match: re.Match[str]) -> str:
        kept.append(f"{match.group('lead')}{match.group('gap')}{_mask_digits(match['number'])}")
        return f"\x00{len(kept) - 1}\x00"

    redacted = redact_text(ACCOUNT_TEXT.sub(set_aside, text))
    return re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], redacted)


def mask_value(key: str, value: Any) -> Any:
    """One record field masked (ids kept, unless one carries an '@')."""
    if not isinstance(value, str) or key in STAFF_FIELDS:
        return value
    if key in KEEP_FIELDS and "@" not in value:
        return value
    if ACCOUNT_FIELD.search(key) and not value.startswith("acc_"):
        digits = re.sub(r"\D", "", value)
        return _mask_digits(digits) if len(digits) >= 6 else mask_text(value)
    return mask_text(value)


def mask_record(record: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k): mask_value(str(k), _plain(v)) for k, v in record.items()}


def _plain(value: Any) -> Any:
    """JSON-like values (notes held as dicts or lists) as their JSON text."""
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, sort_keys=True, default=str)
    return value


# --- the packet -------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """One line of the summary: a label, the text shown, and paise for an amount."""

    name: str
    label: str
    text: str
    paise: int | None = None


@dataclass(frozen=True)
class EvidencePart:
    """One evidence section, masked: title, note, and its records (column -> value)."""

    title: str
    note: str
    records: tuple[dict[str, Any], ...]

    @property
    def slug(self) -> str:
        head = self.title.split("·")[0]
        words = re.sub(r"[^a-z0-9]+", "_", head.lower()).strip("_")
        return words[:48] or "section"


@dataclass(frozen=True)
class InvestigatorAnswer:
    """The answer in the packet: where it came from, and what it says (masked).
    rules_summary: the deterministic rules' summary (masked), which is what the message
    to Razorpay support or the bank quotes, whichever answer is shown here."""

    source: str
    root_cause: str
    confidence: float
    summary: str
    recommendation: str
    requires_human_review: bool
    citations: tuple[str, ...]
    note: str
    rules_summary: str = ""


@dataclass(frozen=True)
class AnchorState:
    """The latest anchor at the moment of the packet. status: 'verified' (HMAC checks with
    this machine's key), 'unsigned', 'no key to check', 'HMAC does not match',
    'unreadable' or 'none' (no anchor file); matches_chain: the chain still holds the
    anchored hash at the anchored seq (None without an anchor)."""

    file: str
    seq: int | None
    hash: str
    time: int | None
    status: str
    matches_chain: bool | None

    @property
    def hmac_ok(self) -> bool:
        return self.status == "verified"


@dataclass(frozen=True)
class Packet:
    exception_id: int
    as_of: int
    recipient: str
    fields: tuple[Field, ...]
    evidence: tuple[EvidencePart, ...]
    history: tuple[dict[str, Any], ...]
    investigator: InvestigatorAnswer
    audit_seq: int
    audit_hash: str
    anchor: AnchorState
    subject: str
    message: str

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)


def _ist(seconds: Any) -> str:
    if seconds is None or isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return ""
    return dt.datetime.fromtimestamp(int(seconds), tz=IST).strftime("%Y-%m-%d %H:%M IST")


def _is_time(key: str, value: Any) -> bool:
    return (
        (key.endswith("_at") or key.endswith("_until"))
        and isinstance(value, int)
        and not isinstance(value, bool)
    )


def _money(paise: Any) -> str:
    return format_inr(int(paise)) if isinstance(paise, int) and not isinstance(paise, bool) else "—"


def _rupees(paise: int) -> Decimal:
    return Decimal(int(paise)).scaleb(-2)


def build_packet(
    conn: sqlite3.Connection,
    exception_id: int,
    *,
    as_of: int | None = None,
    anchor: str | Path | None = None,
) -> Packet:
    """Everything the packet holds for `exception_id`, read now (`as_of`: the moment it is
    dated, Unix seconds; default the clock). `anchor`: the anchor file to read (default
    the database's, core.audit.anchor). Reads only. NotFoundError for an unknown id."""
    from core.views.exception import evidence, exception, exception_history

    moment = int(time.time()) if as_of is None else int(as_of)
    top = audit_sql.head(conn)  # first: the head this packet is tied to
    seq, digest = (0, GENESIS_HASH) if top is None else (int(top[0]), str(top[1]))
    item = exception(conn, int(exception_id))
    if item is None:
        raise NotFoundError(f"no exception with id {exception_id}")
    sections = tuple(
        EvidencePart(
            mask_text(s.title), mask_text(s.note), tuple(mask_record(r) for r in s.records)
        )
        for s in evidence(conn, int(exception_id))
    )
    history = tuple(mask_record(e) for e in exception_history(conn, int(exception_id)))
    answer = _investigator_answer(conn, int(exception_id))
    code = str(item["reason_code"])
    recipient = BANK if code in BANK_CODES else RAZORPAY
    fields = _fields(item, sections, moment)
    subject, message = _message(item, fields, answer, recipient, seq, digest, _bank_names(sections))
    return Packet(
        exception_id=int(exception_id),
        as_of=moment,
        recipient=recipient,
        fields=fields,
        evidence=sections,
        history=history,
        investigator=answer,
        audit_seq=seq,
        audit_hash=digest,
        anchor=_anchor_state(conn, anchor),
        subject=subject,
        message=message,
    )


def _records(sections: Iterable[EvidencePart]) -> Iterable[dict[str, Any]]:
    for section in sections:
        yield from section.records


def _fields(
    item: Mapping[str, Any], sections: tuple[EvidencePart, ...], moment: int
) -> tuple[Field, ...]:
    records = list(_records(sections))
    settlement_id = item.get("settlement_id") or next(
        (r["settlement_id"] for r in records if r.get("settlement_id")), None
    )
    settlement = next(
        (r for r in records if settlement_id and r.get("id") == settlement_id and "utr" in r),
        {},
    )
    utr = (
        item.get("utr")
        or settlement.get("utr")
        or next((r["utr"] for r in records if r.get("utr") and "txn_date" not in r), None)
    )
    bank = [r for r in records if "txn_date" in r and (not utr or r.get("utr") == utr)]
    if item.get("entity_type") == "bank_entry":
        bank = [r for r in records if r.get("id") == item.get("entity_id")] or bank
        utr = utr or next((r.get("utr") for r in bank if r.get("utr")), None)
    created = item.get("entity_created_at") or next(
        (
            r.get("created_at")
            for r in records
            if r.get("id") == item.get("entity_id") and "entity_type" not in r
        ),
        None,
    )
    bank_dates = sorted({str(r["txn_date"]) for r in bank if r.get("txn_date")})
    order_id = item.get("order_id") or next(
        (
            r["order_id"]
            for r in records
            if r.get("id") == item.get("entity_id") and r.get("order_id")
        ),
        None,
    )
    money = [
        ("expected_amount", "Expected"),
        ("actual_amount", "Received"),
        ("difference", "Difference (received - expected)"),
        ("exposure_amount", "Exposure"),
    ]
    out = [
        Field("exception_id", "Exception", str(item["id"])),
        Field("entity", "Entity", f"{item['entity_type']} {item['entity_id']}"),
        Field("reason_code", "Reason code", str(item["reason_code"])),
        Field("reason_codes", "All codes", str(item.get("reason_codes") or "")),
        Field("status", "Status", str(item["status"])),
        Field("exposure_class", "Exposure class", str(item.get("exposure_class") or "")),
    ]
    for name, label in money:
        value = item.get(name)
        paise = int(value) if isinstance(value, int) else None
        out.append(Field(name, label, _money(value), paise))
    out += [
        Field("order_id", "Order", str(order_id or "")),
        Field("settlement_id", "Settlement", str(settlement_id or "")),
        Field("utr", "UTR", str(utr or "")),
        Field("entity_created_at", "Created", _ist(created)),
        Field("settlement_created_at", "Settlement dated", _ist(settlement.get("created_at"))),
        Field("bank_dates", "Bank credit date(s)", ", ".join(bank_dates)),
        Field("opened_at", "Exception opened", _ist(item.get("opened_at"))),
        Field("due_date", "Due", str(item.get("due_date") or "")),
        Field("assignee", "Assignee", str(item.get("assignee") or "")),
        Field("as_of", "Packet as of", _ist(moment)),
    ]
    return tuple(out)


def _investigator_answer(conn: sqlite3.Connection, exception_id: int) -> InvestigatorAnswer:
    """A verified cached model answer for exactly this evidence, else the rules' answer."""
    from core.db import investigate as cache_db
    from core.investigate import Answer, gather_evidence
    from core.investigate.deterministic import allowed_causes, explain
    from core.investigate.prompt import PROMPT_VERSION
    from core.investigate.service import model_answer_problem, redact_evidence

    evidence = gather_evidence(conn, exception_id)
    shown = rules = explain(evidence)
    source, note = "deterministic", "the rules' answer (no verified model answer cached)"
    redacted = redact_evidence(evidence)[0]  # as the investigator keys its cache
    hit = cache_db.cache_get(conn, redacted.digest(PROMPT_VERSION))
    if hit is not None:
        try:
            cached = Answer.from_dict(json.loads(hit["answer_json"])["answer"])
        except (KeyError, TypeError, ValueError):
            cached = None
        if cached is not None and not model_answer_problem(
            cached, redacted, allowed_causes(redacted.exception)
        ):
            shown = cached
            source, note = f"{hit['model']} (cached)", "a model's answer, checked again now"
    return InvestigatorAnswer(
        source=source,
        root_cause=shown.root_cause,
        confidence=float(shown.confidence),
        summary=mask_text(shown.summary),
        recommendation=mask_text(shown.recommendation),
        requires_human_review=bool(shown.requires_human_review),
        citations=tuple(shown.citations),
        note=note,
        rules_summary=mask_text(rules.summary),
    )


def _anchor_state(conn: sqlite3.Connection, path: str | Path | None) -> AnchorState:
    target = Path(path) if path is not None else anchor_file(conn)
    name = str(target) if target is not None else ""
    if target is None:
        return AnchorState(name, None, "", None, "none", None)
    if path is None and linked_default_folder(target) is not None:  # as `audit verify`
        return AnchorState(name, None, "", None, "unreadable", None)
    try:
        # As `audit verify` reads it: a regular file only, never a wait on a FIFO.
        with open_anchor_text(target, follow=path is not None) as handle:
            lines = [line for line in handle.read().splitlines() if line.strip()]
    except (FileNotFoundError, NotADirectoryError):
        return AnchorState(name, None, "", None, "none", None)
    except OSError:
        return AnchorState(name, None, "", None, "unreadable", None)
    try:
        item = json.loads(lines[-1]) if lines else None
        seq, digest, moment = int(item["seq"]), str(item["hash"]), int(item["time"])  # type: ignore[index]
        mac = item.get("hmac")  # type: ignore[union-attr]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return AnchorState(name, None, "", None, "unreadable", None)
    key = anchor_key()
    if mac is None:
        status = "unsigned"
    elif key is None:
        status = "no key to check"
    elif hmac.compare_digest(str(mac), anchor_hmac(seq, digest, moment, key)):
        status = "verified"
    else:
        status = "HMAC does not match"
    return AnchorState(name, seq, digest, moment, status, audit_sql.hash_at(conn, seq) == digest)


# --- the message ------------------------------------------------------------------------


def _value(fields: Sequence[Field], name: str) -> str:
    return next((f.text for f in fields if f.name == name), "")


def _ask(code: str, recipient: str, utr: str) -> str:
    if recipient == BANK:
        if code == "UNMATCHED_BANK_CREDIT":
            return (
                "Please tell us the remitter and the full reference of this credit: no "
                "settlement of ours explains it."
            )
        if code == "MISSING_BANK_ENTRY":
            return (
                f"Please trace the credit for UTR {utr or '(above)'}: it is not on our statement."
            )
        return (
            f"Please confirm every credit you received against UTR {utr or '(above)'}, "
            "with its date and amount."
        )
    if code in ("MISSING_SETTLEMENT", "MISSING_RECONCILIATION_RECORD", "TIMING_WINDOW_EXCEEDED"):
        return (
            "Please confirm when and in which settlement (with its UTR) this amount was paid out."
        )
    if code == "SETTLEMENT_FAILED":
        return "Please tell us why the settlement payout failed and when it will be retried."
    if code == "REFUND_REVERSAL_MISSING":
        return (
            "This refund failed after a settlement debited it: please credit the failed refund "
            "back and tell us in which settlement (with its UTR), and under which id, it comes."
        )
    if code.startswith("DISPUTE"):
        return "Please confirm the dispute's status and the debits and reversals it caused."
    return (
        "Please confirm the amount settled for it, with the fee and GST deducted, and the "
        "settlement's breakup (settlement recon report)."
    )


def _bank_line_words(record: Mapping[str, Any]) -> str:
    """A bank line as the bank knows it: credit (or debit) of ₹X on its date, UTR, narration
    (never our statement file's name and line number, its id here)."""
    credit, debit = record.get("credit") or 0, record.get("debit") or 0
    side, paise = ("debit", debit) if debit and not credit else ("credit", credit)
    words = f"{side} of {_money(paise)}"
    day = str(record.get("txn_date") or "")
    try:
        words += f" on {dt.date.fromisoformat(day).strftime('%d %b %Y')}"
    except ValueError:
        words += f" on {day}" if day else ""
    if record.get("utr"):
        words += f", UTR {record['utr']}"
    elif record.get("reference"):
        words += f", reference {record['reference']}"
    if record.get("narration"):
        words += f', narration "{record["narration"]}"'
    return words


def _bank_names(sections: Iterable[EvidencePart]) -> dict[str, str]:
    """Each bank line of the evidence (a record with a txn_date): its id (our file:line) ->
    how the message to the outside names it (`_bank_line_words`)."""
    return {
        str(r["id"]): _bank_line_words(r)
        for r in _records(sections)
        if "txn_date" in r and r.get("id")
    }


def _message(
    item: Mapping[str, Any],
    fields: Sequence[Field],
    answer: InvestigatorAnswer,
    recipient: str,
    seq: int,
    digest: str,
    bank_names: Mapping[str, str] | None = None,
) -> tuple[str, str]:
    """The message and its subject. It goes outside (Razorpay support, the bank): a bank
    line is named by its date, amount, UTR and narration, never by our statement file's
    name (kept in the packet's facts and evidence, which are ours)."""
    code = str(item["reason_code"])
    utr = _value(fields, "utr")
    settlement = _value(fields, "settlement_id")
    names = dict(bank_names or {})
    entity = f"{item['entity_type'].replace('_', ' ')} {item['entity_id']}"
    short = entity
    if item["entity_type"] == "bank_entry":
        described = names.get(str(item["entity_id"]))
        entity = f"bank {described}" if described else "a line of our bank statement"
        short = entity.split(", narration", 1)[0]  # the subject: date, amount and UTR
    subject = (
        f"Reconciliation query: {short} ({code})"
        + (f", settlement {settlement}" if settlement else "")
        + (f", UTR {utr}" if utr and f"UTR {utr}" not in short else "")
    )
    facts = [
        ("Reference", f"our exception #{item['id']}"),
        ("Record", entity),
        ("Order", _value(fields, "order_id")),
        ("Settlement", settlement),
        ("UTR", utr),
        ("Expected", _value(fields, "expected_amount")),
        ("Received", _value(fields, "actual_amount")),
        ("Difference", _value(fields, "difference")),
        ("Created", _value(fields, "entity_created_at")),
        ("Settlement dated", _value(fields, "settlement_created_at")),
        ("Bank credit date(s)", _value(fields, "bank_dates")),
    ]
    lines = [
        f"To: {recipient}",
        f"Subject: {subject}",
        "",
        "Hello,",
        "",
        "While reconciling our Razorpay settlements with our bank statement we found a "
        "difference we need your help with:",
        "",
    ]
    lines += [f"  {label}: {value}" for label, value in facts if value and value != "—"]
    lines += [
        "",
        # The rules' words, never a model's: this goes out under the merchant's name, and
        # the checks cannot verify every claim prose makes (an event, a date, a reason).
        "What we see: " + _outside(answer.rules_summary or answer.summary or code, names),
        "",
        _ask(code, recipient, utr),
        "",
        f"Our records for this query are tied to our audit trail at entry {seq} "
        f"(hash {digest[:16]}).",
        "",
        "Regards,",
    ]
    return subject, "\n".join(lines) + "\n"


def _outside(text: str, bank_names: Mapping[str, str]) -> str:
    """`text` with every bank line id (our file:line) replaced by how the bank knows it."""
    for line_id in sorted(bank_names, key=len, reverse=True):
        short = bank_names[line_id].split(", ", 1)[0]  # credit of ₹X on 26 Jun 2026
        text = text.replace(f"Bank line {line_id}", f"The bank {short}")
        text = text.replace(f"bank line {line_id}", f"the bank {short}")
        text = text.replace(line_id, f"the bank {short}")
    return text


# --- rendering ----------------------------------------------------------------------------


def _csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([safe_cell(h) for h in header])
    for row in rows:
        writer.writerow([safe_cell(v) for v in row])
    return out.getvalue()


def _record_csv(records: Sequence[Mapping[str, Any]]) -> str:
    """Readable columns first (rupees, IST), then `<field>_paise` for every amount."""
    columns: list[str] = []
    for record in records:
        columns += [k for k in record if k not in columns]
    amounts = [
        c
        for c in columns
        if c in MONEY
        and any(isinstance(r.get(c), int) and not isinstance(r.get(c), bool) for r in records)
    ]

    def readable(record: Mapping[str, Any], column: str) -> Any:
        value = record.get(column)
        if value is None:
            return ""
        if column in amounts and isinstance(value, int) and not isinstance(value, bool):
            return _rupees(value)
        if _is_time(column, value):
            return _ist(value)
        return value

    header = columns + [f"{c}_paise" for c in amounts]
    rows = [
        [readable(r, c) for c in columns] + ["" if r.get(c) is None else r.get(c) for c in amounts]
        for r in records
    ]
    return _csv(header, rows)


def files(packet: Packet) -> dict[str, str]:
    """The packet's files, name -> text (what the ZIP holds)."""
    out: dict[str, str] = {}
    out["summary.csv"] = _csv(
        ("field", "label", "value", "paise"),
        [
            (
                f.name,
                f.label,
                _rupees(f.paise) if f.paise is not None else f.text,
                "" if f.paise is None else f.paise,
            )
            for f in packet.fields
        ]
        + [("recipient", "Addressed to", packet.recipient, "")],
    )
    for n, part in enumerate(packet.evidence, start=1):
        text = (
            _record_csv(part.records)
            if part.records
            else _csv(("note",), [(part.note or "nothing found",)])
        )
        out[f"evidence_{n:02d}_{part.slug}.csv"] = text
    out["history.csv"] = (
        _record_csv(packet.history) if packet.history else _csv(("note",), [("no actions yet",)])
    )
    a = packet.anchor
    out["audit_head.csv"] = _csv(
        ("item", "seq", "hash", "time_ist", "file", "hmac", "matches_chain"),
        [
            ("chain_head", packet.audit_seq, packet.audit_hash, _ist(packet.as_of), "", "", ""),
            (
                "latest_anchor",
                "" if a.seq is None else a.seq,
                a.hash,
                _ist(a.time),
                a.file,
                a.status,
                "" if a.matches_chain is None else ("yes" if a.matches_chain else "NO"),
            ),
        ],
    )
    i = packet.investigator
    out["investigator.csv"] = _csv(
        ("field", "value"),
        [
            ("source", i.source),
            ("note", i.note),
            ("root_cause", i.root_cause),
            ("confidence", f"{i.confidence:.2f}"),
            ("summary", i.summary),
            ("recommendation", i.recommendation),
            ("requires_human_review", "yes" if i.requires_human_review else "no"),
            ("citations", " ".join(i.citations)),
        ],
    )
    out["message.txt"] = packet.message
    return out


def render_zip(packet: Packet) -> bytes:
    """The packet as a ZIP of CSVs and the message (fixed entry times: same packet, same bytes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files(packet).items():
            info = zipfile.ZipInfo(f"packet-{packet.exception_id}/{name}", date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text.encode("utf-8"))
    return buffer.getvalue()


def _shown(key: str, value: Any) -> str:
    if value is None:
        return ""
    if key in MONEY and isinstance(value, int) and not isinstance(value, bool):
        return f"{format_inr(value)} ({value} paise)"
    if _is_time(key, value):
        return _ist(value)
    return str(value)


def render_pdf(packet: Packet) -> bytes:
    """The packet as a PDF (dated `as_of`: same packet, same bytes)."""
    doc = Document(created=dt.datetime.fromtimestamp(packet.as_of, tz=dt.UTC))
    doc.title(f"Escalation packet: exception #{packet.exception_id}")
    doc.paragraph(f"Addressed to {packet.recipient}. Customer identifiers are masked.")
    doc.facts(
        "Summary",
        [
            (f.label, f.text + (f" ({f.paise} paise)" if f.paise is not None else ""))
            for f in packet.fields
            if f.text
        ],
    )
    i = packet.investigator
    doc.facts(
        "Investigator's answer",
        [
            ("Source", f"{i.source}: {i.note}"),
            ("Root cause", f"{i.root_cause} (confidence {i.confidence:.0%})"),
            ("Summary", i.summary),
            ("Recommendation", i.recommendation),
            ("Human review", "required" if i.requires_human_review else "not required"),
            ("Citations", ", ".join(i.citations)),
        ],
    )
    doc.heading("Message")
    doc.paragraph(packet.message)
    a = packet.anchor
    doc.facts(
        "Audit chain",
        [
            ("Head seq", str(packet.audit_seq)),
            ("Head hash", packet.audit_hash),
            ("Latest anchor", "none" if a.seq is None else f"seq {a.seq}, {_ist(a.time)}"),
            ("Anchor hash", a.hash),
            ("Anchor file", a.file),
            ("Anchor HMAC", a.status),
            (
                "Anchor in chain",
                "" if a.matches_chain is None else ("yes" if a.matches_chain else "NO"),
            ),
        ],
    )
    doc.heading("History")
    if packet.history:
        cols = ("created_at", "action", "actor", "from_status", "to_status", "note")
        doc.table(
            ("time (IST)", "action", "actor", "from", "to", "note"),
            [[_shown(c, e.get(c)) for c in cols] for e in packet.history],
        )
    else:
        doc.paragraph("No actions yet.")
    for part in packet.evidence:
        doc.heading(f"Evidence: {part.title} ({len(part.records)})")
        if part.note:
            doc.paragraph(part.note)
        for record in part.records:
            doc.paragraph(
                "; ".join(f"{k}: {_shown(k, v)}" for k, v in record.items() if v not in (None, "")),
                size=7,
            )
    return doc.output()


def render(packet: Packet, fmt: str) -> bytes:
    if fmt == "pdf":
        return render_pdf(packet)
    if fmt == "zip":
        return render_zip(packet)
    raise InputError([Problem("packet", 0, "format", f"unknown format {fmt!r}: use pdf or zip")])


def file_name(exception_id: int, fmt: str) -> str:
    return f"escalation-{int(exception_id)}.{fmt}"


# --- export (audited) -----------------------------------------------------------------------


def export_packet(
    conn: sqlite3.Connection,
    exception_id: int,
    fmt: str,
    *,
    actor: access.Actor,
    as_of: int | None = None,
    anchor: str | Path | None = None,
) -> bytes:
    """The packet rendered as `fmt` ('pdf' or 'zip'), for `actor` (reviewer role), with
    a `packet.exported` audit entry and a fresh anchor. Fails closed: if the entry or
    the anchor cannot be written, no bytes are returned."""
    if fmt not in FORMATS:
        raise InputError(
            [Problem("packet", 0, "format", f"unknown format {fmt!r}: use pdf or zip")]
        )
    acting = access.require(
        conn,
        actor,
        "review",
        action="export an escalation packet",
        entity_type="exception",
        entity_id=str(int(exception_id)),
    )
    packet = build_packet(conn, exception_id, as_of=as_of, anchor=anchor)
    content = render(packet, fmt)
    with transaction(conn):
        append(
            conn,
            actor=acting.actor,
            action=EXPORT_ACTION,
            entity_type="exception",
            entity_id=str(packet.exception_id),
            payload={
                "format": fmt,
                "sha256": hashlib.sha256(content).hexdigest(),
                "bytes": len(content),
                "recipient": packet.recipient,
                "audit_seq": packet.audit_seq,
                "audit_hash": packet.audit_hash,
                "as_of": packet.as_of,
            },
        )
        write_anchor(conn)
    return content
