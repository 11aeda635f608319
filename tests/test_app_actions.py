"""What the Data page starts, called as the page calls it (uploads are in-memory files)."""

from __future__ import annotations

import csv
import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from core import access
from core.calendar import IST, CalendarParams
from core.db import connect
from core.errors import InputError
from tests.conftest import SPEC_EXAMPLE
from tests.run_lock_support import held_on_another_thread
from ui import actions, auth


@dataclass(frozen=True)
class Upload:
    """The part of Streamlit's UploadedFile the importer uses."""

    name: str
    data: bytes

    def getvalue(self) -> bytes:
        return self.data


def _uploads(folder: Path) -> list[Upload]:
    return [Upload(p.name, p.read_bytes()) for p in sorted(folder.iterdir())]


@pytest.fixture(autouse=True)
def _signed_in_admin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Data page's actions run for the signed-in admin (here: the local single user)."""
    local = access.local_user()
    session = auth.Session(local.actor, "admin", "local", local, local.actor)
    monkeypatch.setattr(auth, "current", lambda: session)


@pytest.fixture
def database(db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """An empty, migrated database: a SQLite file or a PostgreSQL URL."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    return db_url


def test_uploading_the_example_dataset_imports_every_file(database: str) -> None:
    report = actions.import_uploads(_uploads(SPEC_EXAMPLE / "dataset"), "auto", False)
    assert report.import_id is not None and report.has_bank_statement
    assert report.location.startswith("upload: bank_statement.csv, payments.json")
    conn = connect(database)
    payments = conn.execute("SELECT count(*) FROM payments").fetchone()[0]
    conn.close()
    assert payments == report.written["payments"] > 0


def test_uploading_while_a_run_stores_waits_for_it_and_writes_nothing_when_it_gives_up(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.db.run_lock import RunInProgressError

    monkeypatch.setenv("RAZORRECON_RUN_WAIT_S", "0.3")
    said: list[str] = []
    with held_on_another_thread(database), pytest.raises(RunInProgressError, match="another run"):
        actions.import_uploads(
            _uploads(SPEC_EXAMPLE / "dataset"), "auto", False, lambda _f, m: said.append(m)
        )
    assert any(m.startswith("Waiting for another run") for m in said), said
    conn = connect(database)
    assert conn.execute("SELECT count(*) FROM imports").fetchone()[0] == 0
    conn.close()


def test_a_bad_cell_is_refused_with_file_line_and_column(database: str) -> None:
    files = _uploads(SPEC_EXAMPLE / "dataset")
    settlements = next(f for f in files if f.name == "settlements.csv")
    lines = settlements.data.decode("utf-8-sig").splitlines()
    cells = lines[1].split(",")
    cells[2] = "twelve"
    lines[1] = ",".join(cells)
    broken = Upload("settlements.csv", "\n".join(lines).encode())
    with pytest.raises(InputError) as refused:
        actions.import_uploads([*(f for f in files if f is not settlements), broken], "auto", False)
    problem = refused.value.problems[0]
    assert (problem.file, problem.line, problem.column) == ("settlements.csv", 2, "amount")
    conn = connect(database)
    assert conn.execute("SELECT count(*) FROM imports").fetchone()[0] == 0
    conn.close()


def test_an_unknown_file_name_is_refused_before_reading(database: str) -> None:
    with pytest.raises(InputError, match="not a dataset file name"):
        actions.import_uploads([Upload("payments (1).csv", b"id\n")], "auto", False)


def test_a_file_uploaded_twice_is_refused(database: str) -> None:
    files = _uploads(SPEC_EXAMPLE / "dataset")
    with pytest.raises(InputError, match=r"^refunds\.csv: uploaded twice"):
        actions.import_uploads([*files, files[2]], "auto", False)


def test_an_upload_over_the_size_cap_is_refused_naming_file_and_cap(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAZORRECON_MAX_FILE_MB", "1")
    files = _uploads(SPEC_EXAMPLE / "dataset")
    big = Upload("refunds.csv", files[2].data + b"\n" * (3 << 19))
    with pytest.raises(InputError) as refused:
        actions.import_uploads([*(f for f in files if f.name != "refunds.csv"), big], "auto", False)
    assert [str(p) for p in refused.value.problems] == [
        "refunds.csv: file of 1.5 MB is over the 1 MB limit (RAZORRECON_MAX_FILE_MB)"
    ]
    conn = connect(database)
    assert conn.execute("SELECT count(*) FROM imports").fetchone()[0] == 0
    conn.close()


def test_holidays_and_as_of_parse_in_ist() -> None:
    assert actions.parse_holidays("2026-08-15\n# note\n\n2026-10-02") == frozenset(
        {dt.date(2026, 8, 15), dt.date(2026, 10, 2)}
    )
    with pytest.raises(InputError, match="holidays:2:1"):
        actions.parse_holidays("2026-08-15\n15/08/2026")
    seconds = actions.as_of_seconds(dt.date(2026, 6, 30), dt.time(23, 59, 59))
    assert dt.datetime.fromtimestamp(seconds, tz=IST).isoformat() == "2026-06-30T23:59:59+05:30"


def test_reconciling_the_upload_persists_a_run_and_opens_exceptions(database: str) -> None:
    pytest.importorskip("core.engine")
    from core.db import views as db
    from core.views.queue import QueueFilter, queue
    from core.views.runs import latest_run

    actions.import_uploads(_uploads(SPEC_EXAMPLE / "dataset"), "auto", False)
    as_of = actions.as_of_seconds(dt.date(2026, 6, 30), dt.time(23, 59, 59))
    progress: list[str] = []
    run_id = actions.reconcile(CalendarParams(), as_of, lambda f, m: progress.append(m))
    conn = connect(database)
    try:
        run = latest_run(conn)
        assert run is not None and run.id == run_id and run.as_of == as_of
        assert run.source == "files" and run.location.startswith("upload: ")
        expected = list(csv.DictReader((SPEC_EXAMPLE / "expected_outcomes.csv").open()))
        exceptions = sum(1 for row in expected if row["status"] == "EXCEPTION")
        assert queue(conn, QueueFilter()).total == exceptions > 0
        assert db.get_run_summary(conn, run_id) is not None
    finally:
        conn.close()
    assert progress == [
        "Reconciling, saving the run and updating the exception queue",
        "Summarising the run",
    ]


def test_uploading_an_overlapping_statement_stores_only_its_new_lines(database: str) -> None:
    """A second upload whose statement repeats lines of the first (the last days again, and
    one new credit): the report says so; the new credit takes an id no stored line holds."""
    export = Path(__file__).parent / "fixtures" / "real_exports" / "dashboard_csv"
    actions.import_uploads(_uploads(export), "auto", False)
    header, *lines = (export / "bank_statement.csv").read_text("utf-8").splitlines()
    new = "01/08/26,NEFT CR-UTIB0000001-RAZORPAY SOFTWARE PVT LTD-UTIBN5262140,UTIBN5262140,"
    statement = "\n".join([header, *lines[-3:], new + "01/08/26,,999.00,163547.61"]) + "\n"
    empty = [
        Upload(name, (export / name).read_text("utf-8").splitlines()[0].encode() + b"\n")
        for name in ("payments.csv", "settlements.csv", "settlement_recon.csv")
    ]
    report = actions.import_uploads(
        [*empty, Upload("bank_statement.csv", statement.encode())], "auto", False
    )
    assert (report.bank_lines_known, report.bank_lines_renamed) == (3, 1)
    assert any("3 bank line(s) already stored" in line for line in report.lines())
    conn = connect(database)
    ids = [r[0] for r in conn.execute("SELECT id FROM bank_lines WHERE utr = 'UTIBN5262140'")]
    total = conn.execute("SELECT count(*) FROM bank_lines").fetchone()[0]
    conn.close()
    assert total == len(lines) + 1
    assert ids == [f"upload@{report.content_hash[:8]}/bank_statement.csv:5"]


def test_adding_one_days_payments_alone_to_imported_data_is_taken(database: str) -> None:
    """A day without settlements (a weekend) is normal: its Payments report alone, added to
    data already imported, stores its payments and keeps the stored settlements, recon rows
    and bank lines (PG team tester, finding 9: refused as required files missing). The
    report says the stored bank lines stay, not that bank checks will be skipped."""
    export = Path(__file__).parent / "fixtures" / "real_exports" / "dashboard_csv"
    actions.import_uploads(_uploads(export), "auto", False)
    before = _counts(database)
    header, *_ = (export / "payments.csv").read_text("utf-8").splitlines()
    columns = header.split(",")
    with open(export / "payments.csv", encoding="utf-8", newline="") as f:
        row = next(csv.DictReader(f))
    row = {**row, columns[0]: "pay_Weekend0000001"}
    day = ",".join(columns) + "\n" + ",".join(_csv_cell(row[c]) for c in columns) + "\n"
    report = actions.import_uploads([Upload("payments.csv", day.encode())], "auto", False)
    after = _counts(database)
    assert after["payments"] == before["payments"] + 1
    assert {t: after[t] for t in after if t != "payments"} == {
        t: before[t] for t in before if t != "payments"
    }
    lines = report.lines()
    assert not any("bank checks will be skipped" in line for line in lines)
    assert any("stored bank lines stay" in line for line in lines)


def test_a_first_upload_still_needs_the_required_files(database: str) -> None:
    export = Path(__file__).parent / "fixtures" / "real_exports" / "dashboard_csv"
    with pytest.raises(InputError) as refused:
        actions.import_uploads(
            [Upload("payments.csv", (export / "payments.csv").read_bytes())], "auto", False
        )
    assert {p.file for p in refused.value.problems} == {"settlements.csv", "settlement_recon.csv"}


def _csv_cell(value: str) -> str:
    return f'"{value}"' if "," in value or '"' in value else value


def _counts(database: str) -> dict[str, int]:
    conn = connect(database)
    try:
        return {
            t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
            for t in ("payments", "refunds", "settlements", "recon_rows", "bank_lines")
        }
    finally:
        conn.close()


def test_uploading_older_files_is_refused_by_line_unless_taken_as_corrections(
    database: str, tmp_path: Path
) -> None:
    """The Data page's upload: files that would move a stored status back (captured back to
    authorized) are refused, each row named by its file's line; the page's checkbox takes
    them as corrections, audited."""
    from core.errors import OlderRowsError

    folder = tmp_path / "day"
    folder.mkdir()
    header = "id,entity,amount,currency,status,captured,created_at"
    for name in ("settlements.csv", "settlement_recon.csv"):
        (folder / name).write_bytes((SPEC_EXAMPLE / "dataset" / name).read_bytes())

    def upload(status: str) -> list[Upload]:
        captured = "true" if status == "captured" else "false"
        (folder / "payments.csv").write_text(
            f"{header}\npay_Later000000001,payment,10000,INR,{status},{captured},1779769331\n"
        )
        return _uploads(folder)

    actions.import_uploads(upload("captured"), "auto", False)
    with pytest.raises(OlderRowsError) as refused:
        actions.import_uploads(upload("authorized"), "auto", False)
    problem = refused.value.problems[0]
    assert (problem.file, problem.line, problem.column) == ("payments.csv", 2, "status")
    assert "tick 'Take older rows as corrections'" in problem.message
    report = actions.import_uploads(upload("authorized"), "auto", False, accept_older=True)
    assert report.older_count == 1 and report.changed["payments"] == 1
    conn = connect(database)
    try:
        actor = conn.execute(
            "SELECT actor FROM audit_log WHERE action = 'import_older_accepted'"
        ).fetchone()[0]
    finally:
        conn.close()
    assert actor == access.local_user().actor


def _people_entries(database: str) -> list[tuple[str, str, dict[str, object]]]:
    conn = connect(database)
    try:
        rows = conn.execute(
            "SELECT actor, action, payload_json FROM audit_log"
            " WHERE action IN ('data.imported', 'run.reconciled') ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    return [(str(a), str(b), json.loads(p)) for a, b, p in rows]


def test_the_data_pages_import_and_reconcile_each_name_the_signed_in_person(
    database: str,
) -> None:
    me = access.local_user().actor
    report = actions.import_uploads(_uploads(SPEC_EXAMPLE / "dataset"), "auto", False)
    actions.import_uploads(_uploads(SPEC_EXAMPLE / "dataset"), "auto", False)  # a rerun
    as_of = actions.as_of_seconds(dt.date(2026, 6, 30), dt.time(23, 59, 59))
    run_id = actions.reconcile(CalendarParams(), as_of, lambda f, m: None)
    (imported, reconciled) = _people_entries(database)
    assert imported[:2] == (me, "data.imported")
    assert imported[2]["import_id"] == report.import_id and imported[2]["how"] == "upload (app)"
    assert imported[2]["content_hash"] == report.content_hash
    assert reconciled[:2] == (me, "run.reconciled") and reconciled[2]["run_id"] == run_id


def test_the_server_folder_import_names_the_signed_in_person(database: str, tmp_path: Path) -> None:
    from core.benchmark import generate

    generate(tmp_path / "ds", payments=300, seed=3)
    as_of = actions.as_of_seconds(dt.date(2026, 6, 30), dt.time(23, 59, 59))
    stored = actions.stream_folder(
        str(tmp_path / "ds"), "auto", CalendarParams(), as_of, lambda f, m: None
    )
    ((actor, action, payload),) = _people_entries(database)
    assert (actor, action) == (access.local_user().actor, "run.reconciled")
    assert payload["run_id"] == stored.run_id
    assert payload["import"]["import_id"] == stored.import_id  # type: ignore[index]
    assert payload["import"]["replaced"] is True  # type: ignore[index]
