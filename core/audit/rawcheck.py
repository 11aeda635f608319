"""Raw rows changed by hand: each raw row carries its writer's keyed MAC (core.rowmac,
migration 0120), each import, run, sync and webhook entry of the trail records the raw
tables' row counts after its write, and `audit verify` recomputes every MAC and compares the
counts (an independent attacker, round 3, F2: one UPDATE of bank_lines went unseen and the
next run auto-cleared two exceptions in an admin's name).

- A row edited by SQL keeps its old MAC, or gets one its editor computed: without the key
  (RAZORRECON_ANCHOR_KEY) it does not verify. A row inserted by SQL has no MAC or a wrong
  one. Either is named: table, key and why.
- A row deleted by SQL leaves no row to check: the table's count is then below the count
  the newest recording entry holds. A row inserted with a copied MAC (a row of another
  table's or database's) raises the count.

A run over the stored tables (`reconcile --db`, "Run reconciliation"), an import-day, an
import adding to the tables and a Razorpay sync check the counts only (a few ms): they
refuse a row deleted or inserted by hand. The MACs of every row cost one hash a row (2.4
CPU s at 100,000 payments, about 24 s at 1M): `audit verify` and the month close
(core.books.close.close_month, the command line's `close` and the app's) check them, and
a close is refused while a row fails its MAC or a count differs. So an edited row with
the count unchanged is reconciled by the runs until then, named by verify, and keeps its
month from closing. Migration 0120 seals the rows stored before it
(core.activity.seal_at_upgrade).
docs/review.md "Raw tables changed by hand".
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from core.db import audit as audit_sql
from core.db import raw
from core.errors import RefusedError
from core.rowmac import MAC_COLUMN

# The entries whose actions write raw tables, each recording the counts (core.activity).
# The upgrade's entry (core.activity.seal_at_upgrade) records them too: the base of the
# count checks.
SEALED_AT_UPGRADE = "raw.sealed_at_upgrade"
RECORDING_ACTIONS = (
    "data.imported",
    "run.reconciled",
    "razorpay.synced",
    "razorpay.webhook_applied",
    SEALED_AT_UPGRADE,
)
ROWS_KEY = "raw_rows"
SHOWN = 10  # rows named per table at most; the rest counted


def current_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Each raw table's row count, as a recording entry stores it (payload ROWS_KEY)."""
    return raw.raw_row_counts(conn)


def _recorded(conn: sqlite3.Connection) -> tuple[int | None, dict[str, int]]:
    """(seq, counts) of the newest entry of RECORDING_ACTIONS; counts {} when it records
    none (written before migration 0120), seq None when there is no such entry."""
    found = audit_sql.latest_entry_of(conn, RECORDING_ACTIONS)
    if found is None:
        return None, {}
    seq, payload_json = found
    try:
        payload: Any = json.loads(payload_json)
    except ValueError:
        return seq, {}
    counts = payload.get(ROWS_KEY) if isinstance(payload, dict) else None
    if not isinstance(counts, dict):
        return seq, {}
    return seq, {str(k): int(v) for k, v in counts.items() if isinstance(v, int)}


def count_differences(conn: sqlite3.Connection) -> list[str]:
    """Each raw table whose row count is not the one the newest recording entry holds, in
    words; [] when all match or no entry records counts (a trail older than migration
    0120: the MACs still name inserted and edited rows)."""
    seq, recorded = _recorded(conn)
    if not recorded:
        return []
    said = []
    for table, rows in current_counts(conn).items():
        wanted = recorded.get(table)
        if wanted is not None and rows != wanted:
            how = "deleted" if rows < wanted else "inserted"
            said.append(
                f"{table}: {rows} rows where the last audited write (entry {seq}) left "
                f"{wanted}: rows {how} that no audited import, run, sync or webhook explains"
            )
    return said


def mac_mismatches(conn: sqlite3.Connection) -> list[str]:
    """Each raw row whose stored MAC is not the one its stored values give, named by
    table and key (SHOWN per table, the rest counted); [] when every row verifies."""
    said = []
    for attribute, (table, key, _) in raw.RAW_TABLES.items():
        rows = raw.read_sealed_rows(conn, attribute)
        if rows.empty:
            continue
        expected = raw.expected_macs(attribute, rows)
        stored = rows[MAC_COLUMN].astype(object).tolist()
        wrong = [
            i
            for i, (a, b) in enumerate(zip(stored, expected, strict=True))
            if not isinstance(a, str) or a != b
        ]
        if not wrong:
            continue
        keys = rows[key].astype(object)
        named = []
        for i in wrong[:SHOWN]:
            why = "MAC does not match" if isinstance(stored[i], str) else "no MAC"
            named.append(f"{key} {keys.iloc[i]} ({why})")
        more = f" and {len(wrong) - SHOWN} more" if len(wrong) > SHOWN else ""
        said.append(
            f"{table}: {len(wrong)} row(s) whose values are not those an audited import, sync "
            f"or webhook stored (edited or inserted by hand, or stored before migration "
            f"0120): {', '.join(named)}{more}"
        )
    return said


def unrecorded_changes(conn: sqlite3.Connection, *, macs: bool = True) -> list[str]:
    """count_differences, then (with `macs`) mac_mismatches."""
    said = count_differences(conn)
    return said + mac_mismatches(conn) if macs else said


def refusal(said: list[str]) -> str:
    """Why a write over raw tables changed outside the trail is refused, naming each change
    (`unrecorded_changes`)."""
    return (
        "the raw tables changed outside every audited import, run, sync and webhook, so "
        "this is refused (run `audit verify`; find who wrote them; restore the database "
        "from a backup, or import the data again with replace): " + "; ".join(said)
    )


def refuse_unrecorded_changes(conn: sqlite3.Connection, *, macs: bool) -> None:
    """RefusedError naming each raw table (and row) changed outside every audited write:
    a run or an import adding to them would reconcile, and vouch for, rows no audited
    action stored. `macs`: check every row's MAC too (the month close, core.books.close)."""
    said = unrecorded_changes(conn, macs=macs)
    if said:
        raise RefusedError(refusal(said))


def holds_intact_import(conn: sqlite3.Connection, content_hash: str, *, replace: bool) -> bool:
    """core.db.raw.holds_import, and for a replace also every raw row as the audited writes
    left it: importing the same content again with replace is the documented way to undo a
    change by hand, so it is stored again then instead of being skipped as held (the check
    reads every row, but only when the content is the latest import's)."""
    if not raw.holds_import(conn, content_hash, replace=replace):
        return False
    return not replace or not unrecorded_changes(conn)
