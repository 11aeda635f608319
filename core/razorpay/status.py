"""`sync_status(conn)`: everything the Data page shows about Razorpay live data, in one value.

Read-only: it never writes, so the page can call it on every rerun.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from dataclasses import dataclass

from core.db import razorpay as db
from core.db.run_lock import database_key

RECENT_ERRORS = 20
STALE_AFTER_SECONDS = 3600


@dataclass(frozen=True)
class SyncRunInfo:
    """One sync run.

    id, status (running, completed, failed, interrupted), started_at / finished_at (Unix
    seconds; finished_at None while running), range_from / range_to (IST dates, ISO),
    base_url, resumed (continued an unfinished range), requests / retries (HTTP requests sent
    and retries used), steps (IST days committed), items (fetched in those steps),
    inserted / updated (rows new or changed in the database), error (why it stopped).
    """

    id: int
    status: str
    started_at: int
    finished_at: int | None
    range_from: str
    range_to: str
    base_url: str
    resumed: bool
    requests: int
    retries: int
    steps: int
    items: int
    inserted: int
    updated: int
    error: str | None


@dataclass(frozen=True)
class WatermarkInfo:
    """The resume point of one resource.

    resource: payments, refunds, settlements or settlement_recon. range_from / range_to: the
    IST range being synced. done_through: the last IST day stored completely (None: none
    yet). complete: the whole range was synced. items: stored for the range so far.
    run_id: the run that owns it (the one that started or last resumed the range; only it
    moves it). updated_at: when it last moved.
    """

    resource: str
    range_from: str
    range_to: str
    done_through: str | None
    complete: bool
    items: int
    run_id: int
    updated_at: int


@dataclass(frozen=True)
class SyncErrorInfo:
    """A logged sync failure: kind 'retried' (a retry followed) or 'fatal' (the run stopped).

    run_id, occurred_at (Unix seconds), resource / day (the step, when known),
    status_code (HTTP, None for timeouts and connection errors), message.
    """

    run_id: int
    occurred_at: int
    resource: str | None
    day: str | None
    kind: str
    status_code: int | None
    message: str


@dataclass(frozen=True)
class WebhookInfo:
    """Webhook deliveries so far.

    accepted / duplicates / rejected: counts by verdict (rejected = bad signature, malformed,
    unconfigured, refused or too large; unsigned ones are counted, not logged, so the last
    rejection shown is the last signed one). last_accepted_at / last_rejected_at: Unix seconds
    or None. last_rejected_reason: why the most recent rejection happened.
    """

    accepted: int
    duplicates: int
    rejected: int
    last_accepted_at: int | None
    last_rejected_at: int | None
    last_rejected_reason: str | None


@dataclass(frozen=True)
class SyncStatus:
    """What the Data page shows.

    state: 'never' (no sync yet), or the last run's status, with 'running' shown as
    'interrupted' when its process is gone. last_run / last_completed_run: None when absent.
    watermarks: one per resource ever synced. recent_errors: newest first (at most 20).
    webhooks: delivery counts. pending_rereconcile: entities webhooks touched since the last
    reconciliation took them into account. (No raw-table counts: the page shows none, and
    counting 10M payments on every render cost 0.3-0.6 s.)
    """

    state: str
    last_run: SyncRunInfo | None
    last_completed_run: SyncRunInfo | None
    watermarks: tuple[WatermarkInfo, ...]
    recent_errors: tuple[SyncErrorInfo, ...]
    webhooks: WebhookInfo
    pending_rereconcile: int

    @property
    def headline(self) -> str:
        """One sentence for the top of the panel."""
        run = self.last_run
        if run is None:
            return "Never synced from Razorpay."
        text = (
            f"Last sync #{run.id} ({run.range_from} to {run.range_to}): {self.state}, "
            f"{run.items:,} items fetched, {run.inserted:,} new, {run.updated:,} changed"
        )
        if run.error and self.state != "completed":
            text += f". {run.error}"
        return text


def _run(row: sqlite3.Row | None) -> SyncRunInfo | None:
    if row is None:
        return None
    return SyncRunInfo(
        id=int(row["id"]),
        status=str(row["status"]),
        started_at=int(row["started_at"]),
        finished_at=None if row["finished_at"] is None else int(row["finished_at"]),
        range_from=str(row["range_from"]),
        range_to=str(row["range_to"]),
        base_url=str(row["base_url"]),
        resumed=bool(row["resumed"]),
        requests=int(row["requests"]),
        retries=int(row["retries"]),
        steps=int(row["steps"]),
        items=int(row["items"]),
        inserted=int(row["inserted"]),
        updated=int(row["updated"]),
        error=None if row["error"] is None else str(row["error"]),
    )


# The sync runs at work in this process, by database (core.db.run_lock.database_key) and
# run id, with who started them and when: the app serves every admin from one process, so a
# 'running' run carrying this process's pid may be a live sync on another thread.
_live_here: dict[tuple[str, int], tuple[str, int]] = {}
_live_guard = threading.Lock()


def mark_live(conn: sqlite3.Connection, run_id: int, actor: str, started_at: int) -> None:
    """Record that this process is running sync run `run_id` of `conn`'s database."""
    with _live_guard:
        _live_here[(database_key(conn), run_id)] = (actor, started_at)


def mark_ended(conn: sqlite3.Connection, run_id: int) -> None:
    """The run is no longer at work in this process (finished, failed or abandoned)."""
    with _live_guard:
        _live_here.pop((database_key(conn), run_id), None)


def live_here(conn: sqlite3.Connection, run_id: int) -> tuple[str, int] | None:
    """(actor, started_at) of a run at work in this process, None when it is not."""
    with _live_guard:
        return _live_here.get((database_key(conn), run_id))


def run_process_alive(
    pid: int, host: str, heartbeat_at: int, *, live_in_this_process: bool = False
) -> bool:
    """Whether the process of a 'running' sync run may still be at work: its heartbeat is
    recent and, on this machine, its pid still exists (another machine sharing the file is
    trusted while its heartbeat is fresh). For this process's own pid the answer is
    `live_in_this_process` (`live_here`): a run another thread is syncing is alive, one this
    process left 'running' can only be a leftover.
    """
    if time.time() - heartbeat_at > STALE_AFTER_SECONDS:
        return False
    if host != socket.gethostname():
        return True
    if pid == os.getpid():
        return live_in_this_process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_run_alive(conn: sqlite3.Connection, row: sqlite3.Row) -> bool:
    """`run_process_alive` for a row of `razorpay_sync_runs` (id, pid, host, heartbeat_at)."""
    return run_process_alive(
        int(row["pid"]),
        str(row["host"]),
        int(row["heartbeat_at"]),
        live_in_this_process=live_here(conn, int(row["id"])) is not None,
    )


def sync_status(conn: sqlite3.Connection) -> SyncStatus:
    """The current Razorpay sync and webhook status, read from the database."""
    latest = db.latest_sync_runs(conn, 1)
    last_row = latest[0] if latest else None
    state = "never" if last_row is None else str(last_row["status"])
    if last_row is not None and state == "running" and not running_run_alive(conn, last_row):
        state = "interrupted"
    verdicts = db.webhook_verdict_counts(conn)
    accepted = db.last_webhook_delivery(conn, "accepted")
    rejected_rows = [
        r
        for r in (
            db.last_webhook_delivery(conn, v)
            for v in ("bad_signature", "malformed", "unconfigured", "refused")
        )
        if r is not None
    ]
    last_rejected = max(rejected_rows, key=lambda r: int(r["id"]), default=None)
    rejected_at = None if last_rejected is None else int(last_rejected["received_at"])
    rejected_reason = None if last_rejected is None else str(last_rejected["reason"])
    counted = db.last_webhook_rejection(conn)
    if counted is not None and (rejected_at is None or int(counted["last_at"]) > rejected_at):
        rejected_at = int(counted["last_at"])
        rejected_reason = f"{counted['verdict']} (unsigned deliveries are counted, not stored)"
    return SyncStatus(
        state=state,
        last_run=_run(last_row),
        last_completed_run=_run(db.last_sync_run_with_status(conn, "completed")),
        watermarks=tuple(
            WatermarkInfo(
                resource=str(r["resource"]),
                range_from=str(r["range_from"]),
                range_to=str(r["range_to"]),
                done_through=None if r["done_through"] is None else str(r["done_through"]),
                complete=bool(r["complete"]),
                items=int(r["items"]),
                run_id=int(r["run_id"]),
                updated_at=int(r["updated_at"]),
            )
            for r in db.watermarks(conn).values()
        ),
        recent_errors=tuple(
            SyncErrorInfo(
                run_id=int(r["run_id"]),
                occurred_at=int(r["occurred_at"]),
                resource=r["resource"],
                day=r["day"],
                kind=str(r["kind"]),
                status_code=None if r["status_code"] is None else int(r["status_code"]),
                message=str(r["message"]),
            )
            for r in db.recent_sync_errors(conn, RECENT_ERRORS)
        ),
        webhooks=WebhookInfo(
            accepted=verdicts.get("accepted", 0),
            duplicates=verdicts.get("duplicate", 0),
            rejected=sum(
                verdicts.get(v, 0)
                for v in ("bad_signature", "malformed", "unconfigured", "refused", "too_large")
            ),
            last_accepted_at=None if accepted is None else int(accepted["received_at"]),
            last_rejected_at=rejected_at,
            last_rejected_reason=rejected_reason,
        ),
        pending_rereconcile=db.open_rereconcile_mark_count(conn),
    )
