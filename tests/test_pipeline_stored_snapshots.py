"""The stored incremental path (`import-day`, docs/engine.md "Stored incremental runs"): the
snapshot a run leaves beside the database, verified before it is used, and carried outcomes
copied inside the database; every run still equals a full run over the stored data, on
SQLite files and on PostgreSQL."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from core.benchmark import generate
from core.db import open_database
from core.db.runs import CarryForward, complete_run, get_run, read_outcome_frame, start_run
from core.engine import EngineParams
from core.engine.cli import parse_as_of
from core.pipeline import DayRunResult, reconcile_database, reconcile_day_into_db
from core.snapshots import DELTA_FILES, SNAPSHOT_TABLES, STATE_FILES
from tests.test_pipeline_incremental import IST, split_into_days

PARAMS = EngineParams()


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], list[int]]:
    root = tmp_path_factory.mktemp("stored-days")
    generated = generate(root / "full", payments=300, seed=33)
    last = dt.datetime.fromtimestamp(generated.as_of, tz=IST).date()
    cuts = [last - dt.timedelta(days=3), last - dt.timedelta(days=2), last - dt.timedelta(days=1)]
    folders = split_into_days(root / "full", root / "days", cuts)
    as_ofs = [parse_as_of(f"{cut - dt.timedelta(days=1)}T23:59:59+05:30") for cut in cuts]
    return folders, [*as_ofs, generated.as_of]


def _import(db: str, folder: Path, as_of: int, snapshots: Path | None) -> DayRunResult:
    with open_database(db) as conn:
        return reconcile_day_into_db(conn, folder, params=PARAMS, as_of=as_of, snapshots=snapshots)


def _full_frame(db: str, as_of: int) -> pd.DataFrame:
    """A full reconcile of the raw tables as the database holds them now (read from the
    tables, never from a snapshot; nothing stored)."""
    from core.books.store import pricing_plans
    from core.db.raw import read_dataset
    from core.engine import reconcile

    with open_database(db) as conn:
        return reconcile(read_dataset(conn), PARAMS, as_of, pricing_plans(conn))


def test_a_day_reads_the_snapshot_its_base_run_left_and_equals_a_full_run(
    days: tuple[list[Path], list[int]], db_url: str, tmp_path: Path
) -> None:
    folders, as_ofs = days
    snapshots = tmp_path / "snapshots"
    results = [
        _import(db_url, folder, as_of, snapshots)
        for folder, as_of in zip(folders[:3], as_ofs[:3], strict=True)
    ]
    assert results[0].kind == "full"
    assert results[0].read_from == "tables (no base run)"
    for before, after in itertools.pairwise(results):
        assert after.kind == "incremental"
        assert after.read_from == f"snapshot of run {before.run.run_id}"
        assert 0 < after.scope["reconciled"] < len(after.run.outcomes)
        # The families came with the snapshot (its state files): the plan used them.
        assert after.scope["family_index"] == 1
    with open_database(db_url) as conn:
        last = get_run(conn, results[-1].run.run_id)
        assert last is not None and last.snapshot is not None
        names = sorted(p.name for p in snapshots.iterdir())
        # Only the files the latest run's record names are kept: the whole snapshot the
        # full run left (one file per table), each later day as a delta beside it, and
        # the latest state.
        record = last.snapshot
        whole = {t: e["file"] for t, e in record["files"].items()}
        deltas = record["deltas"]
        assert [sorted(d["files"]) for d in deltas] == [sorted(DELTA_FILES)] * 2
        listed = [*whole.values(), *(e["file"] for d in deltas for e in d["files"].values())]
        assert names == sorted(listed)
        assert len(whole) == len(SNAPSHOT_TABLES) + len(STATE_FILES)
        first = results[0].run.run_id
        assert all(whole[t].startswith(f"run-{first}.") for t in SNAPSHOT_TABLES)
        assert all(whole[t].startswith(f"run-{last.id}.") for t in STATE_FILES)
        # Its carried outcomes were copied from the base run: the stored run reads back
        # as the frame the engine gave, and as a full run over the raw tables.
        stored = read_outcome_frame(conn, last.id)
        pd.testing.assert_frame_equal(stored, results[-1].run.outcomes)
        full = reconcile_database(conn, PARAMS, last.as_of, "files")
        pd.testing.assert_frame_equal(stored, read_outcome_frame(conn, full.run_id))


def test_a_tampered_snapshot_is_ignored_and_the_run_is_still_exact(
    days: tuple[list[Path], list[int]], tmp_path: Path
) -> None:
    folders, as_ofs = days
    db, snapshots = str(tmp_path / "t.sqlite"), tmp_path / "snapshots"
    for folder, as_of in zip(folders[:2], as_ofs[:2], strict=True):
        _import(db, folder, as_of, snapshots)
    # An outcome altered in the snapshot (a matched payment made an exception; run 2's
    # day is a delta: its fresh outcomes): same file name, valid Arrow, but not the bytes
    # its run recorded.
    outcomes = next(snapshots.glob("run-2.fresh.*.arrow"))
    frame = pd.read_feather(outcomes)
    frame.loc[0, "status"] = "EXCEPTION"
    frame.to_feather(outcomes)
    third = _import(db, folders[2], as_ofs[2], snapshots)
    assert third.kind == "incremental"
    assert third.read_from == (
        f"tables ({outcomes.name} does not match the sha256 its run recorded)"
    )
    with open_database(db) as conn:
        stored = read_outcome_frame(conn, third.run.run_id)
    pd.testing.assert_frame_equal(stored, _full_frame(db, as_ofs[2]))
    # The run that read the tables left a good snapshot again; a missing file is ignored.
    missing = next(snapshots.glob(f"run-{third.run.run_id}.payments.*.arrow"))
    missing.unlink()
    fourth = _import(db, folders[3], as_ofs[3], snapshots)
    assert (fourth.kind, fourth.read_from) == (
        "incremental",
        f"tables ({missing.name} is missing)",
    )
    with open_database(db) as conn:
        stored = read_outcome_frame(conn, fourth.run.run_id)
    pd.testing.assert_frame_equal(stored, _full_frame(db, as_ofs[3]))


def test_a_snapshot_is_stale_once_data_is_imported_after_it(
    days: tuple[list[Path], list[int]], tmp_path: Path
) -> None:
    from core.activity import record_import
    from core.ingest import store_dataset
    from core.pipeline import load_folder

    folders, as_ofs = days
    db, snapshots = str(tmp_path / "s.sqlite"), tmp_path / "snapshots"
    for folder, as_of in zip(folders[:2], as_ofs[:2], strict=True):
        _import(db, folder, as_of, snapshots)
    with open_database(db) as conn:  # the next day imported without a run
        loaded = load_folder(folders[2])
        report = store_dataset(
            conn, loaded.dataset, source="files", location="x", content_hash="other"
        )
        # Audited as the `import` command records it: the raw tables' counts are explained.
        record_import(conn, report, actor="cli", how="import command")
    fourth = _import(db, folders[3], as_ofs[3], snapshots)
    assert fourth.read_from == "tables (data was imported after the snapshot)"
    assert fourth.kind == "full"  # data the base run did not reconcile
    assert fourth.scope["reason"] == "data imported after run 2 was not reconciled by it"
    with open_database(db) as conn:
        stored = read_outcome_frame(conn, fourth.run.run_id)
    pd.testing.assert_frame_equal(stored, _full_frame(db, as_ofs[3]))


def test_without_snapshots_a_day_reads_the_tables_and_leaves_none(
    days: tuple[list[Path], list[int]], tmp_path: Path
) -> None:
    folders, as_ofs = days
    db = str(tmp_path / "n.sqlite")
    first = _import(db, folders[0], as_ofs[0], None)
    second = _import(db, folders[1], as_ofs[1], None)
    assert second.read_from == "tables (no snapshot folder)"
    assert second.kind == "incremental"
    with open_database(db) as conn:
        assert get_run(conn, first.run.run_id).snapshot is None  # type: ignore[union-attr]
    assert not list(tmp_path.glob("*.snapshots"))


def test_a_carry_forward_that_copies_another_count_fails_the_run_and_stores_nothing(
    days: tuple[list[Path], list[int]], db_url: str
) -> None:
    folders, as_ofs = days
    base = _import(db_url, folders[0], as_ofs[0], None)
    with open_database(db_url) as conn:
        run_id = start_run(conn, as_of=as_ofs[0], source="t", params={}, input_hashes={})
        stored = len(base.run.outcomes)
        carry = CarryForward(base.run.run_id, ["payment"], ["pay_none"], expected=stored - 1)
        with pytest.raises(ValueError, match=f"holds {stored} outcomes to carry forward"):
            complete_run(conn, run_id, carry=carry, timings={}, counts={})
        run = get_run(conn, run_id)
        assert run is not None and run.status == "running"
        assert read_outcome_frame(conn, run_id).empty
        # The same copy with the right count stores the base run's rows under the new run.
        complete_run(
            conn,
            run_id,
            carry=CarryForward(base.run.run_id, [], [], expected=stored),
            timings={},
            counts={},
        )
        pd.testing.assert_frame_equal(
            read_outcome_frame(conn, run_id), read_outcome_frame(conn, base.run.run_id)
        )


def test_the_snapshot_keeps_the_families_and_a_tampered_state_file_is_refused(
    days: tuple[list[Path], list[int]], tmp_path: Path
) -> None:
    """The IncrementalState a run leaves in its snapshot is the one build_state gives the
    stored rows (same families, same key index); a state file with other bytes fails its
    sha256 like any snapshot file, and the day reads the tables, still exact."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    from core.db.raw import latest_import
    from core.engine.incremental import build_state
    from core.pipeline import _replay_delta
    from core.snapshots import load_snapshot
    from tests.test_engine_incremental import assert_same_state

    folders, as_ofs = days
    db, snapshots = str(tmp_path / "f.sqlite"), tmp_path / "snapshots"
    for folder, as_of in zip(folders[:2], as_ofs[:2], strict=True):
        _import(db, folder, as_of, snapshots)
    with open_database(db) as conn:
        run = get_run(conn, 2)
        latest = latest_import(conn)
        assert run is not None and latest is not None
        loaded = load_snapshot(snapshots, run.snapshot, latest.id, _replay_delta)
    assert loaded.snapshot is not None and loaded.snapshot.state is not None
    assert_same_state(loaded.snapshot.state, build_state(loaded.snapshot.dataset))
    # One family label changed: valid Arrow, not the recorded bytes.
    path = next(snapshots.glob("run-2.state_family.*.arrow"))
    table = ipc.open_file(pa.memory_map(str(path))).read_all()
    labels = table.column("family").to_numpy().copy()
    labels[0] = labels[-1]
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(pa.table({"family": labels}))
    third = _import(db, folders[2], as_ofs[2], snapshots)
    assert third.kind == "incremental"
    assert third.read_from == f"tables ({path.name} does not match the sha256 its run recorded)"
    assert third.scope["family_index"] == 0
    with open_database(db) as conn:
        stored = read_outcome_frame(conn, third.run.run_id)
    pd.testing.assert_frame_equal(stored, _full_frame(db, as_ofs[2]))


def test_deltas_are_compacted_into_a_whole_snapshot_and_every_day_stays_exact(
    days: tuple[list[Path], list[int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With at most one delta allowed, the day after a delta writes the whole snapshot
    again (the older runs' files removed); every day (each one read from a whole snapshot
    or a replayed delta) stores what its engine gave, and the last equals a full run."""
    import core.snapshots

    monkeypatch.setattr(core.snapshots, "COMPACT_AFTER", 1)
    folders, as_ofs = days
    db, snapshots = str(tmp_path / "c.sqlite"), tmp_path / "snapshots"
    results = [_import(db, f, a, snapshots) for f, a in zip(folders, as_ofs, strict=True)]
    assert [r.kind for r in results] == ["full", "incremental", "incremental", "incremental"]
    with open_database(db) as conn:
        records = [get_run(conn, r.run.run_id) for r in results]
        for result in results[1:]:
            stored = read_outcome_frame(conn, result.run.run_id)
            pd.testing.assert_frame_equal(stored, result.run.outcomes)
    shapes = [len((r.snapshot or {}).get("deltas") or []) if r else -1 for r in records]
    assert shapes == [0, 1, 0, 1]  # whole, delta, whole again, delta
    pd.testing.assert_frame_equal(results[-1].run.outcomes, _full_frame(db, as_ofs[-1]))
    third = records[2]
    assert third is not None and third.snapshot is not None
    names = {p.name for p in snapshots.iterdir()}
    assert all(n.startswith((f"run-{third.id}.", f"run-{results[3].run.run_id}.")) for n in names)


def test_a_snapshot_without_state_files_is_used_and_the_next_day_gets_the_families(
    days: tuple[list[Path], list[int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole snapshot written without state files (as before they existed) is still read;
    that day plans without families, writes its delta with a state built for its tables,
    and the day after plans with them; both stay exact."""
    import core.snapshots

    folders, as_ofs = days
    db, snapshots = str(tmp_path / "n.sqlite"), tmp_path / "snapshots"
    with monkeypatch.context() as patched:
        patched.setattr(core.snapshots, "_state_frames", lambda state: {})
        first = _import(db, folders[0], as_ofs[0], snapshots)
    assert not any(p.name.split(".")[1] in STATE_FILES for p in snapshots.iterdir())
    second = _import(db, folders[1], as_ofs[1], snapshots)
    third = _import(db, folders[2], as_ofs[2], snapshots)
    assert second.read_from == f"snapshot of run {first.run.run_id}"
    assert (second.scope["family_index"], third.scope["family_index"]) == (0, 1)
    assert third.read_from == f"snapshot of run {second.run.run_id}"
    with open_database(db) as conn:
        stored = read_outcome_frame(conn, third.run.run_id)
    pd.testing.assert_frame_equal(stored, _full_frame(db, as_ofs[2]))


def _grouped(conn: object, run_id: int) -> list[dict[str, object]]:
    """A run's outcomes per entity type and status, counted from its stored rows."""
    rows = conn.execute(  # type: ignore[attr-defined]
        "SELECT entity_type, status, count(*) AS n FROM outcomes WHERE run_id = ?"
        " GROUP BY entity_type, status",
        (run_id,),
    ).fetchall()
    found = [{"entity_type": r[0], "status": r[1], "n": int(r[2])} for r in rows]
    return sorted(found, key=lambda r: (str(r["entity_type"]), str(r["status"])))


def test_the_run_summary_counts_of_full_and_incremental_runs_are_their_stored_rows(
    days: tuple[list[Path], list[int]], db_url: str, tmp_path: Path
) -> None:
    """views.outcome_counts reads a completed run's counts_json (no scan of its rows since
    migration 0104): for a full run, incremental days (carried rows copied in the database)
    and a full run again, it equals the stored rows grouped; a run without counts (still
    running) is counted from its rows."""
    from core.db import views

    folders, as_ofs = days
    results = [
        _import(db_url, folder, as_of, tmp_path / "snapshots")
        for folder, as_of in zip(folders[:3], as_ofs[:3], strict=True)
    ]
    assert [r.kind for r in results] == ["full", "incremental", "incremental"]
    with open_database(db_url) as conn:
        full = reconcile_database(conn, PARAMS, as_ofs[2], "files")
        run_ids = [*(r.run.run_id for r in results), full.run_id]
        for run_id in run_ids:
            counted = _grouped(conn, run_id)
            assert sum(int(str(r["n"])) for r in counted) > 0
            assert views.outcome_counts(conn, run_id) == counted
        # The last day and the full run over the same data count the same.
        assert views.outcome_counts(conn, run_ids[2]) == views.outcome_counts(conn, full.run_id)
        running = start_run(
            conn, as_of=as_ofs[2], source="files", params=PARAMS.to_dict(), input_hashes={}
        )
        assert views.outcome_counts(conn, running) == []


def test_outcomes_keep_only_indexes_a_run_appends_to_in_order(db_url: str) -> None:
    """Migration 0104: besides the primary key (run_id, entity_type, entity_id), which a run
    writes in key order, outcomes keeps only its two partial indexes of EXCEPTION rows;
    the full index by (run_id, entity_type, status) is gone on both databases."""
    with open_database(db_url) as conn:
        if "://" in db_url:
            names = {
                str(r[0])
                for r in conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE tablename = 'outcomes'"
                    " AND schemaname = current_schema()"
                )
            }
            names = {n for n in names if not n.endswith("_pkey")}
        else:
            names = {
                str(r[0])
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'outcomes'"
                    " AND sql IS NOT NULL"
                )
            }
    assert names == {"outcomes_status", "outcomes_settlement"}


def _cli_day(db: str, folder: Path, as_of: int) -> subprocess.CompletedProcess[str]:
    """`python -m core import-day` as a user runs it (the snapshot hashed while the process
    starts, core.snapshot_ahead); a run that hangs fails the test after two minutes."""
    when = dt.datetime.fromtimestamp(as_of, tz=IST).isoformat()
    command = [sys.executable, "-m", "core", "import-day", str(folder), "--db", db]
    return subprocess.run(
        [*command, "--as-of", when], capture_output=True, text=True, timeout=120, check=False
    )


def test_a_fifo_or_link_in_a_snapshot_files_place_is_refused_at_once_and_the_run_is_exact(
    days: tuple[list[Path], list[int]], tmp_path: Path
) -> None:
    folders, as_ofs = days
    db = str(tmp_path / "f.sqlite")
    snapshots = Path(db + ".snapshots")
    for folder, as_of in zip(folders[:2], as_ofs[:2], strict=True):
        _import(db, folder, as_of, snapshots)
    with open_database(db) as conn:
        record = get_run(conn, 2)
    assert record is not None and record.snapshot is not None
    files = record.snapshot["files"]
    # A FIFO where the payments file was (opening it to read would wait for a writer
    # forever), and the outcomes file moved out and linked back: the same bytes, the
    # recorded sha256, but not a regular file of the folder.
    fifo = snapshots / files["payments"]["file"]
    fifo.unlink()
    os.mkfifo(fifo)
    linked = snapshots / files["outcomes"]["file"]
    elsewhere = tmp_path / "elsewhere.arrow"
    linked.rename(elsewhere)
    linked.symlink_to(elsewhere)
    done = _cli_day(db, folders[2], as_ofs[2])
    assert done.returncode == 0, done.stderr
    reasons = {
        f"{fifo.name} is not a regular file",
        f"{linked.name} is a symbolic link, not a regular file",
    }
    told = [line for line in done.stdout.splitlines() if line.startswith("stored state read")]
    assert len(told) == 1 and told[0].startswith("stored state read from the tables (")
    assert told[0].removeprefix("stored state read from the tables (").rstrip(")") in reasons
    with open_database(db) as conn:
        stored = read_outcome_frame(conn, 3)
    pd.testing.assert_frame_equal(stored, _full_frame(db, as_ofs[2]))
    assert elsewhere.read_bytes()[:6] == b"ARROW1"  # followed by nobody, removed by nobody


def _dataset_and_outcomes(folder: Path, as_of: int) -> tuple[Any, pd.DataFrame]:
    from core.engine import reconcile
    from core.pipeline import load_folder

    dataset = load_folder(folder).dataset
    return dataset, reconcile(dataset, PARAMS, as_of)


def test_snapshot_files_are_written_to_new_files_never_through_what_is_in_the_folder(
    days: tuple[list[Path], list[int]], tmp_path: Path
) -> None:
    from core.snapshots import discard, write_files

    dataset, outcomes = _dataset_and_outcomes(days[0][0], days[1][0])
    folder = tmp_path / "snapshots"
    folder.mkdir()
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n")
    pid = os.getpid()
    # What a writer that opened `.pending.<pid>.<table>.arrow` by name would have met: a
    # link to a file outside the folder (written through) and a FIFO (waited on forever).
    (folder / f".pending.{pid}.payments.arrow").symlink_to(victim)
    os.mkfifo(folder / f".pending.{pid}.outcomes.arrow")
    got: list[Any] = []
    writer = threading.Thread(
        target=lambda: got.append(write_files(folder, dataset, outcomes)), daemon=True
    )
    writer.start()
    writer.join(120)
    assert not writer.is_alive(), "writing the snapshot waited on a FIFO"
    written = got[0]
    try:
        assert victim.read_text() == "keep me\n"
        for temporary, digest in written.files.values():
            assert temporary.parent == folder and not temporary.is_symlink()
            assert stat.S_ISREG(temporary.lstat().st_mode)
            assert stat.S_IMODE(temporary.stat().st_mode) == 0o600
            assert hashlib.sha256(temporary.read_bytes()).hexdigest() == digest
        assert pd.read_feather(written.files["outcomes"][0]).equals(outcomes)
    finally:
        discard(written)


def test_temporary_snapshot_files_of_a_dead_process_are_removed_and_a_live_ones_kept(
    tmp_path: Path,
) -> None:
    from core.snapshots import remove_dead_pending

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead_pid = int(dead.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        victim = tmp_path / "precious.txt"
        victim.write_text("keep me\n")
        folder = tmp_path / "snapshots"
        folder.mkdir()
        gone = [
            folder / f".pending.{dead_pid}.payments.k2j4.arrow",
            folder / f".pending.{dead_pid}.outcomes.arrow",  # named as before the random part
            folder / f".pending.{dead_pid}.recon.x9.arrow",  # a link: removed, not its target
        ]
        gone[0].write_bytes(b"ARROW1")
        gone[1].write_bytes(b"ARROW1")
        gone[2].symlink_to(victim)
        kept = [
            folder / f".pending.{live.pid}.payments.a1.arrow",
            folder / f".pending.{os.getpid()}.payments.b2.arrow",
            folder / "run-3.payments.0123456789abcdef.arrow",
            folder / "notes.txt",
        ]
        for path in kept:
            path.write_bytes(b"ARROW1")
        (folder / f".pending.{dead_pid}.folder").mkdir()
        assert sorted(remove_dead_pending(folder)) == sorted(gone)
        assert all(path.exists() for path in kept)
        assert (folder / f".pending.{dead_pid}.folder").is_dir()
        assert victim.read_text() == "keep me\n"
    finally:
        live.kill()
        live.wait()


def _copy_database(db: str, to: str) -> None:
    """A copy of the SQLite file `db` (its WAL included) and of its snapshot folder."""
    import shutil
    import sqlite3

    source, target = sqlite3.connect(db), sqlite3.connect(to)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    shutil.copytree(db + ".snapshots", to + ".snapshots")


def _snapshot_names(record: dict[str, Any], run_id: int) -> list[str]:
    """The files of `record` that run `run_id` wrote (a delta's and its state files)."""
    entries = [*record["files"].values()]
    entries += [e for delta in record.get("deltas", []) for e in delta["files"].values()]
    return sorted(e["file"] for e in entries if e["file"].startswith(f"run-{run_id}."))


def test_a_fifo_at_a_snapshot_files_final_name_costs_the_snapshot_and_the_command_says_so(
    days: tuple[list[Path], list[int]], tmp_path: Path
) -> None:
    """A snapshot file's final name is predictable (run id, table, content hash): a FIFO
    someone put there is neither written into nor renamed over, the run stands exact, and
    the command says on standard error that it left no snapshot, naming the path; the run
    records none, no file of it is left half named, and the next day reads the tables."""
    folders, as_ofs = days
    db, twin = str(tmp_path / "f.sqlite"), str(tmp_path / "twin.sqlite")
    for folder, as_of in zip(folders[:2], as_ofs[:2], strict=True):
        _import(db, folder, as_of, Path(db + ".snapshots"))
    _copy_database(db, twin)
    assert _cli_day(twin, folders[2], as_ofs[2]).returncode == 0  # the names day 3 writes
    with open_database(twin) as conn:
        record = get_run(conn, 3)
    assert record is not None and record.snapshot is not None
    names = _snapshot_names(record.snapshot, 3)
    assert names
    fifo = Path(db + ".snapshots") / names[len(names) // 2]
    os.mkfifo(fifo)
    done = _cli_day(db, folders[2], as_ofs[2])
    assert done.returncode == 0, done.stderr
    told = [line for line in done.stderr.splitlines() if str(fifo) in line]
    assert told == [
        f"note: run 3 left no snapshot: {fifo} is a FIFO, not a regular file; the next day"
        " will read the stored tables instead (slower but correct)"
    ], done.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    left = sorted(p.name for p in fifo.parent.iterdir() if p.name.startswith("run-3."))
    assert left == [fifo.name]
    with open_database(db) as conn:
        run = get_run(conn, 3)
        assert run is not None and run.status == "completed" and run.snapshot is None
        stored = read_outcome_frame(conn, 3)
    pd.testing.assert_frame_equal(stored, _full_frame(db, as_ofs[2]))
    after = _cli_day(db, folders[3], as_ofs[3])
    assert after.returncode == 0, after.stderr
    assert "stored state read from the tables (the base run left no snapshot)" in after.stdout


def test_a_snapshot_folder_that_cannot_be_made_leaves_no_snapshot_and_says_why(
    days: tuple[list[Path], list[int]], tmp_path: Path
) -> None:
    folders, as_ofs = days
    db = str(tmp_path / "n.sqlite")
    taken = tmp_path / "taken"
    taken.write_text("not a folder\n")
    done = _import(db, folders[0], as_ofs[0], taken)
    assert done.snapshot_note == (
        f"run 1 left no snapshot: {taken}: File exists; the next day will read the stored"
        " tables instead (slower but correct)"
    )
    assert taken.read_text() == "not a folder\n"
    with open_database(db) as conn:
        run = get_run(conn, 1)
    assert run is not None and run.status == "completed" and run.snapshot is None
    assert _import(db, folders[1], as_ofs[1], tmp_path / "fine").snapshot_note == ""


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_link_at_the_snapshot_folder_beside_the_database_is_refused_and_nothing_is_written(
    days: tuple[list[Path], list[int]], tmp_path: Path
) -> None:
    """Consistent with the anchor file (RAZORRECON_ANCHOR_DIR, not a link, moves it): a
    link planted at `DB.snapshots` is neither written through nor read through; the day is
    refused in one line naming the link and `--snapshots DIR` (exit 4, as an anchor file
    that is a link), nothing stored. A folder named with --snapshots may be a link (a
    volume): the operator chose it."""
    from tests.conftest import database_rows

    folders, as_ofs = days
    db = str(tmp_path / "l.sqlite")
    beside = Path(db + ".snapshots")
    _import(db, folders[0], as_ofs[0], beside)
    elsewhere = tmp_path / "elsewhere"
    beside.rename(elsewhere)
    beside.symlink_to(elsewhere)
    kept, rows = _tree(elsewhere), database_rows(db)
    done = _cli_day(db, folders[1], as_ofs[1])
    assert done.returncode == 4, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"error: {beside} is a symbolic link: snapshots are not written or read through a"
        " link beside the database (pass --snapshots DIR to keep them in another folder, or"
        " --no-snapshots); nothing was stored"
    ]
    assert _tree(elsewhere) == kept and database_rows(db) == rows
    named = _import(db, folders[1], as_ofs[1], beside)  # the same link, named by hand
    assert named.read_from == "snapshot of run 1" and named.snapshot_note == ""
    assert any(name.startswith("run-2.") for name in _tree(elsewhere))
