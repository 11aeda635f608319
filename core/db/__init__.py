"""The one place that owns SQLite: connections, migrations and every SQL statement.

Statements live in the modules of this package, grouped by the area they serve
(`core.db.raw`, `core.db.runs`, ...). Code outside `core/db` never writes SQL: it calls
these functions. That kept the PostgreSQL backend (`core.db.backend`, docs/postgres.md) a
change of this package, bar a few callers that checked for a SQLite file.
"""

from core.db.connection import (
    DEFAULT_DATABASE,
    connect,
    database_path,
    open_database,
    transaction,
)
from core.db.migrate import applied_migrations, migrate

__all__ = [
    "DEFAULT_DATABASE",
    "applied_migrations",
    "connect",
    "database_path",
    "migrate",
    "open_database",
    "transaction",
]
