"""A closed month's journal as it was posted, and what later data add to it (docs/books.md
section 4, "The journal of a closed month"). Pure functions over vouchers, integer paise.

A close keeps the month's journal (`encode_journal`: the vouchers with each line's ledger
as its `Ledgers` key, so any chart of accounts' names can be put back, `decode_journal`).
When data that arrive later change a closed month's vouchers, the next open month's journal
carries the difference, voucher by voucher, as prior-period adjustment vouchers
(`adjustment_vouchers`): for each voucher of the run of closed months before it, today's
voucher less the one kept at its month's close less the adjustments already posted for it
in the closed months since. Each is the difference of balanced vouchers, so it balances.
"""

from __future__ import annotations

import datetime as dt
import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

from core.books.journal import Ledgers, Line, Voucher

PRIOR_PERIOD_KIND = "prior_period"  # Voucher.kind of an adjustment voucher
FORMAT = 1


def _keys(ledgers: Ledgers) -> dict[str, str]:
    """Ledger name -> its `Ledgers` key (the first key of a name two keys share)."""
    named: dict[str, str] = {}
    for f in fields(ledgers):
        named.setdefault(getattr(ledgers, f.name), f.name)
    return named


def encode_journal(vouchers: Sequence[Voucher], ledgers: Ledgers) -> bytes:
    """The vouchers (built with `ledgers`' names) as compressed JSON: each line's ledger as
    its key, each distinct tuple of source rows once."""
    key_of = _keys(ledgers)
    sources: dict[tuple[str, ...], int] = {}
    out = []
    for v in vouchers:
        lines = [
            [key_of[x.ledger], x.debit, x.credit, sources.setdefault(x.source_rows, len(sources))]
            for x in v.lines
        ]
        out.append([v.number, v.date.isoformat(), v.kind, v.reference, v.narration, lines])
    document = {"format": FORMAT, "sources": list(sources), "vouchers": out}
    return zlib.compress(json.dumps(document, separators=(",", ":")).encode("utf-8"))


def decode_journal(blob: bytes, ledgers: Ledgers) -> tuple[Voucher, ...]:
    """`encode_journal`'s vouchers, each ledger named as `ledgers` names its key."""
    document = json.loads(zlib.decompress(blob).decode("utf-8"))
    if document.get("format") != FORMAT:
        raise ValueError(f"a kept journal of format {document.get('format')!r}, not {FORMAT}")
    sources = [tuple(str(s) for s in rows) for rows in document["sources"]]
    return tuple(
        Voucher(
            number=str(number),
            date=dt.date.fromisoformat(str(day)),
            kind=str(kind),
            reference=str(reference),
            narration=str(narration),
            lines=tuple(
                Line(str(getattr(ledgers, key)), int(debit), int(credit), sources[int(rows)])
                for key, debit, credit, rows in lines
            ),
        )
        for number, day, kind, reference, narration, lines in document["vouchers"]
    )


@dataclass(frozen=True)
class LineChange:
    """One ledger and side of a voucher whose amount differs between the journal kept at a
    close and today's: integer paise each way (0 where that side has no such line)."""

    ledger: str
    side: str  # "Dr" or "Cr"
    closed: int
    today: int


@dataclass(frozen=True)
class VoucherChange:
    """How one voucher of a closed month differs today from the journal kept at the close:
    status "changed", "new" (none by its number was kept) or "gone" (none today); total
    debits each way; the lines whose amounts differ (ledger and side); the source rows
    today's voucher has that the kept one has not, and the other way round; and `since`,
    the rows behind it (either way) that are new or were stored again by an import after
    the close (filled in by `core.books.close.month_journal`, which reads the imports)."""

    number: str
    status: str
    closed_debits: int
    today_debits: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    lines: tuple[LineChange, ...] = ()
    since: tuple[str, ...] = ()


def _rows(voucher: Voucher | None) -> set[str]:
    return set() if voucher is None else {r for line in voucher.lines for r in line.source_rows}


def _sides(voucher: Voucher | None) -> dict[tuple[str, str], int]:
    """(ledger, "Dr"/"Cr") -> the voucher's amount on it, in line order."""
    out: dict[tuple[str, str], int] = {}
    for line in () if voucher is None else voucher.lines:
        for side, amount in (("Dr", line.debit), ("Cr", line.credit)):
            if amount:
                out[(line.ledger, side)] = out.get((line.ledger, side), 0) + amount
    return out


def line_changes(kept: Voucher | None, today: Voucher | None) -> tuple[LineChange, ...]:
    """The ledger sides whose amounts differ, in today's line order then the kept-only."""
    was, now = _sides(kept), _sides(today)
    return tuple(
        LineChange(ledger, side, was.get((ledger, side), 0), now.get((ledger, side), 0))
        for ledger, side in [*now, *(k for k in was if k not in now)]
        if was.get((ledger, side), 0) != now.get((ledger, side), 0)
    )


def voucher_changes(kept: Sequence[Voucher], today: Sequence[Voucher]) -> tuple[VoucherChange, ...]:
    """The vouchers that differ between the journal kept at a close and today's, in today's
    order then the kept-only ones."""
    was = {v.number: v for v in kept}
    now = {v.number: v for v in today}
    changes = []
    for number in [*now, *(n for n in was if n not in now)]:
        a, b = was.get(number), now.get(number)
        if a == b:
            continue
        status = "new" if a is None else "gone" if b is None else "changed"
        before, after = _rows(a), _rows(b)
        changes.append(
            VoucherChange(
                number,
                status,
                0 if a is None else a.debits,
                0 if b is None else b.debits,
                tuple(sorted(after - before)),
                tuple(sorted(before - after)),
                line_changes(a, b),
            )
        )
    return tuple(changes)


@dataclass(frozen=True)
class ClosedPart:
    """One closed month of the run before an open month: `label` says who closed it and when,
    `kept` is the journal kept at its close (its own vouchers and the adjustments posted in
    it), `today` its own vouchers as today's data give them (no adjustments)."""

    month: str
    label: str
    kept: tuple[Voucher, ...]
    today: tuple[Voucher, ...]


def _net(
    signed: Iterable[tuple[int, Voucher | None]],
) -> tuple[dict[str, int], dict[str, set[str]]]:
    """Per ledger (first seen first): the sum of sign × (debit − credit), and the source rows
    named an odd number of times (today's, the kept voucher's and each posted adjustment's
    rows taken in turn: what was added or removed and not yet adjusted)."""
    net: dict[str, int] = {}
    rows: dict[str, set[str]] = {}
    for sign, voucher in signed:
        for line in () if voucher is None else voucher.lines:
            net[line.ledger] = net.get(line.ledger, 0) + sign * (line.debit - line.credit)
            rows[line.ledger] = rows.get(line.ledger, set()) ^ set(line.source_rows)
    return net, rows


def adjustment_vouchers(month: str, parts: Sequence[ClosedPart]) -> tuple[Voucher, ...]:
    """`month`'s prior-period adjustment vouchers for the closed months before it (`parts`,
    oldest first): one per voucher of theirs whose today's version, less the version kept at
    its close, less the adjustments posted for it since, is not zero on every ledger. Dated
    the first day of `month`, kind `prior_period`, numbered `<voucher>-PPA-<month>`,
    referencing the voucher; a line per ledger that moves (debit when positive), naming the
    source rows added or removed since."""
    first = dt.date.fromisoformat(f"{month}-01")
    kept: dict[str, tuple[ClosedPart, Voucher]] = {}
    posted: dict[str, list[Voucher]] = {}
    today: dict[str, tuple[ClosedPart, Voucher]] = {}
    order: dict[str, None] = {}
    for part in parts:
        for v in part.kept:
            if v.kind == PRIOR_PERIOD_KIND:
                posted.setdefault(v.reference, []).append(v)
            else:
                kept[v.number] = (part, v)
        for v in part.today:
            today[v.number] = (part, v)
        order.update(dict.fromkeys(v.number for v in part.today))
        order.update(dict.fromkeys(v.number for v in part.kept if v.kind != PRIOR_PERIOD_KIND))
    order.update(dict.fromkeys(posted))
    vouchers = []
    for number in order:
        now, was, done = today.get(number), kept.get(number), posted.get(number, [])
        net, rows = _net(
            [
                (1, None if now is None else now[1]),
                (-1, None if was is None else was[1]),
                *((-1, v) for v in done),
            ]
        )
        lines = tuple(
            Line(ledger, max(amount, 0), max(-amount, 0), tuple(sorted(rows[ledger])))
            for ledger, amount in net.items()
            if amount
        )
        if not lines:
            continue
        found = now or was
        origin = None if found is None else found[0]
        if now is None:
            what = "no longer in the data: the posted voucher reversed"
        elif was is None and not done:
            what = "arrived after the close"
        else:
            what = "as today's data give it, less what was posted"
        where = "" if origin is None else f" of {origin.month} ({origin.label})"
        vouchers.append(
            Voucher(
                number=f"{number}-PPA-{month}",
                date=first,
                kind=PRIOR_PERIOD_KIND,
                reference=number,
                narration=f"Prior-period adjustment: {number}{where}, {what}",
                lines=lines,
            )
        )
    return tuple(vouchers)
