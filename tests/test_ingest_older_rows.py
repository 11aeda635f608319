"""Days imported out of order: a stored row's status never goes backwards (docs/ingest.md,
"Corrections and older files").

The chain below is written by hand in the shape of a finance team's daily API CSV
downloads: day 1 has a payment authorized and a refund pending; day 2 (the next morning's
download) has the payment captured and the refund processed, plus a payment of its own;
day 3 only new rows. Re-importing day 1 after day 2 would move both back: refused.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from core.__main__ import main
from core.dataset import TRANSFER_COLUMNS, Dataset
from core.db import connect
from core.db.raw import RAW_TABLES
from core.errors import OlderRowsError
from core.ingest import import_dataset
from core.ingest.lifecycle import stored_changes
from core.ingest.load import load_dataset

PAYMENT_HEADER = (
    "id,entity,amount,currency,status,order_id,method,amount_refunded,refund_status,"
    "captured,description,email,contact,fee,tax,created_at"
)
REFUND_HEADER = "id,entity,amount,currency,payment_id,status,speed_processed,created_at"
AS_OF = {"d1": "2026-05-26T23:59:59+05:30", "d2": "2026-05-27T23:59:59+05:30"}
AS_OF["d3"] = "2026-05-28T23:59:59+05:30"
T1, T2, T3 = 1779769331, 1779855731, 1779942131  # 26, 27, 28 May 2026 (IST mornings)


def _payment(pid: str, amount: int, status: str, created: int, refunded: int = 0) -> str:
    captured = "true" if status in ("captured", "refunded") else "false"
    fee, tax = ("2360", "360") if captured == "true" else ("", "")
    refund_status = "partial" if refunded else ""
    return (
        f"{pid},payment,{amount},INR,{status},order_{pid[4:]},upi,{refunded},{refund_status},"
        f"{captured},Order payment,a@example.com,+919800000000,{fee},{tax},{created}"
    )


def _day(root: Path, name: str, payments: list[str], refunds: list[str]) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "payments.csv").write_text("\n".join([PAYMENT_HEADER, *payments]) + "\n")
    (folder / "refunds.csv").write_text("\n".join([REFUND_HEADER, *refunds]) + "\n")
    (folder / "settlements.csv").write_text("id,entity,amount,status,fees,tax,utr,created_at\n")
    (folder / "settlement_recon.csv").write_text(
        "entity_id,type,debit,credit,amount,currency,fee,tax,on_hold,settled,created_at,"
        "settled_at,settlement_id\n"
    )
    return folder


@pytest.fixture
def chain(tmp_path: Path) -> dict[str, Path]:
    """Three day folders: d2 moves d1's payment and refund forward; d3 adds rows only."""
    root = tmp_path / "days"
    root.mkdir()
    d1 = _day(
        root,
        "d1",
        [
            _payment("pay_Old0000000001", 1032608, "captured", T1),
            _payment("pay_Auth000000001", 500000, "authorized", T1 + 60),
            _payment("pay_Refd000000001", 200000, "captured", T1 + 120, refunded=50000),
        ],
        [f"rfnd_Pend00000001,refund,50000,INR,pay_Refd000000001,pending,,{T1 + 600}"],
    )
    d2 = _day(
        root,
        "d2",
        [
            _payment("pay_Auth000000001", 500000, "captured", T1 + 60),
            _payment("pay_New0000000002", 120000, "captured", T2),
        ],
        [f"rfnd_Pend00000001,refund,50000,INR,pay_Refd000000001,processed,normal,{T1 + 600}"],
    )
    d3 = _day(root, "d3", [_payment("pay_New0000000003", 99900, "captured", T3)], [])
    return {"d1": d1, "d2": d2, "d3": d3}


def _import_day(
    db: Path, folder: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, str]:
    code = main(["import-day", str(folder), "--db", str(db), "--as-of", AS_OF["d3"], *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def _state(db: Path) -> tuple[dict[str, int], str]:
    """Every table's row count, and a hash of the raw tables' rows."""
    conn = connect(db)
    try:
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        counts = {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in tables}
        digest = hashlib.sha256()
        for table, key, _ in RAW_TABLES.values():
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY {key}"):
                digest.update(repr(tuple(row)).encode())
        return counts, digest.hexdigest()
    finally:
        conn.close()


def _stored(db: Path, table: str, key: str, column: str = "status") -> str:
    conn = connect(db)
    try:
        return str(conn.execute(f"SELECT {column} FROM {table} WHERE id = ?", (key,)).fetchone()[0])
    finally:
        conn.close()


def _older_again(
    db: Path,
    days: dict[str, Path],
    order: tuple[str, str],
    capsys: pytest.CaptureFixture[str],
    *extra: str,
) -> tuple[tuple[dict[str, int], str], int, str, str]:
    """Import the two days in `order`, then the first again (with `extra`): the state
    before that last import, and its exit code, output and errors."""
    for day in order:
        assert _import_day(db, days[day], capsys)[0] == 0
    before = _state(db)
    return (before, *_import_day(db, days[order[0]], capsys, *extra))


def _accepted_moves(db: Path) -> list[str]:
    """The payloads of the `import_older_accepted` audit entries."""
    conn = connect(db)
    try:
        query = "SELECT payload_json FROM audit_log WHERE action = 'import_older_accepted'"
        return [str(row[0]) for row in conn.execute(query)]
    finally:
        conn.close()


def test_reimporting_an_older_day_is_refused_naming_file_line_and_status_with_nothing_written(
    chain: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "older.sqlite"  # SQLite only: its tables are read back with sqlite3
    before, code, out, err = _older_again(db, chain, ("d1", "d2"), capsys)
    assert code == 3, out + err
    assert (
        "d1/payments.csv:3:status: pay_Auth000000001 would go from 'captured' back to"
        " 'authorized': this file looks older than what is stored; refused"
        " (import-day --accept-older takes it as a correction)"
    ) in err
    assert "d1/refunds.csv:2:status: rfnd_Pend00000001 would go from 'processed' back to" in err
    assert _state(db) == before
    assert _stored(db, "payments", "pay_Auth000000001") == "captured"


def test_an_older_day_is_taken_with_accept_older_reported_and_audited(
    chain: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "older.sqlite"  # SQLite only: its tables are read back with sqlite3
    _, code, out, err = _older_again(db, chain, ("d1", "d2"), capsys, "--accept-older")
    assert code == 0, err
    assert "stored rows changed (corrections): payments 1, refunds 1" in out
    assert "payments pay_Auth000000001: status 'captured' -> 'authorized'" in out
    assert (
        "2 value(s) moved backwards (a status, or an amount lowered), taken as corrections as asked"
    ) in out
    assert _stored(db, "payments", "pay_Auth000000001") == "authorized"
    audit = _accepted_moves(db)
    assert len(audit) == 1 and "pay_Auth000000001: captured -> authorized" in audit[0]
    conn = connect(db)
    try:
        report = conn.execute("SELECT report_json FROM imports ORDER BY id DESC").fetchone()[0]
    finally:
        conn.close()
    assert '"older_count": 2' in report


def test_a_forward_correction_is_accepted_and_reported_field_by_field(
    chain: dict[str, Path], db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = db_url
    assert main(["import-day", str(chain["d1"]), "--db", db, "--as-of", AS_OF["d1"]]) == 0
    first = capsys.readouterr().out
    assert "stored rows changed: none" in first
    assert main(["import-day", str(chain["d2"]), "--db", db, "--as-of", AS_OF["d2"]]) == 0
    out = capsys.readouterr().out
    assert "Import #2: upserted: payments 2, refunds 1" in out
    assert "stored rows changed (corrections): payments 1, refunds 1" in out
    assert "payments pay_Auth000000001: status 'authorized' -> 'captured'" in out
    assert "refunds rfnd_Pend00000001: status 'pending' -> 'processed'" in out
    assert "moved backwards" not in out


def test_importing_the_same_day_twice_says_already_imported_and_writes_nothing(
    chain: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "older.sqlite"  # SQLite only: its tables are read back with sqlite3
    assert _import_day(db, chain["d1"], capsys)[0] == 0
    assert _import_day(db, chain["d2"], capsys)[0] == 0
    counts, raw_hash = _state(db)
    code, out, err = _import_day(db, chain["d2"], capsys)
    assert code == 0, err
    assert "Already imported (import #2)" in out
    again, again_hash = _state(db)
    assert again_hash == raw_hash and again["imports"] == counts["imports"]


def _outcomes(db: str) -> list[tuple[str, str, str, str]]:
    conn = connect(db)
    try:
        run = conn.execute("SELECT max(id) FROM runs WHERE status = 'completed'").fetchone()[0]
        rows = conn.execute(
            "SELECT entity_type, entity_id, status, coalesce(reason_code, '') FROM outcomes"
            " WHERE run_id = ? ORDER BY entity_type, entity_id",
            (run,),
        ).fetchall()
        return [tuple(str(v) for v in r) for r in rows]  # type: ignore[misc]
    finally:
        conn.close()


def test_out_of_order_days_with_no_backward_move_reconcile_as_in_order(
    chain: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = []
    for name, order in (("in_order", ("d1", "d2", "d3")), ("shuffled", ("d3", "d1", "d2"))):
        db = tmp_path / f"{name}.sqlite"
        for day in order:
            assert _import_day(db, chain[day], capsys)[0] == 0
        results.append(_outcomes(str(db)))
    assert results[0] == results[1] and len(results[0]) >= 5


def test_the_import_command_refuses_an_older_folder_unless_accept_older(
    chain: dict[str, Path], db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for day in ("d1", "d2"):
        assert main(["import", str(chain[day]), "--db", db_url]) == 0
    capsys.readouterr()
    assert main(["import", str(chain["d1"]), "--db", db_url]) == 3
    err = capsys.readouterr().err
    assert "d1/payments.csv:3:status: pay_Auth000000001 would go from 'captured'" in err
    assert "(import --accept-older takes it as a correction)" in err
    assert main(["import", str(chain["d1"]), "--db", db_url, "--accept-older"]) == 0
    assert "taken as corrections as asked" in capsys.readouterr().out


def _refused_in_store(
    conn: sqlite3.Connection, days: dict[str, Path], order: tuple[str, str]
) -> list[tuple[str, int, str]]:
    """import_dataset the two days in `order`, then the first again, which must be refused
    with no import recorded: the refusal's places (file, line, column)."""
    for day in order:
        import_dataset(conn, days[day])
    imports = conn.execute("SELECT count(*) FROM imports").fetchone()[0]
    with pytest.raises(OlderRowsError) as refused:
        import_dataset(conn, days[order[0]])
    assert conn.execute("SELECT count(*) FROM imports").fetchone()[0] == imports
    return [(p.file, p.line, p.column) for p in refused.value.problems]


def test_store_dataset_refuses_in_its_transaction_what_the_stored_rows_say(
    chain: dict[str, Path], db_url: str
) -> None:
    """The check reads the stored rows of the file's keys itself (import, the Data page):
    nothing is written, and the error lists every row with its place."""
    conn = connect(db_url)
    try:
        assert _refused_in_store(conn, chain, ("d1", "d2")) == [
            ("d1/payments.csv", 3, "status"),
            ("d1/refunds.csv", 2, "status"),
        ]
    finally:
        conn.close()


def test_stored_changes_counts_changed_rows_and_finds_backward_moves_by_lifecycle(
    chain: dict[str, Path],
) -> None:
    day1, _ = load_dataset(chain["d1"])
    day2, _ = load_dataset(chain["d2"])
    forward = stored_changes(day2, {"payments": day1.payments, "refunds": day1.refunds})
    assert dict(forward.changed) == {"payments": 1, "refunds": 1} and not forward.backward
    back = stored_changes(day1, {"payments": day2.payments, "refunds": day2.refunds})
    moves = [(m.key, m.stored, m.incoming) for m in back.backward]
    assert moves == [
        ("pay_Auth000000001", "captured", "authorized"),
        ("rfnd_Pend00000001", "processed", "pending"),
    ]


def test_a_late_authorisation_is_a_forward_move_not_an_older_file(
    chain: dict[str, Path], tmp_path: Path
) -> None:
    """Razorpay: "Move states forward only; accept failed -> authorized"."""
    failed = _day(tmp_path, "failed", [_payment("pay_Late000000001", 1000, "failed", T1)], [])
    late = _day(tmp_path, "late", [_payment("pay_Late000000001", 1000, "authorized", T1)], [])
    a, _ = load_dataset(failed)
    b, _ = load_dataset(late)
    assert not stored_changes(b, {"payments": a.payments}).backward
    assert len(stored_changes(a, {"payments": b.payments}).backward) == 1


@pytest.fixture
def refunded(tmp_path: Path) -> dict[str, Path]:
    """A payment captured on day 2 (nothing refunded yet) and refunded in part by day 6,
    its status still captured: only its amount_refunded tells the files apart."""
    root = tmp_path / "refunded"
    root.mkdir()
    pid = "pay_Part000000001"
    d2 = _day(
        root,
        "d2",
        [
            _payment("pay_Other00000002", 99900, "captured", T1),
            _payment(pid, 1032608, "captured", T1 + 60),
        ],
        [],
    )
    d6 = _day(root, "d6", [_payment(pid, 1032608, "captured", T1 + 60, refunded=330195)], [])
    return {"d2": d2, "d6": d6}


def test_reimporting_an_older_day_lowering_amount_refunded_is_refused_by_file_line_and_column(
    refunded: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "older.sqlite"  # SQLite only: its tables are read back with sqlite3
    before, code, out, err = _older_again(db, refunded, ("d2", "d6"), capsys)
    assert code == 3, out + err
    assert (
        "d2/payments.csv:3:amount_refunded: pay_Part000000001 would lower amount_refunded"
        " from 330195 to 0 paise: this file looks older than what is stored; refused"
        " (import-day --accept-older takes it as a correction)"
    ) in err
    assert _state(db) == before
    assert _stored(db, "payments", "pay_Part000000001", "amount_refunded") == "330195"


def test_an_older_day_lowering_amount_refunded_is_taken_with_accept_older_reported_and_audited(
    refunded: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "older.sqlite"  # SQLite only: its tables are read back with sqlite3
    _, code, out, err = _older_again(db, refunded, ("d2", "d6"), capsys, "--accept-older")
    assert code == 0, err
    assert "payments pay_Part000000001: amount_refunded 330195 -> 0" in out
    assert "1 value(s) moved backwards (a status, or an amount lowered)" in out
    assert _stored(db, "payments", "pay_Part000000001", "amount_refunded") == "0"
    audit = _accepted_moves(db)
    assert len(audit) == 1 and "pay_Part000000001: amount_refunded 330195 -> 0" in audit[0]


def test_store_dataset_refuses_a_lowered_amount_refunded_in_its_transaction(
    refunded: dict[str, Path], db_url: str
) -> None:
    conn = connect(db_url)
    try:
        assert _refused_in_store(conn, refunded, ("d2", "d6")) == [
            ("d2/payments.csv", 3, "amount_refunded")
        ]
        stored = "SELECT amount_refunded FROM payments WHERE id = 'pay_Part000000001'"
        assert conn.execute(stored).fetchone()[0] == 330195
    finally:
        conn.close()


def test_a_raised_amount_refunded_is_a_forward_move_and_a_lowered_one_goes_back(
    refunded: dict[str, Path],
) -> None:
    day2, _ = load_dataset(refunded["d2"])
    day6, _ = load_dataset(refunded["d6"])
    assert not stored_changes(day6, {"payments": day2.payments}).backward
    moves = stored_changes(day2, {"payments": day6.payments}).backward
    assert [(m.key, m.column, m.stored, m.incoming) for m in moves] == [
        ("pay_Part000000001", "amount_refunded", "330195", "0")
    ]


def _transfer(reversed_paise: int | None, status: str) -> Dataset:
    frame = pd.DataFrame(
        {
            "id": ["trf_Rev000000001"],
            "source": ["pay_Part000000001"],
            "recipient": ["acc_Linked0000001"],
            "amount": [500000],
            "currency": ["INR"],
            "amount_reversed": [reversed_paise],
            "status": [status],
            "on_hold": [False],
            "on_hold_until": [None],
            "recipient_settlement_id": [None],
            "created_at": [T1],
        }
    ).astype(TRANSFER_COLUMNS)
    return Dataset(transfers=frame)


def test_a_transfers_amount_reversed_never_goes_down_and_a_missing_one_is_not_compared() -> None:
    """Razorpay: "you can create multiple reversals on a transfer_id"; each one adds."""
    part = _transfer(100000, "partially_reversed")
    more = _transfer(200000, "partially_reversed")
    unknown = _transfer(None, "partially_reversed")
    assert not stored_changes(more, {"transfers": part.transfers}).backward
    moves = stored_changes(part, {"transfers": more.transfers}).backward
    assert [(m.column, m.stored, m.incoming) for m in moves] == [
        ("amount_reversed", "200000", "100000")
    ]
    assert not stored_changes(unknown, {"transfers": more.transfers}).backward
