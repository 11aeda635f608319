"""The PostgreSQL backend's own guarantees (docs/postgres.md): migrations of both dialects
agree, the audit trail is append-only for the app role and behind triggers for every role,
and concurrent writers never fork the chain."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core.audit import append, verify
from core.db import connect, migrate, transaction
from core.db.backend import PgRow, translate
from core.db.migrate import available_migrations, missing_postgres_twins
from tests.conftest import ROOT

pytestmark = pytest.mark.postgres


def _fill(conn: sqlite3.Connection, n: int) -> None:
    for i in range(n):
        append(
            conn,
            actor="asha",
            action="exception.commented",
            entity_type="exception",
            entity_id=str(i),
            payload={"note": f"comment {i}", "amount": i * 100},
            now=1_700_000_000 + i,
        )


def _owner(pg_url: str) -> sqlite3.Connection:
    return connect(os.environ["DATABASE_OWNER_URL"])


def test_every_sqlite_migration_has_a_postgresql_twin_of_the_same_name() -> None:
    assert missing_postgres_twins() == []
    sqlite_names = [name for name, _ in available_migrations()]
    assert sqlite_names == [name for name, _ in available_migrations("postgresql")]


def test_both_databases_record_the_same_migrations(pg_url: str, tmp_path: Path) -> None:
    lite = connect(tmp_path / "a.sqlite")
    migrate(lite)
    pg = connect(pg_url)
    names = "SELECT name FROM schema_migrations ORDER BY name"
    assert [r[0] for r in pg.execute(names)] == [r[0] for r in lite.execute(names)]
    assert migrate(pg) == []  # up to date: the app role changes nothing
    pg.close()
    lite.close()


def test_placeholders_become_psycopg_format_outside_quotes_only() -> None:
    assert translate("SELECT a FROM t WHERE b = ? AND c LIKE '%?%'") == (
        "SELECT a FROM t WHERE b = %s AND c LIKE '%%?%%'"
    )
    assert translate('SELECT "a?" , x % 2 FROM t WHERE y = ?') == (
        'SELECT "a?" , x %% 2 FROM t WHERE y = %s'
    )


def test_rows_read_by_index_and_by_name_like_sqlite_rows(pg_url: str) -> None:
    conn = connect(pg_url)
    row = conn.execute("SELECT ? AS seq, ? AS hash", (7, "abc")).fetchone()
    assert isinstance(row, PgRow)
    assert (row[0], row["hash"], tuple(row), row.keys()) == (7, "abc", (7, "abc"), ["seq", "hash"])
    conn.close()


def test_the_app_role_may_not_update_delete_or_truncate_the_audit_trail(pg_url: str) -> None:
    conn = connect(pg_url)
    _fill(conn, 3)
    for statement in (
        "UPDATE audit_log SET actor = 'mallory' WHERE seq = 1",
        "DELETE FROM audit_log WHERE seq = 3",
        "TRUNCATE audit_log",
        "ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update",
        "DROP TRIGGER audit_log_no_delete ON audit_log",
        "CREATE TABLE audit_log_copy (seq BIGINT)",
    ):
        with pytest.raises(sqlite3.DatabaseError, match=r"permission denied|must be owner"):
            conn.execute(statement)
    for table in ("exception_events", "action_requests", "review_comments"):
        with pytest.raises(sqlite3.DatabaseError, match="permission denied"):
            conn.execute(f"DELETE FROM {table}")
    result = verify(conn)
    assert result.ok and result.rows_checked == 3
    conn.close()


def test_the_triggers_refuse_even_the_owner_role(pg_url: str) -> None:
    app = connect(pg_url)
    _fill(app, 2)
    owner = _owner(pg_url)
    for statement in (
        "UPDATE audit_log SET actor = 'mallory' WHERE seq = 1",
        "DELETE FROM audit_log WHERE seq = 2",
        "TRUNCATE audit_log",
    ):
        with pytest.raises(sqlite3.IntegrityError, match="audit_log is append-only"):
            owner.execute(statement)
    assert verify(app).ok
    owner.close()
    app.close()


def test_verify_names_a_row_the_owner_edited_with_the_triggers_disabled(pg_url: str) -> None:
    app = connect(pg_url)
    _fill(app, 5)
    owner = _owner(pg_url)
    owner.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update")
    result = verify(app)
    assert not result.ok and "trigger" in result.problem  # a disabled trigger is no trigger
    owner.execute('UPDATE audit_log SET payload_json = \'{"note":"nothing"}\' WHERE seq = 3')
    owner.execute("ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_update")
    result = verify(app)
    assert not result.ok and result.broken_seq == 3 and "edited" in result.problem
    owner.close()
    app.close()


def test_a_write_transaction_holds_the_write_lock_until_it_ends(pg_url: str) -> None:
    first, second = connect(pg_url), connect(pg_url)
    with transaction(first):
        second.execute("SET lock_timeout = '200ms'")
        with pytest.raises(sqlite3.OperationalError, match="lock timeout"), transaction(second):
            pass
        assert not second.in_transaction
    with transaction(second):  # free again once the first committed
        pass
    first.close()
    second.close()


APPENDER = """
import sys
from core.audit import append
from core.db import connect
conn = connect(sys.argv[1])
for i in range(int(sys.argv[3])):
    append(conn, actor=sys.argv[2], action="test.append", entity_type="t", entity_id=str(i),
           payload={"i": i})
conn.close()
"""


def test_eight_concurrent_writers_never_fork_the_chain(pg_url: str) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, pg_url, f"w{k}", "30"], cwd=ROOT)
        for k in range(8)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0] * 8
    conn = connect(pg_url)
    result = verify(conn)
    assert result.ok and result.rows_checked == 240
    rows = conn.execute("SELECT actor, count(*) FROM audit_log GROUP BY actor ORDER BY 1")
    assert [tuple(r) for r in rows] == [(f"w{k}", 30) for k in range(8)]
    assert conn.execute("SELECT count(DISTINCT prev_hash) FROM audit_log").fetchone()[0] == 240
    conn.close()


def test_a_writer_that_skips_the_lock_still_cannot_fork_the_chain(pg_url: str) -> None:
    conn = connect(pg_url)
    _fill(conn, 2)
    first = conn.execute("SELECT prev_hash FROM audit_log WHERE seq = 2").fetchone()[0]
    with pytest.raises(sqlite3.IntegrityError, match="audit_log_prev_hash"):
        conn.execute(
            "INSERT INTO audit_log (seq, created_at, actor, action, entity_type, entity_id,"
            " payload_json, prev_hash, hash) VALUES (9, 0, 'a', 'b', 'c', 'd', '{}', ?, 'x')",
            (first,),
        )
    conn.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_reconcile_then_audit_verify_end_to_end_match_sqlite(pg_url: str, tmp_path: Path) -> None:
    dataset = str(ROOT / "tests" / "fixtures" / "spec_example" / "dataset")
    as_of = "2026-06-30T23:59:59+05:30"
    on_pg = _cli("reconcile", dataset, "--out", str(tmp_path / "pg.csv"), "--as-of", as_of,
                 "--db", pg_url)  # fmt: skip
    assert on_pg.returncode == 0, on_pg.stderr
    lite = str(tmp_path / "lite.sqlite")
    on_lite = _cli("reconcile", dataset, "--out", str(tmp_path / "lite.csv"), "--as-of", as_of,
                   "--db", lite)  # fmt: skip
    assert on_lite.returncode == 0, on_lite.stderr
    assert (tmp_path / "pg.csv").read_bytes() == (tmp_path / "lite.csv").read_bytes()
    verified = _cli("audit", "verify", "--db", pg_url)
    assert verified.returncode == 0, verified.stderr
    assert "audit chain holds" in verified.stdout
    query = (
        "SELECT entity_type, entity_id, reason_code, status, exposure_amount, due_date"
        " FROM exceptions ORDER BY id"
    )
    pg, sq = connect(pg_url), connect(lite)
    assert [tuple(r) for r in pg.execute(query)] == [tuple(r) for r in sq.execute(query)]
    audit = "SELECT seq, actor, action, entity_type, entity_id FROM audit_log ORDER BY seq"
    assert [tuple(r) for r in pg.execute(audit)] == [tuple(r) for r in sq.execute(audit)]
    pg.close()
    sq.close()
    for command in (("rollforward", "--json"), ("journal",)):
        books = [_cli(*command, "--month", "2026-06", "--db", db) for db in (pg_url, lite)]
        assert [b.returncode for b in books] == [0, 0], books[0].stderr + books[1].stderr
        assert books[0].stdout == books[1].stdout and books[0].stdout


def test_reconcile_and_import_day_name_the_database_without_its_password(
    pg_url: str, tmp_path: Path
) -> None:
    # An independent tester saw `postgresql:/recon_web:webpw@...` printed: the password in
    # clear, and the URL folded by argparse's type=Path.
    password = pg_url.split("@")[0].rsplit(":", 1)[1]
    dataset = str(ROOT / "tests" / "fixtures" / "spec_example" / "dataset")
    as_of = ("--as-of", "2026-06-30T23:59:59+05:30")
    runs = [
        _cli("reconcile", dataset, "--out", str(tmp_path / "r.csv"), *as_of, "--db", pg_url),
        _cli("import-day", dataset, "--db", pg_url, *as_of),
    ]
    for done in runs:
        assert done.returncode == 0, done.stderr
        assert password not in done.stdout + done.stderr
    assert "run 1 stored in postgresql://" in runs[0].stdout
    assert f"into {pg_url.replace(':' + password + '@', ':***@')};" in runs[1].stdout


def test_the_investigator_reads_through_a_read_only_session_and_keeps_its_state(
    pg_url: str, tmp_path: Path
) -> None:
    from core.db import investigate as inv
    from core.investigate.service import investigate

    dataset = str(ROOT / "tests" / "fixtures" / "spec_example" / "dataset")
    done = _cli("reconcile", dataset, "--out", str(tmp_path / "r.csv"), "--db", pg_url)
    assert done.returncode == 0, done.stderr
    conn = connect(pg_url)
    first = int(conn.execute("SELECT min(id) FROM exceptions").fetchone()[0])
    answer = investigate(conn, first)
    assert answer.source == "deterministic"
    with inv.read_only(conn) as ro, pytest.raises(sqlite3.DatabaseError, match="read-only"):
        ro.execute("DELETE FROM llm_token_usage")
    with transaction(conn):
        inv.cache_put(conn, evidence_hash="h1", exception_id=first, model="m",
                      answer_json="{}", tokens=7, now=1)  # fmt: skip
        inv.add_token_usage(conn, day="2026-12-01", model="m", prompt_tokens=3,
                            output_tokens=4, total_tokens=7)  # fmt: skip
        inv.add_token_usage(conn, day="2026-12-01", model="m", prompt_tokens=1,
                            output_tokens=1, total_tokens=2)  # fmt: skip
        inv.breaker_record_failure(conn, model="m", error="x", now=10, threshold=1,
                                   cooldown_seconds=60)  # fmt: skip
    cached = inv.cache_get(conn, "h1")
    assert cached is not None and cached["tokens"] == 7
    assert inv.tokens_used_on(conn, "2026-12-01") == 9
    state = inv.breaker_state(conn, "m")
    assert state is not None and state["open_until"] == 70
    conn.close()


SPEC_DATASET = ROOT / "tests" / "fixtures" / "spec_example" / "dataset"


@pytest.mark.parametrize("table_state", ["empty", "holding rows"])
def test_copy_stores_a_repeated_key_once_with_its_last_values(
    pg_url: str, table_state: str
) -> None:
    import pandas as pd

    from core.dataset import Dataset
    from core.ingest import load_dataset, store_dataset

    loaded, _ = load_dataset(SPEC_DATASET)
    payments = loaded.payments.head(130).copy()
    repeat = payments.iloc[[0]].copy()
    repeat["amount"] = repeat["amount"] + 1
    payments = pd.concat([payments, repeat], ignore_index=True)
    conn = connect(pg_url)
    if table_state == "holding rows":
        store_dataset(
            conn, Dataset(payments=payments.iloc[[1]]), source="t", location="t", content_hash="a"
        )
    store_dataset(conn, Dataset(payments=payments), source="t", location="t", content_hash="b")
    first = str(payments.iloc[0]["id"])
    rows = conn.execute("SELECT amount FROM payments WHERE id = ?", (first,)).fetchall()
    assert [r[0] for r in rows] == [int(repeat.iloc[0]["amount"])]
    assert conn.execute("SELECT count(*) FROM payments").fetchone()[0] == 130
    conn.close()


def test_a_replacing_import_reads_back_exactly_what_was_loaded(pg_url: str, tmp_path: Path) -> None:
    import shutil

    import pandas as pd

    from core.db.raw import read_dataset
    from core.ingest import import_dataset, load_dataset

    conn = connect(pg_url)
    import_dataset(conn, SPEC_DATASET)
    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_DATASET, folder)
    path = folder / "settlements.csv"
    path.write_bytes(path.read_bytes().replace(b",155915082,", b",155915083,", 1))
    report = import_dataset(conn, folder, replace=True)
    assert report.replaced and report.import_id == 2
    for table in ("payments", "refunds", "settlements", "recon_rows", "bank_lines"):
        ids = {r[0] for r in conn.execute(f"SELECT DISTINCT import_id FROM {table}")}
        assert ids == {2}, table
    loaded, _ = load_dataset(folder)
    stored = read_dataset(conn)
    for name in ("payments", "refunds", "settlements", "recon", "bank"):
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(stored, name), obj=name)
    assert stored.has_bank_statement
    conn.close()


def test_sqlite_spellings_become_postgresql_ones_outside_literals() -> None:
    from core.db.backend import dialect_sql

    assert dialect_sql("SELECT 1 FROM e WHERE e.a IS NOT o.a AND e.b IS ? AND c IS NOT NULL") == (
        "SELECT 1 FROM e WHERE e.a IS DISTINCT FROM o.a AND e.b IS NOT DISTINCT FROM ?"
        " AND c IS NOT NULL"
    )
    assert dialect_sql("SELECT sum(status = 'MATCHED'), sum(n) FROM t WHERE x LIKE 'a IS b'") == (
        "SELECT sum(CASE WHEN status = 'MATCHED' THEN 1 ELSE 0 END), sum(n) FROM t"
        " WHERE x ILIKE 'a IS b'"
    )
    assert dialect_sql("DELETE FROM temp.ids ORDER BY +o.a, +o.b") == (
        "DELETE FROM pg_temp.ids ORDER BY o.a, o.b"
    )


def test_outcomes_read_in_byte_order_even_under_a_language_collation(
    pg_url: str, tmp_path: Path
) -> None:
    from core.db.runs import read_outcome_frame, read_outcomes

    dataset = str(ROOT / "tests" / "fixtures" / "spec_example" / "dataset")
    done = _cli("reconcile", dataset, "--out", str(tmp_path / "pg.csv"), "--db", pg_url,
                "--as-of", "2026-06-30T23:59:59+05:30")  # fmt: skip
    assert done.returncode == 0, done.stderr
    owner = _owner(pg_url)
    with transaction(owner):  # a language collation orders "pay_a" before "pay_B"
        for column in ("entity_type", "entity_id"):
            owner.execute(
                f'ALTER TABLE outcomes ALTER COLUMN {column} TYPE TEXT COLLATE "und-x-icu"'
            )
        owner.execute(
            "INSERT INTO outcomes (run_id, entity_type, entity_id, status, reason_code,"
            " reason_codes, expected_amount, actual_amount, difference, exposure_amount,"
            " exposure_class, match_method)"
            " SELECT run_id, entity_type, 'pay_' || s.id, status, reason_code, reason_codes,"
            " expected_amount, actual_amount, difference, exposure_amount, exposure_class,"
            " match_method FROM outcomes, (VALUES ('a'), ('B')) AS s(id)"
            " WHERE entity_type = 'payment' LIMIT 2"
        )
    owner.close()
    conn = connect(pg_url)
    run_id = int(conn.execute("SELECT max(run_id) FROM outcomes").fetchone()[0])
    frame = read_outcome_frame(conn, run_id)
    keys = list(zip(frame["entity_type"], frame["entity_id"], strict=True))
    assert keys == sorted(keys)  # Python compares code points: the bytes' order in UTF-8
    assert ("payment", "pay_B") in keys and ("payment", "pay_a") in keys
    rows = [(r["entity_type"], r["entity_id"]) for r in read_outcomes(conn, run_id)]
    assert rows == keys
    conn.close()
