"""Every import, reconciliation run and Razorpay sync names who made it in the audit trail
(core.activity): one entry each, by the command line's operating-system login or the
person the caller names, with what it did."""

from __future__ import annotations

import datetime as dt
import getpass
import json
from pathlib import Path
from typing import Any

import pytest

from core.__main__ import main
from core.audit import verify
from core.benchmark import generate
from core.calendar import IST
from core.db import open_database
from core.engine import EngineParams
from core.pipeline import reconcile_database, reconcile_folder_into_db
from tests.conftest import SPEC_EXAMPLE
from tests.test_pipeline_incremental import split_into_days

AS_OF = int(dt.datetime(2026, 6, 30, 23, 59, 59, tzinfo=IST).timestamp())
PEOPLE_ACTIONS = ("data.imported", "run.reconciled", "razorpay.synced")


def _entries(db_url: str) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(actor, action, entity id, payload) of the entries naming who changed the data."""
    with open_database(db_url) as conn:
        rows = conn.execute(
            "SELECT actor, action, entity_id, payload_json FROM audit_log"
            " WHERE action IN (?, ?, ?) ORDER BY seq",
            PEOPLE_ACTIONS,
        ).fetchall()
    return [(str(a), str(b), str(c), json.loads(d)) for a, b, c, d in rows]


def test_a_reconcile_into_the_database_names_its_actor_with_the_import_and_the_run(
    db_url: str,
) -> None:
    with open_database(db_url) as conn:
        first = reconcile_folder_into_db(
            conn,
            SPEC_EXAMPLE / "dataset",
            params=EngineParams(),
            as_of=AS_OF,
            actor="admin@example.com",
        )
        again = reconcile_database(conn, EngineParams(), AS_OF, "files", actor="ops@example.com")
        assert verify(conn).ok
    (one, two) = _entries(db_url)
    actor, action, entity, payload = one
    assert (actor, action, entity) == ("admin@example.com", "run.reconciled", str(first.run_id))
    assert payload["run_id"] == first.run_id and payload["as_of"] == AS_OF
    assert payload["import"]["replaced"] is True
    assert payload["import"]["content_hash"] and payload["import"]["import_id"] >= 1
    assert {f["file"] for f in payload["import"]["files"]} >= {"payments.json"}
    assert all(len(f["sha256"]) == 64 for f in payload["import"]["files"])
    assert payload["exceptions"]["opened"] > 0 and sum(payload["by_status"].values()) > 0
    assert two[:3] == ("ops@example.com", "run.reconciled", str(again.run_id))
    assert two[3]["import"] is None


def test_the_import_command_names_the_operating_system_login_once(
    db_url: str, tmp_path: Path
) -> None:
    folder = SPEC_EXAMPLE / "dataset"
    assert main(["import", str(folder), "--db", db_url]) == 0
    assert main(["import", str(folder), "--db", db_url]) == 0  # the same content: no entry
    ((actor, action, entity, payload),) = _entries(db_url)
    assert (actor, action) == (getpass.getuser(), "data.imported")
    assert entity == str(payload["import_id"])
    assert (payload["how"], payload["replaced"], payload["source"]) == ("import", False, "files")
    assert {f["file"]: len(f["sha256"]) for f in payload["files"]}["payments.json"] == 64
    assert payload["written"]["payments"] == 400


def test_import_day_writes_one_entry_naming_its_actor_the_day_and_the_run(
    db_url: str, tmp_path: Path
) -> None:
    generated = generate(tmp_path / "full", payments=300, seed=7)
    last = dt.datetime.fromtimestamp(generated.as_of, tz=IST).date()
    days = split_into_days(tmp_path / "full", tmp_path / "days", [last - dt.timedelta(days=1)])
    as_of = f"{last - dt.timedelta(days=2)}T23:59:59+05:30"
    with open_database(db_url) as conn:
        before = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM audit_log").fetchone()[0]
    assert main(["import-day", str(days[0]), "--db", db_url, "--as-of", as_of]) == 0
    with open_database(db_url) as conn:
        people = conn.execute(
            "SELECT actor, action FROM audit_log WHERE seq > ? AND actor <> 'engine'", (before,)
        ).fetchall()
        run_id = conn.execute("SELECT MAX(id) FROM runs").fetchone()[0]
    assert [tuple(r) for r in people] == [(getpass.getuser(), "run.reconciled")]
    ((_, _, entity, payload),) = _entries(db_url)
    assert entity == str(run_id) and payload["how"] == "import-day"
    assert payload["import"]["replaced"] is False and payload["import"]["files"]


def test_a_streamed_import_into_the_database_names_its_actor(db_url: str, tmp_path: Path) -> None:
    from core.streamed import stream_folder_into_db

    generate(tmp_path / "ds", payments=300, seed=29)
    with open_database(db_url) as conn:
        stored = stream_folder_into_db(
            conn, tmp_path / "ds", EngineParams(), AS_OF, actor="admin@example.com"
        )
    ((actor, action, entity, payload),) = _entries(db_url)
    assert (actor, action, entity) == ("admin@example.com", "run.reconciled", str(stored.run_id))
    assert payload["import"]["import_id"] == stored.import_id
    assert payload["import"]["replaced"] is True and "payments.csv" in payload["import"]["files"]


def test_the_first_start_names_bootstrap_for_the_benchmark_it_imports_and_reconciles(
    db_url: str, tmp_path: Path
) -> None:
    from core.bootstrap import default_builder

    (tmp_path / "work").mkdir()
    with open_database(db_url) as conn:
        default_builder(conn, tmp_path / "work", lambda _f, _m: None)
    (imported, reconciled) = _entries(db_url)
    assert imported[:2] == ("bootstrap", "data.imported")
    assert imported[3]["source"] == "benchmark" and imported[3]["how"] == "first start (benchmark)"
    assert reconciled[:2] == ("bootstrap", "run.reconciled")
    assert reconciled[3]["how"] == "first start (benchmark)"


def test_verify_names_a_run_stored_by_a_process_that_stopped_before_recording_it(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry is written after the run commits (core.activity); a process killed in
    between leaves a run that names no one. The chain still verifies, and says which run
    the trail cannot attribute."""
    import core.pipeline

    with open_database(db_url) as conn:
        reconcile_folder_into_db(
            conn, SPEC_EXAMPLE / "dataset", params=EngineParams(), as_of=AS_OF, actor="a@x.in"
        )
        assert not [w for w in verify(conn).warnings if "run.reconciled" in w]

        def stopped(*args: Any, **kwargs: Any) -> None:
            raise KeyboardInterrupt  # the process stops between the commit and the entry

        monkeypatch.setattr(core.pipeline, "record_run", stopped)
        with pytest.raises(KeyboardInterrupt):
            reconcile_database(conn, EngineParams(), AS_OF, "files", actor="b@x.in")
        monkeypatch.undo()
        (lost,) = [r[0] for r in conn.execute("SELECT id FROM runs ORDER BY id DESC LIMIT 1")]
        reconcile_database(conn, EngineParams(), AS_OF, "files", actor="c@x.in")

        result = verify(conn)

    assert result.ok
    (warning,) = [w for w in result.warnings if "run.reconciled" in w]
    assert warning.startswith("1 completed run(s) have no run.reconciled entry")
    assert f"run {lost} (" in warning
