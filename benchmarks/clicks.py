"""Every read a page render or a click makes, timed once on a database (never asserted):
`python -m benchmarks.clicks --db PATH [--top N] [--month YYYY-MM] [--investigate]`.

`benchmarks.ui --every-page` renders each page in its default state; what a page reads
depends on what is clicked. This calls what the pages, the investigator's tools, the exports
and the `review` command call (every queue filter and sort at the first and the last page,
the evidence, history and packet of one exception of every kind, the Settlement page's
largest settlement, every Audit filter, the Books page's reads), each once, wall and CPU
seconds, and prints the slowest beside the 1 s target (issue 16 item 3; docs/benchmark.md,
"10M in the app, fourth round"). `--month` also presses the Books page's three buttons for
that month (its rows read, then the journal, the GST bases, the fee check), as
`ui.books.on_request` does. Read only, except `--investigate`, which runs the
deterministic investigator on one exception of each kind and stores its findings: give it a
copy of the database.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET_S = 1.0
LAST_PAGE = 10**9  # the queue clamps a page number to its last page


def calls(conn: Any, database: str, investigate: bool) -> list[tuple[str, Callable[[], object]]]:
    """(name, call) for every read measured, in the order a reviewer meets them."""
    from core import access, audit, review
    from core.books.close import closed_months
    from core.books.ledger import (
        data_key,
        fallback_months,
        ledger_status,
        stored_ledger,
        stored_months,
    )
    from core.books.store import pricing_plans
    from core.db.audit import AuditFilter
    from core.db.views import ALL_STATUSES, QUEUE_SORTS, QueueFilter
    from core.review import comments, pending_for
    from core.review import queries as review_queries
    from core.review.packet import build_packet
    from core.views import evaluation, exception, overview, queue, runs, settlement
    from core.views.common import data_mark

    one = conn.execute
    run_id = one("SELECT id FROM runs WHERE status = 'completed' ORDER BY id DESC").fetchone()[0]
    kinds = one(
        "SELECT entity_type, reason_code, min(id), max(id) FROM exceptions GROUP BY 1, 2"
    ).fetchall()
    payment = one("SELECT entity_id FROM exceptions WHERE entity_type = 'payment'").fetchone()[0]
    busiest = one(
        "SELECT settlement_id FROM exceptions WHERE settlement_id IS NOT NULL "
        "GROUP BY 1 ORDER BY count(*) DESC"
    ).fetchone()[0]
    utr = str(one("SELECT utr FROM exceptions WHERE utr IS NOT NULL").fetchone()[0])
    largest = one(
        "SELECT settlement_id FROM recon_rows WHERE settlement_id IS NOT NULL "
        "GROUP BY 1 ORDER BY count(*) DESC"
    ).fetchone()[0]
    found: list[tuple[str, Callable[[], object]]] = [
        ("overview: data mark", lambda: data_mark(conn)),
        ("overview: figures", lambda: overview.overview(conn)),
        ("overview: changes since the last run", lambda: runs.changes_since_previous_run(conn)),
        ("overview: held-out accuracy", lambda: evaluation.heldout_accuracy(conn, run_id)),
        ("overview: run summary (stored or computed)", lambda: runs.run_summary(conn, run_id)),
        ("evaluation: report", lambda: evaluation.evaluation_report(conn, run_id)),
        ("data: recent runs", lambda: runs.recent_runs(conn)),
        ("data: holdings", lambda: runs.holdings(conn)),
        ("data: raw counts", lambda: runs.raw_counts(conn)),
        ("exceptions: filter options", lambda: queue.queue_options(conn)),
        ("exceptions: top exception", lambda: queue.top_exception(conn)),
        ("exceptions: people", lambda: access.assignable(conn)),
    ]
    filters = {
        "open": QueueFilter(),
        "every status": QueueFilter(statuses=ALL_STATUSES),
        "code": QueueFilter(codes=("AMOUNT_MISMATCH",)),
        "class": QueueFilter(classes=("amount_at_risk",)),
        "settlement": QueueFilter(settlement_id=busiest),
        "age 30-60 days": QueueFilter(min_age_days=30, max_age_days=60),
        "exposure from 1,000": QueueFilter(min_exposure=100_000),
        "unassigned": QueueFilter(assignee=""),
        "search (id)": QueueFilter(search=str(payment)[4:12]),
        "search (2 characters)": QueueFilter(search="ab"),
        "search (UTR)": QueueFilter(search=utr[:8]),
    }
    for name, flt in filters.items():
        found.append((f"exceptions: queue, {name}", lambda f=flt: queue.queue(conn, f)))
    for sort in QUEUE_SORTS:
        for label, page in (("first", 1), ("last", LAST_PAGE)):
            found.append(
                (
                    f"exceptions: queue by {sort}, {label} page",
                    lambda s=sort, p=page: queue.queue(conn, QueueFilter(), sort=s, page=p),
                )
            )
    found.append(("exceptions: CSV export", lambda: queue.queue_csv(conn, QueueFilter())))
    for entity_type, reason, first_id, last_id in kinds:
        kind = f"{entity_type}/{reason}"
        found += [
            (f"investigation: exception {kind}", lambda x=first_id: exception.exception(conn, x)),
            (f"investigation: evidence {kind}", lambda x=first_id: exception.evidence(conn, x)),
            (f"investigation: history {kind}", lambda x=first_id: comments.history(conn, x)),
            (f"investigation: pending {kind}", lambda x=first_id: pending_for(conn, x)),
            (f"investigation: packet {kind}", lambda x=first_id: build_packet(conn, x)),
        ]
        if investigate:
            from core.investigate import investigate as run_investigator

            found.append(
                (
                    f"investigation: investigate {kind}",
                    lambda x=last_id: run_investigator(database, x),
                )
            )
    found += [
        ("settlement: choices", lambda: settlement.settlement_choices(conn, "setl_")),
        ("settlement: the largest", lambda: settlement.settlement_view(conn, largest)),
        ("settlement: the busiest in the queue", lambda: settlement.settlement_view(conn, busiest)),
        ("audit: filter values", lambda: audit.filter_values(conn)),
    ]
    entry = one(
        "SELECT actor, action, entity_type, entity_id FROM audit_log ORDER BY seq DESC"
    ).fetchone()
    for name, flt in {
        "none": AuditFilter(),
        "actor": AuditFilter(actor=entry[0]),
        "action": AuditFilter(action=entry[1]),
        "entity type": AuditFilter(entity_type=entry[2]),
        "entity id": AuditFilter(entity_id=entry[3]),
    }.items():
        found.append(
            (
                f"audit: entries, {name}",
                lambda f=flt: (audit.count(conn, f), list(audit.query(conn, f, limit=100))),
            )
        )
    found += [
        ("audit: verify the chain (button)", lambda: audit.verify(conn)),
        ("books: ledger status", lambda: ledger_status(conn)),
        ("books: months", lambda: stored_months(conn)),
        ("books: fallback months", lambda: fallback_months(conn)),
        ("books: data key", lambda: data_key(conn)),
        ("books: closed months", lambda: closed_months(conn)),
        ("books: pricing plans", lambda: pricing_plans(conn)),
        ("approvals: list", lambda: review.list_approvals(conn)),
        ("admin: users", lambda: access.list_users(conn)),
        ("review CLI: list", lambda: review_queries.list_exceptions(conn, limit=50)),
        ("review CLI: count", lambda: review_queries.count_exceptions(conn)),
    ]
    months = stored_months(conn)
    if months:
        found.append(("books: the latest month's ledger", lambda: stored_ledger(conn, months[0])))
    return found


def presses(conn: Any, month: str) -> list[tuple[str, Callable[[], object]]]:
    """The Books page's buttons for `month`: each reads the month's rows, then builds."""
    from core.books.gst import gst_bases
    from core.books.journal import journal_csv, month_vouchers, tally_xml
    from core.books.pricing import fee_check, overcharge_summary, unclassified_cards
    from core.books.store import pricing_plans
    from core.db.raw import read_month_dataset

    def journal() -> object:
        vouchers = month_vouchers(read_month_dataset(conn, month, "journal"), month)
        return journal_csv(vouchers), tally_xml(vouchers)

    def fees() -> object:
        dataset, plans = read_month_dataset(conn, month, "fees"), pricing_plans(conn)
        return overcharge_summary(fee_check(dataset, plans)), unclassified_cards(dataset, plans)

    return [
        (f"books: journal of {month} (button)", journal),
        (
            f"books: GST of {month} (button)",
            lambda: gst_bases(read_month_dataset(conn, month, "gst"), month),
        ),
        (f"books: fee check of {month} (button)", fees),
    ]


def measure(
    database: str, investigate: bool = False, month: str | None = None
) -> list[tuple[str, float, float]]:
    """(name, wall s, CPU s) of every call, in order."""
    from core.db import connect

    conn = connect(database)
    try:
        timed = []
        chosen = calls(conn, database, investigate) + (presses(conn, month) if month else [])
        for name, call in chosen:
            wall, cpu = time.perf_counter(), time.process_time()
            call()
            timed.append((name, time.perf_counter() - wall, time.process_time() - cpu))
        return timed
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a SQLite file or a postgresql:// URL")
    parser.add_argument("--top", type=int, default=15, help="the slowest calls to print")
    parser.add_argument("--investigate", action="store_true", help="also run the investigator")
    parser.add_argument("--month", help="also press the Books buttons for this month (YYYY-MM)")
    args = parser.parse_args(argv)
    timed = measure(args.db, args.investigate, args.month)
    over = [t for t in timed if t[1] >= TARGET_S]
    print(f"{len(timed)} calls on {args.db}; {len(over)} at or over {TARGET_S:g} s")
    print(f"{'call':<58} {'wall s':>8} {'CPU s':>8}")
    for name, wall, cpu in sorted(timed, key=lambda t: -t[1])[: args.top]:
        print(f"{name[:58]:<58} {wall:8.3f} {cpu:8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
