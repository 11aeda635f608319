"""Closing a month (docs/books.md): its roll-forward frozen, never silently changed.

A closed month shows its snapshot. When later data changes what the books say up to the
end of a closed month, the next open month opens from the snapshot's closing and shows the
change as its own line, `prior_period_adjustments`.

A close also keeps the month's balance by day and its journal as they stood (migration
0115), so a closed month's chart and journal show what was in the books at the close (the
`closed` basis) unless today's data are asked for (`current`), and the next open month's
journal carries the change as prior-period adjustment vouchers (`month_journal`).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from core.books.journal import BankCredit, Ledgers, Voucher, month_vouchers
from core.books.posting import (
    PRIOR_PERIOD_KIND,
    ClosedPart,
    VoucherChange,
    adjustment_vouchers,
    decode_journal,
    encode_journal,
    voucher_changes,
)
from core.books.rollforward import MonthRollForward, daily_balances, month_rollforward
from core.calendar import IST, month_bounds
from core.db import books as books_sql
from core.db import raw
from core.db.connection import transaction
from core.db.runs import RunRecord, latest_completed_run, latest_completed_run_id
from core.errors import ConfigError, RefusedError

PRIOR_PERIOD = "prior_period_adjustments"
CLOSED_BASIS = "closed"  # what was in the books at the close (kept by it)
CURRENT_BASIS = "current"  # today's data
BASES = (CLOSED_BASIS, CURRENT_BASIS)


@dataclass(frozen=True)
class ClosedMonth:
    month: str
    closed_at: int
    closed_by: str
    snapshot: MonthRollForward
    through_import_id: int | None = None  # the newest import at the close; None: before 0115

    def closed_at_ist(self) -> str:
        """When it was closed, 'YYYY-MM-DD HH:MM IST'."""
        return dt.datetime.fromtimestamp(self.closed_at, IST).strftime("%Y-%m-%d %H:%M IST")

    def label(self) -> str:
        """'closed by WHO at YYYY-MM-DD HH:MM IST'."""
        return f"closed by {self.closed_by} at {self.closed_at_ist()}"


@dataclass(frozen=True)
class BooksMonth:
    """A month as the books show it (`books_view`): its roll-forward, the close it shows
    (None when open), and for an open month the closed month it opens from (its opening is
    that snapshot's closing; a `prior_period_adjustments` line carries what changed)."""

    rollforward: MonthRollForward
    closed: ClosedMonth | None
    opens_from_closed: str | None

    def as_dict(self) -> dict[str, object]:
        """The roll-forward's dict with `closed` ({by, at, at_ist} or None) and
        `opens_from_closed` (a month or None)."""
        data = self.rollforward.as_dict()
        data["closed"] = (
            None
            if self.closed is None
            else {
                "by": self.closed.closed_by,
                "at": self.closed.closed_at,
                "at_ist": self.closed.closed_at_ist(),
            }
        )
        data["opens_from_closed"] = self.opens_from_closed
        return data


@dataclass(frozen=True)
class WriteOff:
    """A write-off the review flow made final (core.review: resolved `written_off` at or
    under the four-eyes limit, or approved by a second person above it) and that no later
    reopen undid. The Books do not post it (docs/books.md section 1, *Write-offs in the
    review queue*): its money stays in the roll-forward's open items."""

    exception_id: int
    entity_type: str
    entity_id: str
    reason_code: str
    amount: int  # paise, as written off
    decided_at: int
    decided_by: str
    approval_id: int | None  # the four-eyes approval, when one was needed

    def as_dict(self) -> dict[str, object]:
        return {
            "exception_id": self.exception_id,
            "entity_type": self.entity_type,
            "entity_id": self.entity_id,
            "reason_code": self.reason_code,
            "amount": self.amount,
            "decided_at": self.decided_at,
            "decided_at_ist": dt.datetime.fromtimestamp(self.decided_at, IST).strftime(
                "%Y-%m-%d %H:%M IST"
            ),
            "decided_by": self.decided_by,
            "approval_id": self.approval_id,
        }


def unposted_write_offs(conn: sqlite3.Connection, month: str) -> tuple[WriteOff, ...]:
    """The final write-offs decided by the end of `month` (IST; a write-off takes effect
    at its decision: the resolve, or the approval under four eyes), in decision order. A
    pending or rejected approval resolved nothing, so it is not one; an exception reopened
    after its write-off (or now in any status but RESOLVED) is not one either."""
    _, following = month_bounds(month)
    end = int(dt.datetime.combine(following, dt.time(), IST).timestamp())
    latest: dict[int, tuple[object, ...]] = {}
    for row in books_sql.write_off_decisions(conn):
        latest[int(str(row[0]))] = row
    chosen: dict[int, tuple[dict[str, object], int, str]] = {}
    for exception_id, (_, action, payload_json, created_at, actor) in latest.items():
        if action != "exception.resolved":
            continue
        payload = json.loads(str(payload_json))
        if payload.get("resolution") == "written_off" and int(str(created_at)) < end:
            chosen[exception_id] = (payload, int(str(created_at)), str(actor))
    found: list[WriteOff] = []
    for eid, etype, entity, reason, status in books_sql.exceptions_by_id(conn, sorted(chosen)):
        if status != "RESOLVED":
            continue
        payload, decided_at, actor = chosen[int(str(eid))]
        approval = payload.get("approval_id")
        found.append(
            WriteOff(
                exception_id=int(str(eid)),
                entity_type=str(etype),
                entity_id=str(entity),
                reason_code=str(reason),
                amount=int(str(payload.get("write_off_amount") or 0)),
                decided_at=decided_at,
                decided_by=actor,
                approval_id=None if approval is None else int(str(approval)),
            )
        )
    return tuple(sorted(found, key=lambda w: (w.decided_at, w.exception_id)))


def write_offs_dict(write_offs: tuple[WriteOff, ...]) -> dict[str, object]:
    """`{"total", "items"}`: the roll-forward's note of write-offs not posted (`--json`)."""
    return {
        "total": sum(w.amount for w in write_offs),
        "items": [w.as_dict() for w in write_offs],
    }


def write_off_note(write_offs: tuple[WriteOff, ...]) -> str | None:
    """The roll-forward's note line, or None when there is none to name."""
    from core.money import format_inr

    if not write_offs:
        return None
    total = format_inr(sum(w.amount for w in write_offs))
    return (
        f"note: write-offs not posted ({len(write_offs)}, review queue) {total}: decided by"
        " the month's end and final, not in the Books (their money is still in the open"
        " items above; post them by hand, docs/books.md)"
    )


def _from_dict(data: dict[str, object]) -> MonthRollForward:
    movements = data["movements"]
    open_items = data["open_items"]
    drill = data["drilldown"]
    assert isinstance(movements, dict) and isinstance(open_items, dict)
    assert isinstance(drill, list)
    return MonthRollForward(
        month=str(data["month"]),
        opening=int(str(data["opening"])),
        movements=tuple((str(k), int(v)) for k, v in movements.items()),
        closing=int(str(data["closing"])),
        open_items=tuple((str(k), int(v)) for k, v in open_items.items()),
        residual=int(str(data["residual"])),
        drilldown=tuple(
            (str(d["day"]), str(d["entity_type"]), str(d["entity_id"]), int(d["amount"]))
            for d in drill
        ),
    )


def closed_months(conn: sqlite3.Connection) -> dict[str, ClosedMonth]:
    """Every closed month by 'YYYY-MM'."""
    return {
        month: ClosedMonth(month, at, by, _from_dict(json.loads(text)), through)
        for month, at, by, text, through in books_sql.month_close_rows(conn)
    }


def close_month(
    conn: sqlite3.Connection,
    events: pd.DataFrame,
    month: str,
    *,
    actor: str,
    request_id: str,
    run_id: int | None = None,
    now: int | None = None,
) -> ClosedMonth:
    """Freeze `month`'s roll-forward (audited), and keep its balance by day (from `events`)
    and its journal as today's data give it (the month's rows, with the prior-period
    adjustment vouchers of the closed months before it), with the newest import they hold.
    Closing a closed month changes nothing and returns it as it was closed. The caller
    checks that `actor` may close months. The month's rows are read in one snapshot before
    the write lock is taken (a long read never holds up an import); an import stored
    meanwhile refuses the close (RefusedError: close again), nothing written. A close is
    final, so it is refused while a raw row fails its MAC or a raw table's count is not the
    one the audited writes left (core.audit.rawcheck: every row read and hashed in the
    snapshot, the counts again under the lock), naming table and key."""
    from core.audit import append
    from core.audit.rawcheck import count_differences, refusal, unrecorded_changes

    stamp = int(time.time()) if now is None else int(now)
    with transaction(conn, immediate=False):
        through = raw.latest_import_id(conn)
        closed = month in closed_months(conn)
        journal = () if closed else month_journal(conn, month, CURRENT_BASIS).vouchers
        changed = [] if closed else unrecorded_changes(conn, macs=True)
    if changed:
        raise RefusedError(f"{month} was not closed: {refusal(changed)}")
    with transaction(conn):
        found = closed_months(conn).get(month)
        if found is not None:
            return found
        problem = not_ended_problem(latest_completed_run(conn), month)
        if problem is not None:
            raise RefusedError(f"{month} was not closed: {problem}")
        if raw.latest_import_id(conn) != through:
            raise RefusedError(
                f"{month} was not closed: data were imported while its journal was read;"
                " close it again"
            )
        changed = count_differences(conn)
        if changed:
            raise RefusedError(f"{month} was not closed: {refusal(changed)}")
        snapshot = books_view(events, month, closed_months(conn))
        books_sql.insert_month_close(
            conn,
            month=month,
            closed_at=stamp,
            closed_by=actor,
            run_id=run_id,
            closing=snapshot.closing,
            residual=snapshot.residual,
            snapshot_json=json.dumps(snapshot.as_dict()),  # keeps the line order
            request_id=request_id,
            through_import_id=through,
        )
        books_sql.insert_close_books(
            conn,
            month,
            daily_json=_daily_json(month_days(daily_balances(events), month)),
            journal=encode_journal(journal, Ledgers()),
            vouchers=len(journal),
        )
        append(
            conn,
            actor=actor,
            action="month_closed",
            entity_type="month",
            entity_id=month,
            payload={
                "closing": snapshot.closing,
                "residual": snapshot.residual,
                "run_id": run_id,
                "request_id": request_id,
            },
            now=stamp,
        )
    return ClosedMonth(month, stamp, actor, snapshot, through)


def not_ended_problem(run: RunRecord | None, month: str) -> str | None:
    """Why `month` cannot be closed yet, or None: a close is for good, so a month is closed
    only once the data's latest run reconciled past its last moment (an independent tester
    closed 2027-03 by a typo for 2026-03, exit 0)."""
    if run is None:
        return "nothing is reconciled yet; reconcile the month's data first"
    _, following = month_bounds(month)
    if run.as_of >= int(dt.datetime.combine(following, dt.time(), IST).timestamp()) - 1:
        return None
    last = following - dt.timedelta(days=1)
    as_of = dt.datetime.fromtimestamp(run.as_of, IST).strftime("%Y-%m-%d %H:%M IST")
    return (
        f"it has not ended in the data: the latest run (run {run.id}) is as of {as_of};"
        f" a month is closed once a run as of its last day ({last.isoformat()} 23:59:59 IST)"
        " or later has reconciled it"
    )


def books_view(
    events: pd.DataFrame, month: str, closes: dict[str, ClosedMonth]
) -> MonthRollForward:
    """What the books show for `month`: its snapshot when closed. An open month right after
    a closed one opens from the snapshot's closing; what the data say now about the same
    moment, if different, is its `prior_period_adjustments` line (so its closing is today's
    figure). Any other open month rolls forward from its open predecessor."""
    if month in closes:
        return closes[month].snapshot
    live = month_rollforward(events, month)
    before = closes.get(_previous(month))
    if before is None:
        return live
    adjustment = live.opening - before.snapshot.closing
    return replace(
        live,
        opening=before.snapshot.closing,
        movements=((PRIOR_PERIOD, adjustment), *live.movements),
    )


def books_month(events: pd.DataFrame, month: str, closes: dict[str, ClosedMonth]) -> BooksMonth:
    """`books_view` with what it rests on: the Books page, `rollforward` and the close
    report show this."""
    before = _previous(month)
    return BooksMonth(
        rollforward=books_view(events, month, closes),
        closed=closes.get(month),
        opens_from_closed=before if month not in closes and before in closes else None,
    )


def since_close(
    events: pd.DataFrame, month: str, closes: dict[str, ClosedMonth]
) -> tuple[tuple[str, str, int, int, int], ...]:
    """A closed month's snapshot against what today's data say about the same month (as the
    books would show it were it open): (section, line, closed, today, today - closed) for
    the opening, each movement, the closing, each open item and the residual. The
    closing's difference is the next month's `prior_period_adjustments`."""
    closed = closes[month].snapshot
    today = books_view(events, month, {m: c for m, c in closes.items() if m != month})

    def lines(
        section: str, was: tuple[tuple[str, int], ...], now: tuple[tuple[str, int], ...]
    ) -> list[tuple[str, str, int, int, int]]:
        a, b = dict(was), dict(now)
        names = [*a, *(n for n in b if n not in a)]
        return [(section, n, a.get(n, 0), b.get(n, 0), b.get(n, 0) - a.get(n, 0)) for n in names]

    return (
        *lines("opening", (("opening", closed.opening),), (("opening", today.opening),)),
        *lines("movement", closed.movements, today.movements),
        *lines("closing", (("closing", closed.closing),), (("closing", today.closing),)),
        *lines("open_item", closed.open_items, today.open_items),
        *lines("residual", (("residual", closed.residual),), (("residual", today.residual),)),
    )


def _previous(month: str) -> str:
    year, mon = int(month[:4]), int(month[5:7])
    return f"{year - 1}-12" if mon == 1 else f"{year:04d}-{mon - 1:02d}"


def month_days(daily: pd.DataFrame, month: str) -> pd.DataFrame:
    """The rows of a balance by day (`daily_balances`) that fall in `month`."""
    first, following = month_bounds(month)
    return daily[(daily["day"] >= first) & (daily["day"] < following)].reset_index(drop=True)


def _daily_json(days: pd.DataFrame) -> str:
    rows = [[day.isoformat(), *map(int, rest)] for day, *rest in days.itertuples(index=False)]
    return json.dumps({"columns": list(days.columns), "rows": rows})


def kept_daily(conn: sqlite3.Connection, month: str) -> pd.DataFrame | None:
    """The month's balance by day as its close kept it (`daily_balances`' columns and
    dtypes), None when it kept none (open, or closed before migration 0115)."""
    text = books_sql.close_daily_json(conn, month)
    if text is None:
        return None
    document = json.loads(text)
    columns = list(document["columns"])
    frame = pd.DataFrame(document["rows"], columns=columns)
    frame["day"] = [dt.date.fromisoformat(d) for d in frame["day"]]
    return frame.astype({c: np.int64 for c in columns if c != "day"})


def kept_journal(
    conn: sqlite3.Connection, month: str, ledgers: Ledgers | None = None
) -> tuple[Voucher, ...] | None:
    """The journal the month's close kept, ledgers named by `ledgers`; None when it kept
    none (open, or closed before migration 0115)."""
    blob = books_sql.close_journal(conn, month)
    return None if blob is None else decode_journal(blob, ledgers or Ledgers())


@dataclass(frozen=True)
class MonthJournal:
    """A month's journal on a basis. `closed`: the month's close (None when open); `kept`:
    whether that close kept the journal. On the current basis of a closed month, `changes`
    are the vouchers that differ from the kept journal (each with the lines that differ
    and the rows behind it new or changed since the close) and `arrivals` (row, import id,
    imported_at) the import after the close that last stored each row behind them.
    `adjusts`: the closed months whose later data its prior-period adjustment vouchers
    carry (oldest first); `unkept`: the newest closed month before it whose close kept no
    journal, so that its later data (and any earlier month's) are not in them."""

    month: str
    basis: str
    vouchers: tuple[Voucher, ...]
    closed: ClosedMonth | None = None
    kept: bool = False
    changes: tuple[VoucherChange, ...] = ()
    arrivals: tuple[tuple[str, int, int], ...] = ()
    adjusts: tuple[str, ...] = ()
    unkept: str | None = None

    def adjustments(self) -> tuple[Voucher, ...]:
        return tuple(v for v in self.vouchers if v.kind == PRIOR_PERIOD_KIND)

    def basis_lines(self) -> list[str]:
        """What the journal is, in words: its basis and what it leaves to another."""
        closed = self.closed
        if self.basis == CLOSED_BASIS and closed is not None:
            out = [
                f"{self.month} journal, basis closed: the {len(self.vouchers)} vouchers as kept"
                f" at the close ({closed.label()}). Data that arrived later are not in them:"
                " they are on the current basis, and posted in the next open month's journal"
                " as prior-period adjustment vouchers."
            ]
        elif closed is not None:
            kept = (
                f"{len(self.changes)} voucher(s) differ from the journal kept at the close"
                if self.kept
                else "its close kept no journal (closed before migration 0115): what changed"
                " since is not known voucher by voucher"
            )
            out = [
                f"{self.month} journal, basis current: today's data, including what arrived"
                f" after the close ({closed.label()}); {kept}. Do not post these vouchers"
                " again: the difference is posted in the next open month's journal."
            ]
        else:
            out = [f"{self.month} journal, basis current: today's data ({self.month} is open)."]
        if self.adjusts:
            count = len(self.adjustments())
            out.append(
                f"It carries {count} prior-period adjustment voucher(s) for"
                f" {', '.join(self.adjusts)} (closed): what today's data change in"
                " their vouchers since they were posted."
            )
        return out + self.unkept_lines()

    def unkept_lines(self) -> list[str]:
        """What the adjustment vouchers cannot carry: the later data of a closed month
        whose close kept no journal."""
        if self.unkept is None:
            return []
        return [
            f"{self.unkept} was closed before its journal was kept (migration 0115):"
            " data that arrived later for it, or before it, are in no adjustment voucher;"
            " the roll-forward's prior-period adjustment has them."
        ]

    def change_lines(self) -> list[str]:
        """One line per voucher that differs from the kept journal: its debits each way, the
        lines that differ and the rows new or changed since the close (`change_details`),
        and how many rows it lost."""
        from core.money import format_rupees

        out = []
        for c in self.changes:
            was, now = (format_rupees(x, symbol=True) for x in (c.closed_debits, c.today_debits))
            lines, rows = change_details(c, self.arrivals)
            named = f": {rows}" if rows else ""
            out.append(
                f"  {c.number} {c.status}: debits {was} as closed, {now} today; lines {lines};"
                f" {len(c.since)} row(s) new or changed since the close{named};"
                f" {len(c.removed)} gone"
            )
        return out


def _bounded(items: list[str], limit: int) -> str:
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f", and {more} more" if more > 0 else "")


def change_details(
    change: VoucherChange, arrivals: tuple[tuple[str, int, int], ...], limit: int = 5
) -> tuple[str, str]:
    """What a voucher that differs from the kept journal changed, in words (the command's
    standard error and the Books page's Journal tab both show these): the first `limit`
    lines that differ ('Razorpay adjustments Dr ₹11.80 -> ₹23.60', 'none' when only its
    rows or narration moved) and the first `limit` rows behind it that are new or were
    stored again since the close, each that an import after the close stored with that
    import ('adj_X (import 7, 2026-06-03 11:00 IST)'); then 'and K more'."""
    from core.money import format_rupees

    lines = [
        f"{x.ledger} {x.side} {format_rupees(x.closed, symbol=True)}"
        f" -> {format_rupees(x.today, symbol=True)}"
        for x in change.lines
    ]
    arrived = {row: (number, at) for row, number, at in arrivals}

    def named(row: str) -> str:
        if row not in arrived:
            return row
        number, at = arrived[row]
        when = dt.datetime.fromtimestamp(at, IST).strftime("%Y-%m-%d %H:%M IST")
        return f"{row} (import {number}, {when})"

    rows = [named(r) for r in change.since]
    return (_bounded(lines, limit) if lines else "none"), _bounded(rows, limit)


def _since_close(
    conn: sqlite3.Connection,
    changes: tuple[VoucherChange, ...],
    vouchers: tuple[Voucher, ...],
    after: int,
) -> tuple[tuple[VoucherChange, ...], tuple[tuple[str, int, int], ...]]:
    """`changes` each with `since` (the rows behind it, kept or today's, that it gained or
    that an import after `after` stored), and those imports (row, import id, imported_at)."""
    numbers = {c.number for c in changes}
    behind: dict[str, set[str]] = {}
    for v in vouchers:  # the kept journal's and today's: a row may have moved either way
        if v.number in numbers:
            behind.setdefault(v.number, set()).update(r for x in v.lines for r in x.source_rows)
    every = sorted(set().union(*behind.values()))
    found = books_sql.row_imports(conn, every, after) if every else {}
    marked = tuple(
        replace(c, since=tuple(sorted({*c.added, *(behind.get(c.number, set()) & found.keys())})))
        for c in changes
    )
    return marked, tuple((row, *found[row]) for row in sorted(found))


def month_bank_credits(conn: sqlite3.Connection, month: str) -> tuple[BankCredit, ...]:
    """The bank lines dated in `month` (IST) that the latest completed run matched to
    settlements (its `bank_entry` outcomes naming one): none before a run."""
    run_id = latest_completed_run_id(conn)
    if run_id is None:
        return ()
    start, end = raw.month_seconds(month)
    return tuple(
        BankCredit(line, at, amount, tuple(x for x in sids.split(";") if x))
        for line, at, amount, sids in books_sql.bank_credit_rows(conn, run_id, start, end)
    )


def own_vouchers(
    conn: sqlite3.Connection, month: str, ledgers: Ledgers | None = None
) -> list[Voucher]:
    """The month's own vouchers as today's data give them (its rows only, and the bank
    lines of the month that the latest run matched to settlements)."""
    dataset = raw.read_month_dataset(conn, month, "journal")
    return month_vouchers(dataset, month, ledgers, month_bank_credits(conn, month))


def month_journal(
    conn: sqlite3.Connection,
    month: str,
    basis: str | None = None,
    ledgers: Ledgers | None = None,
) -> MonthJournal:
    """`month`'s journal. Basis `closed` (the default for a closed month whose close kept its
    journal): the vouchers kept at the close. Basis `current` (the default otherwise): its
    own vouchers from today's data, after the prior-period adjustment vouchers for the run
    of closed months right before it (each of their months read). ConfigError for the
    closed basis of a month that has none."""
    names = ledgers or Ledgers()
    closes = closed_months(conn)
    closed = closes.get(month)
    kept = None if closed is None else kept_journal(conn, month, names)
    basis = basis or (CLOSED_BASIS if kept is not None else CURRENT_BASIS)
    if basis not in BASES:
        raise ConfigError(f"basis: {basis!r} is not one of {', '.join(BASES)}")
    if basis == CLOSED_BASIS:
        if closed is None:
            raise ConfigError(f"{month} is open: its journal has only the current basis")
        if kept is None:
            raise ConfigError(
                f"{month} was {closed.label()}, before a close kept the journal (migration"
                " 0115): only the current basis"
            )
        return MonthJournal(month, basis, kept, closed, True)
    parts: list[ClosedPart] = []
    unkept = None
    before = _previous(month)
    while before in closes:
        journal = kept_journal(conn, before, names)
        if journal is None:
            unkept = before
            break
        own = tuple(own_vouchers(conn, before, names))
        parts.insert(0, ClosedPart(before, closes[before].label(), journal, own))
        before = _previous(before)
    vouchers = (
        *adjustment_vouchers(month, parts),
        *own_vouchers(conn, month, names),
    )
    changes = () if kept is None else voucher_changes(kept, vouchers)
    after = 0 if closed is None else (closed.through_import_id or 0)
    changes, arrivals = _since_close(conn, changes, (*(kept or ()), *vouchers), after)
    return MonthJournal(
        month,
        basis,
        vouchers,
        closed,
        kept is not None,
        changes,
        arrivals,
        tuple(p.month for p in parts),
        unkept,
    )
