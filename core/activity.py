"""Who changed the data: one audit entry per import, reconciliation run and Razorpay sync.

The review actions audit every decision; these are the Data page's and the command line's
larger changes, which before named no one (an independent attacker, F6: an admin replaced
every raw table and reconciled, and the trail held only the engine's entries). Each
action writes ONE entry naming its actor, after its own work is committed:

- `data.imported` (entity `import`, the import id): an upload on the Data page, `import`;
- `run.reconciled` (entity `run`, the run id; the import it stored first, if any, in its
  payload): `reconcile --db`, `import-day`, `reconcile --stream --db`, the Data page's
  reconcile and its server-folder import, the app's first start;
- `razorpay.synced` (entity `razorpay_sync`, the sync run id): a Razorpay sync, the Data
  page's or `razorpay sync`, completed or failed, in the transaction that closes it;
- `razorpay.webhook_applied` (entity `razorpay_event`, the event id; actor `razorpay-webhook`):
  a signed webhook delivery that stored a payment, refund or settlement, in the transaction
  that stores it (an independent attacker, F6: accepted deliveries changed raw rows and the
  trail said nothing).

The actor is the signed-in person in the app, the operating-system login on the command
line (`core.access.os_operator`, as `review` and `users` name it), `bootstrap` for the
app's first start. An entry is written once per (action, entity): repeating the action
(a rerun of the same request, the same content imported again: the same import id) adds
none, and one missing (the process stopped between the commit and the entry) is written
by the repeat; a run's repeat is a new run, so `audit verify` warns of a completed run
without its entry (core.audit.chain). Each entry's transaction anchors the chain's head
(core.audit.anchor).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from core.audit import append, has_entry, write_anchor
from core.audit.chain import RUN_RECONCILED
from core.audit.rawcheck import RECORDING_ACTIONS, ROWS_KEY, SEALED_AT_UPGRADE, current_counts
from core.db import raw, transaction
from core.db.migrate import register_python_step

IMPORTED = "data.imported"
RECONCILED = RUN_RECONCILED
SYNCED = "razorpay.synced"
WEBHOOK_APPLIED = "razorpay.webhook_applied"
WEBHOOK_ACTOR = "razorpay-webhook"
BOOTSTRAP_ACTOR = "bootstrap"


def default_actor() -> str:
    """The operating-system login running this process (the command line's actor)."""
    from core.access import os_operator

    return os_operator().actor


def _record(
    conn: sqlite3.Connection,
    *,
    actor: str,
    action: str,
    entity_type: str,
    entity_id: str,
    payload: Mapping[str, Any],
) -> int | None:
    """Append the entry unless one records `action` on that entity already; its seq."""
    outermost = not conn.in_transaction
    with transaction(conn):
        seq = _append_once(conn, actor, action, entity_type, entity_id, payload)
        if outermost and seq is not None:
            write_anchor(conn)
    return seq


def _append_once(
    conn: sqlite3.Connection,
    actor: str,
    action: str,
    entity_type: str,
    entity_id: str,
    payload: Mapping[str, Any],
) -> int | None:
    """Append the entry in the caller's transaction unless one records `action` on that
    entity already; its seq."""
    if has_entry(conn, action, entity_type, entity_id):
        return None
    if action in RECORDING_ACTIONS:  # the raw tables' row counts after its write (rawcheck)
        payload = {**payload, ROWS_KEY: current_counts(conn)}
    return append(
        conn,
        actor=actor or default_actor(),
        action=action,
        entity_type=entity_type,
        entity_id=entity_id,
        payload=payload,
    )


def import_facts(report: Any) -> dict[str, Any] | None:
    """What an import did, from its ImportReport (core.ingest.report): id, source, where,
    content hash, replace or add, each file with its sha256, rows written and changed."""
    if report is None or getattr(report, "import_id", None) is None:
        return None
    return {
        "import_id": int(report.import_id),
        "source": report.source,
        "location": report.location,
        "content_hash": report.content_hash,
        "replaced": bool(report.replaced),
        "already_imported": bool(report.already_imported),
        "files": [
            {"file": f.file, "kind": f.kind, "rows": int(f.rows), "sha256": f.sha256}
            for f in report.files
        ],
        "written": {str(k): int(v) for k, v in dict(report.written).items()},
        "changed": {str(k): int(v) for k, v in dict(report.changed).items()},
        "older_accepted": int(report.older_count),
    }


def record_import(
    conn: sqlite3.Connection, report: Any, *, actor: str, how: str, request_id: str = ""
) -> int | None:
    """The `data.imported` entry of an import (`how`: 'upload', 'import command')."""
    facts = import_facts(report)
    if facts is None:
        return None
    payload = {"how": how, **facts, **({"request_id": request_id} if request_id else {})}
    return _record(
        conn,
        actor=actor,
        action=IMPORTED,
        entity_type="import",
        entity_id=str(facts["import_id"]),
        payload=payload,
    )


def record_stored_import(
    conn: sqlite3.Connection,
    import_id: int,
    *,
    actor: str,
    how: str,
    facts: Mapping[str, Any],
) -> int | None:
    """The `data.imported` entry of an import stored by a write that failed after storing it
    (`how`: 'import-day (its run failed)'): its id, `facts`, and the raw tables' counts."""
    return _record(
        conn,
        actor=actor,
        action=IMPORTED,
        entity_type="import",
        entity_id=str(int(import_id)),
        payload={"how": how, "import_id": int(import_id), **facts},
    )


def _sync_facts(sync: Any) -> dict[str, int] | None:
    if sync is None:
        return None
    fields = ("opened", "kept", "reopened", "auto_cleared", "refreshed", "no_longer_found")
    return {name: int(getattr(sync, name, 0)) for name in fields}


def record_run(
    conn: sqlite3.Connection,
    run_id: int,
    *,
    actor: str,
    how: str,
    imported: Mapping[str, Any] | None = None,
    sync: Any = None,
    request_id: str = "",
) -> int | None:
    """The `run.reconciled` entry of a stored run (`how`: 'reconcile', 'import-day', ...),
    with the import it stored first (`import_facts`), its kind, as-of and counts by status
    (read back from the run), and what the exception queue's sync changed."""
    from core.db.runs import get_run

    run = get_run(conn, int(run_id))
    counts = (run.counts or {}) if run is not None else {}
    payload: dict[str, Any] = {
        "how": how,
        "run_id": int(run_id),
        "as_of": None if run is None else run.as_of,
        "source": None if run is None else run.source,
        "kind": None if run is None else run.kind,
        "base_run_id": None if run is None else run.base_run_id,
        "outcomes": counts.get("outcomes"),
        "by_status": counts.get("by_status"),
        "import": dict(imported) if imported is not None else None,
        "exceptions": _sync_facts(sync),
        **({"request_id": request_id} if request_id else {}),
    }
    return _record(
        conn,
        actor=actor,
        action=RECONCILED,
        entity_type="run",
        entity_id=str(int(run_id)),
        payload=payload,
    )


def record_sealed_at_upgrade(conn: sqlite3.Connection, sealed: Mapping[str, int]) -> int | None:
    """The one `raw.sealed_at_upgrade` entry of a database upgraded past migration 0120 with
    raw rows (seal_at_upgrade): the rows given a MAC per table and the tables' counts (added
    by _append_once), by the operating-system login that upgraded. In the caller's
    transaction; its anchor is the caller's to write."""
    return _append_once(
        conn,
        default_actor(),
        SEALED_AT_UPGRADE,
        "database",
        "0120_raw_row_macs",
        {"sealed": {table: int(rows) for table, rows in sealed.items()}},
    )


def seal_at_upgrade(conn: sqlite3.Connection) -> dict[str, int]:
    """Migration 0120's Python step, run once in its transaction (core.db.migrate, which
    cannot import this module: it is registered below): give every raw row stored before
    it (row_mac NULL) the MAC of its values as they are now, and, when the tables hold
    rows, append one SEALED_AT_UPGRADE entry (rows sealed per table, and the tables'
    counts, ROWS_KEY) with its anchor, the base the count checks compare with
    (core.audit.rawcheck). The data is trusted as the upgrade finds it: a change by hand
    before the upgrade is not detectable after it. A second call seals nothing and appends
    nothing. Rows sealed per table."""
    sealed = {
        table: raw.seal_unsealed_rows(conn, attribute)
        for attribute, (table, _, _) in raw.RAW_TABLES.items()
    }
    if (any(sealed.values()) or any(current_counts(conn).values())) and record_sealed_at_upgrade(
        conn, sealed
    ) is not None:
        write_anchor(conn)
    return sealed


register_python_step("0120_raw_row_macs", seal_at_upgrade)


def record_sync(
    conn: sqlite3.Connection,
    run_id: int,
    *,
    actor: str,
    status: str,
    date_from: Any,
    date_to: Any,
    requests: int,
    retries: int,
    resources: Any = (),
    error: str | None = None,
) -> int | None:
    """The `razorpay.synced` entry of a Razorpay sync run (core.razorpay.sync), completed or
    failed (the days committed before a failure stay stored): range, status, requests and,
    per resource, days, items read, rows inserted and updated. Appended in the caller's
    transaction, the one that closes the sync run; the caller anchors the head."""
    payload = {
        "sync_run_id": int(run_id),
        "status": status,
        "date_from": str(date_from),
        "date_to": str(date_to),
        "requests": int(requests),
        "retries": int(retries),
        "resources": {
            r.resource: {
                "days": int(r.days),
                "items": int(r.items),
                "inserted": int(r.inserted),
                "updated": int(r.updated),
            }
            for r in resources
        },
        **({"error": error} if error else {}),
    }
    return _append_once(conn, actor, SYNCED, "razorpay_sync", str(int(run_id)), payload)


def record_webhook(
    conn: sqlite3.Connection,
    event_id: str,
    *,
    event: str,
    body_sha256: str,
    upserted: Any,
    skipped: Any,
    marked: int,
) -> int | None:
    """The `razorpay.webhook_applied` entry of a delivery that stored rows. Appended in the
    caller's transaction, the one that stores them; the caller anchors the head."""
    payload = {
        "event": event,
        "body_sha256": body_sha256,
        "upserted": list(upserted),
        "skipped": list(skipped),
        "marked": int(marked),
    }
    return _append_once(conn, WEBHOOK_ACTOR, WEBHOOK_APPLIED, "razorpay_event", event_id, payload)
