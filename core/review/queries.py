"""Reads of the exception queue, for the CLI and the app."""

from __future__ import annotations

import sqlite3

from core.audit import AuditEntry, AuditFilter, query
from core.db import review as review_sql
from core.db.review import ExceptionFilter
from core.errors import InputError, NotFoundError, Problem
from core.review.model import STATUSES, ExceptionEvent, ExceptionRecord


def get_exception(conn: sqlite3.Connection, exception_id: int) -> ExceptionRecord:
    """The exception, or NotFoundError."""
    row = review_sql.get_exception(conn, int(exception_id))
    if row is None:
        raise NotFoundError(f"exception {exception_id} does not exist")
    return ExceptionRecord.from_row(row)


def history(conn: sqlite3.Connection, exception_id: int) -> list[ExceptionEvent]:
    """Every event of the exception, oldest first (NotFoundError for an unknown id)."""
    get_exception(conn, exception_id)
    return [ExceptionEvent.from_row(r) for r in review_sql.events_of(conn, int(exception_id))]


def audit_trail(conn: sqlite3.Connection, exception_id: int) -> list[AuditEntry]:
    """The audit entries about the exception, oldest first."""
    where = AuditFilter(entity_type="exception", entity_id=str(int(exception_id)))
    return query(conn, where, limit=None, newest_first=False)


def check_statuses(statuses: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """Upper-cased statuses, or InputError naming an unknown one."""
    if not statuses:
        return None
    wanted = tuple(s.strip().upper() for s in statuses)
    unknown = [s for s in wanted if s not in STATUSES]
    if unknown:
        raise InputError(
            [
                Problem(
                    "request",
                    0,
                    "status",
                    f"unknown status {', '.join(unknown)}; one of {', '.join(STATUSES)}",
                )
            ]
        )
    return wanted


def list_exceptions(
    conn: sqlite3.Connection,
    *,
    statuses: tuple[str, ...] | None = None,
    reason_code: str | None = None,
    exposure_class: str | None = None,
    assignee: str | None = None,
    entity_id: str | None = None,
    settlement_id: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[ExceptionRecord]:
    """The queue, largest exposure first; every filter optional."""
    where = ExceptionFilter(
        statuses=check_statuses(statuses),
        reason_code=reason_code,
        exposure_class=exposure_class,
        assignee=assignee,
        entity_id=entity_id,
        settlement_id=settlement_id,
    )
    rows = review_sql.list_exceptions(conn, where, limit=limit, offset=offset)
    return [ExceptionRecord.from_row(r) for r in rows]


def count_exceptions(
    conn: sqlite3.Connection,
    *,
    statuses: tuple[str, ...] | None = None,
    reason_code: str | None = None,
    exposure_class: str | None = None,
    assignee: str | None = None,
) -> int:
    where = ExceptionFilter(
        statuses=check_statuses(statuses),
        reason_code=reason_code,
        exposure_class=exposure_class,
        assignee=assignee,
    )
    return review_sql.count_exceptions(conn, where)
