"""Journal entries for the books (docs/books.md): one balanced voucher per processed
settlement and per instant settlement, one for the month's captured payments, one per bank
line the reconciliation matched to settlements; CSV and Tally XML.

A settlement's voucher: Razorpay settlements in transit Dr (what it paid out), Payment
gateway charges Dr (fees without GST), GST input credit Dr (the GST on them), Customer
refunds Dr, Chargebacks Dr/Cr (lost disputes' debits and reversals), Disputed amounts
Dr/Cr (those of disputes pending or won), Razorpay adjustments Dr/Cr, Route transfers
Dr/Cr, Razorpay receivable Dr (a draw of an instant settlement) and Cr (the payments it
carries, gross). What its rows and its amount leave over is posted to a suspense ledger, so
a voucher always balances and a difference is never hidden: it is zero whenever the recon
rows follow Razorpay's arithmetic and the settlement pays their sum (spec section 1). Every
line names the recon rows it comes from. Bank is debited only by a matched bank line (Bank
Dr, in transit Cr, what the line shows): nothing counts as received until the statement
shows it.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from xml.sax.saxutils import escape, quoteattr

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core import columns
from core.books.rollforward import draw_rows, names_a_settlement, through_razorpay
from core.calendar import IST, in_ist_month
from core.dataset import Dataset
from core.outputs import FORMULA_STARTS, safe_cell


@dataclass(frozen=True)
class Ledgers:
    """Ledger names as the merchant's chart of accounts has them (configurable)."""

    bank: str = "Bank"
    transit: str = "Razorpay settlements in transit"
    receivable: str = "Razorpay receivable"
    charges: str = "Payment gateway charges"
    gst: str = "GST input credit"
    refunds: str = "Customer refunds"
    chargebacks: str = "Chargebacks"
    disputes: str = "Disputed amounts (pending outcome)"
    adjustments: str = "Razorpay adjustments"
    transfers: str = "Route transfers"
    suspense: str = "Razorpay suspense"
    sales: str = "Sales (Razorpay collections)"

    @classmethod
    def from_mapping(cls, names: dict[str, str]) -> Ledgers:
        """Defaults overridden by `names` (field -> ledger name); unknown keys refused."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(names) - known)
        if unknown:
            raise ValueError(f"unknown ledger keys: {', '.join(unknown)}")
        return cls(**{k: str(v) for k, v in names.items()})


@dataclass(frozen=True)
class Line:
    ledger: str
    debit: int  # paise
    credit: int  # paise
    source_rows: tuple[str, ...]  # recon row keys (or payment ids) behind the line


@dataclass(frozen=True)
class Voucher:
    number: str
    date: dt.date
    kind: str  # 'captured', 'settlement', 'instant_settlement', 'bank' or 'prior_period'
    reference: str  # the settlement id(s), or the month
    narration: str
    lines: tuple[Line, ...]

    @property
    def debits(self) -> int:
        return sum(line.debit for line in self.lines)

    @property
    def credits(self) -> int:
        return sum(line.credit for line in self.lines)


def _ist_date(seconds: int) -> dt.date:
    return dt.datetime.fromtimestamp(int(seconds), tz=IST).date()


@dataclass(frozen=True)
class _Rows:
    """The recon rows of the settlements being journalled, grouped by settlement and in
    row-key order within each (so any subset of a settlement's rows is already sorted, as
    a voucher line lists them): their columns as arrays in that order."""

    group: npt.NDArray[np.int64]  # the settlement code of each row, ascending
    keys: npt.NDArray[np.object_]  # row_key (str)
    payment: npt.NDArray[np.bool_]
    refund: npt.NDArray[np.bool_]
    adjustment: npt.NDArray[np.bool_]
    transfer: npt.NDArray[np.bool_]  # transfer or reversal (or a row tied to a transfer)
    dispute: npt.NDArray[np.bool_]  # has a dispute_id
    pending: npt.NDArray[np.bool_]  # its dispute is in the disputes file and not lost
    draw: npt.NDArray[np.bool_]  # a regular settlement's draw of an instant settlement
    debit: npt.NDArray[np.int64]
    credit: npt.NDArray[np.int64]
    amount: npt.NDArray[np.int64]
    fee: npt.NDArray[np.int64]
    tax: npt.NDArray[np.int64]

    def segment(self, code: int) -> slice:
        low = int(np.searchsorted(self.group, code, side="left"))
        return slice(low, int(np.searchsorted(self.group, code, side="right")))


def _rows_of(
    recon: pd.DataFrame, settlement_ids: list[str], disputes: pd.DataFrame
) -> tuple[_Rows, dict[str, int]]:
    """The rows of these settlements (by `settlement_id`, a missing one as ''), and each
    settlement id's code. `disputes`: the disputes file (id, status), which says whose
    dispute rows are pending an outcome (or won) rather than lost."""
    group_text = columns.text(recon["settlement_id"]).fill_null("")
    wanted = pa.array(settlement_ids, pa.large_string())
    (codes, wanted_codes), size = columns.shared_codes(group_text, wanted)
    chosen = np.flatnonzero(columns.member(codes, wanted_codes, size))
    keys = columns.text(recon["row_key"]).take(pa.array(chosen))
    by_key = np.asarray(pc.sort_indices(keys), dtype=np.int64)
    order = by_key[np.argsort(codes[chosen][by_key], kind="stable")]
    at = chosen[order]
    rtype = columns.text(recon["type"]).take(pa.array(at))
    draws = draw_rows(recon)[at]
    # A row the reversals file ties to a transfer (`transfer_id`) is the transfer's
    # reversal whatever its type says: the recon API types it `adjustment` (its `type` has
    # no `reversal`), so it belongs with Route transfers, not Razorpay adjustments.
    tied = recon["transfer_id"].notna().to_numpy(dtype=bool)[at]

    def ints(name: str) -> npt.NDArray[np.int64]:
        values: npt.NDArray[np.int64] = recon[name].to_numpy(np.int64)[at]
        return values

    rows = _Rows(
        group=codes[at],
        keys=keys.take(pa.array(order)).to_numpy(zero_copy_only=False),
        payment=columns.equals(rtype, "payment"),
        refund=columns.equals(rtype, "refund"),
        adjustment=columns.equals(rtype, "adjustment") & ~tied,
        transfer=columns.among(rtype, ("transfer", "reversal")) | tied,
        dispute=recon["dispute_id"].notna().to_numpy(dtype=bool)[at],
        pending=_pending_disputes(recon, disputes)[at],
        draw=draws,
        debit=ints("debit"),
        credit=ints("credit"),
        amount=ints("amount"),
        fee=ints("fee"),
        tax=ints("tax"),
    )
    return rows, {sid: int(code) for sid, code in zip(settlement_ids, wanted_codes, strict=True)}


def _pending_disputes(recon: pd.DataFrame, disputes: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """Per recon row: it names a dispute that the disputes file has with a status other than
    `lost` (open, under_review, won, closed): its money is not an expense (docs/books.md)."""
    status = columns.text(disputes["status"])
    not_lost = pc.fill_null(pc.not_equal(status, pa.scalar("lost", pa.large_string())), True)
    ids = columns.text(disputes["id"]).filter(not_lost)
    named = pc.is_in(columns.text(recon["dispute_id"]), value_set=ids)
    return np.asarray(pc.fill_null(named, False).to_numpy(zero_copy_only=False), dtype=bool)


def settlement_vouchers(dataset: Dataset, ledgers: Ledgers | None = None) -> list[Voucher]:
    """One voucher per processed regular settlement, in (date, id) order."""
    return [v for _, _, v in _settlement_vouchers(dataset, ledgers, None)]


def _settlement_vouchers(
    dataset: Dataset, ledgers: Ledgers | None, month: str | None
) -> list[tuple[int, str, Voucher]]:
    """settlement_vouchers, only those dated in `month` (IST) when given, each with the
    settlement's created_at and id (the order of a month's vouchers)."""
    names = ledgers or Ledgers()
    st = dataset.settlements
    processed = st[st["status"].astype(str) == "processed"].sort_values(["created_at", "id"])
    if month is not None:
        processed = processed[in_ist_month(processed["created_at"].to_numpy(np.int64), month)]
    ids = list(processed["id"].astype(str))
    rows, code_of = _rows_of(
        dataset.recon, [sid for sid in ids if isinstance(sid, str)], dataset.disputes
    )
    vouchers = []
    for sid, amount, created in zip(
        ids,
        processed["amount"].to_numpy(np.int64),
        processed["created_at"].to_numpy(np.int64),
        strict=True,
    ):
        part = rows.segment(code_of[sid]) if isinstance(sid, str) else slice(0, 0)
        count = part.stop - part.start
        voucher = Voucher(
            number=f"RZP-{sid}",
            date=_ist_date(int(created)),
            kind="settlement",
            reference=sid,
            narration=f"Razorpay settlement {sid} ({count} recon rows)",
            lines=_settlement_lines(rows, part, int(amount), names),
        )
        vouchers.append((int(created), str(sid), voucher))
    return vouchers


@dataclass(frozen=True)
class _Payouts:
    """What an instant settlement's processed payouts paid (docs/books.md section 2)."""

    keys: tuple[str, ...]  # the payout ids
    settled: int  # Σ amount_settled (else amount − fees): what the bank was paid
    fees: int  # Σ fees (incl. GST)
    tax: int  # Σ tax (the GST part)
    gross: int  # Σ amount: what left the Razorpay balance


def instant_settlement_vouchers(dataset: Dataset, ledgers: Ledgers | None = None) -> list[Voucher]:
    """One voucher per instant settlement that paid something, in (date, id) order."""
    return [v for _, _, v in _instant_vouchers(dataset, ledgers, None)]


def _instant_vouchers(
    dataset: Dataset, ledgers: Ledgers | None, month: str | None
) -> list[tuple[int, str, Voucher]]:
    """Per instant settlement with a processed payout or a recon row naming it, dated its
    created_at (IST; a payout whose instant settlement is not in the data: its first
    processed payout's processed_at, else created_at; only those in `month` when given):
    Razorpay settlements in transit Dr what its processed payouts settled, charges and GST
    Dr their fees, the lines of the recon rows that name it (as a regular settlement's), and
    Razorpay receivable Cr what it drew from the balance beyond those rows (its advance,
    recovered by the draw of a later regular settlement: `_settlement_lines`); suspense
    takes what is left over. The
    roll-forward counts the same payouts (instant_settlements and fees lines)."""
    names = ledgers or Ledgers()
    inst = dataset.instant_settlements
    when: dict[str, int] = {
        str(i): int(t)
        for i, t in zip(inst["id"].astype(str), inst["created_at"].to_numpy(np.int64), strict=True)
    }
    po = dataset.instant_payouts
    done = po[(po["status"].astype(str) == "processed").to_numpy(dtype=bool)]
    parent = done["instant_settlement_id"].astype("string").fillna(done["id"].astype("string"))
    paid_at = columns.seconds(done["processed_at"], done["created_at"])
    known = set(when)
    for pid, at in zip(parent.astype(str), paid_at, strict=True):
        if pid not in known:
            when[pid] = min(int(at), when.get(pid, int(at)))
    order = sorted(when, key=lambda i: (when[i], i))
    if month is not None:
        inside = in_ist_month(np.array([when[i] for i in order], dtype=np.int64), month)
        order = [i for i, keep in zip(order, inside, strict=True) if keep]
    rows, code_of = _rows_of(dataset.recon, [i for i in order if i in known], dataset.disputes)
    vouchers = []
    for iid in order:
        part = rows.segment(code_of[iid]) if iid in known else slice(0, 0)
        mine = done[(parent == iid).to_numpy(dtype=bool)]
        if part.stop == part.start and mine.empty:
            continue
        gross = mine["amount"].to_numpy(np.int64)
        fees = columns.paise(mine["fees"])
        settled = np.where(
            mine["amount_settled"].notna().to_numpy(dtype=bool),
            columns.paise(mine["amount_settled"]),
            gross - fees,
        )
        payouts = _Payouts(
            keys=tuple(sorted(str(x) for x in mine["id"].astype(str))),
            settled=int(settled.sum()),
            fees=int(fees.sum()),
            tax=int(columns.paise(mine["tax"]).sum()),
            gross=int(gross.sum()),
        )
        count = part.stop - part.start
        voucher = Voucher(
            number=f"RZP-{iid}",
            date=_ist_date(when[iid]),
            kind="instant_settlement",
            reference=iid,
            narration=(
                f"Razorpay instant settlement {iid} ({len(payouts.keys)} processed payouts, "
                f"{count} recon rows)"
            ),
            lines=_settlement_lines(rows, part, payouts.settled, names, payouts),
        )
        vouchers.append((when[iid], iid, voucher))
    return vouchers


def _settlement_lines(
    rows: _Rows, part: slice, paid: int, names: Ledgers, payouts: _Payouts | None = None
) -> tuple[Line, ...]:
    """A settlement's lines (docs/books.md section 2); `payouts`: an instant settlement's
    processed payouts, whose fees are charges and whose gross beyond what the rows naming
    it brought is credited to the receivable (the advance)."""
    keys = rows.keys[part]
    debit, credit, fee, tax = rows.debit[part], rows.credit[part], rows.fee[part], rows.tax[part]
    dispute, adjustment, draw = rows.dispute[part], rows.adjustment[part], rows.draw[part]
    pending = rows.pending[part]
    pay, ref = rows.payment[part], rows.refund[part]
    paid_by = payouts.keys if payouts is not None else ()
    every = (*keys, *paid_by)
    # A draw row's fee field is the instant settlement's fee (inside its debit), posted on
    # the instant settlement's own voucher from its payouts: not charged again here
    # (before 2026-12-04 it was, and the same amount went to suspense; docs/books.md).
    fee, tax = np.where(draw, 0, fee), np.where(draw, 0, tax)
    charged = (*keys[fee != 0], *paid_by)
    extra_fee = payouts.fees if payouts is not None else 0
    extra_tax = payouts.tax if payouts is not None else 0
    # What Razorpay paid out is in transit until a bank line the reconciliation matched
    # shows it (`bank_vouchers`): Bank is debited only with what the statement shows.
    lines: list[Line] = [Line(names.transit, paid, 0, every)] if paid >= 0 else []
    if paid < 0:
        lines.append(Line(names.transit, 0, -paid, every))
    lines.append(Line(names.charges, int((fee - tax).sum()) + extra_fee - extra_tax, 0, charged))
    lines.append(Line(names.gst, int(tax.sum()) + extra_tax, 0, charged))
    lines.append(Line(names.refunds, int(rows.amount[part][ref].sum()), 0, tuple(keys[ref])))
    groups = (
        (names.chargebacks, adjustment & dispute & ~pending),
        (names.disputes, adjustment & dispute & pending),
        (names.adjustments, adjustment & ~dispute & ~draw),
        (names.transfers, rows.transfer[part]),
    )
    for ledger, mask in groups:
        out = int((debit[mask] - fee[mask]).sum())  # a transfer's fee is a charge above
        back = int(credit[mask].sum())
        if out:
            lines.append(Line(ledger, out, 0, tuple(keys[mask & (debit > 0)])))
        if back:
            lines.append(Line(ledger, 0, back, tuple(keys[mask & (credit > 0)])))
    # A draw recovers an instant settlement's advance: the receivable that the instant
    # settlement's voucher credited early is debited back (docs/books.md section 2).
    drawn = int((debit[draw] - credit[draw]).sum())
    if drawn:
        lines.append(Line(names.receivable, max(drawn, 0), max(-drawn, 0), tuple(keys[draw])))
    gross = int(rows.amount[part][pay].sum())
    if payouts is not None:
        brought = int((credit - debit).sum())
        advance = max(payouts.gross - brought, 0)
        lines.append(Line(names.receivable, 0, gross + advance, (*keys[pay], *paid_by)))
    else:
        lines.append(Line(names.receivable, 0, gross, tuple(keys[pay])))
    gap = sum(x.credit for x in lines) - sum(x.debit for x in lines)
    if gap:
        lines.append(Line(names.suspense, max(gap, 0), max(-gap, 0), every))
    # A line whose debit came out negative (fees below their GST) is that much credit.
    sided = (
        Line(x.ledger, max(x.debit - x.credit, 0), max(x.credit - x.debit, 0), x.source_rows)
        for x in lines
    )
    return tuple(x for x in sided if x.debit or x.credit)


def _first_payment_rows(
    pay: pd.DataFrame, recon: pd.DataFrame
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Per payment, the position in `recon` of the first `payment` row naming it (its
    entity_id), in row order, -1 when it has none (the roll-forward's `_owned_rows`); and
    whether one of its payment rows names a settlement (`names_a_settlement`)."""
    is_payment = columns.equals(columns.text(recon["type"]), "payment")
    (pay_code, row_code), size = columns.shared_codes(
        columns.text(pay["id"]), columns.text(recon["entity_id"])
    )
    first = np.full(size, len(recon), dtype=np.int64)
    at = np.flatnonzero(is_payment)
    np.minimum.at(first, row_code[at], at)
    found = first[pay_code]
    found[found == len(recon)] = -1
    carried = np.zeros(size, dtype=np.bool_)
    carried[row_code[is_payment & names_a_settlement(recon["settlement_id"])]] = True
    return found, carried[pay_code]


def captured_voucher(dataset: Dataset, month: str, ledgers: Ledgers | None = None) -> Voucher:
    """The month's captured payments settled through Razorpay: Razorpay receivable Dr,
    Sales Cr (gross, INR), the payments the roll-forward's captured line counts, for the
    same amounts: a payment `settled_by` another entity (a bank) is left out unless a recon
    row of it names a settlement (`through_razorpay`); another currency's INR amount is
    `base_amount`, else its first recon row's `amount`, else 0 until one arrives
    (docs/books.md section 2)."""
    names = ledgers or Ledgers()
    pay = dataset.payments
    recon = dataset.recon
    first_row, carried = _first_payment_rows(pay, recon)
    in_month = columns.captured(pay) & in_ist_month(pay["created_at"].to_numpy(np.int64), month)
    chosen = in_month & through_razorpay(pay["settled_by"], carried)
    foreign = columns.foreign(pay["currency"])
    base = pay["base_amount"]
    has_base = base.notna().to_numpy(dtype=bool)
    row_amount = (
        np.where(first_row >= 0, recon["amount"].to_numpy(np.int64)[np.maximum(first_row, 0)], 0)
        if len(recon)
        else np.zeros(len(pay), dtype=np.int64)
    )
    inr = np.where(
        foreign,
        np.where(has_base, columns.paise(base), row_amount),
        pay["amount"].to_numpy(np.int64),
    )
    total = int(inr[chosen].sum())
    unknown = int((chosen & foreign & ~has_base & (first_row < 0)).sum())
    ids = tuple(columns.sorted_text(columns.text(pay["id"]).filter(pa.array(chosen))))
    first = dt.date.fromisoformat(f"{month}-01")
    last = (first.replace(day=28) + dt.timedelta(days=4)).replace(day=1) - dt.timedelta(days=1)
    narration = f"Payments captured through Razorpay in {month} ({len(ids)} payments)"
    if unknown:
        narration += (
            f"; {unknown} in another currency with no INR amount yet (no base_amount and no "
            "recon row), counted 0"
        )
    return Voucher(
        number=f"RZP-CAPTURED-{month}",
        date=last,
        kind="captured",
        reference=month,
        narration=narration,
        lines=(Line(names.receivable, total, 0, ids), Line(names.sales, 0, total, ids)),
    )


@dataclass(frozen=True)
class BankCredit:
    """A bank statement line that the reconciliation matched to settlements (a `bank_entry`
    outcome naming them): what reached the bank for them."""

    line: str  # the bank line's id (file:line)
    at: int  # its date, Unix seconds (the outcome's entity_created_at)
    amount: int  # paise: its credit (a debit line's amount is negative)
    settlements: tuple[str, ...]  # the settlement and instant settlement ids it pays


def bank_credits(outcomes: pd.DataFrame) -> tuple[BankCredit, ...]:
    """The bank lines of a run's outcomes that name a settlement (`settlement_id`, several
    joined by ';' for a consolidated credit), with the amount the line shows
    (`actual_amount`), in (date, line) order."""
    if outcomes.empty:
        return ()
    kind = outcomes["entity_type"].astype(str) == "bank_entry"
    named = outcomes["settlement_id"].astype("string").fillna("") != ""
    lines = outcomes[(kind & named).to_numpy(dtype=bool)]
    found = [
        BankCredit(
            line=str(line),
            at=int(at) if pd.notna(at) else 0,
            amount=int(amount) if pd.notna(amount) else 0,
            settlements=tuple(x for x in str(sids).split(";") if x),
        )
        for line, at, amount, sids in zip(
            lines["entity_id"],
            lines["entity_created_at"],
            lines["actual_amount"],
            lines["settlement_id"],
            strict=True,
        )
    ]
    return tuple(sorted(found, key=lambda c: (c.at, c.line)))


def bank_vouchers(
    credits: Sequence[BankCredit], month: str | None = None, ledgers: Ledgers | None = None
) -> list[Voucher]:
    """Per matched bank line (dated in `month`, IST, when given): Bank Dr what the line
    shows, Razorpay settlements in transit Cr (a debit line the other way round). A
    settlement the bank never credited, or credited short, stays in transit."""
    names = ledgers or Ledgers()
    vouchers = []
    for c in credits:
        if month is not None and not in_ist_month(np.array([c.at], dtype=np.int64), month)[0]:
            continue
        if not c.amount:
            continue
        rows = (c.line,)
        debit, credit = max(c.amount, 0), max(-c.amount, 0)
        vouchers.append(
            Voucher(
                number=f"RZP-BANK-{c.line}",
                date=_ist_date(c.at),
                kind="bank",
                reference=";".join(c.settlements),
                narration=(
                    f"Bank statement line {c.line} matched to {', '.join(c.settlements)}"
                    " by the reconciliation"
                ),
                lines=(
                    Line(names.bank, debit, credit, rows),
                    Line(names.transit, credit, debit, rows),
                ),
            )
        )
    return vouchers


def month_vouchers(
    dataset: Dataset,
    month: str,
    ledgers: Ledgers | None = None,
    credits: Sequence[BankCredit] = (),
) -> list[Voucher]:
    """The month's journal: its captured payments (no voucher when they come to 0), every
    settlement and instant settlement made in it, in (created_at, id) order, then the bank
    lines of the month that the reconciliation matched to settlements (`credits`, from the
    latest run's outcomes)."""
    paid = [
        *_settlement_vouchers(dataset, ledgers, month),
        *_instant_vouchers(dataset, ledgers, month),
    ]
    paid.sort(key=lambda item: (item[0], item[1]))
    captured = captured_voucher(dataset, month, ledgers)
    # A month with nothing captured (or only payments with no INR amount yet) has no
    # captured voucher: an empty one would be blank amounts in the CSV and <AMOUNT>0.00
    # in Tally's import.
    return [
        *([captured] if captured.debits else []),
        *(v for _, _, v in paid),
        *bank_vouchers(credits, month, ledgers),
    ]


def rupees(paise: int) -> str:
    """Exact rupees with two decimals: -123456 -> '-1234.56'."""
    sign = "-" if paise < 0 else ""
    whole, part = divmod(abs(int(paise)), 100)
    return f"{sign}{whole}.{part:02d}"


CSV_COLUMNS = (
    "voucher",
    "date",
    "kind",
    "reference",
    "ledger",
    "debit",
    "credit",
    "source_rows",
    "narration",
)


_QUOTED = (",", '"', "\r", "\n")


def _cell(value: object) -> str:
    """One CSV cell as `csv.writer` (QUOTE_MINIMAL, ',' and '"') writes it in a row of
    several: text with none of , " CR LF as it is, anything else through the writer. Text
    that a spreadsheet would run (= + - @ first: an id or reference read from a file)
    gets a leading `'` (core.outputs.safe_cell), as every other CSV the app writes."""
    value = safe_cell(value)
    if isinstance(value, str) and not any(c in value for c in _QUOTED):
        return value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow((value, ""))
    return out.getvalue()[:-2]  # the cell, without the empty cell's ',' and the line end


# The characters one Excel cell holds (Microsoft KB 211878; docs/books.md): a longer cell
# is cut on opening. A month's captured voucher names every payment, so a merchant with
# ~2,000 payments a month passes it.
SPREADSHEET_CELL_LIMIT = 32_767
SOURCES_FILE = "journal_sources.csv"
SOURCES_COLUMNS = ("voucher", "lines", "source_row")


def _too_long(rows: tuple[str, ...]) -> bool:
    """True when the cell of `rows` (joined by ';', a leading `'` when it would start a
    formula: core.outputs.safe_cell) would not fit one spreadsheet cell."""
    text = sum(map(len, rows)) + max(len(rows) - 1, 0)
    guard = 1 if rows and rows[0].startswith(FORMULA_STARTS) else 0
    return text + guard > SPREADSHEET_CELL_LIMIT


def journal_csv(vouchers: list[Voucher]) -> str:
    """One CSV row per voucher line; amounts in rupees with two decimals. (Written cell by
    cell, each line's source rows joined once: the bytes csv.writer writes.) A line's
    source rows too many for one spreadsheet cell are counted there and listed in
    `journal_sources_csv`."""
    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow(CSV_COLUMNS)
    parts = [header.getvalue()]
    joined: dict[int, str] = {}  # id(source_rows) -> its cell: lines share them
    for v in vouchers:
        head = ",".join(_cell(x) for x in (v.number, v.date.isoformat(), v.kind, v.reference))
        narration = _cell(v.narration)
        for line in v.lines:
            rows = joined.get(id(line.source_rows))
            if rows is None:
                rows = joined[id(line.source_rows)] = (
                    _cell(f"{len(line.source_rows)} rows: see the journal sources file")
                    if _too_long(line.source_rows)
                    else _cell(";".join(line.source_rows))
                )
            debit = rupees(line.debit) if line.debit else ""
            credit = rupees(line.credit) if line.credit else ""
            parts.append(f"{head},{_cell(line.ledger)},{debit},{credit},{rows},{narration}\n")
    return "".join(parts)


def journal_sources(vouchers: list[Voucher]) -> list[tuple[str, str, str]]:
    """The source rows of every journal line whose list is too long for one spreadsheet
    cell: (voucher, its line numbers, source row), where 1 is the voucher's first line in
    the journal's order and `2;3` names lines that share the same rows."""
    listed: list[tuple[str, str, str]] = []
    for v in vouchers:
        shared: dict[int, list[int]] = {}  # id(source_rows) -> the line numbers naming them
        rows_of: dict[int, tuple[str, ...]] = {}
        for number, line in enumerate(v.lines, 1):
            if _too_long(line.source_rows):
                shared.setdefault(id(line.source_rows), []).append(number)
                rows_of[id(line.source_rows)] = line.source_rows
        for key, numbers in shared.items():
            lines = ";".join(map(str, numbers))
            listed.extend((v.number, lines, row) for row in rows_of[key])
    return listed


def sources_csv(listed: list[tuple[str, str, str]]) -> str:
    """`journal_sources` as CSV (SOURCES_COLUMNS; header only when it is empty)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SOURCES_COLUMNS)
    writer.writerows((safe_cell(v), lines, safe_cell(row)) for v, lines, row in listed)
    return out.getvalue()


def journal_sources_csv(vouchers: list[Voucher]) -> str:
    return sources_csv(journal_sources(vouchers))


def tally_xml(vouchers: list[Voucher], company: str | None = None) -> str:
    """Tally's voucher import request (docs/books.md): ENVELOPE / HEADER (TALLYREQUEST Import
    Data) / BODY / IMPORTDATA / REQUESTDESC (REPORTNAME Vouchers) / REQUESTDATA with one
    TALLYMESSAGE per Journal voucher. A debit line is ISDEEMEDPOSITIVE Yes with a negative
    AMOUNT, a credit line ISDEEMEDPOSITIVE No with a positive AMOUNT."""
    company_xml = (
        f"<STATICVARIABLES><SVCURRENTCOMPANY>{escape(company)}</SVCURRENTCOMPANY></STATICVARIABLES>"
        if company
        else ""
    )
    parts = [
        "<ENVELOPE>",
        "<HEADER><TALLYREQUEST>Import Data</TALLYREQUEST></HEADER>",
        "<BODY><IMPORTDATA>",
        f"<REQUESTDESC><REPORTNAME>Vouchers</REPORTNAME>{company_xml}</REQUESTDESC>",
        "<REQUESTDATA>",
    ]
    for v in vouchers:
        parts.append('<TALLYMESSAGE xmlns:UDF="TallyUDF">')
        parts.append(f'<VOUCHER VCHTYPE="Journal" ACTION="Create" REMOTEID={quoteattr(v.number)}>')
        parts.append(f"<DATE>{v.date:%Y%m%d}</DATE>")
        parts.append("<VOUCHERTYPENAME>Journal</VOUCHERTYPENAME>")
        parts.append(f"<VOUCHERNUMBER>{escape(v.number)}</VOUCHERNUMBER>")
        parts.append(f"<REFERENCE>{escape(v.reference)}</REFERENCE>")
        parts.append(f"<NARRATION>{escape(v.narration)}</NARRATION>")
        for line in v.lines:
            is_debit = line.debit > 0
            amount = -line.debit if is_debit else line.credit
            parts.append(
                "<ALLLEDGERENTRIES.LIST>"
                f"<LEDGERNAME>{escape(line.ledger)}</LEDGERNAME>"
                f"<ISDEEMEDPOSITIVE>{'Yes' if is_debit else 'No'}</ISDEEMEDPOSITIVE>"
                f"<AMOUNT>{rupees(amount)}</AMOUNT>"
                "</ALLLEDGERENTRIES.LIST>"
            )
        parts.append("</VOUCHER>")
        parts.append("</TALLYMESSAGE>")
    parts += ["</REQUESTDATA>", "</IMPORTDATA></BODY>", "</ENVELOPE>"]
    return "\n".join(parts) + "\n"


@dataclass(frozen=True)
class FeeTiming:
    """Why the journal's Razorpay receivable and the roll-forward's differ (docs/books.md
    section 2, *Journal and roll-forward*): the roll-forward takes a payment's fee off the
    receivable when the payment is captured, the journal charges it when a settlement
    does. Paise."""

    not_yet_charged: int  # fees of the month's captured payments no settlement of it carried
    charged_for_earlier: int  # fees on rows of the month's settlements for earlier payments


def fee_timing(dataset: Dataset, month: str, instant_ids: Iterable[str] = ()) -> FeeTiming:
    """The month's fee timing from the GST tie-out's month read (`read_month_dataset(...,
    "gst")`: the journal's rows and the payments' fees): the payments `captured_voucher`
    counts (captured in the month, through the Razorpay balance) with no payment row in a
    processed settlement or an instant settlement of the month (those of the dataset
    created in it, and `instant_ids`: the month's instant settlement vouchers, as that read
    has no instant settlements), their fee (incl. GST; the payment's, else its first row's:
    the roll-forward's); and the fees of the payment rows in those settlements that name no
    payment of the month."""
    pay = dataset.payments
    recon = dataset.recon
    first_row, carried = _first_payment_rows(pay, recon)
    in_month = columns.captured(pay) & in_ist_month(pay["created_at"].to_numpy(np.int64), month)
    chosen = in_month & through_razorpay(pay["settled_by"], carried)
    st = dataset.settlements
    regular = st[
        (st["status"].astype(str) == "processed")
        & in_ist_month(st["created_at"].to_numpy(np.int64), month)
    ]
    inst = dataset.instant_settlements
    inst = inst[in_ist_month(inst["created_at"].to_numpy(np.int64), month)]
    paid = set(regular["id"].astype(str)) | set(inst["id"].astype(str)) | set(instant_ids)
    is_payment = recon["type"].astype(str).to_numpy() == "payment"
    in_paid = recon["settlement_id"].astype("string").isin(paid).fillna(False).to_numpy(bool)
    settled_rows = recon[is_payment & in_paid]
    ids = pay["id"].astype(str)
    settled_ids = set(settled_rows["entity_id"].astype(str))
    open_now = chosen & ~ids.isin(settled_ids).to_numpy(bool)
    row_fee = np.where(
        first_row >= 0,
        recon["fee"].to_numpy(np.int64)[np.maximum(first_row, 0)] if len(recon) else 0,
        0,
    )
    own_fee = pay["fee"].astype("Int64")
    fee = np.where(own_fee.notna().to_numpy(bool), own_fee.fillna(0).to_numpy(np.int64), row_fee)
    month_ids = set(ids[in_month])
    earlier = ~settled_rows["entity_id"].astype(str).isin(month_ids)
    return FeeTiming(
        not_yet_charged=int(fee[open_now].sum()),
        charged_for_earlier=int(settled_rows.loc[earlier, "fee"].astype(np.int64).sum()),
    )


def receivable_tie(
    vouchers: Sequence[Voucher],
    rollforward_movement: int,
    timing: FeeTiming,
    ledgers: Ledgers | None = None,
) -> tuple[tuple[str, int], ...]:
    """The month's Razorpay receivable in the journal against the roll-forward, as lines
    (name, paise): the journal's net (debits − credits of the receivable ledger over the
    month's vouchers), the roll-forward's movement (closing − opening), their difference,
    the two fee timings that explain it (`fee_timing`), and what is left: other timing
    (refunds, transfers, dispute debits and adjustments the roll-forward takes when made
    and the journal expenses at settlement; flagged differences; the residual)."""
    name = (ledgers or Ledgers()).receivable
    journal = sum(x.debit - x.credit for v in vouchers for x in v.lines if x.ledger == name)
    difference = journal - rollforward_movement
    other = difference - timing.not_yet_charged + timing.charged_for_earlier
    return (
        ("journal_receivable_net", journal),
        ("rollforward_movement", rollforward_movement),
        ("difference", difference),
        ("fees_of_payments_not_yet_settled", timing.not_yet_charged),
        ("fees_charged_for_earlier_payments", -timing.charged_for_earlier),
        ("other_timing", other),
    )
