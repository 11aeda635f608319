"""The Overview page: the latest run, its summary and the live state of the queue (open
exceptions and exposure by class and code, ageing, status counts)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from core.db import page_reads
from core.db import views as db
from core.views.common import EXPOSURE_CLASSES, Total
from core.views.runs import RunInfo, RunSummary, latest_run, run_summary

AGE_BOUNDS_DAYS: tuple[int, ...] = (8, 16, 31, 61, 91)
AGE_LABELS: tuple[str, ...] = ("0–7 d", "8–15 d", "16–30 d", "31–60 d", "61–90 d", "over 90 d")


@dataclass(frozen=True)
class CodeExposure:
    """Open exceptions of one reason code: count and exposure in paise."""

    exposure_class: str
    reason_code: str
    count: int
    paise: int


@dataclass(frozen=True)
class AgeBucket:
    """Open exceptions whose entity is `label` old at the run's as-of."""

    label: str
    count: int
    paise: int


@dataclass(frozen=True)
class Overview:
    """The Overview page: the run, its summary and the live state of the queue."""

    run: RunInfo
    summary: RunSummary
    open_exceptions: Total
    exposure_by_class: dict[str, Total]
    exposure_by_code: tuple[CodeExposure, ...]
    ageing: tuple[AgeBucket, ...]
    status_counts: dict[str, int]
    # (import id, imported_at) of the newest import the run did not read, if any: the run's
    # figures are then not the data's (a walkthrough read the new files' Captured beside
    # the old run's exceptions and credits, nothing saying so).
    newer_import: tuple[int, int] | None = None


def exposure_by_code(conn: sqlite3.Connection) -> tuple[CodeExposure, ...]:
    return tuple(
        CodeExposure(r["exposure_class"], r["reason_code"], int(r["n"]), int(r["exposure"]))
        for r in db.exposure_by_class_and_code(conn)
    )


def ageing(conn: sqlite3.Connection, as_of: int) -> tuple[AgeBucket, ...]:
    rows = page_reads.age_distribution(conn, as_of, AGE_BOUNDS_DAYS, db.OPEN_STATUSES)
    found = {int(r["bucket"]): r for r in rows}
    buckets = [
        AgeBucket(label, int(found[i]["n"]), int(found[i]["exposure"]))
        if i in found
        else AgeBucket(label, 0, 0)
        for i, label in enumerate(AGE_LABELS)
    ]
    if -1 in found:
        buckets.append(AgeBucket("unknown", int(found[-1]["n"]), int(found[-1]["exposure"])))
    return tuple(buckets)


def overview(conn: sqlite3.Connection) -> Overview | None:
    """Everything the Overview page shows, or None before the first completed run."""
    run = latest_run(conn)
    if run is None:
        return None
    codes = exposure_by_code(conn)
    by_class = {
        cls: Total(
            sum(c.count for c in codes if c.exposure_class == cls),
            sum(c.paise for c in codes if c.exposure_class == cls),
        )
        for cls in (*EXPOSURE_CLASSES, *sorted({c.exposure_class for c in codes}))
    }
    return Overview(
        run=run,
        summary=run_summary(conn, run.id),
        open_exceptions=Total(sum(c.count for c in codes), sum(c.paise for c in codes)),
        exposure_by_class=by_class,
        exposure_by_code=codes,
        ageing=ageing(conn, run.as_of),
        status_counts={r["status"]: int(r["n"]) for r in db.exception_status_counts(conn)},
        newer_import=newer_import(conn),
    )


def newer_import(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """The newest import stored after the latest completed run read the data (its
    `through_import_id`; a run without one, after it finished), else None."""
    run = db.latest_completed_run(conn)
    last = db.latest_import(conn)
    if run is None or last is None:
        return None
    through = run["through_import_id"]
    if through is not None:
        newer = int(last["id"]) > int(through)
    else:
        newer = int(last["imported_at"]) > int(run["finished_at"] or run["started_at"])
    return (int(last["id"]), int(last["imported_at"])) if newer else None
