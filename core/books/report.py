"""The month-end close report (docs/books.md): a CSV bundle (zip) and a PDF for a month.

Roll-forward (as the books show it: a closed month's snapshot), the balance by day, open
exceptions by class and by age, fee overcharges against the contracted plan, GST on fees
by payment and by settlement with the input tax credit, the journal
(CSV and Tally XML) and the head of the audit chain, so the report can be tied to the trail.

A close freezes the roll-forward (and its drill-down) and, since migration 0115, keeps the
month's balance by day and its journal. So a closed month's report says which files are
what the close kept and which are built from today's data (README.txt, manifest.csv, and
each CSV's first column `basis`), and sets the snapshot against today's figures line by
line (prior_period_adjustments.csv): never a silent mix. An open month's journal is the
`journal` command's: after a closed month, its prior-period adjustment vouchers first.
"""

from __future__ import annotations

import csv
import io
import sqlite3
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.books.close import (
    CLOSED_BASIS,
    PRIOR_PERIOD,
    BooksMonth,
    MonthJournal,
    books_month,
    closed_months,
    kept_daily,
    month_days,
    month_journal,
    since_close,
    unposted_write_offs,
    write_off_note,
)
from core.books.gst import SUPPLIER_STATE, GstTieOut, tie_out
from core.books.journal import (
    SOURCES_FILE,
    fee_timing,
    journal_csv,
    journal_sources_csv,
    receivable_tie,
    tally_xml,
)
from core.books.ledger import FullEvents, Ledger, ledger_for
from core.books.pricing import fee_check, overcharge_summary
from core.books.rollforward import MonthRollForward
from core.books.store import pricing_plans
from core.db.audit import head as audit_head
from core.db.raw import read_month_dataset
from core.money import format_rupees, minor_to_decimal
from core.outputs import safe_cell
from core.pdf import Document

# What each file of the report is built from (manifest.csv, and the CSVs' `basis` column).
CLOSED_SNAPSHOT = "closed_snapshot"  # frozen when the month was closed
TODAY = "today"  # the raw tables (and the books' ledger) as they stand at the report
LATEST_RUN = "latest_run"  # the exceptions of the latest completed run
SNAPSHOT_VS_TODAY = "closed_snapshot_vs_today"
REVIEW_QUEUE = "review_queue"  # the review queue's decisions (write-offs) as they stand


@dataclass(frozen=True)
class CloseReport:
    month: str
    closed: bool
    rollforward: MonthRollForward
    exposure_by_class: tuple[tuple[str, int, int], ...]  # class, count, paise
    ageing: tuple[tuple[str, int, int], ...]  # bucket, count, paise
    overcharges: tuple[tuple[str, str, int, int], ...]  # month, class, payments, paise
    audit_seq: int
    audit_hash: str
    files: dict[str, str]  # name -> text
    # (section, line, closed, today, difference) of a closed month; () when open
    since_close: tuple[tuple[str, str, int, int, int], ...] = ()


def _is_paise(column: str) -> bool:
    return column == "paise" or column.endswith("_paise")


def _rupees_cell(value: object) -> object:
    """A paise cell as rupees with two decimals (a number to a spreadsheet); blanks stay."""
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return minor_to_decimal(int(value), "INR")
    return value


def _csv(header: tuple[str, ...], rows: Sequence[Sequence[object]], basis: str) -> str:
    """A CSV whose amounts read in rupees: each paise column shown as rupees in its place,
    the raw paise columns after the rest (as every CSV the app offers); its first column,
    `basis`, says what every row is built from. Text that a spreadsheet would run (an id
    read from a file starting with = + - @) gets a leading `'` (core.outputs.safe_cell);
    amounts are written by us and never start so but as negative numbers, and are left
    as they are."""
    header = ("basis", *header)
    rows = [(basis, *r) for r in rows]
    paise = [i for i, c in enumerate(header) if _is_paise(c)]
    if paise:
        shown = tuple(
            (c.removesuffix("paise") + "rupees") if i in paise else c for i, c in enumerate(header)
        )
        header = (*shown, *(header[i] for i in paise))
        rows = [
            (
                *(_rupees_cell(v) if i in paise else safe_cell(v) for i, v in enumerate(r)),
                *(r[i] for i in paise),
            )
            for r in rows
        ]
    else:
        rows = [tuple(safe_cell(v) for v in r) for r in rows]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def _based(
    basis: str, header: tuple[str, ...], rows: Sequence[Sequence[object]]
) -> tuple[str, str]:
    """(basis, the CSV): the basis its first column gives is the one the manifest lists."""
    return basis, _csv(header, rows, basis)


def _gst_csv(t: GstTieOut) -> str:
    """The month's fees and GST by payment and by settlement, the itemised difference, the
    rest, and the input tax credit (no invoice: the payment basis's GST)."""
    rows: list[tuple[object, ...]] = [
        ("by_payment", t.payment_fees, t.payment_gst),
        ("by_settlement", t.settlement_fees, t.settlement_gst),
        ("timing_captured_not_settled", t.captured_not_settled_fees, t.captured_not_settled_gst),
        ("settled_by_another_entity", t.settled_elsewhere_fees, t.settled_elsewhere_gst),
        (
            "timing_settled_from_other_months",
            -t.settled_from_other_months_fees,
            -t.settled_from_other_months_gst,
        ),
        ("other_rows_settled", -t.other_rows_fees, -t.other_rows_gst),
        (
            "rows_charging_other_than_their_payment",
            -t.row_fee_differences,
            -t.row_gst_differences,
        ),
        ("unexplained", t.unexplained_fees, t.unexplained_gst),
    ]
    rows += [(f"itc_{name.lower()}", "", amount) for name, amount in t.itc]
    return _csv(("line", "fees_paise", "gst_paise"), rows, TODAY)


def build_report(
    conn: sqlite3.Connection,
    month: str,
    books: Ledger | FullEvents | None = None,
    *,
    merchant_state: str = SUPPLIER_STATE,
) -> CloseReport:
    """Everything the close report holds for `month` ('YYYY-MM'), read in one go. books:
    the events (default: the stored ledger when current, else today's computation).
    merchant_state: the merchant's GST registration state, which splits the input tax
    credit (CGST + SGST in Razorpay's own state, else IGST: docs/books.md section 5)."""
    from core.views.overview import overview

    source = ledger_for(conn, month) if books is None else books
    closes = closed_months(conn)
    events = source.events_for(month)
    shown = books_month(events, month, closes)
    roll = shown.rollforward
    frozen = shown.closed is not None
    changes = since_close(events, month, closes) if frozen else ()
    roll_basis = CLOSED_SNAPSHOT if frozen else TODAY
    # Each product from the month's rows only (read_month_dataset: the same figures as from
    # every raw table, at a cost that grows with the month, not the history), one at a time.
    journal = month_journal(conn, month)  # a closed month's as kept, if its close kept it
    vouchers = list(journal.vouchers)
    journal_basis = CLOSED_SNAPSHOT if journal.basis == CLOSED_BASIS else TODAY
    fees = read_month_dataset(conn, month, "fees")
    summary = overcharge_summary(fee_check(fees, pricing_plans(conn)))
    summary = summary[summary["month"] == month]
    del fees
    gst_rows = read_month_dataset(conn, month, "gst")
    gst = tie_out(gst_rows, month, merchant_state=merchant_state)
    # The journal's receivable against the roll-forward's: the fees' timing, named.
    instant = [v.reference for v in vouchers if v.kind == "instant_settlement"]
    tie = receivable_tie(
        vouchers, roll.closing - roll.opening, fee_timing(gst_rows, month, instant)
    )
    del gst_rows
    over = tuple(
        (str(m), str(k), int(n), int(p))
        for m, k, n, p in summary[["month", "method_class", "payments", "overcharge"]].itertuples(
            index=False, name=None
        )
    )
    ov = overview(conn)
    by_class = tuple(
        (cls, t.count, t.paise) for cls, t in (ov.exposure_by_class.items() if ov else ())
    )
    ageing = tuple((b.label, b.count, b.paise) for b in (ov.ageing if ov else ()))
    top = audit_head(conn)
    seq, digest = (0, "") if top is None else (int(top[0]), str(top[1]))
    write_offs = unposted_write_offs(conn, month)
    kept = kept_daily(conn, month) if frozen else None
    days = month_days(source.daily(), month) if kept is None else kept
    daily_basis = TODAY if kept is None else CLOSED_SNAPSHOT
    # name -> (basis, text)
    built: dict[str, tuple[str, str]] = {
        "rollforward.csv": _based(
            roll_basis,
            ("section", "line", "paise"),
            [("opening", "opening", roll.opening)]
            + [("movement", k, v) for k, v in roll.movements]
            + [("closing", "closing", roll.closing)]
            + [("open_item", k, v) for k, v in roll.open_items]
            + [("residual", "residual", roll.residual)],
        ),
        "residual_drilldown.csv": _based(
            roll_basis,
            ("day", "entity_type", "entity_id", "paise"),
            [tuple(d) for d in roll.drilldown],
        ),
        "daily.csv": _based(
            daily_basis,
            ("day", *(f"{c}_paise" for c in days.columns if c != "day")),
            list(days.itertuples(index=False, name=None)),
        ),
        "open_exceptions_by_class.csv": _based(
            LATEST_RUN, ("class", "count", "paise"), list(by_class)
        ),
        "open_exceptions_by_age.csv": _based(LATEST_RUN, ("age", "count", "paise"), list(ageing)),
        "fee_overcharges.csv": _based(TODAY, ("month", "class", "payments", "paise"), list(over)),
        "gst_tie_out.csv": (TODAY, _gst_csv(gst)),
        "journal.csv": (journal_basis, journal_csv(vouchers)),
        SOURCES_FILE: (journal_basis, journal_sources_csv(vouchers)),
        "tally.xml": (journal_basis, tally_xml(vouchers)),
        "audit_head.txt": (TODAY, f"seq {seq}\nhash {digest}\n"),
        "receivable_journal_vs_rollforward.csv": _based(
            SNAPSHOT_VS_TODAY if frozen else TODAY,
            ("line", "paise"),
            list(tie),
        ),
        # The review queue's final write-offs decided by the month's end: not posted.
        "write_offs_not_posted.csv": _based(
            REVIEW_QUEUE,
            (
                "exception_id",
                "entity_type",
                "entity_id",
                "reason_code",
                "paise",
                "decided_at_ist",
                "decided_by",
                "approval_id",
            ),
            [
                (
                    w.exception_id,
                    w.entity_type,
                    w.entity_id,
                    w.reason_code,
                    w.amount,
                    w.as_dict()["decided_at_ist"],
                    w.decided_by,
                    "" if w.approval_id is None else w.approval_id,
                )
                for w in write_offs
            ],
        ),
    }
    if frozen:
        built["prior_period_adjustments.csv"] = _based(
            SNAPSHOT_VS_TODAY,
            ("section", "line", "closed_paise", "today_paise", "difference_paise"),
            list(changes),
        )
    bases = {name: basis for name, (basis, _) in sorted(built.items())}
    files = {name: text for name, (_, text) in built.items()}
    files["manifest.csv"] = "file,basis\n" + "".join(f"{n},{b}\n" for n, b in bases.items())
    note = write_off_note(write_offs)
    ties = dict(tie)
    tie_note = (
        f"\nRazorpay receivable, journal against roll-forward: the journal's net for {month}"
        f" is {format_rupees(ties['journal_receivable_net'])}, the roll-forward's movement"
        f" {format_rupees(ties['rollforward_movement'])}; of the difference,"
        f" {format_rupees(ties['difference'])}, fees' timing (the roll-forward takes a"
        " payment's fee off at capture, the journal charges it at settlement) is"
        f" {format_rupees(ties['fees_of_payments_not_yet_settled'])} of payments not yet"
        f" settled and {format_rupees(ties['fees_charged_for_earlier_payments'])} charged"
        f" for earlier payments; {format_rupees(ties['other_timing'])} is other timing"
        " (refunds, transfers, dispute debits not yet settled; flagged differences; the"
        " residual) (receivable_journal_vs_rollforward.csv; docs/books.md section 2).\n"
    )
    files["README.txt"] = (
        _readme(month, shown, changes, seq, bases, journal)
        + (f"\n{note} (write_offs_not_posted.csv).\n" if note else "")
        + tie_note
        + (
            f"\ngst_tie_out.csv splits the input tax credit for a merchant registered in"
            f" {merchant_state}: {' + '.join(name for name, _ in gst.itc)} (Razorpay's invoices"
            f" come from {SUPPLIER_STATE}; another state: `close-report --gst-state`, or the"
            " GST tab's state on the Books page).\n"
        )
    )
    return CloseReport(month, frozen, roll, by_class, ageing, over, seq, digest, files, changes)


def _readme(
    month: str,
    shown: BooksMonth,
    changes: Sequence[tuple[str, str, int, int, int]],
    seq: int,
    bases: dict[str, str],
    journal: MonthJournal,
) -> str:
    """What the report is and what each file is built from, in words."""
    money = format_rupees
    out = [f"RazorRecon close report for {month} (IST), audit chain head seq {seq}.", ""]
    if shown.closed is not None:
        kept = [n for n, b in bases.items() if b == CLOSED_SNAPSHOT]
        today = [n for n, b in bases.items() if b == TODAY and n.endswith((".csv", ".xml"))]
        out.append(
            f"{month} is CLOSED (by {shown.closed.closed_by} at {shown.closed.closed_at_ist()})."
            f" {', '.join(kept)} are as the close kept them and never change. The other files"
            " are built from today's data (the close keeps no copy of the month's rows)."
            + (
                ""
                if journal.kept
                else " (The close was made before a close kept the balance by day and the"
                " journal: migration 0115.)"
            )
        )
        differing = [c for c in changes if c[4] != 0]
        closing = next(c[4] for c in changes if c[0] == "closing")
        if not differing:
            out.append("Today's data say what the snapshot says: no prior-period adjustment.")
        else:
            posted = (
                " The next month's journal posts it as prior-period adjustment vouchers;"
                f" `journal --month {month} --basis current` lists the vouchers that changed."
                if journal.kept
                else " If the month's vouchers were posted at the close, post the difference,"
                " not these vouchers again."
            )
            out.append(
                f"Today's data differ from the snapshot on {len(differing)} line(s) and move"
                f" {month}'s closing by {money(closing, symbol=True)}"
                " (prior_period_adjustments.csv: each line closed, today, difference). The books"
                f" keep {month} as closed and carry the change as the next month's"
                f" prior-period adjustments. {', '.join(today)} include it.{posted}"
            )
    else:
        out.append(f"{month} is open: every file is built from today's data.")
        if shown.opens_from_closed is not None:
            adjustment = dict(shown.rollforward.movements).get(PRIOR_PERIOD, 0)
            out.append(
                f"Its opening is {shown.opens_from_closed}'s closing as closed; what today's"
                f" data change before {month} is its prior-period adjustments line,"
                f" {money(adjustment, symbol=True)}. daily.csv is today's data throughout,"
                " so its first day opens at that opening plus the prior-period adjustments."
            )
        if journal.adjusts:
            out.append(
                f"journal.csv and tally.xml open with {len(journal.adjustments())} prior-period"
                f" adjustment voucher(s) for {', '.join(journal.adjusts)}."
            )
        out += journal.unkept_lines()
    out += [
        "",
        "Each file's basis (also manifest.csv, and the first column, basis, of every CSV but"
        " journal.csv and journal_sources.csv, which keep the journal command's columns;"
        " journal_sources.csv lists the source rows of a journal line whose list is too long"
        " for one spreadsheet cell, header only when none is):",
    ]
    meaning = {
        CLOSED_SNAPSHOT: "as kept at the close",
        TODAY: "today's data, as they stand at this report",
        LATEST_RUN: "the latest completed reconciliation run",
        SNAPSHOT_VS_TODAY: "the closed snapshot set against today's data",
        REVIEW_QUEUE: "the review queue's final write-offs, as they stand at this report",
    }
    out += [f"  {n:<30} {b:<25} {meaning[b]}" for n, b in bases.items()]
    return "\n".join(out) + "\n"


def bundle(report: CloseReport) -> bytes:
    """The report's files as a zip (fixed timestamps: the same report, the same bytes)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(report.files):
            info = zipfile.ZipInfo(f"close-{report.month}/{name}", date_time=(2026, 1, 1, 0, 0, 0))
            archive.writestr(info, report.files[name])
    return out.getvalue()


def pdf(report: CloseReport) -> bytes:
    """A short PDF of the close: roll-forward, open items, residual, exceptions by class
    and age, overcharges, and the audit chain head."""
    roll = report.rollforward
    doc = Document()
    state = "closed" if report.closed else "open"
    doc.title(f"Month-end close {report.month} ({state})")
    section = doc.section

    money = format_rupees
    section(
        "Razorpay receivable",
        [("Opening", money(roll.opening))]
        + [(k, money(v)) for k, v in roll.movements if v]
        + [("Closing", money(roll.closing))],
    )
    section("Open items", [(k, money(v)) for k, v in roll.open_items if v])
    section("Residual (unexplained)", [("Residual", money(roll.residual))])
    if report.closed:
        moved = [(f"{n} (today - closed)", money(d)) for _, n, _, _, d in report.since_close if d]
        section(
            "Since the close: today's data (prior_period_adjustments.csv)",
            moved or [("no change", "")],
        )
    section(
        "Open exceptions by class",
        [(c, f"{n} / {money(p)}") for c, n, p in report.exposure_by_class],
    )
    section("Open exceptions by age", [(a, f"{n} / {money(p)}") for a, n, p in report.ageing])
    section(
        "Fee overcharges (contracted plan)",
        [(f"{m} {k}", f"{n} / {money(p)}") for m, k, n, p in report.overcharges] or [("none", "")],
    )
    section("Audit chain head", [("seq", str(report.audit_seq)), ("hash", report.audit_hash[:32])])
    return doc.output()
