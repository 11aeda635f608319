"""Switching between Razorpay layouts (docs/ingest.md, "Switching layouts"): an import
changes, in a stored row, only the columns its files carry. The API's JSON has a payment's
`base_amount` and `card` object, the Dashboard's reports do not; the Dashboard's Payments
report has `Settled By`, the API leaves it out; its Transfers report has no Status. A stored
value of a column the imported layout lacks is kept, neither blanked nor listed as a
correction nor refused as older, on SQLite and PostgreSQL, through the direct upsert, the
staged upsert and import-day's in-memory merge.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from core.dataset import Dataset
from core.db import open_database, staging
from core.db import raw as raw_module
from core.db.raw import read_dataset
from core.db.runs import read_outcome_frame
from core.engine import EngineParams, reconcile
from core.engine.cli import parse_as_of
from core.ingest import import_dataset, load_dataset
from core.pipeline import reconcile_database, reconcile_day_into_db
from core.razorpay.export import export_dataset

REAL = Path(__file__).resolve().parent / "fixtures" / "real_exports"
API, DASHBOARD = REAL / "api_json", REAL / "dashboard_csv"
AS_OF = parse_as_of("2026-07-31T23:59:59+05:30")
PARAMS = EngineParams()
INTERNATIONAL = "pay_a3WOwqnx1Lnd4z"  # USD, pending on 31 July: compared in INR base_amount
VISA = "pay_BH9ynHTvuNGnLR"  # a card payment: the API's card object names Visa, credit
BANK_SETTLED = "pay_fRBCu2he6zKG2b"  # settled by Axis Bank (only the Dashboard says so)
TRANSFER = "trf_uurzH2IdV3Rs1K"
LACKING = {"base_amount", "card_network", "card_type", "card_international", "card_sub_type"}


def _payment(dataset: Dataset, pid: str) -> pd.Series:
    rows = dataset.payments[dataset.payments["id"] == pid]
    assert len(rows) == 1
    return rows.iloc[0]


def _base_amount(dataset: Dataset, pid: str) -> int | None:
    value = _payment(dataset, pid)["base_amount"]
    return None if pd.isna(value) else int(value)


def _changed_columns(changes: tuple[str, ...]) -> set[str]:
    """The columns of the report's changes ('payments pay_X: column 'old' -> 'new'')."""
    return {change.split(": ", 1)[1].split(" ", 1)[0] for change in changes}


def _outcomes(dataset: Dataset) -> pd.DataFrame:
    frame = reconcile(dataset, PARAMS, AS_OF)
    return frame.sort_values(["entity_type", "entity_id"]).reset_index(drop=True)


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_dashboard_csv_after_api_json_keeps_base_amount_card_fields_and_currency(
    db_conn: sqlite3.Connection,
) -> None:
    import_dataset(db_conn, API)
    report = import_dataset(db_conn, DASHBOARD)

    stored = read_dataset(db_conn)
    international = _payment(stored, INTERNATIONAL)
    assert _base_amount(stored, INTERNATIONAL) == 208750
    assert international["currency"] == "USD"
    assert (international["card_network"], international["card_type"]) == ("MasterCard", "credit")
    visa = _payment(stored, VISA)
    assert (visa["card_network"], visa["card_type"], visa["card_international"]) == (
        "Visa",
        "credit",
        "false",
    )
    # Neither listed as a correction; the report says they were kept.
    assert not _changed_columns(report.changes) & LACKING
    kept = [line for line in report.kept if line.startswith("payments.csv: ")]
    assert kept
    assert set(kept[0].split(": ", 1)[1].split(", ")) >= LACKING
    assert any("not in its layout, stored values kept: payments.csv:" in x for x in report.lines())


def test_a_switch_lists_only_real_corrections_not_the_empty_notes_each_layout_writes(
    db_conn: sqlite3.Connection,
) -> None:
    # The API writes no notes as [] and the Dashboard as an empty cell: the same value, so
    # the one correction left is the one the Dashboard knows better (Settled By).
    import_dataset(db_conn, API)
    report = import_dataset(db_conn, DASHBOARD)
    assert report.changed == {"payments": 1}
    assert report.changes == (f"payments {BANK_SETTLED}: settled_by '' -> 'Axis Bank'",)


def test_stored_data_after_the_switch_reconcile_as_the_api_export_does(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    import_dataset(db_conn, API)
    import_dataset(db_conn, DASHBOARD)
    export_dataset(db_conn, tmp_path / "exported")

    exported, _ = load_dataset(tmp_path / "exported")
    api, _ = load_dataset(API)
    pd.testing.assert_frame_equal(_outcomes(exported), _outcomes(api))
    pending = _outcomes(exported).set_index("entity_id").loc[INTERNATIONAL]
    assert (pending["status"], pending["expected_amount"]) == ("PENDING", 201360)


def test_api_json_after_dashboard_csv_keeps_settled_by(db_conn: sqlite3.Connection) -> None:
    import_dataset(db_conn, DASHBOARD)
    report = import_dataset(db_conn, API)

    settled_by = _payment(read_dataset(db_conn), BANK_SETTLED)["settled_by"]
    assert not pd.isna(settled_by) and settled_by == "Axis Bank"
    assert "settled_by" not in _changed_columns(report.changes)
    assert any(line.startswith("payments.json: settled_by") for line in report.kept)
    # What the API adds that the Dashboard lacked is stored: a carried column.
    assert _base_amount(read_dataset(db_conn), INTERNATIONAL) == 208750


def test_a_layout_without_currency_keeps_a_stored_usd_payments_currency(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    import_dataset(db_conn, API)
    folder = _copy(DASHBOARD, tmp_path / "no_currency")
    payments = pd.read_csv(folder / "payments.csv", dtype=str, keep_default_na=False)
    payments.drop(columns=["Currency"]).to_csv(folder / "payments.csv", index=False)

    report = import_dataset(db_conn, folder)

    assert _payment(read_dataset(db_conn), INTERNATIONAL)["currency"] == "USD"
    assert "currency" not in _changed_columns(report.changes)


def test_a_real_change_in_a_carried_column_is_stored_and_listed_beside_the_kept_ones(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    base = _copy(API, tmp_path / "api")
    # The stored payment was authorized when the API was asked; the Dashboard's report of
    # the next day says captured, and a fee corrected.
    payments = json.loads((base / "payments.json").read_text())
    second = payments["items"][1]
    second.update(status="authorized", captured=False)
    (base / "payments.json").write_text(json.dumps(payments))
    day = _copy(DASHBOARD, tmp_path / "dashboard")
    fee = ",1320.00,INR,captured,upi,FALSE,0.00,,0.00,{},"
    _edit(day / "payments.csv", fee.format("31.15"), fee.format("31.25"))

    import_dataset(db_conn, base)
    report = import_dataset(db_conn, day)

    stored = read_dataset(db_conn)
    first = _payment(stored, "pay_537gSyTpBeohbO")
    assert first["fee"] == 3125
    moved = _payment(stored, str(second["id"]))
    assert (moved["status"], bool(moved["captured"])) == ("captured", True)
    assert "payments pay_537gSyTpBeohbO: fee '3115' -> '3125'" in report.changes
    assert f"payments {second['id']}: status 'authorized' -> 'captured'" in report.changes
    assert not _changed_columns(report.changes) & LACKING
    assert _base_amount(stored, INTERNATIONAL) == 208750


def test_a_reversed_transfer_is_not_moved_back_by_a_transfers_report_without_status(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    base = _copy(API, tmp_path / "api")
    transfers = json.loads((base / "transfers.json").read_text())
    transfers["items"][0].update(status="reversed", amount_reversed=60000)
    (base / "transfers.json").write_text(json.dumps(transfers))
    day = _copy(DASHBOARD, tmp_path / "dashboard")
    _edit(day / "transfers.csv", ",600.00,INR,2.36,0.36,200.00,", ",600.00,INR,2.36,0.36,600.00,")
    lines = (day / "transfers.csv").read_text(encoding="utf-8").splitlines()
    new = lines[1].replace(TRANSFER, "trf_NewTransfer001").replace(",600.00,FALSE", ",0.00,FALSE")
    (day / "transfers.csv").write_text("\n".join([*lines, new]) + "\n", encoding="utf-8")

    import_dataset(db_conn, base)
    report = import_dataset(db_conn, day)  # not refused as older: its status is a guess

    transfers = read_dataset(db_conn).transfers.set_index("id")
    assert (transfers.loc[TRANSFER, "status"], transfers.loc[TRANSFER, "amount_reversed"]) == (
        "reversed",
        60000,
    )
    # A new row without a reversal: the report cannot say whether it failed.
    assert transfers.loc["trf_NewTransfer001", "status"] == "unknown"
    assert report.older_count == 0
    assert any(line.startswith("transfers.csv: status") for line in report.kept)


def test_the_staged_upsert_keeps_the_columns_a_layout_lacks_as_the_direct_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    direct = tmp_path / "direct.sqlite"
    with open_database(direct) as conn:
        import_dataset(conn, API)
        import_dataset(conn, DASHBOARD)
        expected = read_dataset(conn)
    monkeypatch.setattr(staging, "STAGING_MIN_ROWS", 0)  # staged whatever the size
    upserted: list[str] = []
    upsert = raw_module.upsert_staged_table

    def spy(
        conn: sqlite3.Connection, alias: str, attribute: str, *args: object, **kw: object
    ) -> int:
        upserted.append(attribute)
        return upsert(conn, alias, attribute, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(raw_module, "upsert_staged_table", spy)
    with open_database(tmp_path / "staged.sqlite") as conn:
        import_dataset(conn, API)
        report = import_dataset(conn, DASHBOARD)
        stored = read_dataset(conn)

    assert "payments" in upserted and "transfers" in upserted
    assert _base_amount(stored, INTERNATIONAL) == 208750
    assert not _changed_columns(report.changes) & LACKING
    for attribute in ("payments", "refunds", "recon", "transfers", "settlements"):
        pd.testing.assert_frame_equal(getattr(stored, attribute), getattr(expected, attribute))


def _dashboard_day(root: Path, name: str, new_id: str, resend: bool) -> Path:
    """A day folder in the Dashboard's layout: the international payment sent again (when
    `resend`) and one new payment, no settlement yet."""
    folder = root / name
    folder.mkdir(parents=True)
    lines = (DASHBOARD / "payments.csv").read_text(encoding="utf-8").splitlines()
    header, rows = lines[0], lines[1:]
    again = [row for row in rows if row.startswith(INTERNATIONAL + ",")]
    template = next(row for row in rows if row.startswith("pay_537gSyTpBeohbO,"))
    new = template.replace("pay_537gSyTpBeohbO", new_id).replace(
        "order_KxCO3sFYAzUgZh", "order_" + new_id[4:]
    )
    (folder / "payments.csv").write_text(
        "\n".join([header, *(again if resend else []), new]) + "\n", "utf-8"
    )
    for name_ in ("settlements.csv", "settlement_recon.csv"):
        first = (DASHBOARD / name_).read_text(encoding="utf-8").splitlines()[0]
        (folder / name_).write_text(first + "\n", "utf-8")
    return folder


def test_import_day_in_the_dashboard_layout_over_an_api_base_equals_a_full_run(
    db_url: str, tmp_path: Path
) -> None:
    days = tmp_path / "days"
    second = _dashboard_day(days, "d2", "pay_NewDay0000000002", resend=True)
    third = _dashboard_day(days, "d3", "pay_NewDay0000000003", resend=True)
    with open_database(db_url) as conn:
        reconcile_day_into_db(conn, API, params=PARAMS, as_of=AS_OF)
        day = reconcile_day_into_db(conn, second, params=PARAMS, as_of=AS_OF)
        assert day.kind == "incremental"
        assert _base_amount(read_dataset(conn), INTERNATIONAL) == 208750
        assert day.imported is not None and day.imported.kept
        # The next day reads the stored state (the snapshot and its delta, on SQLite)
        # as the database holds it.
        after = reconcile_day_into_db(conn, third, params=PARAMS, as_of=AS_OF)
        assert after.kind == "incremental"
        incremental = read_outcome_frame(conn, after.run.run_id)
        full = reconcile_database(conn, PARAMS, AS_OF, "files")
        pd.testing.assert_frame_equal(incremental, read_outcome_frame(conn, full.run_id))
        outcome = incremental.set_index("entity_id").loc[INTERNATIONAL]
        assert (outcome["status"], outcome["expected_amount"]) == ("PENDING", 201360)
        assert _base_amount(read_dataset(conn), INTERNATIONAL) == 208750
        if not db_url.startswith("postgresql"):
            assert day.read_from.startswith("snapshot") or after.read_from.startswith("snapshot")


def test_the_api_status_of_a_transfer_the_transfers_report_left_unknown_is_stored(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    day = _copy(DASHBOARD, tmp_path / "dashboard")
    lines = (day / "transfers.csv").read_text(encoding="utf-8").splitlines()
    new = lines[1].replace(TRANSFER, "trf_FailedLater001").replace(",200.00,FALSE", ",0.00,FALSE")
    (day / "transfers.csv").write_text("\n".join([*lines, new]) + "\n", encoding="utf-8")
    import_dataset(db_conn, day)
    assert read_dataset(db_conn).transfers.set_index("id").loc["trf_FailedLater001", "status"] == (
        "unknown"
    )
    api = _copy(API, tmp_path / "api")
    transfers = json.loads((api / "transfers.json").read_text())
    failed = {**transfers["items"][0], "id": "trf_FailedLater001", "status": "failed"}
    failed.update(amount_reversed=0)
    transfers["items"].append(failed)
    (api / "transfers.json").write_text(json.dumps(transfers))

    report = import_dataset(db_conn, api)  # unknown -> failed: a status learnt, not older

    stored = read_dataset(db_conn)
    assert stored.transfers.set_index("id").loc["trf_FailedLater001", "status"] == "failed"
    assert report.older_count == 0
    outcomes = _outcomes(stored)
    assert "trf_FailedLater001" not in set(outcomes["entity_id"])  # failed: no outcome
