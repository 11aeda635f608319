"""`generate --layout dashboard` / `dashboard-xlsx`: the same dataset as Razorpay Dashboard
reports (display headers, rupees with two decimals, `dd/mm/YYYY HH:MM:SS` IST)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest

from core.benchmark import generate
from core.benchmark.dashboard import LAYOUTS
from core.calendar import IST

RUPEES = r"^-?\d+\.\d{2}$"
IST_TIME = r"^\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}$"
FIXTURE = Path(__file__).parent / "fixtures" / "real_exports" / "dashboard_csv"


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for layout in ("api", "dashboard", "dashboard-xlsx"):
        folder = tmp_path_factory.mktemp(layout)
        generate(folder, payments=400, seed=8, money_model=True, layout=layout)
        out[layout] = folder
    return out


def _csv(folder: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(folder / name, dtype=str, keep_default_na=False)


def test_headers_are_the_dashboard_reports(layouts: dict[str, Path]) -> None:
    folder = layouts["dashboard"]
    for name, layout in LAYOUTS.items():
        header = list(_csv(folder, name).columns)
        assert header == [h for h, _, _ in layout], name
    payments = list(_csv(folder, "payments.csv").columns)
    for column in ("Payment ID", "Amount", "Currency", "Status", "Order ID", "Payment Method"):
        assert column in payments
    for column in ("Fees", "Tax", "Created At", "Customer Email", "Customer Contact"):
        assert column in payments
    assert "Settled By" in payments
    refunds = list(_csv(folder, "refunds.csv").columns)
    for column in ("Refund ID", "Payment ID", "Amount", "Currency", "Status", "Fees", "Tax"):
        assert column in refunds
    settlements = list(_csv(folder, "settlements.csv").columns)
    assert "UTR (Unique Transaction Reference)" in settlements
    # The recon report's documented columns come first, in the order of the hand-written
    # example export (tests/fixtures/real_exports).
    documented = list(_csv(FIXTURE, "settlement_recon.csv").columns)
    recon = list(_csv(folder, "settlement_recon.csv").columns)
    assert recon[: len(documented)] == documented


def test_rupees_and_ist_dates_round_trip(layouts: dict[str, Path]) -> None:
    api = _csv(layouts["api"], "payments.csv").set_index("id")
    dash = _csv(layouts["dashboard"], "payments.csv").set_index("Payment ID")
    assert list(dash.index) == list(api.index)
    inr = dash["Currency"] == "INR"
    assert dash.loc[inr, "Amount"].str.match(RUPEES).all()
    assert dash["Fees"].replace("", "0.00").str.match(RUPEES).all()
    assert dash["Created At"].str.match(IST_TIME).all()
    paise = (dash.loc[inr, "Amount"].str.replace(".", "", regex=False)).astype(int)
    assert (paise == api.loc[inr, "amount"].astype(int)).all()
    jpy = dash["Currency"] == "JPY"
    assert jpy.any() and (dash.loc[jpy, "Amount"] == api.loc[jpy, "amount"]).all()
    first = api.index[0]
    moment = dt.datetime.fromtimestamp(int(api.loc[first, "created_at"]), tz=IST)
    assert dash.loc[first, "Created At"] == moment.strftime("%d/%m/%Y %H:%M:%S")

    recon_api = _csv(layouts["api"], "settlement_recon.csv")
    recon = _csv(layouts["dashboard"], "settlement_recon.csv")
    for column in ("amount", "debit", "credit", "tax", "fee (exclusive tax)"):
        assert recon[column].str.match(RUPEES).all(), column
    fee = recon["fee (exclusive tax)"].str.replace(".", "", regex=False).astype(int)
    tax = recon["tax"].str.replace(".", "", regex=False).astype(int)
    assert ((fee + tax) == recon_api["fee"].astype(int)).all()
    credit = recon["credit"].str.replace(".", "", regex=False).astype(int)
    assert (credit == recon_api["credit"].astype(int)).all()
    assert set(recon["settled_by"]) == {"Razorpay"}

    settlements = _csv(layouts["dashboard"], "settlements.csv")
    assert settlements["Amount"].str.match(RUPEES).all()
    assert settlements["Created At"].str.match(IST_TIME).all()


def test_xlsx_holds_the_same_table(layouts: dict[str, Path]) -> None:
    from openpyxl import load_workbook

    folder = layouts["dashboard-xlsx"]
    assert not (folder / "payments.csv").exists()
    assert (folder / "bank_statement.csv").exists()
    for name in LAYOUTS:
        book = load_workbook(folder / Path(name).with_suffix(".xlsx"), read_only=True)
        rows = list(book.active.iter_rows(values_only=True))
        text = _csv(layouts["dashboard"], name)
        assert list(rows[0]) == list(text.columns), name
        assert len(rows) - 1 == len(text), name
    book = load_workbook(folder / "settlements.xlsx", read_only=True)
    first = next(iter(book.active.iter_rows(min_row=2, max_row=2, values_only=True)))
    text = _csv(layouts["dashboard"], "settlements.csv").iloc[0]
    assert f"{first[1]:.2f}" == text["Amount"]
    assert first[-1] == text["Created At"]


def test_xlsx_bytes_are_reproducible(tmp_path: Path) -> None:
    first = generate(tmp_path / "a", payments=250, seed=1, layout="dashboard-xlsx")
    second = generate(tmp_path / "b", payments=250, seed=1, layout="dashboard-xlsx")
    assert first.fingerprint == second.fingerprint
    assert "payments.xlsx" in first.files and first.counts["payments.xlsx"] >= 250


def test_unknown_layout_is_refused(tmp_path: Path) -> None:
    from core.errors import ConfigError

    with pytest.raises(ConfigError):
        generate(tmp_path, payments=250, layout="pdf")
