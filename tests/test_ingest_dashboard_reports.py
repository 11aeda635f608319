"""Razorpay dashboard reports as downloaded (CSV, XLSX, XLS) read like the API's JSON."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from core.dataset import Dataset
from core.errors import InputError
from core.ingest import load_dataset

from .dashboard_xls import csv_to_xls

REAL = Path(__file__).parent / "fixtures" / "real_exports"
RENDERINGS = ("api_json", "dashboard_csv", "dashboard_xlsx")
AS_OF = "2026-07-31T23:59:59+05:30"
TABLES = (
    "payments",
    "refunds",
    "settlements",
    "recon",
    "instant_settlements",
    "instant_payouts",
    "disputes",
    "transfers",
)
# What the dashboard reports do not carry, so the API JSON has and the reports cannot:
NOT_IN_REPORTS = {
    # The Payments report has no Base Amount column (Reports Data Schema, Payments section).
    ("payments", "base_amount"),
    # The payment entity has no settled_by; the Payments report's Settled By names the bank
    # of a direct settlement (P23, Axis Bank). 'Razorpay' is read as empty in both.
    ("payments", "settled_by"),
    # Razorpay's API writes empty notes as []; the reports leave the cell blank.
    ("payments", "notes"),
    ("refunds", "notes"),
    # The API's `card` object (network, type, ...) has no column in the Payments report
    # (docs/razorpay-sources.md section 11).
    ("payments", "card_network"),
    ("payments", "card_type"),
    ("payments", "card_international"),
    ("payments", "card_sub_type"),
    # The combined recon report has no payment_id column (the API sets it on refund,
    # transfer, adjustment and reversal rows).
    ("recon", "payment_id"),
}


def _sorted(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    key = "row_key" if table == "recon" else "id"
    return frame.sort_values(key).reset_index(drop=True)


def _copy(rendering: str, tmp_path: Path) -> Path:
    folder = tmp_path / rendering
    shutil.copytree(REAL / rendering, folder)
    return folder


def _assert_same(a: Dataset, b: Dataset, tables: tuple[str, ...] = TABLES) -> None:
    for table in tables:
        left = _sorted(getattr(a, table), table)
        right = _sorted(getattr(b, table), table)
        dropped = [c for t, c in NOT_IN_REPORTS if t == table]
        pd.testing.assert_frame_equal(left.drop(columns=dropped), right.drop(columns=dropped))


def test_api_json_dashboard_csv_and_xlsx_give_identical_frames() -> None:
    api, _ = load_dataset(REAL / "api_json")
    for rendering in ("dashboard_csv", "dashboard_xlsx"):
        dashboard, _ = load_dataset(REAL / rendering)
        _assert_same(api, dashboard)
        for table in TABLES:
            assert len(getattr(dashboard, table)) > 0, table


def test_the_two_dashboard_renderings_are_identical_in_every_column() -> None:
    csv_set, _ = load_dataset(REAL / "dashboard_csv")
    xlsx_set, _ = load_dataset(REAL / "dashboard_xlsx")
    for table in TABLES:
        pd.testing.assert_frame_equal(
            _sorted(getattr(csv_set, table), table), _sorted(getattr(xlsx_set, table), table)
        )


def _reconcile(folder: Path, out: Path) -> pd.DataFrame:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "core",
            "reconcile",
            str(folder),
            "--out",
            str(out),
            "--as-of",
            AS_OF,
        ],
        check=True,
        capture_output=True,
    )
    return pd.read_csv(out, dtype=str, keep_default_na=False)


def test_reconcile_gives_the_same_outcomes_for_the_three_renderings(tmp_path: Path) -> None:
    api, csv_run, _xlsx_run = (
        _reconcile(REAL / rendering, tmp_path / f"{rendering}.csv") for rendering in RENDERINGS
    )
    # The two dashboard renderings: byte for byte.
    assert (tmp_path / "dashboard_csv.csv").read_bytes() == (
        tmp_path / "dashboard_xlsx.csv"
    ).read_bytes()
    # API and dashboard: every entity, status, code, settlement, match and exposure the same.
    assert api.drop(columns=["expected_amount", "difference"]).equals(
        csv_run.drop(columns=["expected_amount", "difference"])
    )
    # Amounts differ only where the API says more: a foreign-currency payment with no recon
    # row yet, whose INR amount only the API's base_amount gives (the Payments report has no
    # such column); there the dashboard's expected INR amount is unknown (0).
    differs = api[(api != csv_run).any(axis=1)]
    loaded, _ = load_dataset(REAL / "api_json")
    foreign_unsettled = set(
        loaded.payments.loc[
            loaded.payments["base_amount"].notna()
            & ~loaded.payments["id"].isin(loaded.recon["entity_id"]),
            "id",
        ]
    )
    assert set(differs["entity_id"]) == foreign_unsettled
    assert set(differs["status"]) == {"PENDING"}
    assert set(csv_run.loc[differs.index, "expected_amount"]) == {"0"}
    refund = api[api["entity_id"] == "rfnd_kWxHZYqLPMKU1y"].iloc[0]
    assert refund["status"] == "MATCHED"  # its ₹5.90 instant-refund fee read from the report


def test_instant_refund_fee_is_fee_exclusive_tax_plus_tax() -> None:
    dataset, _ = load_dataset(REAL / "dashboard_csv")
    recon = dataset.recon.set_index("entity_id")
    assert recon.loc["rfnd_kWxHZYqLPMKU1y", "fee"] == 590
    assert recon.loc["rfnd_kWxHZYqLPMKU1y", "tax"] == 90
    assert recon.loc["rfnd_kWxHZYqLPMKU1y", "debit"] == 50590
    assert recon.loc["pay_49R0H6sJy1QyD6", "fee"] == 17735


def test_settlement_ondemand_row_is_an_adjustment_with_its_debit() -> None:
    for rendering in ("api_json", "dashboard_xlsx"):
        dataset, _ = load_dataset(REAL / rendering)
        row = dataset.recon.set_index("entity_id").loc["setlod_NlpxpsPLlFrsjG"]
        assert row["type"] == "adjustment"
        assert row["debit"] == 200000
        assert "settlement.ondemand" in row["description"]


def test_import_report_names_the_layout_of_each_file() -> None:
    _, report = load_dataset(REAL / "dashboard_csv")
    layouts = {f.file: f.layout for f in report.files}
    assert layouts["settlement_recon.csv"] == "Razorpay dashboard: Settlement Recon (combined)"
    assert layouts["payments.csv"] == "Razorpay dashboard: Payments report"
    assert "layout Razorpay dashboard: Settlements report" in "\n".join(report.lines())
    _, api = load_dataset(REAL / "api_json")
    assert {f.layout for f in api.files if f.kind != "bank_statement"} == {"Razorpay API JSON"}
    assert "layout" in api.to_dict()["files"][0]
    assert any("to name the transfer of each reversal recon row" in w for w in api.warnings)


def test_settlements_report_with_a_blank_first_column_loads() -> None:
    head = (REAL / "dashboard_csv" / "settlements.csv").read_text(encoding="utf-8")
    assert head.startswith(",Settlement ID")
    dataset, _ = load_dataset(REAL / "dashboard_csv")
    settlements = dataset.settlements.set_index("id")
    assert len(settlements) == 10
    assert settlements.loc["setl_vvSLFdJ44ZOtJC", "utr"] == "UTIBN52619000013"
    assert settlements.loc["setl_vvSLFdJ44ZOtJC", "amount"] == 258746


def test_xls_copy_of_the_recon_report_loads_identically(tmp_path: Path) -> None:
    folder = _copy("dashboard_csv", tmp_path)
    for stem in ("settlement_recon", "settlements"):
        csv_to_xls(folder / f"{stem}.csv", folder / f"{stem}.xls", banner="Razorpay report")
        (folder / f"{stem}.csv").unlink()
    from_xls, report = load_dataset(folder)
    from_csv, _ = load_dataset(REAL / "dashboard_csv")
    _assert_same(from_csv, from_xls, ("recon", "settlements"))
    assert {f.fmt for f in report.files if f.file.endswith(".xls")} == {"xls"}


def test_bad_xlsx_cell_names_file_row_and_column(tmp_path: Path) -> None:
    folder = _copy("dashboard_xlsx", tmp_path)
    book = openpyxl.load_workbook(folder / "payments.xlsx")
    sheet = book.active
    assert sheet is not None
    sheet.insert_rows(1, amount=2)
    sheet["A1"] = "Payments report, July 2026"
    sheet.insert_cols(1)
    amount_column = next(c.column for c in sheet[3] if c.value == "Amount")
    sheet.cell(row=5, column=amount_column, value=12.345)
    book.save(folder / "payments.xlsx")
    with pytest.raises(InputError) as caught:
        load_dataset(folder)
    problems = [str(p) for p in caught.value.problems]
    assert len(problems) == 1
    assert problems[0].startswith("payments.xlsx:5:Amount:")
    assert "more than two decimal places" in problems[0]


def test_refunds_report_without_status_loads(tmp_path: Path) -> None:
    folder = _copy("dashboard_csv", tmp_path)
    (folder / "refunds.csv").write_text(
        "Refund ID,Payment ID,Amount,Currency,Processed At,Created At\n"
        "rfnd_kWxHZYqLPMKU1y,pay_jIoKl9u2yMLBz5,500.00,INR,07/07/2026 11:05:00,"
        "07/07/2026 11:00:03\n"
        "rfnd_63dkP7uP6VoSI8,pay_49R0H6sJy1QyD6,20.00,USD,,20/07/2026 12:30:03\n",
        encoding="utf-8",
    )
    dataset, report = load_dataset(folder)
    status = dataset.refunds.set_index("id")["status"]
    assert status["rfnd_kWxHZYqLPMKU1y"] == "processed"
    assert status["rfnd_63dkP7uP6VoSI8"] == "pending"
    assert any("no 'status' column" in w for w in report.warnings)


def test_settlement_rows_of_the_recon_report_cross_check_the_settlements_file(
    tmp_path: Path,
) -> None:
    folder = _copy("dashboard_csv", tmp_path)
    recon = folder / "settlement_recon.csv"
    width = recon.read_text(encoding="utf-8").splitlines()[0].count(",") + 1
    header = recon.read_text(encoding="utf-8").splitlines()[0].split(",")

    def row(**cells: str) -> str:
        return ",".join(cells.get(name, "") for name in header)

    extra = [
        row(
            transaction_entity="settlement",
            entity_id="setl_vvSLFdJ44ZOtJC",
            amount="2587.00",
            currency="INR",
            settled_at="09/07/2026 10:00:00",
            settlement_utr="UTIBN52619000013",
            settled_by="Razorpay",
        ),
        row(
            transaction_entity="settlement",
            entity_id="setl_NEWxxxxxxxxxxx",
            amount="10.00",
            currency="INR",
            settled_at="14-07-2022",
            settlement_utr="",
            settled_by="Razorpay",
        ),
    ]
    assert all(line.count(",") + 1 == width for line in extra)
    with recon.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(extra) + "\n")
    dataset, report = load_dataset(folder)
    settlements = dataset.settlements.set_index("id")
    assert settlements.loc["setl_vvSLFdJ44ZOtJC", "amount"] == 258746  # the file wins
    added = settlements.loc["setl_NEWxxxxxxxxxxx"]
    assert added["amount"] == 1000 and added["status"] == "processed" and pd.isna(added["utr"])
    assert added["created_at"] == 1657737000  # 14-07-2022 00:00 IST
    assert len(dataset.recon) == 31  # settlement rows are not recon rows
    warnings = "\n".join(report.warnings)
    assert "settlement_recon.csv:33: settlement setl_vvSLFdJ44ZOtJC amount 258700" in warnings
    assert "258746" in warnings
    assert "settlement_recon.csv:34: settlement setl_NEWxxxxxxxxxxx is not in" in warnings


def test_unknown_recon_type_is_still_refused(tmp_path: Path) -> None:
    folder = _copy("dashboard_csv", tmp_path)
    recon = folder / "settlement_recon.csv"
    recon.write_text(
        recon.read_text(encoding="utf-8").replace("adjustment,adj_2KS", "payout,adj_2KS"),
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        load_dataset(folder)
    assert "unknown type 'payout'" in str(caught.value)


def test_settlements_json_routes_instant_settlements_and_their_payouts(tmp_path: Path) -> None:
    folder = _copy("api_json", tmp_path)
    instant = json.loads((folder / "instant_settlements.json").read_text(encoding="utf-8"))
    (folder / "instant_settlements.json").unlink()
    settlements = json.loads((folder / "settlements.json").read_text(encoding="utf-8"))
    settlements["items"].append(instant["items"][0])
    (folder / "settlements.json").write_text(json.dumps(settlements, indent=2), encoding="utf-8")
    routed, report = load_dataset(folder)
    reference, _ = load_dataset(REAL / "api_json")
    assert len(routed.settlements) == 10
    _assert_same(reference, routed, ("settlements", "instant_settlements", "instant_payouts"))
    payout = routed.instant_payouts.iloc[0]
    assert payout["instant_settlement_id"] == "setlod_NlpxpsPLlFrsjG"
    assert any("1 to instant_settlements" in w for w in report.warnings)


def test_two_files_for_one_stem_are_refused(tmp_path: Path) -> None:
    folder = _copy("dashboard_xlsx", tmp_path)
    shutil.copy(REAL / "dashboard_csv" / "payments.csv", folder / "payments.csv")
    with pytest.raises(InputError) as caught:
        load_dataset(folder)
    assert "payments.xlsx is in the folder too" in str(caught.value)


def test_a_reversals_file_names_the_transfer_of_each_reversal_recon_row() -> None:
    for rendering in RENDERINGS:
        dataset, _ = load_dataset(REAL / rendering)
        reversal = dataset.recon[dataset.recon["entity_id"] == "rvrsl_ZJNoDUnhxVHCtr"]
        assert reversal["transfer_id"].tolist() == ["trf_uurzH2IdV3Rs1K"], rendering


def _add_transfer_without_recon_row(folder: Path) -> None:
    """A second transfer in the Transfers report, of 06/07/2026, that no recon row debits:
    failed (as the independent tester's trf_T0722F), or processed and never settled; the
    report's documented columns cannot say which."""
    path = folder / "transfers.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    new = (
        lines[1]
        .replace("trf_uurzH2IdV3Rs1K", "trf_NoRowFailed001")
        .replace(",600.00,INR,2.36,0.36,200.00,", ",400.00,INR,2.36,0.36,0.00,")
    )
    path.write_text("\n".join([*lines, new]) + "\n", encoding="utf-8")


def test_a_transfers_report_row_without_a_reversal_has_an_unknown_status(
    tmp_path: Path,
) -> None:
    folder = _copy("dashboard_csv", tmp_path)
    _add_transfer_without_recon_row(folder)
    dataset, report = load_dataset(folder)
    status = dataset.transfers.set_index("id")["status"]
    # Amount Reversed above 0: reversed in part, which only a processed transfer can be.
    assert status["trf_uurzH2IdV3Rs1K"] == "processed"
    # Nothing in the report's documented columns tells failed from processed.
    assert status["trf_NoRowFailed001"] == "unknown"
    assert any(
        "no 'status' column: 1 transfers with an Amount Reversed read as processed, "
        "1 without one as of unknown status" in w
        for w in report.warnings
    )


def test_a_failed_transfer_in_the_transfers_report_is_pending_not_a_money_exception(
    tmp_path: Path,
) -> None:
    folder = _copy("dashboard_csv", tmp_path)
    _add_transfer_without_recon_row(folder)
    outcomes = _reconcile(folder, tmp_path / "results.csv").set_index("entity_id")
    row = outcomes.loc["trf_NoRowFailed001"]
    assert (row["status"], row["reason_code"], row["exposure_class"], row["exposure_amount"]) == (
        "PENDING",
        "TRANSFER_STATUS_UNKNOWN",
        "",
        "0",
    )
    # The transfer its recon row debits is checked as before.
    assert outcomes.loc["trf_uurzH2IdV3Rs1K", "status"] == "MATCHED"


def test_the_documented_disputes_report_is_refused_naming_the_layout_to_use(
    tmp_path: Path,
) -> None:
    # The Reports Data Schema's Disputes report: three columns, no payment, amount or status.
    folder = _copy("dashboard_csv", tmp_path)
    (folder / "disputes.csv").write_text(
        "Dispute ID,Reason Description,Created At\n"
        "disp_1G1EiMsWE6IjEF,Customer claims goods were not received,14/07/2026 10:00:00\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        load_dataset(folder)
    problems = [str(p) for p in caught.value.problems]
    assert problems == [
        "disputes.csv: the Dashboard's Disputes report (Dispute ID, Reason Description, "
        "Created At) has no payment id, amount or status, which a dispute is checked by: "
        "take disputes from the API (python -m core sync, or GET /v1/disputes saved as "
        "disputes.json; a CSV needs the Dispute entity's fields: id, payment_id, amount, "
        "status, created_at), or leave disputes.csv out (dispute debits are then checked "
        "from the recon rows alone)",
        "disputes.csv:1:payment_id: required column 'payment_id' is missing",
        "disputes.csv:1:amount: required column 'amount' is missing",
        "disputes.csv:1:status: required column 'status' is missing",
    ]
