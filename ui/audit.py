"""The Audit page's calls into core.audit (owned by the review & audit area)."""

from __future__ import annotations

import io
from typing import Any

from ui import shell
from ui.widgets import module


def _audit() -> Any:
    return module("core.audit", "The audit trail")


def filter_values() -> dict[str, list[str]]:
    return dict(shell.read(_audit().filter_values))


def make_filter(**values: Any) -> Any:
    return _audit().AuditFilter(**values)


def entries(where: Any, limit: int) -> tuple[int, list[Any]]:
    audit = _audit()
    with shell.connection() as conn:
        return int(audit.count(conn, where)), list(audit.query(conn, where, limit=limit))


def verify() -> Any:
    return shell.read(_audit().verify)


def export(where: Any, fmt: str) -> bytes:
    """The filtered trail as a file's bytes (CSV, or JSON lines)."""
    stream = io.StringIO()
    with shell.connection() as conn:
        _audit().write_export(conn, stream, fmt, where)
    return stream.getvalue().encode("utf-8")
