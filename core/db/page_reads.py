"""Small reads the app's pages make on every render, kept cheap at 10M payments.

- `data_mark`: what a cached read of live figures is keyed by (ui.shell.read_marked): the
  newest run, the newest completed run and the audit trail's head (seq and hash). Every
  change to the exception queue (a run's sync, an assignment, a decision, a comment, an approval)
  appends to the audit trail in the same transaction (core.review.sync,
  core.review.actions), so figures read under a mark are current until the mark moves.
  Index seeks and the runs table (a row a run).
- `top_open_exception`: the open exception with the largest exposure (ties: lowest id), the
  Investigation page's default; one seek per status through `exceptions_queue (status,
  exposure_amount DESC)` instead of sorting every open exception.
- `age_distribution`: the Overview's ageing, from the totals migration 0101 keeps
  (`exception_totals`, per status, class, code and IST day of the entity's creation) and
  an index range for each day a bucket edge cuts. The `*_totals_deferred` pair is for a
  bulk writer that adds its new exceptions to the totals set-based, the triggers aside;
  `recompute_exception_totals` rebuilds them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from core.calendar import IST_OFFSET_SECONDS
from core.db.views import SECONDS_PER_DAY


def data_mark(conn: sqlite3.Connection) -> tuple[int, int, int, str]:
    """(the newest run's id, the newest completed run's id, the audit trail's last seq and
    its hash); 0 and '' for none. A run completes before its exceptions are synced (and
    audited), so the completed run is part of the mark in its own right. The head's hash
    covers the whole chain, so a database made again under the same name (restored from a
    backup, rebuilt, a test's) never shares a mark with the one it replaced: its ids and
    seq alone may repeat, and a read cached for the old one would be shown for it (a
    Books page showed no write-off where one had just been made, in a fresh-clone test run)."""
    row = conn.execute(
        "SELECT (SELECT max(id) FROM runs) AS run_id,"
        " (SELECT max(id) FROM runs WHERE status = 'completed') AS completed,"
        " (SELECT max(seq) FROM audit_log) AS seq,"
        " (SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1) AS head"
    ).fetchone()
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0), str(row[3] or "")


def top_open_exception(conn: sqlite3.Connection, statuses: Sequence[str]) -> int | None:
    """The id of the exception in `statuses` with the largest exposure, lowest id first
    among equals (the queue's default order, `exposure_amount DESC, id`); None if none."""
    if not statuses:
        return None
    one = (
        "SELECT * FROM (SELECT id, exposure_amount FROM exceptions WHERE status = ? "
        "ORDER BY exposure_amount DESC, id LIMIT 1) AS s{n}"
    )
    union = " UNION ALL ".join(one.format(n=n) for n in range(len(statuses)))
    row = conn.execute(
        f"SELECT id FROM ({union}) AS top ORDER BY exposure_amount DESC, id LIMIT 1",
        tuple(statuses),
    ).fetchone()
    return None if row is None else int(row[0])


def settlement_choices(
    conn: sqlite3.Connection, search: str, limit: int, statuses: Sequence[str]
) -> list[dict[str, Any]]:
    """Settlements whose id or UTR holds `search` (LIKE, any case, `%` and `_` literal),
    largest open exposure first, then newest; at most `limit`. The open exposure per
    settlement is summed in the covering index's order (`exceptions_open_settlement (status,
    settlement_id, exposure_amount)`: one group per status and settlement, no temporary
    B-tree over every open exception) and folded here, with the settlements (one a batch,
    a few a day)."""
    exposure: dict[str, int] = {}
    if statuses:
        marks = ", ".join("?" for _ in statuses)
        for settlement_id, amount in conn.execute(
            "SELECT settlement_id, sum(exposure_amount) FROM exceptions "
            f"WHERE status IN ({marks}) GROUP BY status, settlement_id",
            tuple(statuses),
        ):
            if settlement_id is not None and amount is not None:
                exposure[settlement_id] = exposure.get(settlement_id, 0) + int(amount)
    escaped = search.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    term = f"%{escaped}%"
    rows = [
        {
            "id": r[0],
            "amount": r[1],
            "status": r[2],
            "utr": r[3],
            "created_at": r[4],
            "exposure": exposure.get(r[0], 0),
        }
        for r in conn.execute(
            "SELECT id, amount, status, utr, created_at FROM settlements "
            "WHERE id LIKE ? ESCAPE '\\' OR utr LIKE ? ESCAPE '\\'",
            (term, term),
        )
    ]
    rows.sort(key=lambda r: (-r["exposure"], -int(r["created_at"]), r["id"]))
    return rows[:limit]


def _day_span(day: int) -> tuple[int, int]:
    """The first and last second (Unix) of stored day `day`: the day of `t` is
    (t + 19800) / 86400 in SQL, an integer division that truncates toward zero on both
    databases (so day 0 spans two days, and days before 1970 are mirrored)."""
    if day > 0:
        low, high = day * SECONDS_PER_DAY, day * SECONDS_PER_DAY + SECONDS_PER_DAY - 1
    elif day < 0:
        low, high = day * SECONDS_PER_DAY - SECONDS_PER_DAY + 1, day * SECONDS_PER_DAY
    else:
        low, high = -SECONDS_PER_DAY + 1, SECONDS_PER_DAY - 1
    return low - IST_OFFSET_SECONDS, high - IST_OFFSET_SECONDS


def age_distribution(
    conn: sqlite3.Connection, as_of: int, bounds_days: Sequence[int], statuses: Sequence[str]
) -> list[dict[str, Any]]:
    """Count and exposure per age bucket (bucket i holds ages under bounds_days[i] days,
    bounds ascending, the last one the rest, -1 no date) of the exceptions in `statuses`.

    From the stored totals per IST day of the entity's creation (migration 0101): a day
    that lies in one bucket adds its totals; the few days a bucket edge (as_of - bound days)
    cuts are split exactly by ranges of `exceptions_status_created (status,
    entity_created_at, exposure_amount)`, a day's exceptions at most."""
    if not statuses:
        return []
    edges = [as_of - int(days) * SECONDS_PER_DAY for days in bounds_days]

    def bucket(t: int) -> int:
        return next((i for i, edge in enumerate(edges) if t > edge), len(edges))

    def bucket_span(i: int) -> tuple[int | None, int | None]:
        """Bucket i's seconds, both ends inclusive (None: unbounded)."""
        low = edges[i] + 1 if i < len(edges) else None
        high = edges[i - 1] if i > 0 else None
        return low, high

    totals: dict[int, list[int]] = {}

    def add(i: int, n: int, exposure: int) -> None:
        if n:
            total = totals.setdefault(i, [0, 0])
            total[0] += n
            total[1] += exposure

    marks = ", ".join("?" for _ in statuses)
    cut: list[tuple[int, int]] = []
    for dated, day, n, exposure in conn.execute(
        "SELECT dated, created_day, CAST(sum(n) AS BIGINT), CAST(sum(exposure) AS BIGINT) "
        f"FROM exception_totals WHERE status IN ({marks}) GROUP BY dated, created_day",
        tuple(statuses),
    ):
        if not dated:
            add(-1, int(n), int(exposure))
            continue
        low, high = _day_span(int(day))
        if bucket(low) == bucket(high):
            add(bucket(low), int(n), int(exposure))
        else:
            cut.append((low, high))
    for low, high in cut:
        for i in range(bucket(high), bucket(low) + 1):
            span_low, span_high = bucket_span(i)
            first = low if span_low is None else max(low, span_low)
            last = high if span_high is None else min(high, span_high)
            n, exposure = conn.execute(
                "SELECT count(*), coalesce(sum(exposure_amount), 0) FROM exceptions "
                f"WHERE status IN ({marks}) AND entity_created_at BETWEEN ? AND ?",
                (*statuses, first, last),
            ).fetchone()
            add(i, int(n), int(exposure))
    return [
        {"bucket": i, "n": n, "exposure": exposure} for i, (n, exposure) in sorted(totals.items())
    ]


# --- the stored totals of migration 0101 ------------------------------------------------

_KEY_OF_EXCEPTION = (
    "status, exposure_class, reason_code, CASE WHEN entity_created_at IS NULL THEN 0 ELSE 1 END,"
    " coalesce((entity_created_at + 19800) / 86400, 0)"
)
_TOTALS = "exception_totals (status, exposure_class, reason_code, dated, created_day, n, exposure)"


def begin_totals_deferred(conn: sqlite3.Connection, after_id: int) -> bool:
    """Within the caller's transaction: the triggers that keep `exception_totals`
    (migration 0101) stand aside for the exceptions numbered above `after_id` (the largest
    id before a bulk insert) until `end_totals_deferred`, which adds those rows set-based.
    No other connection sees the flag row; on an error the rollback removes it.
    False when an outer writer already deferred (its mark is at or below this one, so its
    `end_totals_deferred` adds these rows too): the caller then does not end it."""
    began = conn.execute(
        "INSERT INTO exception_totals_deferred (deferred, after_id) SELECT 1, ?"
        " WHERE NOT EXISTS (SELECT 1 FROM exception_totals_deferred)",
        (after_id,),
    )
    return began.rowcount == 1


def end_totals_deferred(conn: sqlite3.Connection) -> None:
    """Add the exceptions above the mark of `begin_totals_deferred`, as they are now, to the
    totals (one INSERT ... SELECT ... GROUP BY over a range of the primary key) and let the
    triggers keep them again; in the same transaction."""
    conn.execute(
        f"INSERT INTO {_TOTALS} SELECT {_KEY_OF_EXCEPTION}, count(*), sum(exposure_amount)"
        " FROM exceptions WHERE id > (SELECT after_id FROM exception_totals_deferred)"
        " GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5"
        " ON CONFLICT (status, exposure_class, reason_code, dated, created_day)"
        " DO UPDATE SET n = exception_totals.n + excluded.n,"
        " exposure = exception_totals.exposure + excluded.exposure"
    )
    conn.execute("DELETE FROM exception_totals_deferred")


def recompute_exception_totals(conn: sqlite3.Connection) -> None:
    """Within the caller's transaction: `exception_totals` rebuilt by one GROUP BY over
    every exception (what migration 0101 fills it with; a repair, O(exceptions))."""
    conn.execute("DELETE FROM exception_totals")
    conn.execute(
        f"INSERT INTO {_TOTALS} SELECT {_KEY_OF_EXCEPTION}, count(*), sum(exposure_amount)"
        " FROM exceptions GROUP BY 1, 2, 3, 4, 5"
    )


def exception_totals_drift(
    conn: sqlite3.Connection,
) -> tuple[str, str, str, int, int, int, int] | None:
    """The first key (status, exposure_class, reason_code, dated, created_day) whose stored
    totals differ from a count and sum over the exceptions, with `n` and `exposure` the
    stored minus the counted; None when every total holds. One GROUP BY over every
    exception (O(exceptions), as `recompute_exception_totals`)."""
    row = conn.execute(
        "SELECT status, exposure_class, reason_code, dated, created_day,"
        " CAST(sum(n) AS BIGINT) AS n, CAST(sum(exposure) AS BIGINT) AS exposure FROM ("
        " SELECT status, exposure_class, reason_code, dated, created_day, n, exposure"
        " FROM exception_totals UNION ALL"
        f" SELECT {_KEY_OF_EXCEPTION}, -count(*), -sum(exposure_amount) FROM exceptions"
        " GROUP BY 1, 2, 3, 4, 5"
        ") AS d"
        " GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0 OR sum(exposure) <> 0"
        " ORDER BY 1, 2, 3, 4, 5 LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    status, cls, code, dated, day, n, exposure = row
    return str(status), str(cls), str(code), int(dated), int(day), int(n), int(exposure)
