"""load_dataset: the spec example, file formats, units and frames_from_items."""

from __future__ import annotations

import csv
import datetime as dt
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from core.dataset import (
    BANK_COLUMNS,
    PAYMENT_COLUMNS,
    RECON_COLUMNS,
    REFUND_COLUMNS,
    SETTLEMENT_COLUMNS,
    Dataset,
    empty_frame,
)
from core.errors import InputError
from core.ingest import frames_from_items, load_dataset
from core.money import format_rupees

from .conftest import SPEC_EXAMPLE

DATASET = SPEC_EXAMPLE / "dataset"
IST = dt.timezone(dt.timedelta(hours=5, minutes=30))
FRAMES = {
    "payments": PAYMENT_COLUMNS,
    "refunds": REFUND_COLUMNS,
    "settlements": SETTLEMENT_COLUMNS,
    "recon": RECON_COLUMNS,
    "bank": BANK_COLUMNS,
}


def _copy_example(tmp_path: Path) -> Path:
    target = tmp_path / "dataset"
    shutil.copytree(DATASET, target)
    return target


def _payments_items() -> list[dict[str, object]]:
    document = json.loads((DATASET / "payments.json").read_text(encoding="utf-8"))
    items: list[dict[str, object]] = document["items"]
    return items


def _write_csv(path: Path, rows: list[dict[str, object]], *, newline: str = "\n") -> None:
    names: list[str] = []
    for row in rows:
        names.extend(k for k in row if k not in names)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=names, lineterminator=newline)
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in row.items()}
            )


def test_spec_example_loads_with_the_right_counts() -> None:
    dataset, report = load_dataset(DATASET)
    assert len(dataset.payments) == 400
    assert len(dataset.refunds) == 15
    assert len(dataset.settlements) == 33
    assert len(dataset.recon) == 375
    assert len(dataset.bank) == 64
    assert dataset.has_bank_statement
    by_file = {f.file: f for f in report.files}
    assert by_file["payments.json"].amount_unit == "paise"
    assert by_file["bank_statement.csv"].bank_layout == "HDFC"
    assert len(report.content_hash) == 64


def test_frames_have_exactly_the_dataset_columns_and_dtypes() -> None:
    dataset, _ = load_dataset(DATASET)
    for name, columns in FRAMES.items():
        frame = getattr(dataset, name)
        assert list(frame.columns) == list(columns), name
        expected = empty_frame(columns).dtypes
        assert frame.dtypes.equals(expected), name


def test_spec_example_values_are_exact_paise_and_unix_seconds() -> None:
    dataset, _ = load_dataset(DATASET)
    first = _payments_items()[0]
    row = dataset.payments.set_index("id").loc[str(first["id"])]
    assert row["amount"] == first["amount"]
    assert row["fee"] == first["fee"]
    assert row["created_at"] == first["created_at"]
    assert pd.isna(row["notes"])  # no notes: the API's [] stored as empty
    settlements = dataset.settlements.set_index("id")
    assert settlements.loc["setl_zmoEBJJpl9oLDD", "amount"] == 155915082
    bank = dataset.bank.set_index("id")
    # '15,59,150.82' rupees on line 10, UTR only inside the narration.
    assert bank.loc["bank_statement.csv:10", "credit"] == 155915082
    assert bank.loc["bank_statement.csv:10", "utr"] == "HDFCN57935380338"
    assert bank.loc["bank_statement.csv:10", "txn_date"] == "2026-05-20"


def test_recon_rows_get_row_keys_with_occurrence_counts(tmp_path: Path) -> None:
    folder = _copy_example(tmp_path)
    recon = folder / "settlement_recon.csv"
    lines = recon.read_text(encoding="utf-8").splitlines(keepends=True)
    recon.write_text("".join([*lines, lines[1]]), encoding="utf-8")  # the first row again
    dataset, _ = load_dataset(folder)
    keys = dataset.recon["row_key"]
    assert keys.is_unique
    first = dataset.recon.iloc[0]
    base = f"{first['type']}:{first['entity_id']}:{first['settlement_id']}"
    assert keys.iloc[0] == f"{base}:1"
    assert keys.iloc[-1] == f"{base}:2"


def test_json_envelope_and_plain_list_give_the_same_frame(tmp_path: Path) -> None:
    folder = _copy_example(tmp_path)
    envelope, _ = load_dataset(folder)
    items = _payments_items()
    (folder / "payments.json").write_text(json.dumps(items), encoding="utf-8")
    as_list, _ = load_dataset(folder)
    pd.testing.assert_frame_equal(envelope.payments, as_list.payments)


def test_csv_and_json_payments_give_the_same_frame(tmp_path: Path) -> None:
    folder = _copy_example(tmp_path)
    from_json, _ = load_dataset(folder)
    (folder / "payments.json").unlink()
    _write_csv(folder / "payments.csv", _payments_items())
    from_csv, report = load_dataset(folder)
    pd.testing.assert_frame_equal(from_json.payments, from_csv.payments)
    assert next(f for f in report.files if f.kind == "payments").fmt == "csv"


def test_bom_and_crlf_are_read_like_plain_utf8(tmp_path: Path) -> None:
    folder = _copy_example(tmp_path)
    plain, _ = load_dataset(folder)
    for name in ("refunds.csv", "settlement_recon.csv", "bank_statement.csv"):
        path = folder / name
        text = path.read_text(encoding="utf-8-sig")
        path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    (folder / "payments.json").write_bytes(
        b"\xef\xbb\xbf" + (DATASET / "payments.json").read_bytes()
    )
    converted, _ = load_dataset(folder)
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(plain, name), getattr(converted, name))


def test_notes_booleans_empty_cells_and_extra_columns(tmp_path: Path) -> None:
    folder = _copy_example(tmp_path)
    (folder / "payments.json").unlink()
    rows = [
        {
            "id": "pay_A",
            "amount": 1000,
            "currency": "INR",
            "status": "captured",
            "captured": "1",
            "international": "TRUE",
            "created_at": 1780000000,
            "notes": {"order": "A-1", "city": "Pune"},
            "fee": "",
            "tax": "",
            "something_new": "ignored",
        },
        {
            "id": "pay_B",
            "amount": 2000,
            "status": "failed",
            "captured": "0",
            "international": "false",
            "created_at": 1780000001,
            "notes": "gift order",
            "fee": 40,
            "tax": 6,
            "something_new": "",
        },
    ]
    _write_csv(folder / "payments.csv", rows)
    dataset, report = load_dataset(folder)
    payments = dataset.payments.set_index("id")
    assert payments.loc["pay_A", "captured"] and payments.loc["pay_A", "international"]
    assert not payments.loc["pay_B", "captured"] and not payments.loc["pay_B", "international"]
    assert json.loads(payments.loc["pay_A", "notes"]) == {"order": "A-1", "city": "Pune"}
    assert json.loads(payments.loc["pay_B", "notes"]) == "gift order"
    assert pd.isna(payments.loc["pay_A", "fee"]) and payments.loc["pay_B", "fee"] == 40
    assert pd.isna(payments.loc["pay_A", "order_id"])
    assert payments.loc["pay_B", "currency"] == "INR"  # empty currency defaults to INR
    file_report = next(f for f in report.files if f.kind == "payments")
    assert "something_new" in file_report.ignored_columns


def test_missing_captured_column_is_derived_from_status(tmp_path: Path) -> None:
    folder = _copy_example(tmp_path)
    (folder / "payments.json").unlink()
    _write_csv(
        folder / "payments.csv",
        [
            {"id": "pay_A", "amount": 100, "status": "refunded", "created_at": 1780000000},
            {"id": "pay_B", "amount": 100, "status": "authorized", "created_at": 1780000000},
        ],
    )
    dataset, report = load_dataset(folder)
    assert dataset.payments["captured"].tolist() == [True, False]
    assert any("captured" in w for w in report.warnings)


def _ist_text(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, IST).strftime("%d/%m/%Y %H:%M:%S")


def _to_dashboard(rows: list[dict[str, str]], money: set[str], times: set[str]) -> None:
    for row in rows:
        for key in money:
            if row.get(key):
                row[key] = format_rupees(int(row[key]))
        for key in times:
            if row.get(key):
                row[key] = _ist_text(int(row[key]))


def _rewrite(path: Path, money: set[str], times: set[str]) -> None:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    _to_dashboard(rows, money, times)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_dashboard_export_in_rupees_loads_to_the_same_paise(tmp_path: Path) -> None:
    folder = _copy_example(tmp_path)
    api, _ = load_dataset(folder)
    items = _payments_items()
    for item in items:
        for key in ("amount", "fee", "tax", "amount_refunded"):
            if item.get(key) is not None:
                item[key] = format_rupees(int(str(item[key])))
        item["created_at"] = _ist_text(int(str(item["created_at"])))
    (folder / "payments.json").unlink()
    _write_csv(folder / "payments.csv", items)
    _rewrite(folder / "refunds.csv", {"amount"}, {"created_at"})
    _rewrite(folder / "settlements.csv", {"amount", "fees", "tax"}, {"created_at"})
    _rewrite(
        folder / "settlement_recon.csv",
        {"debit", "credit", "amount", "fee", "tax"},
        {"created_at", "settled_at"},
    )
    dashboard, report = load_dataset(folder)
    for name in ("payments", "refunds", "settlements", "recon"):
        pd.testing.assert_frame_equal(getattr(api, name), getattr(dashboard, name))
    units = {f.file: (f.amount_unit, f.unit_reason, f.date_style) for f in report.files}
    assert units["payments.csv"][0] == "rupees"
    assert "rupees" in units["payments.csv"][1]
    assert units["settlements.csv"][2] == "dd/mm/YYYY HH:MM:SS (IST)"


def test_whole_rupee_amounts_with_dashboard_dates_are_read_as_rupees(tmp_path: Path) -> None:
    folder = _copy_example(tmp_path)
    (folder / "settlements.csv").write_text(
        "id,amount,status,utr,created_at\nsetl_A,1500,processed,UTR1,01/06/2026 10:00:00\n",
        encoding="utf-8",
    )
    dataset, report = load_dataset(folder)
    assert dataset.settlements["amount"].tolist() == [150000]
    created = dt.datetime(2026, 6, 1, 10, 0, tzinfo=IST)
    assert dataset.settlements["created_at"].tolist() == [int(created.timestamp())]
    file_report = next(f for f in report.files if f.kind == "settlements")
    assert file_report.amount_unit == "rupees" and "dashboard" in file_report.unit_reason


def test_a_dashboard_report_of_whole_rupees_with_iso_dates_is_read_as_rupees(
    tmp_path: Path,
) -> None:
    # An independent tester's Refunds report (display names, "500" rupees, ISO dates) was
    # read as paise: ₹500 became ₹5.00 and a REFUND_AMOUNT_MISMATCH of ₹495.00 followed.
    folder = _copy_example(tmp_path)
    (folder / "settlements.csv").write_text(
        "Settlement ID,Amount,Status,UTR (Unique Transaction Reference),Created At\n"
        "setl_A,1500,processed,UTR1,2026-06-01T10:00:00\n",
        encoding="utf-8",
    )
    dataset, report = load_dataset(folder)
    assert dataset.settlements["amount"].tolist() == [150000]
    file_report = next(f for f in report.files if f.kind == "settlements")
    assert file_report.layout == "Razorpay dashboard: Settlements report"
    assert file_report.amount_unit == "rupees"
    assert file_report.unit_reason == (
        "whole amounts under the Razorpay dashboard report's column names"
    )
    # The same file under the API's field names is the API's: paise.
    (folder / "settlements.csv").write_text(
        "id,amount,status,utr,created_at\nsetl_A,1500,processed,UTR1,2026-06-01T10:00:00\n",
        encoding="utf-8",
    )
    dataset, _ = load_dataset(folder)
    assert dataset.settlements["amount"].tolist() == [1500]


def test_amount_unit_override_wins_over_detection(tmp_path: Path) -> None:
    folder = _copy_example(tmp_path)
    as_rupees, report = load_dataset(folder, amount_unit="rupees")
    as_paise, _ = load_dataset(folder)
    assert (as_rupees.payments["amount"] == as_paise.payments["amount"] * 100).all()
    assert as_rupees.bank["credit"].equals(as_paise.bank["credit"])  # bank is always rupees
    assert all(
        f.unit_reason == "set by --amount-unit" for f in report.files if f.kind != "bank_statement"
    )


def test_iso_timestamps_with_and_without_offset() -> None:
    items = [
        {"id": "setl_A", "amount": 1, "status": "created", "created_at": "2026-06-01T10:00:00Z"},
        {"id": "setl_B", "amount": 1, "status": "created", "created_at": "2026-06-01T15:30:00"},
        {
            "id": "setl_C",
            "amount": 1,
            "status": "created",
            "created_at": "2026-06-01T12:00:00+02:00",
        },
    ]
    frame = frames_from_items("settlements", items, "api")
    ten_utc = int(dt.datetime(2026, 6, 1, 10, 0, tzinfo=dt.UTC).timestamp())
    assert frame["created_at"].tolist() == [ten_utc, ten_utc, ten_utc]


def test_frames_from_items_matches_file_loading() -> None:
    dataset, _ = load_dataset(DATASET)
    frame = frames_from_items("payments", _payments_items(), "razorpay:payments")
    pd.testing.assert_frame_equal(dataset.payments, frame)


def test_frames_from_items_validates_and_names_the_item() -> None:
    items = [
        {"id": "rfnd_1", "payment_id": "pay_1", "amount": 100, "status": "processed",
         "created_at": 1780000000},
        {"id": "rfnd_2", "payment_id": "pay_1", "amount": -5, "status": "bogus",
         "created_at": 1780000000},
    ]  # fmt: skip
    with pytest.raises(InputError) as caught:
        frames_from_items("refunds", items, "razorpay:refunds")
    lines = [str(p) for p in caught.value.problems]
    assert "razorpay:refunds:2:amount: item 2: negative amount '-5'" in lines
    assert any(line.startswith("razorpay:refunds:2:status: item 2: unknown status 'bogus'")
               for line in lines)  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "attribute"),
    [
        ("payments", "payments"),
        ("refunds", "refunds"),
        ("settlements", "settlements"),
        ("settlement_recon", "recon"),
    ],
)
def test_frames_from_items_with_no_items_is_an_empty_frame(kind: str, attribute: str) -> None:
    frame = frames_from_items(kind, [], "api")
    assert len(frame) == 0
    pd.testing.assert_frame_equal(frame, getattr(Dataset(), attribute))
    if kind == "settlement_recon":
        assert frame.dtypes.equals(empty_frame(RECON_COLUMNS).dtypes)


def test_optional_files_may_be_absent(tmp_path: Path) -> None:
    folder = _copy_example(tmp_path)
    (folder / "refunds.csv").unlink()
    (folder / "bank_statement.csv").unlink()
    dataset, report = load_dataset(folder)
    assert isinstance(dataset, Dataset)
    assert len(dataset.refunds) == 0 and len(dataset.bank) == 0
    assert not dataset.has_bank_statement and not report.has_bank_statement
    assert "no bank statement" in "\n".join(report.lines())


def test_hand_written_dashboard_export_reads_exact_paise_and_ist_times() -> None:
    dataset, report = load_dataset(SPEC_EXAMPLE.parent / "dashboard_export")
    payments = dataset.payments.set_index("id")
    first = payments.loc["pay_Dash0000000001"]
    assert (first["amount"], first["fee"], first["tax"], first["amount_refunded"]) == (
        125050,
        2501,
        382,
        10000,
    )
    assert first["status"] == "captured"  # 'Captured' in the export
    assert first["created_at"] == int(dt.datetime(2026, 6, 1, 10, 15, 30, tzinfo=IST).timestamp())
    assert payments.loc["pay_Dash0000000002", "amount"] == 99900  # '999' is rupees here too
    assert pd.isna(payments.loc["pay_Dash0000000003", "fee"])
    settlement = dataset.settlements.iloc[0]
    recon = dataset.recon
    assert settlement["amount"] == recon["credit"].sum() - recon["debit"].sum() == 212449
    assert dataset.bank["credit"].tolist() == [212449]
    assert dataset.bank["utr"].tolist() == [settlement["utr"]]
    reasons = {f.file: f.unit_reason for f in report.files if f.kind != "bank_statement"}
    assert reasons["payments.csv"] == "amount '1,250.50' on line 2 is written in rupees"
    assert all(f.amount_unit == "rupees" for f in report.files)


def test_a_refund_in_status_created_is_read_as_pending_from_a_file_and_from_the_api(
    tmp_path: Path,
) -> None:
    """Razorpay documents `created` ("the refund is initiated ... displayed only on the
    Refunds API": https://razorpay.com/docs/payments/refunds); an independent tester's
    import of one refused the whole month. Like pending, it is not final and was taken
    from the balance when made."""
    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    path = folder / "refunds.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    rows[0]["status"] = "created"
    rows[1]["status"] = "Created"
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    dataset, _ = load_dataset(folder)
    by_id = dict(zip(dataset.refunds["id"], dataset.refunds["status"], strict=True))
    frame = frames_from_items(
        "refunds",
        [{"id": "rfnd_C", "payment_id": "pay_1", "amount": 100, "status": "created",
          "created_at": 1780000000}],
        "razorpay:refunds",
    )  # fmt: skip

    assert (by_id[rows[0]["id"]], by_id[rows[1]["id"]]) == ("pending", "pending")
    assert by_id[rows[2]["id"]] == rows[2]["status"]
    assert list(frame["status"]) == ["pending"]


def test_a_settlement_in_status_pending_is_read_as_created_not_refused(tmp_path: Path) -> None:
    """The Reports Data Schema gives a settlement's Status as processed, pending or failed
    (https://razorpay.com/docs/payments/dashboard/reports/data-schema); the API's entity
    says created, processed or failed. A pending settlement is one not paid out yet, as
    created is; an independent tester's Settlements report with one was refused whole."""
    folder = _copy_example(tmp_path)
    path = folder / "settlements.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8-sig")))
    rows[0]["status"] = "pending"
    rows[1]["status"] = "Pending"
    _write_csv(path, [dict(r) for r in rows])

    dataset, _ = load_dataset(folder)
    by_id = dict(zip(dataset.settlements["id"], dataset.settlements["status"], strict=True))
    frame = frames_from_items(
        "settlements",
        [{"id": "setl_P", "amount": 100, "status": "pending", "created_at": 1780000000}],
        "razorpay:settlements",
    )

    assert (by_id[rows[0]["id"]], by_id[rows[1]["id"]]) == ("created", "created")
    assert by_id[rows[2]["id"]] == rows[2]["status"]
    assert list(frame["status"]) == ["created"]


def test_a_named_pipe_or_folder_under_a_dataset_name_is_refused_not_read_as_missing(
    tmp_path: Path,
) -> None:
    """An independent attacker (F7): a FIFO named refunds.csv in a server folder imported
    as "refunds 0", no word said; reading it would have hung. A name the importer reads
    that is no regular file is refused, named, before any file is read; a link to a
    regular file is followed as before."""
    import os

    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    (folder / "refunds.csv").unlink()
    os.mkfifo(folder / "refunds.csv")
    (folder / "settlements.csv").rename(tmp_path / "settlements.csv")
    (folder / "settlements.csv").symlink_to(tmp_path / "settlements.csv")
    (folder / "disputes.json").mkdir()

    with pytest.raises(InputError) as caught:
        load_dataset(folder)

    lines = sorted(str(p) for p in caught.value.problems)
    assert lines == [
        "disputes.json: not a regular file (a folder, a named pipe or a device): the importer"
        " reads files",
        "refunds.csv: not a regular file (a folder, a named pipe or a device): the importer"
        " reads files",
    ]
    (folder / "refunds.csv").unlink()
    (folder / "disputes.json").rmdir()
    dataset, _ = load_dataset(folder)  # the linked settlements are read
    assert len(dataset.settlements) > 0 and dataset.refunds.empty
