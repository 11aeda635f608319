"""Carry the exception queue from one engine run to the next.

Identity is (entity_type, entity_id, reason_code). After a run:
- an EXCEPTION outcome not yet known opens a new exception (OPEN, due date from exposure);
- one that still holds keeps its status, assignee, due date and history; its facts
  (amounts, codes, settlement, last_run_id) refresh, and a material change is audited;
- one that holds again after AUTO_CLEARED reopens, and so does a RESOLVED one whose
  exposure moved since the decision (the decision was taken on other facts);
- an exception not RESOLVED/AUTO_CLEARED that the run no longer has is AUTO_CLEARED, unless
  a person touched it (assigned, escalated, investigated, commented): then its status
  stays and it is marked "needs review: no longer found" (not_found_run_id) until a person
  resolves or reopens it, or a later run finds it again.
Due dates count working days from `due_from` (the pipeline passes the run's as-of).
Every change writes an exception event and an audit entry, in the same transaction.

An incremental run whose base run is the run last synced can be synced within a scope
(`SyncScope`, docs/benchmark.md "issue 16 item 2"): the same database as the full sync.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

from core.audit import (
    AuditEvent,
    append_many,
    append_many_beside,
    canonical_json,
    write_anchor,
)
from core.calendar import WorkingCalendar
from core.db import page_reads, transaction
from core.db import review as review_sql
from core.db.backend import is_postgres
from core.errors import NotFoundError, RefusedError
from core.review.due import due_dates_by_rule

ENGINE_ACTOR = "engine"
SYNC_ACTION = "exceptions.synced"
OPENED_NOTE = "found by the engine"


@dataclass(frozen=True)
class SyncSummary:
    """What one sync changed.

    opened: new exceptions; kept: still-holding exceptions left in their status (includes
    refreshed); reopened: AUTO_CLEARED (or RESOLVED with moved exposure) back to OPEN;
    auto_cleared: closed because the run no longer has them; refreshed: kept ones whose
    material facts changed; run_id: the run synced; audit_entries: rows appended.
    """

    opened: int
    kept: int
    reopened: int
    auto_cleared: int
    refreshed: int = 0
    run_id: int = 0
    audit_entries: int = 0
    no_longer_found: int = 0  # touched by a person: kept open, marked for review


@dataclass(frozen=True)
class SyncScope:
    """What an incremental run can change in the queue: its outcomes are `base_run_id`'s,
    row for row, but for the entities decided again; `keys` holds the (entity_type,
    entity_id) of those that are an EXCEPTION in either run (the base run's dropped rows
    and the run's fresh rows).

    Once `base_run_id` is the run last synced, an exception with its last_run_id there and
    outside `keys` has the base run's outcome in this run, and its facts already (that sync
    copied them; nothing else writes them): the full sync only moves its run ids on. Any
    other exception either has its entity in `keys` or is not in this run."""

    base_run_id: int
    keys: Sequence[tuple[str, str]]


def sync_exceptions(
    conn: sqlite3.Connection,
    run_id: int,
    actor: str = ENGINE_ACTOR,
    *,
    now: int | None = None,
    calendar: WorkingCalendar | None = None,
    due_from: int | None = None,
    scope: SyncScope | None = None,
) -> SyncSummary:
    """Bring `exceptions` in line with run `run_id`'s outcomes, atomically.

    Runs in the caller's transaction when there is one. Refuses a failed or unknown run
    and a run older than one already synced (it would wrongly clear newer findings).
    Syncing the same run twice changes nothing the second time.
    scope: the run is incremental (`SyncScope`); its statements then read the scope's
    entities only when the scope's base run is the run last synced (SQLite), else all.
    """
    stamp = int(time.time()) if now is None else int(now)
    rules = due_dates_by_rule(stamp if due_from is None else int(due_from), calendar)
    outermost = not conn.in_transaction  # then the new head is anchored at the end
    with transaction(conn):
        status = review_sql.run_status(conn, run_id)
        if status is None:
            raise NotFoundError(f"run {run_id} does not exist")
        if status == "failed":
            raise RefusedError(f"run {run_id} failed; its outcomes are not synced")
        latest = review_sql.latest_synced_run(conn)
        if latest is not None and latest > run_id:
            raise RefusedError(
                f"run {run_id} is older than run {latest}, already synced; "
                "re-syncing it would clear newer findings"
            )
        first_new = review_sql.max_exception_id(conn)
        review_sql.begin_search_deferred(conn)
        # The Overview's stored totals (migration 0101) take the new exceptions in one
        # GROUP BY at the end rather than one trigger update per row.
        totals_deferred = page_reads.begin_totals_deferred(conn, first_new)
        events: list[review_sql.EventRow] = []
        audits: list[AuditEvent] = []

        def record(
            exc_id: int,
            action: str,
            note: str,
            old: str | None,
            new: str | None,
            payload: dict[str, object],
        ) -> None:
            events.append((exc_id, action, actor, note, old, new, None, stamp))
            audits.append(
                AuditEvent(
                    actor,
                    f"exception.{action}",
                    "exception",
                    str(exc_id),
                    {
                        "run_id": run_id,
                        "from_status": old,
                        "to_status": new,
                        "note": note,
                        **payload,
                    },
                )
            )

        with review_sql.set_based_plans(conn):
            # No exception yet (a first sync): nothing to reopen, compare or refresh, and the
            # joins would still read every EXCEPTION outcome of the run to find that out.
            known = first_new > 0
            scoped = (
                known
                and scope is not None
                and latest == scope.base_run_id
                and scope.base_run_id < run_id
                and not is_postgres(conn)  # the scope's SQL is tested on SQLite only
            )
            carried = 0
            if scoped:
                assert scope is not None
                review_sql.stage_scope(conn, scope.keys)
                # Counted before a reopened one's run id moves on, as the full count counts it.
                carried = review_sql.count_carried(conn, scope.base_run_id)
            # Few rows (the closed exceptions), and exact whatever a person did since.
            reopen = review_sql.reopen_candidates(conn, run_id) if known else []
            review_sql.reopen_from_run(conn, run_id, [r["id"] for r in reopen], stamp, rules)
            changed = review_sql.changed_facts(conn, run_id, scoped=scoped) if known else []
            holding = review_sql.count_holding(conn, run_id, scoped=scoped) if known else 0
            holding += carried
            if known:
                review_sql.refresh_from_run(conn, run_id, stamp, scoped=scoped)
            if scoped:
                assert scope is not None
                review_sql.refresh_carried(conn, scope.base_run_id, run_id)
            review_sql.open_new_from_run(conn, run_id, stamp, rules, scoped=scoped)
            if scoped:
                review_sql.clear_scope(conn)
            opened = review_sql.exceptions_after(conn, first_new)
            # A first sync opened every exception there is from this run's outcomes: none
            # to clear or mark, and the three statements would read them all to find that.
            cleared = review_sql.auto_clear_candidates(conn, run_id, scoped=scoped) if known else []
            if known:
                review_sql.auto_clear(conn, run_id, stamp, scoped=scoped)
            gone = review_sql.not_found_candidates(conn, run_id, scoped=scoped) if known else []
            review_sql.mark_not_found(conn, [r["id"] for r in gone], run_id, stamp)

        for r in reopen:
            why = (
                "holds again in this run"
                if r["status"] == "AUTO_CLEARED"
                else "exposure changed since the decision"
            )
            record(
                r["id"],
                "reopened",
                why,
                r["status"],
                "OPEN",
                {
                    "old_exposure": r["old_exposure"],
                    "exposure_amount": r["new_exposure"],
                    "exposure_class": r["new_class"],
                },
            )
        for r in changed:
            record(
                r["id"],
                "refreshed",
                "facts changed in this run",
                r["status"],
                r["status"],
                {
                    "old_exposure": r["old_exposure"],
                    "exposure_amount": r["new_exposure"],
                    "old_reason_codes": r["old_codes"],
                    "reason_codes": r["new_codes"],
                },
            )
        # The "opened" entries go between these, made on the audit worker (_opened_entries).
        before_opened = len(events)
        for r in cleared:
            record(
                r["id"],
                "auto_cleared",
                "no longer found by the engine",
                r["status"],
                "AUTO_CLEARED",
                {"exposure_amount": r["exposure_amount"]},
            )
        for r in gone:
            record(
                r["id"],
                "no_longer_found",
                "no longer found by the engine; a person worked on it: needs review",
                r["status"],
                r["status"],
                {"exposure_amount": r["exposure_amount"], "assignee": r["assignee"]},
            )

        summary = SyncSummary(
            opened=len(opened),
            kept=holding - len(reopen),
            reopened=len(reopen),
            auto_cleared=len(cleared),
            refreshed=len(changed),
            no_longer_found=len(gone),
            run_id=run_id,
            audit_entries=len(audits) + len(opened),
        )
        counts = {
            "opened": summary.opened,
            "kept": summary.kept,
            "reopened": summary.reopened,
            "auto_cleared": summary.auto_cleared,
            "refreshed": summary.refreshed,
        }
        if gone:
            counts["no_longer_found"] = summary.no_longer_found
        if audits or opened or not review_sql.run_synced(conn, run_id):
            audits.append(AuditEvent(actor, SYNC_ACTION, "run", str(run_id), counts))
        review_sql.record_sync(conn, run_id, stamp, actor, canonical_json(counts))
        # Event ids in the order recorded: reopened and refreshed, opened, then the rest.
        review_sql.insert_events(conn, events[:before_opened])
        if opened:
            review_sql.insert_events_of_new(
                conn, first_new, "opened", actor, OPENED_NOTE, "OPEN", stamp
            )
        review_sql.insert_events(conn, events[before_opened:])
        review_sql.stage_search_notes(conn, _search_notes(events))

        def write_queue() -> None:
            # The queue-search documents of the new exceptions and the notes of every new
            # event, set-based (migration 0105): the triggers stood aside since
            # `search_deferred`. A new exception's only event is its "opened" one.
            review_sql.write_search(conn, first_new, " " + OPENED_NOTE)
            review_sql.end_search_deferred(conn)
            if totals_deferred:
                page_reads.end_totals_deferred(conn)

        # The audit entries' JSON and hashes are computed on a worker thread meanwhile: these
        # few statements (the search documents' trigram index the longest) run with the GIL
        # released. Not beside the row-by-row inserts above: each row takes the GIL back, and
        # waits for the worker's switch interval to get it. The audit rows are the same and
        # inserted after, as before.
        entries = chain(
            audits[:before_opened],
            _opened_entries(opened, actor, run_id),
            audits[before_opened:],
        )
        append_many_beside(conn, entries, write_queue, now=stamp)
        if outermost:
            write_anchor(conn, now=stamp)
        return dataclasses.replace(summary, audit_entries=len(audits) + len(opened))


def _opened_entries(opened: list[sqlite3.Row], actor: str, run_id: int) -> Iterator[AuditEvent]:
    """The audit entries of the new exceptions, in id order, as the other actions' are made:
    a generator, so append_many_beside's worker builds them (25,716 at 1M) while this
    thread writes the search documents with the GIL released."""
    for r in opened:
        yield AuditEvent(
            actor,
            "exception.opened",
            "exception",
            str(r["id"]),
            {
                "run_id": run_id,
                "from_status": None,
                "to_status": "OPEN",
                "note": OPENED_NOTE,
                "entity_type": r["entity_type"],
                "entity_id": r["entity_id"],
                "reason_code": r["reason_code"],
                "exposure_class": r["exposure_class"],
                "exposure_amount": r["exposure_amount"],
                "due_date": r["due_date"],
            },
        )


def _search_notes(events: list[review_sql.EventRow]) -> list[tuple[int, str]]:
    """Per exception, what the note trigger of 0075 appends for its events in order:
    ' ' || note of each event with a note."""
    notes: dict[int, str] = {}
    for exc_id, _, _, note, *_ in events:
        if note:
            notes[exc_id] = notes.get(exc_id, "") + " " + note
    return list(notes.items())


def unsynced_run(conn: sqlite3.Connection) -> int | None:
    """The latest completed run when the exception queue was never brought in line with it
    (its process stopped, or its sync was refused, after the run was stored and before the
    sync committed: two transactions); None when the queue follows the latest completed
    run, or there is none. The queue then still shows an earlier run's findings."""
    from core.db.runs import latest_completed_run_id

    latest = latest_completed_run_id(conn)
    if latest is None:
        return None
    synced = review_sql.latest_synced_run(conn)
    return latest if synced is None or synced < latest else None


def sync_unsynced(conn: sqlite3.Connection, actor: str = ENGINE_ACTOR) -> SyncSummary | None:
    """Sync the queue with `unsynced_run`, as its own run would have: due dates from its
    as-of, counting its holidays; None when there is nothing to sync. The caller holds the
    run lock (core.db.run_lock), so no run is being stored meanwhile."""
    from core.db.runs import get_run
    from core.engine.params import EngineParams

    run_id = unsynced_run(conn)
    run = None if run_id is None else get_run(conn, run_id)
    if run is None:
        return None
    holidays = EngineParams.from_dict(run.params).calendar.holidays
    return sync_exceptions(
        conn, run.id, actor, calendar=WorkingCalendar(holidays), due_from=run.as_of
    )


def recount_exception_totals(conn: sqlite3.Connection, actor: str) -> str | None:
    """Count the stored exception totals (migration 0101: the Overview's and the close
    report's figures) again from the exceptions when they drifted, audited as
    `exception_totals.recounted` with what was wrong; None (nothing written) when they
    hold. Idempotent: a second call finds nothing to do."""
    from core.audit.chain import totals_drift_problem

    with transaction(conn):
        problem = totals_drift_problem(conn)
        if problem is None:
            return None
        page_reads.recompute_exception_totals(conn)
        event = AuditEvent(
            actor, "exception_totals.recounted", "exception_totals", "all", {"drift": problem}
        )
        append_many(conn, [event])
        write_anchor(conn)
    return problem


def unsynced_warning(conn: sqlite3.Connection, database: str | None = None) -> str | None:
    """What a reader of the queue should be told when `unsynced_run` finds one (database:
    the --db to name in the command; None: a placeholder)."""
    run_id = unsynced_run(conn)
    if run_id is None:
        return None
    synced = review_sql.latest_synced_run(conn)
    shows = "no run's findings" if synced is None else f"run {synced}'s findings"
    return (
        f"run {run_id} completed but the exception queue was not synced with it (the command "
        f"that stored it stopped before its sync); the queue shows {shows}. "
        f"`python -m core exceptions sync --db {database or 'DATABASE'}` (or the next run) "
        "brings it in line"
    )
