"""A real PostgreSQL server for the tests, started by the tests themselves.

Debian's postgresql package (initdb, pg_ctl under /usr/lib/postgresql/<major>/bin). Both
refuse to run as root and CI runs as root, so the cluster is created and started as the
unprivileged `postgres` OS user (or the current user when it is not root) in a temporary
folder it owns: Unix socket in that folder, TCP on 127.0.0.1 at a free port, durability
off (fsync, synchronous_commit, full_page_writes) because a test database is thrown away.

Two roles, as in production (docs/postgres.md): `razorrecon_owner` owns the schema and
runs the migrations (DATABASE_OWNER_URL); `razorrecon_app` is what the product connects
as (DATABASE_URL) and cannot change the audit trail. One template database is migrated
once per server; each test gets `CREATE DATABASE ... TEMPLATE` of it (milliseconds).
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

OWNER_ROLE = "razorrecon_owner"
APP_ROLE = "razorrecon_app"
PASSWORD = "razorrecon-test"
TEMPLATE_DB = "razorrecon_template"


# What a test may have changed besides rows: tables, columns, indexes, sequences, grants,
# functions, triggers (their definitions) and whether they are enabled, applied migrations.
SCHEMA_FINGERPRINT = """
SELECT md5(string_agg(x, ',' ORDER BY x)) FROM (
    SELECT c.relname::text || ':' || c.relkind::text || ':' || coalesce(c.relacl::text, '')
        || ':' || c.relowner::regrole::text AS x
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public'
    UNION ALL
    SELECT a.attrelid::regclass::text || '.' || a.attname::text || ':' || a.atttypid::text
        || ':' || a.attnotnull::text
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT t.tgrelid::regclass::text || '.' || t.tgname::text || ':' || t.tgenabled::text
        || ':' || md5(pg_get_triggerdef(t.oid))
    FROM pg_trigger t WHERE NOT t.tgisinternal
    UNION ALL
    SELECT 'constraint ' || conname::text || ':' || pg_get_constraintdef(oid)
    FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL
    SELECT 'function ' || p.oid::regprocedure::text || ':' || md5(p.prosrc)
    FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
    UNION ALL
    SELECT 'migration ' || name FROM schema_migrations
) AS parts
"""

# Every row out of every table but schema_migrations, identities back to 1. As the
# superuser in replica mode, so the append-only triggers stay out of it.
EMPTY_DATABASE = """
DO $$
DECLARE r record;
BEGIN
    SET LOCAL session_replication_role = replica;
    FOR r IN SELECT tablename FROM pg_tables
             WHERE schemaname = 'public' AND tablename <> 'schema_migrations' LOOP
        EXECUTE format('DELETE FROM %I', r.tablename);
    END LOOP;
    FOR r IN SELECT sequencename FROM pg_sequences WHERE schemaname = 'public' LOOP
        EXECUTE format('ALTER SEQUENCE %I RESTART', r.sequencename);
    END LOOP;
END
$$
"""


def postgres_bin() -> Path | None:
    """The newest installed server's bin folder, or None when PostgreSQL is not installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_major)
    return Path(found[-1]).parent if found else None


def _major(path: str) -> int:
    try:
        return int(Path(path).parent.parent.name)
    except ValueError:
        return 0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as() -> tuple[int, int] | None:
    """(uid, gid) to drop to: the `postgres` user when we are root, else None (stay)."""
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid


@dataclass
class PostgresServer:
    """One running cluster. `start()` it, `url(db)` for connections, `stop()` at the end."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rr-pg-")))
    port: int = field(default_factory=_free_port)
    _counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _process_log: Path | None = None
    _spare: list[str] = field(default_factory=list)
    _fingerprint: object = None
    _options: str = ""
    # Tests trade durability for speed; a benchmark keeps PostgreSQL's defaults (fsync on).
    durable: bool = False

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    def _command(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        ids = _run_as()

        def drop() -> None:
            if ids is not None:
                os.setgid(ids[1])
                os.setuid(ids[0])

        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C.UTF-8"
        return subprocess.run(
            args,
            preexec_fn=drop,
            env=env,
            cwd=self.root,
            capture_output=True,
            text=True,
            check=True,
        )

    def start(self) -> PostgresServer:
        bin_dir = postgres_bin()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
        self.socket_dir.mkdir(parents=True)
        ids = _run_as()
        if ids is not None:
            for path in (self.root, self.socket_dir):
                os.chown(path, *ids)
        self._command(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ]
        )
        fast = [] if self.durable else ["-c fsync=off", "-c synchronous_commit=off"]
        options = " ".join(
            [
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.socket_dir}",
                *fast,
                *([] if self.durable else ["-c full_page_writes=off"]),
                "-c max_connections=200",
                "-c shared_buffers=64MB",
            ]
        )
        self._process_log = self.root / "server.log"
        self._options = options
        self.resume()
        atexit.register(self.stop)  # an interrupted pytest still stops its server
        self.admin(
            f"CREATE ROLE {OWNER_ROLE} LOGIN CREATEDB CREATEROLE PASSWORD '{PASSWORD}'",
            f"CREATE ROLE {APP_ROLE} LOGIN PASSWORD '{PASSWORD}'",
            f"CREATE DATABASE {TEMPLATE_DB} OWNER {OWNER_ROLE}",
        )
        return self

    def pause(self) -> None:
        """Stop the server (fast shutdown: sessions are cut), keeping its data: until
        `resume()` a connection is refused, as when the database host goes down."""
        bin_dir = postgres_bin()
        assert bin_dir is not None
        self._command([str(bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"])

    def resume(self) -> None:
        """Start the server on its data folder (again), waiting until it accepts connections."""
        bin_dir = postgres_bin()
        assert bin_dir is not None and self._process_log is not None
        self._command(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self._process_log),
                "-o",
                self._options,
                "-w",
                "start",
            ]
        )

    def stop(self) -> None:
        bin_dir = postgres_bin()
        if bin_dir is not None and self.data.exists():
            with contextlib.suppress(subprocess.CalledProcessError):
                self._command(
                    [str(bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"]
                )
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str, role: str = APP_ROLE) -> str:
        return f"postgresql://{role}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def admin(self, *statements: str, database: str = "postgres") -> None:
        """Run statements as the superuser, each in autocommit."""
        import psycopg

        with psycopg.connect(self.url(database, "postgres"), autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement.encode())

    def migrate_template(self) -> None:
        """Bring the template database's schema up to date as the owner role."""
        from core.db import connect, migrate

        conn = connect(self.url(TEMPLATE_DB, OWNER_ROLE))
        try:
            migrate(conn)
        finally:
            conn.close()
        import psycopg

        with psycopg.connect(self.url(TEMPLATE_DB, "postgres"), autocommit=True) as admin:
            self._fingerprint = admin.execute(SCHEMA_FINGERPRINT.encode()).fetchone()

    def fresh_database(self) -> str:
        """An empty, migrated database; its name. A database a finished test left with the
        template's schema is emptied and handed out again (about 40 ms); otherwise a new
        clone of the template is made (about 0.6 s)."""
        if self._spare:
            return self._spare.pop()
        name = f"rr_test_{os.getpid()}_{next(self._counter)}"
        self.admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB} OWNER {OWNER_ROLE}")
        return name

    def release_database(self, name: str) -> None:
        """Give back a test's database: emptied for reuse when its schema, triggers and
        grants are still the template's, else dropped."""
        import psycopg

        self.admin(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            f" WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        )
        with psycopg.connect(self.url(name, "postgres"), autocommit=True) as conn:
            same = conn.execute(SCHEMA_FINGERPRINT.encode()).fetchone() == self._fingerprint
            if same:
                conn.execute(EMPTY_DATABASE.encode())
        if same:
            self._spare.append(name)
        else:
            self.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def drop_database(self, name: str) -> None:
        self.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
