"""The audit trail: an append-only table whose rows are chained by SHA-256.

Each row's hash covers a canonical JSON of its own content (seq, time, actor, action,
entity, payload) and the previous row's hash, so editing, deleting, inserting or
reordering any row breaks the chain from that row on. Appends take SQLite's write lock
before reading the chain's head (BEGIN IMMEDIATE, or the caller's transaction), and a
UNIQUE index on prev_hash makes a fork impossible even for a writer that skips the lock.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from core.audit.anchor import (
    ANCHOR_DIR_ENV,
    ANCHOR_KEY_ENV,
    AnchorCheck,
    make_anchor,
    read_anchors,
)
from core.audit.rawcheck import unrecorded_changes
from core.audit.replay import Replay
from core.calendar import IST
from core.db import audit as audit_sql
from core.db import transaction
from core.db.audit import AuditFilter, AuditRow
from core.db.page_reads import exception_totals_drift
from core.errors import InputError, Problem
from core.money import format_inr
from core.outputs import output_target, place_output, safe_row, temporary_for

GENESIS_HASH = "0" * 64
ANCHOR_ACTION = "audit.anchor"
EXPORT_COLUMNS = (
    "seq",
    "created_at",
    "actor",
    "action",
    "entity_type",
    "entity_id",
    "payload_json",
    "prev_hash",
    "hash",
)


# One encoder for every call: json.dumps with options builds a new one each time.
def _plain(value: Any) -> Any:
    """numpy scalars (from pandas frames) become Python numbers; dates ISO text."""
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable for the audit trail: {type(value).__name__}")


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain
)


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no spaces, UTF-8 kept as is."""
    return _CANONICAL.encode(value)


# Keys already in sorted order, so the envelope needs no sorting: same text as canonical_json.
_ENVELOPE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def row_hash(
    seq: int,
    created_at: int,
    actor: str,
    action: str,
    entity_type: str,
    entity_id: str,
    payload_json: str,
    prev_hash: str,
) -> str:
    """SHA-256 (hex) over the canonical JSON of a row's content and its predecessor's hash:
    {"action","actor","created_at","entity_id","entity_type","payload","prev_hash","seq"}
    with sorted keys and no spaces, `payload` being the stored payload_json text."""
    content = {
        "action": action,
        "actor": actor,
        "created_at": created_at,
        "entity_id": entity_id,
        "entity_type": entity_type,
        "payload": payload_json,
        "prev_hash": prev_hash,
        "seq": seq,
    }
    return hashlib.sha256(_ENVELOPE.encode(content).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AuditEvent:
    """One entry to append.

    actor: who acted (a reviewer's name, or 'engine'); action: what happened, dotted
    (e.g. 'exception.resolved'); entity_type/entity_id: what it happened to;
    payload: JSON-serialisable details (money as integer paise).
    """

    actor: str
    action: str
    entity_type: str
    entity_id: str
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class AuditEntry:
    """One stored row of the trail; `payload_json` is exactly what was hashed."""

    seq: int
    created_at: int
    actor: str
    action: str
    entity_type: str
    entity_id: str
    payload_json: str
    prev_hash: str
    hash: str

    @property
    def payload(self) -> Any:
        return json.loads(self.payload_json)

    @classmethod
    def from_row(cls, row: AuditRow) -> AuditEntry:
        return cls(*row)


@dataclass(frozen=True)
class VerifyResult:
    """The outcome of walking the chain.

    ok: every row's hash and link hold, the protective triggers exist as their migrations
    created them (every trigger of the migrations, the GUARD_TRIGGERS among them:
    core.db.audit.migration_triggers, core.db.guards), every anchored (seq, hash) is in
    the chain, and the exceptions are what replaying the trail gives;
    rows_checked: rows walked; head_seq/head_hash: the last row (0 and the genesis hash
    for an empty trail); broken_seq: the first row that fails (None when ok or when the
    problem is not one row); problem: what is wrong, in plain words; anchors_checked:
    anchor lines read (core.audit.anchor); broken_exception: the exception whose state
    does not match the trail; broken_user / broken_approval: the person (email) or
    four-eyes approval (id) whose state does not match it; warnings: what holds but
    deserves attention (no anchors yet, anchors not signed); violations: each entry whose
    actor could not make it at that point of the trail ('row SEQ: ACTOR ACTION: why',
    core.audit.replay.Replay.authorise), in seq order.
    """

    ok: bool
    rows_checked: int
    head_seq: int
    head_hash: str
    broken_seq: int | None
    problem: str
    anchors_checked: int = 0
    broken_exception: int | None = None
    warnings: tuple[str, ...] = ()
    broken_user: str | None = None
    broken_approval: int | None = None
    violations: tuple[str, ...] = ()


def _check_text(field: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError([Problem("audit", 0, field, "must be a non-empty text")])
    return value


def _prepare(events: Iterable[AuditEvent], start_seq: int, prev: str, now: int) -> list[AuditRow]:
    rows: list[AuditRow] = []
    seq = start_seq
    for event in events:
        actor = _check_text("actor", event.actor)
        action = _check_text("action", event.action)
        entity_type = _check_text("entity_type", event.entity_type)
        entity_id = _check_text("entity_id", str(event.entity_id))
        payload_json = canonical_json(dict(event.payload))
        digest = row_hash(seq, now, actor, action, entity_type, entity_id, payload_json, prev)
        rows.append((seq, now, actor, action, entity_type, entity_id, payload_json, prev, digest))
        prev = digest
        seq += 1
    return rows


def append_many(
    conn: sqlite3.Connection, events: Iterable[AuditEvent], *, now: int | None = None
) -> list[int]:
    """Append events in order, in the caller's transaction or a new one; their seqs."""
    return _append_after(conn, events, now, None)


def append_many_beside(
    conn: sqlite3.Connection,
    events: Iterable[AuditEvent],
    work: Callable[[], None],
    *,
    now: int | None = None,
) -> list[int]:
    """`append_many`, the chain's JSON and hashes computed on a worker thread while `work`
    runs on this one, in the caller's transaction (or a new one): the same rows, inserted
    after `work` returns. `work` must not append to the chain itself (the head is read
    before it runs). The worker touches no connection; its error (a bad event) is raised
    after `work`, whose writes the caller's transaction then rolls back with the rest.
    `events` is iterated on the worker: a generator's entries are made there.
    Used by the exception sync: its audit entries hashed while the queue's search
    documents are written (docs/benchmark.md, "--db at 1M, seventh round")."""
    return _append_after(conn, events, now, work)


def _append_after(
    conn: sqlite3.Connection,
    events: Iterable[AuditEvent],
    now: int | None,
    work: Callable[[], None] | None,
) -> list[int]:
    """The rows of `events` chained on the head, inserted after `work` (if any) ran while a
    worker thread prepared them."""
    stamp = int(time.time()) if now is None else int(now)
    with transaction(conn):
        top = audit_sql.head(conn)
        start, prev = (1, GENESIS_HASH) if top is None else (top[0] + 1, top[1])
        if work is None:
            rows = _prepare(events, start, prev, stamp)
        else:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit-hash") as pool:
                prepared = pool.submit(_prepare, events, start, prev, stamp)
                work()  # on its error the pool's exit waits for the worker, then it is raised
                rows = prepared.result()
        if rows:
            audit_sql.insert_rows(conn, rows)
    return [r[0] for r in rows]


def append(
    conn: sqlite3.Connection,
    *,
    actor: str,
    action: str,
    entity_type: str,
    entity_id: str,
    payload: Mapping[str, Any],
    now: int | None = None,
) -> int:
    """Append one entry to the chain; its seq. Atomic with the caller's transaction."""
    event = AuditEvent(actor, action, entity_type, str(entity_id), payload)
    return append_many(conn, [event], now=now)[0]


def verify(
    conn: sqlite3.Connection,
    *,
    anchor: str | None = None,
    anchors_path: str | Path | None = None,
) -> VerifyResult:
    """Walk the whole chain and recompute every hash and link; check it against the
    anchors recorded outside the database (core.audit.anchor; `anchors_path` overrides
    where they are read from) and replay it against the exceptions (core.audit.replay).

    `anchor` is a head hash recorded earlier by hand ('SEQ:HASH' or just HASH): the chain
    must still contain it, which catches a cut-off tail or a chain rewritten from some row on.
    """
    anchors = read_anchors(conn, Path(anchors_path) if anchors_path is not None else None)
    # One read snapshot for the whole walk, so concurrent appends cannot confuse it.
    with transaction(conn, immediate=False):
        return _verify(conn, anchor, anchors)


def _verify(conn: sqlite3.Connection, anchor: str | None, anchors: AnchorCheck) -> VerifyResult:
    prev = GENESIS_HASH
    expected_seq = 1
    checked = 0
    last_seq = 0
    anchor_seq, anchor_hash = _parse_anchor(anchor)
    anchor_found = anchor is None
    required = anchors.required
    from core.four_eyes import four_eyes_threshold

    replay = Replay(four_eyes=four_eyes_threshold())

    def broken(seq: int, problem: str) -> VerifyResult:
        return VerifyResult(
            False, checked, last_seq, prev, seq, f"row {seq}: {problem}", anchors.lines
        )

    if anchors.problems:
        return VerifyResult(False, 0, 0, prev, None, "; ".join(anchors.problems[:3]), anchors.lines)
    for row in audit_sql.iter_rows(conn):
        entry = AuditEntry.from_row(row)
        if entry.seq != expected_seq:
            return broken(
                entry.seq,
                f"expected seq {expected_seq} next; rows {expected_seq}..{entry.seq - 1} "
                "are missing",
            )
        if entry.prev_hash != prev:
            return broken(
                entry.seq,
                "prev_hash does not match the hash of the row before it "
                "(a row was removed, inserted or moved)",
            )
        digest = row_hash(
            entry.seq,
            entry.created_at,
            entry.actor,
            entry.action,
            entry.entity_type,
            entry.entity_id,
            entry.payload_json,
            entry.prev_hash,
        )
        if digest != entry.hash:
            return broken(entry.seq, "content does not match its hash (the row was edited)")
        if entry.seq in required and required[entry.seq] != entry.hash:
            return broken(
                entry.seq,
                f"hash differs from the one anchored at seq {entry.seq} outside the database "
                f"({required[entry.seq][:16]}…): the chain was rewritten from this row or earlier",
            )
        replay.authorise(
            entry.seq, entry.actor, entry.action, entry.entity_type, entry.payload_json
        )
        if entry.entity_type == "exception":
            replay.add(entry.seq, entry.action, entry.entity_id, entry.payload_json, entry.actor)
        elif entry.entity_type == "user":
            replay.add_user(entry.action, entry.entity_id, entry.payload_json)
        if not anchor_found and entry.hash == anchor_hash:
            if anchor_seq is not None and anchor_seq != entry.seq:
                return broken(entry.seq, f"anchor {anchor} found at another seq")
            anchor_found = True
        prev = entry.hash
        last_seq = entry.seq
        expected_seq += 1
        checked += 1
    if not anchor_found:
        return VerifyResult(
            False,
            checked,
            last_seq,
            prev,
            None,
            f"anchor {anchor} is not in the chain (rows were cut off or rewritten)",
            anchors.lines,
        )
    beyond = [seq for seq in required if seq > last_seq]
    if beyond:
        seq = min(beyond)
        return VerifyResult(
            False,
            checked,
            last_seq,
            prev,
            seq,
            f"row {seq}: anchored outside the database but missing from the chain, whose "
            f"head is {last_seq} (rows were cut off)",
            anchors.lines,
        )
    guards = audit_sql.altered_guards(conn)
    if guards:
        missing = sorted(name for name, why in guards.items() if why == "missing")
        changed = [f"{name} ({why})" for name, why in sorted(guards.items()) if why != "missing"]
        said = [f"protective trigger(s) missing: {', '.join(missing)}"] if missing else []
        said += [f"protective trigger(s) altered: {'; '.join(changed)}"] if changed else []
        return VerifyResult(False, checked, last_seq, prev, None, "; ".join(said), anchors.lines)
    altered = _latest_run_altered(conn)
    if altered is not None:
        return VerifyResult(False, checked, last_seq, prev, None, altered, anchors.lines)
    # The tables the trail replays (exceptions, people, four-eyes approvals): the first
    # whose stored state is not what its audited actions say, named with the row.
    exception = replay.mismatch(conn)
    user = None if exception else replay.user_mismatch(conn)
    approval = None if exception or user else replay.approval_mismatch(conn)
    found = exception or user or approval
    if found is not None:
        what = "exception" if exception else "user" if user else "approval"
        return VerifyResult(
            False,
            checked,
            last_seq,
            prev,
            None,
            f"{what} {found[0]}: {found[1]}",
            anchors.lines,
            broken_exception=exception[0] if exception else None,
            broken_user=user[0] if user else None,
            broken_approval=approval[0] if approval else None,
        )
    if replay.violations:
        rows = tuple(f"row {seq}: {why}" for seq, why in replay.violations)
        more = f" (and {len(rows) - 5} more)" if len(rows) > 5 else ""
        return VerifyResult(
            False,
            checked,
            last_seq,
            prev,
            replay.violations[0][0],
            f"{len(rows)} entr{'y' if len(rows) == 1 else 'ies'} made by someone who could "
            f"not make {'it' if len(rows) == 1 else 'them'}: " + "; ".join(rows[:5]) + more,
            anchors.lines,
            violations=rows,
        )
    drift = totals_drift_problem(conn)
    if drift is not None:
        return VerifyResult(False, checked, last_seq, prev, None, drift, anchors.lines)
    # The raw rows: each one's MAC, each table's count (core.audit.rawcheck).
    raw_changes = unrecorded_changes(conn)
    if raw_changes:
        problem = "raw rows changed outside the trail: " + "; ".join(raw_changes)
        return VerifyResult(False, checked, last_seq, prev, None, problem, anchors.lines)
    warnings = _warnings(anchors, checked) + _unrecorded_runs(conn)
    return VerifyResult(True, checked, last_seq, prev, None, "", anchors.lines, warnings=warnings)


def totals_drift_problem(conn: sqlite3.Connection) -> str | None:
    """What is wrong with the stored exception totals (migration 0101: the Overview's and
    the close report's counts and exposure), in plain words; None when they equal a count
    and a sum over the exceptions. A drift is no change to the trail, but the figures a
    month is closed on would be wrong (tester report of 2026-12-04, finding 1)."""
    found = exception_totals_drift(conn)
    if found is None:
        return None
    status, cls, code, _dated, _day, n, exposure = found
    more = "more" if n > 0 or (n == 0 and exposure > 0) else "fewer"
    return (
        f"the stored exception totals (the Overview's and the close report's figures) differ "
        f"from the exceptions table: {status} {cls or '-'} {code or '-'} counts {abs(n)} "
        f"exception(s) and {format_inr(abs(exposure))} {more} than the table holds; "
        "`python -m core exceptions recount --db DB` counts them again"
    )


# The entry core.activity writes for a stored run (defined here: core.activity imports
# the chain, never the other way round).
RUN_RECONCILED = "run.reconciled"


def _unrecorded_runs(conn: sqlite3.Connection) -> tuple[str, ...]:
    """A warning naming the completed runs the trail does not say who made (core.activity:
    the entry is written after the run is committed, so a process stopped between the two
    leaves a run that names no one)."""
    missing = audit_sql.runs_without_entry(conn, RUN_RECONCILED)
    if not missing:
        return ()
    shown = ", ".join(map(str, missing[:10])) + (
        f" and {len(missing) - 10} more" if len(missing) > 10 else ""
    )
    return (
        f"{len(missing)} completed run(s) have no {RUN_RECONCILED} entry, so the trail does not say"
        f" who made them: run {shown} (a process that stopped after storing the run and"
        " before recording it, or a tool that stores runs without recording them)",
    )


def _latest_run_altered(conn: sqlite3.Connection) -> str | None:
    """Why the latest completed run's stored outcomes are not the ones it completed with
    (their count by status differs from the counts it recorded), else None. The database
    refuses updates and deletes of a completed run's rows (migration 0113) but not an
    insert, and the next import-day carries that run's rows forward."""
    found = audit_sql.latest_run_counts(conn)
    if found is None:
        return None
    run_id, counts_json, stored = found
    try:
        recorded = json.loads(counts_json).get("by_status") if counts_json else None
    except (ValueError, AttributeError):
        recorded = None
    if not isinstance(recorded, dict):
        return None  # a run stored without them (older runs, tests' hand-made runs)
    wanted = {str(k): int(v) for k, v in recorded.items() if int(v)}
    if wanted == stored:
        return None
    return (
        f"run {run_id}: its stored outcomes by status {dict(sorted(stored.items()))} are not "
        f"the {dict(sorted(wanted.items()))} it recorded when it completed (rows were added "
        "or removed)"
    )


def _warnings(anchors: AnchorCheck, rows: int) -> tuple[str, ...]:
    notes: list[str] = []
    if rows and not anchors.lines:
        where = anchors.path or "(no database file)"
        notes.append(f"no anchors found at {where}: only the chain's own consistency was checked")
    elif anchors.unsigned:
        notes.append(
            f"{anchors.unsigned} anchor(s) are not signed: set {ANCHOR_KEY_ENV} so that "
            "edited anchors are detected"
        )
    if anchors.lines and anchors.path is not None and not os.environ.get(ANCHOR_DIR_ENV):
        notes.append(
            f"anchors are kept beside the database ({anchors.path.parent}); set "
            f"{ANCHOR_DIR_ENV} to storage its writers cannot change"
        )
    return tuple(notes)


def _parse_anchor(anchor: str | None) -> tuple[int | None, str | None]:
    if anchor is None:
        return None, None
    text = anchor.strip()
    if ":" in text:
        seq_text, digest = text.split(":", 1)
        if not seq_text.isdigit():
            raise InputError([Problem("anchor", 0, "seq", f"not a number: {seq_text!r}")])
        return int(seq_text), digest.lower()
    return None, text.lower()


def query(
    conn: sqlite3.Connection,
    where: AuditFilter | None = None,
    *,
    limit: int | None = 500,
    newest_first: bool = True,
) -> list[AuditEntry]:
    """Entries matching the filter (actor, action, entity, date range), newest first."""
    rows = audit_sql.query_rows(
        conn, where or AuditFilter(), limit=limit, newest_first=newest_first
    )
    return [AuditEntry.from_row(r) for r in rows]


def has_entry(conn: sqlite3.Connection, action: str, entity_type: str, entity_id: str) -> bool:
    """Whether any entry records `action` on that entity."""
    return audit_sql.has_entry(conn, action, entity_type, entity_id)


def count(conn: sqlite3.Connection, where: AuditFilter | None = None) -> int:
    return audit_sql.count_rows(conn, where or AuditFilter())


def filter_values(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Distinct actors, actions and entity types, for filter widgets."""
    return {c: audit_sql.distinct_values(conn, c) for c in ("actor", "action", "entity_type")}


def parse_time(text: str, *, field: str = "time", end: bool = False) -> int:
    """Unix seconds for an ISO date or date-time (IST when no offset is given).

    A bare date means the start of that IST day, or with `end` the start of the next one,
    so `since=D1, until=D2` covers both days in full.
    """
    value = text.strip()
    try:
        if len(value) == 10:
            day = dt.date.fromisoformat(value) + dt.timedelta(days=1 if end else 0)
            return int(dt.datetime.combine(day, dt.time(), tzinfo=IST).timestamp())
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise InputError(
            [Problem("request", 0, field, f"not an ISO date or date-time: {text!r}")]
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=IST)
    return int(moment.timestamp())


def write_export(
    conn: sqlite3.Connection, fh: TextIO, fmt: str, where: AuditFilter | None = None
) -> int:
    """Write matching entries to an open text stream as 'csv' or 'jsonl'; row count.

    The last line is the chain's head at export time as an anchor (seq, hash, time and
    its HMAC with RAZORRECON_ANCHOR_KEY, core.audit.anchor): in JSON lines
    `{"anchor": {...}}`, in CSV a row whose seq cell is `anchor` and whose payload_json
    cell holds it.

    The columns are the stored ones. JSON lines hold them exactly, so an exported trail
    can be re-verified elsewhere; in CSV (for spreadsheets) a text cell starting with
    = + - @ tab or CR carries a leading `'` (core.outputs.safe_cell).
    """
    if fmt not in ("csv", "jsonl"):
        raise InputError([Problem("request", 0, "format", "use csv or jsonl")])
    written = 0
    with transaction(conn, immediate=False):
        rows = audit_sql.iter_query(conn, where or AuditFilter())
        top = audit_sql.head(conn)
        anchor = make_anchor(*(top or (0, GENESIS_HASH)))
        if fmt == "csv":
            writer = csv.writer(fh)
            writer.writerow(EXPORT_COLUMNS)
            for row in rows:
                writer.writerow(safe_row(row))  # a spreadsheet never runs a cell
                written += 1
            # The head at export time, signed like the anchor file's lines (last row).
            writer.writerow(
                [
                    "anchor",
                    anchor.time,
                    "",
                    ANCHOR_ACTION,
                    "chain",
                    str(anchor.seq),
                    canonical_json(anchor.as_json()),
                    "",
                    anchor.hash,
                ]
            )
        else:
            for row in rows:
                fh.write(canonical_json(dict(zip(EXPORT_COLUMNS, row, strict=True))) + "\n")
                written += 1
            fh.write(canonical_json({"anchor": anchor.as_json()}) + "\n")
    return written


def export(
    conn: sqlite3.Connection,
    out: str | Path,
    where: AuditFilter | None = None,
    *,
    fmt: str | None = None,
) -> int:
    """Write matching entries to `out` (.csv, or .jsonl/.ndjson for JSON lines; `fmt`
    overrides the suffix; `-`, a device or a FIFO default to CSV); row count.

    Written to a side file and put in place, so a failed export never leaves half a file;
    `-` is standard output, a device or FIFO is written to and never replaced, a folder is
    refused (core.outputs).
    """
    target = output_target(out)
    formats = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
    chosen = fmt or formats.get(target.suffix)
    if chosen is None and target.kind != "file":
        chosen = "csv"
    if chosen not in ("csv", "jsonl"):
        raise InputError(
            [Problem(str(out), 0, "", "unknown export format: use .csv, .jsonl or .ndjson")]
        )
    tmp = temporary_for(target)
    try:
        with tmp.open("w", encoding="utf-8", newline="") as fh:
            written = write_export(conn, fh, chosen, where)
        place_output(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return written
