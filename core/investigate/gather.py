"""`gather_evidence(...)`: an exception's evidence for display, read only.

Split from `service` so that showing evidence (the Investigation page, on every render)
imports only the evidence tools: not the model client (pydantic, the Gemini SDK), the
redactor or the deterministic rules, which `investigate` needs and imports itself.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.db import investigate as db
from core.db import migrate, open_database
from core.db.backend import is_postgres_url
from core.errors import NotFoundError
from core.investigate.evidence import Evidence, gather
from core.investigate.tools import EvidenceTools, run_context

ConnOrPath = sqlite3.Connection | str | Path


@contextmanager
def writable(conn_or_path: ConnOrPath) -> Iterator[sqlite3.Connection]:
    if not isinstance(conn_or_path, str | Path):  # a connection (SQLite or PostgreSQL)
        migrate(conn_or_path)
        yield conn_or_path
    else:
        path = str(conn_or_path)
        local = path != ":memory:" and not path.startswith("file:") and not is_postgres_url(path)
        if local and not Path(path).exists():
            raise NotFoundError(f"no database at {path}")
        with open_database(path) as conn:
            yield conn


def load(ro: sqlite3.Connection, exception_id: int) -> dict[str, Any]:
    exception = db.get_exception(ro, int(exception_id))
    if exception is None:
        raise NotFoundError(f"no exception with id {exception_id}")
    return exception


def gather_evidence(conn_or_path: ConnOrPath, exception_id: int) -> Evidence:
    """The evidence for one exception, unredacted, for display. Reads only."""
    with writable(conn_or_path) as conn, db.read_only(conn) as ro:
        exception = load(ro, exception_id)
        tools = EvidenceTools(ro, context=run_context(ro, exception.get("last_run_id")))
        return gather(tools, exception)
