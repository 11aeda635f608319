"""`python -m core sync`: pull payments, refunds, settlements, settlement recon, instant
settlements (with their payouts), disputes and transfers from Razorpay.

The unit of work is a *step*: one IST day. A step fetches every page of every resource for
its day first, validates all items, then writes them, the watermarks and the run's counters
in one transaction. So a sync that stops (Razorpay down past the retry budget, a crash,
Ctrl-C) leaves only whole days behind, and the watermarks say which.

Resume rule: when the previous sync of the *same* date range did not finish, each resource
continues after its watermark (`done_through`); otherwise the whole range is fetched again,
which picks up status changes of entities created in it (upserts are idempotent, so
unchanged data stays unchanged). Only days that are over in IST (before today) advance a
watermark: today's data can still grow, so a resumed sync fetches it again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import random
import socket
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from core.activity import default_actor, record_sync
from core.audit import write_anchor
from core.calendar import ist_date
from core.dataset import Dataset
from core.db import razorpay as db
from core.db import transaction
from core.db.run_lock import run_lock
from core.errors import ConfigError, RazorReconError, RefusedError
from core.razorpay.client import RESOURCES, Item, RazorpayReader
from core.razorpay.config import RazorpaySettings
from core.razorpay.errors import RazorpayUnavailableError, SyncTakenOverError
from core.razorpay.http import RetryEvent, RetryingSession
from core.razorpay.status import live_here, mark_ended, mark_live, running_run_alive

SOURCE = "razorpay_api"
MAX_RANGE_DAYS = 3660
# How often a running sync refreshes its heartbeat between steps (seconds).
HEARTBEAT_EVERY_SECONDS = 60

# resource -> (raw table, Dataset field)
_TARGETS: dict[str, tuple[str, str]] = {
    "payments": ("payments", "payments"),
    "refunds": ("refunds", "refunds"),
    "settlements": ("settlements", "settlements"),
    "settlement_recon": ("recon_rows", "recon"),
    "instant_settlements": ("instant_settlements", "instant_settlements"),
    "disputes": ("disputes", "disputes"),
    "transfers": ("transfers", "transfers"),
}
# The importer's kind, raw table and Dataset field of the payouts nested in an instant
# settlement (`expand[]=ondemand_payouts`), stored as an instant_settlements.json file's are.
_PAYOUTS = ("instant_payouts", "instant_payouts", "instant_payouts")


@dataclass(frozen=True)
class ResourceReport:
    """What one sync did for one resource.

    resource: one of RESOURCES (core.razorpay.client). first_day: the first IST day
    fetched (after the watermark when resumed); None when nothing was left to fetch.
    days: steps committed. items: items fetched in them. inserted: rows new to the database.
    updated: stored rows whose values changed (for instant_settlements both counts include
    their payouts' rows). resumed: continued an unfinished range.
    """

    resource: str
    first_day: dt.date | None
    days: int = 0
    items: int = 0
    inserted: int = 0
    updated: int = 0
    resumed: bool = False


@dataclass(frozen=True)
class SyncReport:
    """The outcome of a completed sync run.

    run_id: row in razorpay_sync_runs. date_from / date_to: the IST range. requests: HTTP
    requests sent (retries included). retries: every retry (errors and 429s).
    resources: one report per resource, in RESOURCES order. rate_limited: the retries that
    answered a 429. paced_seconds / backoff_seconds: seconds waited by the pacer between
    requests and before retries.
    """

    run_id: int
    date_from: dt.date
    date_to: dt.date
    requests: int
    retries: int
    resources: tuple[ResourceReport, ...]
    rate_limited: int = 0
    paced_seconds: float = 0.0
    backoff_seconds: float = 0.0

    @property
    def items(self) -> int:
        return sum(r.items for r in self.resources)

    @property
    def inserted(self) -> int:
        return sum(r.inserted for r in self.resources)

    @property
    def updated(self) -> int:
        return sum(r.updated for r in self.resources)

    @property
    def resumed(self) -> bool:
        return any(r.resumed for r in self.resources)


def _now() -> int:
    return int(time.time())


def _days(first: dt.date, last: dt.date) -> list[dt.date]:
    return [first + dt.timedelta(days=n) for n in range((last - first).days + 1)]


def _plain(value: object) -> object:
    """A frame cell as SQLite gives it back: None for missing, int for bools and numbers."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def _as_stored(table: str, frame: pd.DataFrame) -> list[tuple[str, tuple[object, ...]]]:
    """(key, compared values) per frame row, in the form `db.stored_rows` returns them."""
    key_column, columns = db.RAW_TABLES[table]
    keys = [str(k) for k in frame[key_column].tolist()]
    values = [[_plain(v) for v in frame[c].tolist()] for c in columns]
    return list(zip(keys, zip(*values, strict=True), strict=True))


def _without(values: tuple[object, ...], skip: list[int]) -> tuple[object, ...]:
    """`values` without the positions in `skip`."""
    if not skip:
        return values
    return tuple(v for i, v in enumerate(values) if i not in skip)


def _fingerprint(rows: list[tuple[str, tuple[object, ...]]]) -> str:
    canonical = json.dumps(rows, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _unique_by_id(items: list[Item]) -> list[Item]:
    """Drop repeats of an id (a page boundary that shifted while paging); keep the last."""
    by_id: dict[object, Item] = {}
    for item in items:
        by_id[item.get("id")] = item
    return list(by_id.values()) if len(by_id) < len(items) else items


class _Run:
    """The bookkeeping of one sync run: its row, its session's counters, its error log."""

    def __init__(
        self, conn: sqlite3.Connection, run_id: int, wall_clock: Callable[[], float] = time.time
    ) -> None:
        self.conn = conn
        self.run_id = run_id
        self.wall_clock = wall_clock
        self.beat_at = wall_clock()
        self.session: RetryingSession | None = None
        self.resource: str | None = None
        self.day: dt.date | None = None
        self.actor = ""

    def on_retry(self, event: RetryEvent) -> None:
        action = f"gave up: {event.limit}" if event.final else f"retrying in {event.delay:.2f}s"
        db.record_sync_error(
            self.conn,
            self.run_id,
            now=_now(),
            resource=self.resource,
            day=self.day.isoformat() if self.day else None,
            kind="fatal" if event.final else "retried",
            status_code=event.status_code,
            message=f"{event.reason} on try {event.attempt} of {event.url}; {action}",
        )

    def on_attempt(self) -> None:
        """Keep the run's heartbeat fresh while a slow (rate-limited) day is fetched, so
        no other sync takes it for dead (core.razorpay.status.STALE_AFTER_SECONDS)."""
        now = self.wall_clock()
        if now - self.beat_at >= HEARTBEAT_EVERY_SECONDS:
            db.touch_sync_run(self.conn, self.run_id, now=int(now))
            self.beat_at = now

    @property
    def requests(self) -> int:
        return self.session.requests_sent if self.session else 0

    @property
    def retries(self) -> int:
        return self.session.retries_used if self.session else 0


def _claim(
    conn: sqlite3.Connection,
    settings: RazorpaySettings,
    date_from: dt.date,
    date_to: dt.date,
    restart: bool,
    actor: str,
) -> tuple[int, dict[str, tuple[dt.date, bool]]]:
    """Start a run: retire dead runs, refuse if one is alive (in another process, or on
    another thread of this one), decide where each resource starts, reset the watermarks of
    resources that start afresh and take over the others'. One transaction; the run is
    recorded as live in this process (core.razorpay.status.mark_live) before it commits, so
    a claim on another thread that sees it 'running' never takes it for a leftover.
    """
    started: list[int] = []
    try:
        with transaction(conn):
            return _start_run(conn, settings, date_from, date_to, restart, actor, started)
    except BaseException:
        for run_id in started:  # its transaction rolled back: no such run
            mark_ended(conn, run_id)
        raise


def _start_run(
    conn: sqlite3.Connection,
    settings: RazorpaySettings,
    date_from: dt.date,
    date_to: dt.date,
    restart: bool,
    actor: str,
    started: list[int],
) -> tuple[int, dict[str, tuple[dt.date, bool]]]:
    """`_claim`'s work, inside its transaction; the new run's id is appended to `started`."""
    range_from, range_to = date_from.isoformat(), date_to.isoformat()
    now = _now()
    for row in db.running_sync_runs(conn):
        if running_run_alive(conn, row):
            raise RefusedError(_still_running(conn, row))
        db.finish_sync_run(
            conn,
            int(row["id"]),
            status="interrupted",
            now=now,
            error="the process ended before the sync finished",
        )
    marks = db.watermarks(conn)
    starts: dict[str, tuple[dt.date, bool]] = {}
    unfinished: set[str] = set()
    for resource in RESOURCES:
        mark = marks.get(resource)
        if (
            not restart
            and mark is not None
            and mark["range_from"] == range_from
            and mark["range_to"] == range_to
            and not mark["complete"]
        ):
            unfinished.add(resource)
            if mark["done_through"]:
                done = dt.date.fromisoformat(str(mark["done_through"]))
                starts[resource] = (done + dt.timedelta(days=1), True)
                continue
        starts[resource] = (date_from, False)
    run_id = db.start_sync_run(
        conn,
        now=now,
        range_from=range_from,
        range_to=range_to,
        base_url=settings.base_url,
        pid=os.getpid(),
        host=socket.gethostname(),
        resumed=any(resumed for _, resumed in starts.values()),
    )
    for resource in RESOURCES:
        if resource in unfinished:
            db.own_watermark(conn, resource, run_id=run_id, now=now)
        else:
            db.reset_watermark(
                conn,
                resource,
                range_from=range_from,
                range_to=range_to,
                run_id=run_id,
                now=now,
            )
    started.append(run_id)
    mark_live(conn, run_id, actor, now)
    return run_id, starts


def _when(unix_seconds: int) -> str:
    return dt.datetime.fromtimestamp(unix_seconds, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _still_running(conn: sqlite3.Connection, row: sqlite3.Row) -> str:
    """Why a sync is refused: who started the live run and when."""
    run_id, started = int(row["id"]), int(row["started_at"])
    here = live_here(conn, run_id)
    if here is not None:
        actor, started = here
        return (
            f"sync run {run_id} started by {actor} at {_when(started)} is still running in "
            f"this app (pid {row['pid']} on {row['host']}); wait for it to finish"
        )
    return (
        f"sync run {run_id} started at {_when(started)} by process {row['pid']} on "
        f"{row['host']} is still running; wait for it to finish"
    )


def _check_owner(conn: sqlite3.Connection, run: _Run, resources: Iterable[str]) -> None:
    """Refuse to write for a run another sync has retired (it took it for dead) or whose
    watermarks another sync has taken: SyncTakenOverError, and nothing of this step is
    written. Called inside the step's transaction, so the answer holds until it commits.
    """
    row = db.sync_run(conn, run.run_id)
    marks = db.watermarks(conn)
    owners = {
        int(marks[r]["run_id"])
        for r in resources
        if r in marks and marks[r]["run_id"] != run.run_id
    }
    if row is not None and row["status"] == "running" and not owners:
        return
    taker = max(owners) if owners else None
    latest = db.latest_sync_runs(conn, 1)
    if taker is None and latest and int(latest[0]["id"]) != run.run_id:
        taker = int(latest[0]["id"])
    who = f"sync run {taker} took over" if taker is not None else "another sync took over"
    where = f" while this one was on {run.day.isoformat()}" if run.day else ""
    raise SyncTakenOverError(
        f"{who} from sync run {run.run_id}{where} (it found this run "
        f"{'gone' if row is None else row['status']}): this run stopped and wrote nothing "
        "more; the days it committed before stay. Sync again when that one has finished"
    )


_EMPTY = Dataset()  # frames are never mutated; sharing the empty ones saves rebuilding them
# The Dataset fields a sync may write (every table but the bank statement's).
_STORED_FIELDS = (*(field for _, field in _TARGETS.values()), _PAYOUTS[2])


def _store_day(
    conn: sqlite3.Connection,
    run: _Run,
    settings: RazorpaySettings,
    day: dt.date,
    fetched: dict[str, list[Item]],
    *,
    day_is_closed: bool,
) -> dict[str, tuple[int, int]]:
    """Write one step (a day) atomically: the rows that are new or changed (rows already
    stored as they are stay untouched, import id included), each fetched resource's watermark
    and the run's counters. Every item is validated before anything is written.
    Returns (inserted, updated) per resource.
    """
    from core.ingest import store_dataset
    from core.ingest.entities import frame_and_absent_from_items
    from core.ingest.instant import payouts_of

    # (resource, raw table, Dataset field, frame) per table written
    parts: list[tuple[str, str, str, pd.DataFrame]] = []
    absent: dict[str, tuple[str, ...]] = {}  # by Dataset field: fields no item carried

    def add(resource: str, kind: str, target: tuple[str, str], items: list[Item]) -> None:
        if not items:  # an empty day has nothing to validate or write
            return
        frame, lacking = frame_and_absent_from_items(
            kind, items, f"razorpay:{kind}:{day.isoformat()}"
        )
        parts.append((resource, *target, frame))
        if lacking:
            absent[target[1]] = lacking

    for resource, items in fetched.items():
        if resource != "settlement_recon":
            items = fetched[resource] = _unique_by_id(items)
        add(resource, resource, _TARGETS[resource], items)
        if resource == "instant_settlements":
            payouts = _unique_by_id([p for item in items for p in payouts_of(item)])
            add(resource, _PAYOUTS[0], _PAYOUTS[1:], payouts)
    counts: dict[str, tuple[int, int]] = {resource: (0, 0) for resource in fetched}
    # Not inside a run (core.db.run_lock): rows stored after a run read the stored state but
    # before it recorded itself would count as reconciled by it. Taken before the transaction.
    with run_lock(conn, "a Razorpay sync"), transaction(conn):
        _check_owner(conn, run, fetched)
        changed_frames: dict[str, pd.DataFrame] = {}
        changed_rows: list[tuple[str, tuple[object, ...]]] = []
        for resource, table, field_name, frame in parts:
            incoming = _as_stored(table, frame)
            before = db.stored_rows(conn, table, (key for key, _ in incoming))
            # Fields no item carried are kept as stored: they change nothing.
            kept = set(absent.get(field_name, ()))
            skip = [i for i, c in enumerate(db.RAW_TABLES[table][1]) if c in kept]
            differs = [
                key not in before or _without(before[key], skip) != _without(values, skip)
                for key, values in incoming
            ]
            if not any(differs):
                continue
            changed = [row for row, flag in zip(incoming, differs, strict=True) if flag]
            inserted = sum(1 for key, _ in changed if key not in before)
            was_inserted, was_updated = counts[resource]
            counts[resource] = (
                was_inserted + inserted,
                was_updated + len(changed) - inserted,
            )
            changed_frames[field_name] = frame[differs].reset_index(drop=True)
            changed_rows.extend(changed)
        if changed_frames:
            store_dataset(
                conn,
                Dataset(
                    **{
                        name: changed_frames.get(name, getattr(_EMPTY, name))
                        for name in _STORED_FIELDS
                    },
                    # A field the API left out of every item keeps its stored value (a
                    # Dashboard report's settled_by): docs/ingest.md, "Switching layouts".
                    absent=MappingProxyType(absent),
                ),
                source=SOURCE,
                location=f"{settings.base_url} {day.isoformat()}",
                content_hash=_fingerprint(changed_rows),
                # The API reports each entity as it is now: a status it moves back is a
                # later event stored meanwhile (a webhook, a newer file), so the day is
                # refused like an older file (core.ingest.lifecycle) and synced again.
                older_hint="the stored row is newer than the API's answer: sync this day again",
            )
        for resource, items in fetched.items():
            if not db.advance_watermark(
                conn,
                resource,
                done_through=day.isoformat() if day_is_closed else None,
                items=len(items),
                run_id=run.run_id,
                now=_now(),
            ):
                _check_owner(conn, run, (resource,))
        db.record_sync_step(
            conn,
            run.run_id,
            now=_now(),
            requests=run.requests,
            retries=run.retries,
            items=sum(len(items) for items in fetched.values()),
            inserted=sum(i for i, _ in counts.values()),
            updated=sum(u for _, u in counts.values()),
        )
    return counts


def sync(
    conn: sqlite3.Connection,
    settings: RazorpaySettings,
    date_from: dt.date,
    date_to: dt.date,
    *,
    restart: bool = False,
    today: dt.date | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
    on_step: Callable[[str, dt.date, int], None] | None = None,
    actor: str = "",
) -> SyncReport:
    """Sync every IST day of [date_from, date_to] for every resource; see the module doc.

    `actor`: who asked for it (the signed-in person in the app; default the operating-system
    login, as the command line); the transaction that closes the run, completed or failed,
    appends one `razorpay.synced` audit entry by them (core.activity) and anchors it.

    `restart` ignores an unfinished range's watermarks. `today` (IST) decides which days are
    over; `sleep`/`rng`/`clock`/`wall_clock` drive the pacing and backoff (tests pass fakes).
    `on_step(resource, day, items)` is called for each resource of a day once that day is
    committed (progress display).
    Raises RazorpayUnavailableError, RazorpayAPIError, RazorpayAuthError, InputError (bad
    data from the API) or RunInProgressError (a reconcile run stored into the database for
    longer than RAZORRECON_RUN_WAIT_S: each day's store waits for the run lock); the run is
    then recorded as failed with its error, and every step committed before it stays.
    """
    if date_from > date_to:
        raise ConfigError(f"--from {date_from} is after --to {date_to}")
    if (date_to - date_from).days >= MAX_RANGE_DAYS:
        raise ConfigError(f"a sync covers at most {MAX_RANGE_DAYS} days; split the range")
    current_day = today or ist_date(_now())
    who = actor or default_actor()
    from core.audit.rawcheck import refuse_unrecorded_changes

    refuse_unrecorded_changes(conn, macs=False)  # its entries would record them as its own
    run_id, starts = _claim(conn, settings, date_from, date_to, restart, who)
    try:
        return _sync_claimed(
            conn, settings, run_id, starts, (date_from, date_to), who, current_day,
            sleep=sleep, rng=rng, clock=clock, wall_clock=wall_clock, on_step=on_step,
        )  # fmt: skip
    finally:
        mark_ended(conn, run_id)


def _sync_claimed(
    conn: sqlite3.Connection,
    settings: RazorpaySettings,
    run_id: int,
    starts: dict[str, tuple[dt.date, bool]],
    dates: tuple[dt.date, dt.date],
    actor: str,
    current_day: dt.date,
    *,
    sleep: Callable[[float], None],
    rng: random.Random | None,
    clock: Callable[[], float],
    wall_clock: Callable[[], float],
    on_step: Callable[[str, dt.date, int], None] | None,
) -> SyncReport:
    """The body of `sync` once its run is claimed."""
    date_from, date_to = dates
    run = _Run(conn, run_id, wall_clock)
    run.actor = actor
    reports = {
        resource: ResourceReport(
            resource,
            first_day=start if start <= date_to else None,
            resumed=resumed,
        )
        for resource, (start, resumed) in starts.items()
    }
    try:
        run.session = RetryingSession(
            settings.retry,
            on_retry=run.on_retry,
            sleep=sleep,
            rng=rng,
            clock=clock,
            wall_clock=wall_clock,
            on_attempt=run.on_attempt,
        )
        reader = RazorpayReader(settings, run.session)
        for day in _days(date_from, date_to):
            fetched: dict[str, list[Item]] = {}
            run.day = day
            for resource in RESOURCES:
                if day >= starts[resource][0]:
                    run.resource = resource
                    fetched[resource] = reader.fetch_day(resource, day)
            if not fetched:
                continue
            run.resource = None
            counts = _store_day(conn, run, settings, day, fetched, day_is_closed=day < current_day)
            for resource, (inserted, updated) in counts.items():
                previous = reports[resource]
                reports[resource] = replace(
                    previous,
                    days=previous.days + 1,
                    items=previous.items + len(fetched[resource]),
                    inserted=previous.inserted + inserted,
                    updated=previous.updated + updated,
                )
            if on_step is not None:
                for resource, items in fetched.items():
                    on_step(resource, day, len(items))
        run.resource = run.day = None
        with transaction(conn):
            _check_owner(conn, run, RESOURCES)
            for resource in RESOURCES:
                if not db.complete_watermark(conn, resource, run_id=run_id, now=_now()):
                    _check_owner(conn, run, (resource,))
            db.finish_sync_run(
                conn,
                run_id,
                status="completed",
                now=_now(),
                requests=run.requests,
                retries=run.retries,
            )
            record_sync(
                conn,
                run_id,
                actor=run.actor,
                status="completed",
                date_from=date_from,
                date_to=date_to,
                requests=run.requests,
                retries=run.retries,
                resources=[reports[r] for r in RESOURCES],
            )
            write_anchor(conn)
    except KeyboardInterrupt:
        _fail(run, "interrupted", "interrupted by the user", reports, (date_from, date_to))
        raise
    except RazorReconError as exc:
        record = not isinstance(exc, RazorpayUnavailableError)
        _fail(run, "failed", str(exc), reports, (date_from, date_to), record=record)
        raise
    except Exception as exc:
        _fail(run, "failed", f"{type(exc).__name__}: {exc}", reports, (date_from, date_to))
        raise
    return SyncReport(
        run_id=run_id,
        date_from=date_from,
        date_to=date_to,
        requests=run.requests,
        retries=run.retries,
        resources=tuple(reports[r] for r in RESOURCES),
        rate_limited=run.session.rate_limit_retries,
        paced_seconds=run.session.pacer.waited,
        backoff_seconds=run.session.backoff_seconds,
    )


def _fail(
    run: _Run,
    status: str,
    message: str,
    reports: dict[str, ResourceReport],
    dates: tuple[dt.date, dt.date],
    *,
    record: bool = True,
) -> None:
    """Close the run as failed/interrupted; the error goes to the errors log unless the
    session has logged it already (a final retry event). The days committed before stay
    stored, so the run's audit entry is written as for a completed one.
    """
    if record:
        db.record_sync_error(
            run.conn,
            run.run_id,
            now=_now(),
            resource=run.resource,
            day=run.day.isoformat() if run.day else None,
            kind="fatal",
            status_code=None,
            message=message,
        )
    with transaction(run.conn):
        db.finish_sync_run(
            run.conn,
            run.run_id,
            status=status,
            now=_now(),
            requests=run.requests,
            retries=run.retries,
            error=message,
        )
        record_sync(
            run.conn,
            run.run_id,
            actor=run.actor,
            status=status,
            date_from=dates[0],
            date_to=dates[1],
            requests=run.requests,
            retries=run.retries,
            resources=[reports[r] for r in RESOURCES],
            error=message,
        )  # not anchored here: a failing anchor must not hide the sync's own error


def sync_settings_summary(settings: RazorpaySettings) -> dict[str, Any]:
    """What the CLI prints about the connection (never the secret)."""
    return {
        "base_url": settings.base_url,
        "key_id": settings.key_id,
        "mode": "test" if settings.is_test_key else "live",
    }
