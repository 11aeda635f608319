"""Read-only evidence tools on an allow-list: the only way evidence reaches an investigator.

`EvidenceTools` wraps a read-only connection that it never hands out. `call(name, args)`
runs an allow-listed tool and returns a frozen `ToolResult` of plain records; any other
name, or arguments that do not fit the tool, is refused: the `on_refused` hook is told
(the service audits it) and `ToolRefused` is raised. The same allow-list, with JSON
schemas for the arguments, is what a model is offered as function declarations.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core import money
from core.calendar import CalendarParams, WorkingCalendar, ist_date
from core.dataset import normalise_utr
from core.db import investigate as db
from core.engine.codes import OWED_BACK_STATUSES
from core.errors import RefusedError

MONEY_FIELDS = money.MONEY_FIELDS | frozenset(
    {
        "expected_net_credit",
        "implied_deduction",
        "sum_credit",
        "sum_debit",
        "net_of_rows",
        "settlement_amount",
        "bank_credit_total",
        "bank_difference",
        "amount_deducted",
        "debited",
        "reversed",
        "outstanding",
        "amount_requested",
        "amount_settled",
        "amount_pending",
        "amount_reversed",
        "expected_debit",
        "reversed_by_rows",
        "base_amount",
    }
)
"""Record fields that hold integer paise (what a citation of an amount is checked against)."""

ID_FIELDS = frozenset(
    {
        "id",
        "entity_id",
        "payment_id",
        "order_id",
        "settlement_id",
        "settlement_utr",
        "utr",
        "dispute_id",
        "row_key",
        "exception_id",
        "instant_settlement_id",
        "transfer_id",
        "source",
        "recipient",
    }
)
"""Record fields that hold record identifiers (what a citation of an id is checked against)."""

TEXT_FIELDS = frozenset({"narration", "notes", "description", "reference"})
"""Free text from outside the system: passed to a model only as quoted, redacted data."""

_BOOL_FIELDS = frozenset({"captured", "international", "on_hold", "settled"})
MAX_WINDOW_DAYS = 10


class ToolRefused(RefusedError):
    """A tool call the allow-list refuses: an unknown name or arguments that do not fit."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"tool {name!r} refused: {reason}")


@dataclass(frozen=True)
class ToolResult:
    """The output of one allow-listed tool call.

    tool: the tool's name; args: the arguments it ran with; records: plain dicts (ids,
    integer paise, ISO dates, free text); note: what the result means when it is not
    self-evident (for example "not found").
    """

    tool: str
    args: Mapping[str, Any]
    records: tuple[Mapping[str, Any], ...]
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "args": dict(self.args),
            "records": [dict(r) for r in self.records],
            "note": self.note,
        }


@dataclass(frozen=True)
class ToolSpec:
    """One allow-listed tool: its description and its arguments' JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    one_of: tuple[tuple[str, ...], ...] = ()  # accepted combinations of arguments


def _schema(properties: dict[str, Any], *, required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _str(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _int(description: str) -> dict[str, Any]:
    return {"type": "integer", "description": description}


_PAYMENT_ID = _str("Razorpay payment id, e.g. pay_29QQoUBi66xm2f.")
_SETTLEMENT_ID = _str("Razorpay settlement id, e.g. setl_DGlQ1Rj8os78Ec (or setlod_ instant).")
_UTR = _str("Bank transfer reference (UTR) exactly as in the evidence.")
_AMOUNT = _int("Amount in integer paise (100 paise = 1 rupee).")

TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "payment",
            "A payment by id, or the payments of an order.",
            _schema({"payment_id": _PAYMENT_ID, "order_id": _str("Razorpay order id, order_...")}),
            (("payment_id",), ("order_id",)),
        ),
        ToolSpec(
            "refund",
            "A refund by id.",
            _schema({"refund_id": _str("Razorpay refund id, rfnd_...")}, required=("refund_id",)),
        ),
        ToolSpec(
            "settlement",
            "A settlement by id, or the settlements carrying a UTR or an amount (paise).",
            _schema({"settlement_id": _SETTLEMENT_ID, "utr": _UTR, "amount_paise": _AMOUNT}),
            (("settlement_id",), ("utr",), ("amount_paise",)),
        ),
        ToolSpec(
            "recon_rows",
            "Settlement recon rows of an entity (payment, refund, row key) or of a settlement.",
            _schema(
                {
                    "entity_id": _str(
                        "The entity the rows settle: a pay_, rfnd_, trf_ or disp_ id, or a row key."
                    ),
                    "settlement_id": _SETTLEMENT_ID,
                }
            ),
            (("entity_id",), ("settlement_id",)),
        ),
        ToolSpec(
            "bank_lines",
            "Bank statement lines by line id, by UTR, by credit amount (paise) around a date,"
            " or by date.",
            _schema(
                {
                    "line_id": _str("Bank line id: statement file and line, e.g. bank.csv:12."),
                    "utr": _UTR,
                    "amount_paise": _int("Credit amount in integer paise."),
                    "date": {"type": "string", "description": "ISO date (YYYY-MM-DD)."},
                    "window_days": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": MAX_WINDOW_DAYS,
                        "description": "Days either side of date to search (default 0).",
                    },
                }
            ),
            (
                ("line_id",),
                ("utr",),
                ("amount_paise", "date"),
                ("amount_paise", "date", "window_days"),
                ("date",),
                ("date", "window_days"),
            ),
        ),
        ToolSpec(
            "dispute",
            "A dispute by id with its recon adjustment rows and their totals (debited, "
            "reversed, outstanding).",
            _schema(
                {"dispute_id": _str("Razorpay dispute id, disp_...")}, required=("dispute_id",)
            ),
        ),
        ToolSpec(
            "settlement_arithmetic",
            "A settlement's amount against the sum of its recon rows and its bank credits.",
            _schema({"settlement_id": _SETTLEMENT_ID}, required=("settlement_id",)),
        ),
        ToolSpec(
            "calendar_status",
            "Created, due and overdue dates of a payment, refund or settlement as of the run.",
            _schema(
                {
                    "entity_type": {
                        "type": "string",
                        "enum": ["payment", "refund", "settlement"],
                        "description": "What entity_id names.",
                    },
                    "entity_id": _str("The payment, refund or settlement id."),
                },
                required=("entity_type", "entity_id"),
            ),
        ),
        ToolSpec(
            "instant_settlement",
            "An instant settlement (setlod_...) with its payouts, their UTRs and bank dates.",
            _schema(
                {"instant_settlement_id": _str("Instant settlement id, setlod_...")},
                required=("instant_settlement_id",),
            ),
        ),
        ToolSpec(
            "transfer",
            "A Route transfer (trf_...) with the recon rows that reverse it.",
            _schema({"transfer_id": _str("Route transfer id, trf_...")}, required=("transfer_id",)),
        ),
        ToolSpec(
            "related_exceptions",
            "Other exceptions on the same entities or settlements.",
            _schema(
                {"exception_id": _int("The exception's numeric id (exception.id).")},
                required=("exception_id",),
            ),
        ),
    )
}
ALLOWED_TOOLS: frozenset[str] = frozenset(TOOL_SPECS)


@dataclass(frozen=True)
class RunContext:
    """The run an exception was found in: its as-of instant and calendar parameters."""

    as_of: int | None = None
    calendar: CalendarParams = field(default_factory=CalendarParams)
    params_source: str = "defaults"


def run_context(conn: sqlite3.Connection, run_id: int | None) -> RunContext:
    """Read a run's as-of and calendar parameters (engine params JSON, flat or nested)."""
    run = db.get_run(conn, run_id) if run_id is not None else None
    if run is None:
        return RunContext()
    try:
        params = json.loads(run["params_json"] or "{}")
    except json.JSONDecodeError:
        params = {}
    flat: dict[str, Any] = {}
    if isinstance(params, dict):
        nested = params.get("calendar")
        flat.update(nested if isinstance(nested, dict) else {})
        flat.update({k: v for k, v in params.items() if k != "calendar"})
    defaults = CalendarParams()
    holidays: set[dt.date] = set()
    for value in flat.get("holidays") or ():
        try:
            holidays.add(dt.date.fromisoformat(str(value)))
        except ValueError:
            continue

    def number(name: str, default: int) -> int:
        value = flat.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else default

    calendar = CalendarParams(
        settlement_days=number("settlement_days", defaults.settlement_days),
        international_days=number("international_days", defaults.international_days),
        grace_days=number("grace_days", defaults.grace_days),
        bank_days=number("bank_days", defaults.bank_days),
        holidays=frozenset(holidays),
    )
    return RunContext(as_of=int(run["as_of"]), calendar=calendar, params_source=f"run {run_id}")


def _clean(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    out = {k: (bool(v) if k in _BOOL_FIELDS and v is not None else v) for k, v in record.items()}
    return out


def _iso(unix_seconds: int | None) -> str | None:
    return None if unix_seconds is None else ist_date(int(unix_seconds)).isoformat()


def _with_payment_facts(payment: dict[str, Any]) -> dict[str, Any]:
    if payment.get("fee") is not None:
        payment["expected_net_credit"] = int(payment["amount"]) - int(payment["fee"])
    payment["created_date"] = _iso(payment.get("created_at"))
    return payment


def _with_row_facts(row: dict[str, Any]) -> dict[str, Any]:
    if row.get("type") == "payment":
        row["implied_deduction"] = int(row["amount"]) - int(row["credit"])
    row["settled_date"] = _iso(row.get("settled_at"))
    return row


class EvidenceTools:
    """The allow-listed tools over one read-only connection, which is never exposed."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        context: RunContext | None = None,
        on_refused: Callable[[str, Mapping[str, Any], str], None] | None = None,
    ) -> None:
        self.__conn = conn
        self._context = context or RunContext()
        self._on_refused = on_refused
        self._handlers: dict[str, Callable[..., ToolResult]] = {
            "payment": self._payment,
            "refund": self._refund,
            "settlement": self._settlement,
            "recon_rows": self._recon_rows,
            "bank_lines": self._bank_lines,
            "dispute": self._dispute,
            "settlement_arithmetic": self._settlement_arithmetic,
            "calendar_status": self._calendar_status,
            "related_exceptions": self._related_exceptions,
            "instant_settlement": self._instant_settlement,
            "transfer": self._transfer,
        }

    @property
    def context(self) -> RunContext:
        return self._context

    def call(self, name: str, args: Mapping[str, Any] | None = None) -> ToolResult:
        """Run one allow-listed tool; refuse (and report) anything else."""
        arguments = normalise_arguments(str(name), args or {})
        spec = TOOL_SPECS.get(name) if isinstance(name, str) else None
        if spec is None or name not in self._handlers:
            self._refuse(str(name), arguments, "not on the allow-list")
        assert spec is not None
        problem = _check_arguments(spec, arguments)
        if problem:
            self._refuse(name, arguments, problem)
        return self._handlers[name](**arguments)

    def _refuse(self, name: str, args: Mapping[str, Any], reason: str) -> None:
        if self._on_refused is not None:
            self._on_refused(name, args, reason)
        raise ToolRefused(name, reason)

    # --- the tools ----------------------------------------------------------------------

    def _payment(self, payment_id: str | None = None, order_id: str | None = None) -> ToolResult:
        records: tuple[dict[str, Any], ...]
        if payment_id is not None:
            found = _clean(db.get_payment(self.__conn, payment_id))
            records = (_with_payment_facts(found),) if found else ()
            args: dict[str, Any] = {"payment_id": payment_id}
        else:
            assert order_id is not None
            rows = db.payments_for_order(self.__conn, order_id)
            records = tuple(_with_payment_facts(r) for r in map(_clean, rows) if r)
            args = {"order_id": order_id}
        return ToolResult("payment", args, records, "" if records else "not found")

    def _refund(self, refund_id: str) -> ToolResult:
        found = _clean(db.get_refund(self.__conn, refund_id))
        if found:
            found["created_date"] = _iso(found.get("created_at"))
        records = (found,) if found else ()
        return ToolResult("refund", {"refund_id": refund_id}, records, "" if found else "not found")

    def _settlement(
        self,
        settlement_id: str | None = None,
        utr: str | None = None,
        amount_paise: int | None = None,
    ) -> ToolResult:
        rows: list[dict[str, Any]]
        args: dict[str, Any]
        if settlement_id is not None:
            one = db.get_settlement(self.__conn, settlement_id)
            rows, args = ([one] if one else []), {"settlement_id": settlement_id}
        elif utr is not None:
            rows, args = db.settlements_by_utr(self.__conn, utr), {"utr": utr}
        else:
            assert amount_paise is not None
            rows = db.settlements_by_amount(self.__conn, amount_paise)
            args = {"amount_paise": amount_paise}
        records = tuple(r for r in map(_clean, rows) if r)
        for record in records:
            record["created_date"] = _iso(record.get("created_at"))
        return ToolResult("settlement", args, records, "" if records else "not found")

    def _recon_rows(
        self, entity_id: str | None = None, settlement_id: str | None = None
    ) -> ToolResult:
        if entity_id is not None:
            rows, args = db.recon_rows_for_entity(self.__conn, entity_id), {"entity_id": entity_id}
        else:
            assert settlement_id is not None
            rows = db.recon_rows_for_settlement(self.__conn, settlement_id)
            args = {"settlement_id": settlement_id}
        records = tuple(_with_row_facts(r) for r in map(_clean, rows) if r)
        return ToolResult("recon_rows", args, records, "" if records else "no recon rows")

    def _bank_lines(
        self,
        line_id: str | None = None,
        utr: str | None = None,
        amount_paise: int | None = None,
        date: str | None = None,
        window_days: int = 3,
    ) -> ToolResult:
        args: dict[str, Any]
        if line_id is not None:
            one = db.bank_line(self.__conn, line_id)
            rows, args = ([one] if one else []), {"line_id": line_id}
        elif utr is not None:
            key = normalise_utr(utr) or utr
            rows, args = db.bank_lines_by_utr(self.__conn, key), {"utr": key}
        else:
            assert date is not None
            try:
                day = dt.date.fromisoformat(date)
            except ValueError:
                return ToolResult("bank_lines", {"date": date}, (), "not an ISO date")
            span = dt.timedelta(days=max(0, min(window_days, MAX_WINDOW_DAYS)))
            low, high = (day - span).isoformat(), (day + span).isoformat()
            args = {"date_from": low, "date_to": high}
            if amount_paise is not None:
                args["amount_paise"] = amount_paise
                rows = db.bank_lines_by_amount(self.__conn, amount_paise, low, high)
            else:
                rows = db.bank_lines_by_date(self.__conn, low, high)
        records = tuple(r for r in map(_clean, rows) if r)
        note = "" if records else "no bank lines"
        if not records and not db.bank_statement_present(self.__conn):
            note = "no bank statement in the data"
        return ToolResult("bank_lines", args, records, note)

    def _dispute(self, dispute_id: str) -> ToolResult:
        args = {"dispute_id": dispute_id}
        found = _clean(db.get_dispute(self.__conn, dispute_id))
        rows = [r for r in map(_clean, db.recon_rows_for_dispute(self.__conn, dispute_id)) if r]
        if found is None and not rows:
            return ToolResult("dispute", args, (), "not found")
        debited = sum(int(r.get("debit") or 0) for r in rows)
        reversed_ = sum(int(r.get("credit") or 0) for r in rows)
        record: dict[str, Any] = dict(found or {"id": dispute_id, "status": None})
        record.update(
            respond_by_date=_iso(record.get("respond_by")),
            created_date=_iso(record.get("created_at")),
            debited=debited,
            reversed=reversed_,
            outstanding=debited - reversed_,
            rows=[self._with_journal_facts(_with_row_facts(r), found) for r in rows],
        )
        note = "" if found else "dispute not in the disputes file; its recon rows only"
        return ToolResult("dispute", args, (record,), note)

    def _with_journal_facts(
        self, row: dict[str, Any], dispute: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """Where the Books journal posts a dispute's recon row (docs/books.md section 2), so
        that advice never books by hand what the journal already posts:

        journal_voucher: `RZP-<settlement>` when the row's settlement is a processed regular
        settlement or an instant settlement in the data (None: not posted yet);
        journal_date: that voucher's date; journal_ledger: the ledger it posts the row to as
        today's data give it (Chargebacks for a dispute the disputes file has `lost`, or
        that it does not name; Disputed amounts otherwise); journal_month_closed: the
        voucher's month was closed; journal_ledger_at_close: the ledger the journal kept at
        that close posted it to (None: the close kept no journal, or the row was not in the
        voucher then); journal_adjustment_voucher: the prior-period adjustment voucher
        (`<voucher>-PPA-<month>`, in the first open month after the close, or a later
        closed month's journal that already posted it) that moves it to today's ledger."""
        from core.books.close import kept_journal
        from core.books.journal import Ledgers

        names = Ledgers()
        lost = dispute is None or str(dispute.get("status") or "") == "lost"
        ledger = names.chargebacks if lost else names.disputes
        facts: dict[str, Any] = {
            "journal_voucher": None,
            "journal_date": None,
            "journal_ledger": None,
            "journal_month_closed": False,
            "journal_ledger_at_close": None,
            "journal_adjustment_voucher": None,
        }
        sid = str(row.get("settlement_id") or "")
        created: int | None = None
        if sid:
            settlement = db.get_settlement(self.__conn, sid)
            if settlement is not None and str(settlement.get("status")) == "processed":
                created = int(settlement["created_at"])
            elif settlement is None:
                instant = db.get_instant_settlement(self.__conn, sid)
                created = None if instant is None else int(instant["created_at"])
        if created is None:
            row.update(facts)
            return row
        number = f"RZP-{sid}"
        day = ist_date(created)
        month = day.isoformat()[:7]
        facts.update(journal_voucher=number, journal_date=day.isoformat(), journal_ledger=ledger)
        if db.month_close(self.__conn, month) is not None:
            facts["journal_month_closed"] = True
            key = str(row.get("row_key"))
            kept = _ledger_of(kept_journal(self.__conn, month, names), number, key)
            facts["journal_ledger_at_close"] = kept
            if kept != ledger:
                later = _next_month(month)
                while db.month_close(self.__conn, later) is not None:
                    adjustment = f"{number}-PPA-{later}"
                    if _ledger_of(kept_journal(self.__conn, later, names), adjustment, key):
                        break
                    later = _next_month(later)
                facts["journal_adjustment_voucher"] = f"{number}-PPA-{later}"
        row.update(facts)
        return row

    def _settlement_arithmetic(self, settlement_id: str) -> ToolResult:
        settlement = db.get_settlement(self.__conn, settlement_id)
        args = {"settlement_id": settlement_id}
        if settlement is None:
            return ToolResult("settlement_arithmetic", args, (), "settlement not found")
        totals = db.settlement_totals(self.__conn, settlement_id)
        net = int(totals["sum_credit"]) - int(totals["sum_debit"])
        utr = normalise_utr(settlement.get("utr"))
        lines = db.bank_lines_by_utr(self.__conn, utr) if utr else []
        credits = [int(line["credit"]) for line in lines if int(line["credit"]) > 0]
        record: dict[str, Any] = {
            "settlement_id": settlement_id,
            "status": settlement["status"],
            "settlement_amount": int(settlement["amount"]),
            "rows": int(totals["rows"]),
            "sum_credit": int(totals["sum_credit"]),
            "sum_debit": int(totals["sum_debit"]),
            "net_of_rows": net,
            "difference": int(settlement["amount"]) - net,
            "by_type": [dict(t) for t in totals["by_type"]],
            "utr": utr,
            "bank_credits": len(credits),
            "bank_credit_total": sum(credits),
            "bank_difference": sum(credits) - int(settlement["amount"]) if credits else None,
        }
        return ToolResult("settlement_arithmetic", args, (record,))

    def _instant_settlement(self, instant_settlement_id: str) -> ToolResult:
        args = {"instant_settlement_id": instant_settlement_id}
        found = _clean(db.get_instant_settlement(self.__conn, instant_settlement_id))
        if not found:
            return ToolResult("instant_settlement", args, (), "instant settlement not found")
        found["created_date"] = _iso(found.get("created_at"))
        payouts = [
            p for p in map(_clean, db.instant_payouts(self.__conn, instant_settlement_id)) if p
        ]
        for payout in payouts:
            payout["utr"] = normalise_utr(payout.get("utr"))
            payout["processed_date"] = _iso(payout.get("processed_at") or payout.get("created_at"))
        found["payouts"] = payouts
        return ToolResult("instant_settlement", args, (found,))

    def _transfer(self, transfer_id: str) -> ToolResult:
        args = {"transfer_id": transfer_id}
        found = _clean(db.get_transfer(self.__conn, transfer_id))
        if not found:
            return ToolResult("transfer", args, (), "transfer not in the transfers file")
        found["created_date"] = _iso(found.get("created_at"))
        reversals = [
            r for r in map(_clean, db.transfer_reversal_rows(self.__conn, transfer_id)) if r
        ]
        found["reversal_rows"] = [_with_row_facts(r) for r in reversals]
        found["reversed_by_rows"] = sum(int(r.get("amount") or 0) for r in reversals)
        return ToolResult("transfer", args, (found,))

    def _calendar_status(self, entity_type: str, entity_id: str) -> ToolResult:
        ctx = self._context
        working = WorkingCalendar(ctx.calendar.holidays)
        as_of_date = ist_date(ctx.as_of) if ctx.as_of is not None else None
        args = {"entity_type": entity_type, "entity_id": entity_id}
        record: dict[str, Any] = {
            "entity_type": entity_type,
            "entity_id": entity_id,
            "as_of_date": as_of_date.isoformat() if as_of_date else None,
            "params": ctx.params_source,
        }
        if entity_type in ("payment", "refund"):
            source = (
                db.get_payment(self.__conn, entity_id)
                if entity_type == "payment"
                else db.get_refund(self.__conn, entity_id)
            )
            if source is None:
                return ToolResult("calendar_status", args, (), f"{entity_type} not found")
            # Another currency follows the international cycle too (docs/engine.md).
            currency = str(source.get("currency") or "INR").strip().upper()
            international = bool(source.get("international")) or currency not in ("", "INR")
            if entity_type == "refund":
                international = False  # refunds follow the domestic cycle
            days = (
                ctx.calendar.international_days if international else ctx.calendar.settlement_days
            )
            created = ist_date(int(source["created_at"]))
            start = created
            rows = db.recon_rows_for_entity(self.__conn, entity_id)
            owed = _owed_back_debits(entity_type, source, rows)
            if owed:
                # A failed refund a settlement debited: the clock is the return of its
                # debit, from the latest debit's date (docs/engine.md, the engine's rule).
                start = max(
                    ist_date(int(r["settled_at"])) if r.get("settled_at") is not None else created
                    for r in owed
                )
                rows = [r for r in rows if int(r.get("credit") or 0) > 0]
                record["clock"] = "return of the failed refund's debit"
            due = working.add_working_days(start, days)
            late_after = working.add_working_days(due, ctx.calendar.grace_days)
            settled = [
                ist_date(int(r["settled_at"])) for r in rows if r.get("settled_at") is not None
            ]
            record.update(
                created_date=created.isoformat(),
                settlement_days=days,
                grace_days=ctx.calendar.grace_days,
                due_date=due.isoformat(),
                late_after=late_after.isoformat(),
                overdue=bool(as_of_date and as_of_date > late_after),
                settled_dates=[d.isoformat() for d in settled],
                settled_late=any(d > late_after for d in settled),
            )
        else:
            settlement = db.get_settlement(self.__conn, entity_id)
            if settlement is None:
                return ToolResult("calendar_status", args, (), "settlement not found")
            created = ist_date(int(settlement["created_at"]))
            bank_due = working.add_working_days(created, ctx.calendar.bank_days)
            utr = normalise_utr(settlement.get("utr"))
            lines = db.bank_lines_by_utr(self.__conn, utr) if utr else []
            record.update(
                created_date=created.isoformat(),
                bank_days=ctx.calendar.bank_days,
                bank_credit_due=bank_due.isoformat(),
                bank_overdue=bool(as_of_date and as_of_date > bank_due and not lines),
                bank_credit_dates=[str(line["txn_date"]) for line in lines],
            )
        # Its month in the books (IST, by the date it was created) and whether it is closed:
        # what the close means for this exception (core.investigate.deterministic).
        month = str(record["created_date"])[:7]
        closed = db.month_close(self.__conn, month)
        record.update(
            books_month=month,
            books_month_closed_on=(
                None if closed is None else ist_date(int(closed["closed_at"])).isoformat()
            ),
        )
        return ToolResult("calendar_status", args, (record,))

    def _related_exceptions(self, exception_id: int) -> ToolResult:
        args = {"exception_id": exception_id}
        exception = db.get_exception(self.__conn, exception_id)
        if exception is None:
            return ToolResult("related_exceptions", args, (), "exception not found")
        entity_ids = [str(exception["entity_id"])]
        settlement_ids = [str(exception["settlement_id"])] if exception["settlement_id"] else []
        if exception["entity_type"] == "settlement":
            settlement_ids.append(str(exception["entity_id"]))
        rows = db.related_exceptions(self.__conn, exception_id, entity_ids, settlement_ids)
        records = tuple({"exception_id": r.pop("id"), **r} for r in (dict(row) for row in rows))
        return ToolResult("related_exceptions", args, records, "" if records else "none")


def _next_month(month: str) -> str:
    year, number = int(month[:4]), int(month[5:7])
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"


def _ledger_of(vouchers: Sequence[Any] | None, number: str, row_key: str) -> str | None:
    """The ledger of voucher `number`'s debit line naming `row_key`, else its credit line
    naming it (None: no such voucher or line). Ledgers shared by every row of a voucher
    (in transit, suspense, the receivable) are not the row's own."""
    shared = {"transit", "suspense", "receivable", "charges", "gst"}
    from core.books.journal import Ledgers

    names = Ledgers()
    skip = {getattr(names, key) for key in shared}
    for voucher in vouchers or ():
        if voucher.number != number:
            continue
        for line in voucher.lines:
            if row_key in line.source_rows and line.ledger not in skip:
                return str(line.ledger)
    return None


def _check_arguments(spec: ToolSpec, args: Mapping[str, Any]) -> str:
    """Why `args` do not fit `spec`, or "" when they do."""
    properties = spec.parameters["properties"]
    unknown = sorted(set(args) - set(properties))
    if unknown:
        return f"unknown argument(s) {', '.join(unknown)}"
    for name, value in args.items():
        kind = properties[name].get("type")
        if kind == "string" and not isinstance(value, str):
            return f"{name} must be a string"
        if kind == "integer" and (
            isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value
        ):
            return f"{name} must be an integer"
        if "enum" in properties[name] and value not in properties[name]["enum"]:
            return f"{name} must be one of {', '.join(properties[name]['enum'])}"
    missing = [r for r in spec.parameters.get("required", []) if r not in args]
    if missing:
        return f"missing argument(s) {', '.join(missing)}"
    if spec.one_of and tuple(sorted(args)) not in {tuple(sorted(c)) for c in spec.one_of}:
        shapes = " | ".join("+".join(c) for c in spec.one_of)
        return f"arguments must be one of: {shapes}"
    return ""


def normalise_arguments(spec_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Integers a model sent as JSON numbers (2.0) become ints; everything else unchanged."""
    spec = TOOL_SPECS.get(spec_name)
    if spec is None:
        return dict(args)
    properties = spec.parameters["properties"]
    out: dict[str, Any] = {}
    for name, value in args.items():
        kind = properties.get(name, {}).get("type")
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            out[name] = int(value)
        else:
            out[name] = value
    return out


def _owed_back_debits(
    entity_type: str, source: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The debit rows in a settlement of a failed or reversed refund: what Razorpay owes
    back (core.engine.entities `_owed_back`); empty for anything else."""
    status = str(source.get("status") or "").strip().lower()
    if entity_type != "refund" or status not in OWED_BACK_STATUSES:
        return []
    return [r for r in rows if int(r.get("debit") or 0) > 0 and r.get("settlement_id")]
