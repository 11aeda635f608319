"""Issue 11's acceptance on data we did not make: a month of a merchant's Razorpay money written
by hand from Razorpay's documentation only (tests/fixtures/real_exports/, see its SCENARIOS.md,
SOURCES.md and expected.json), reconciled as a finance team would get it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REAL = Path(__file__).parent / "fixtures" / "real_exports"
AS_OF_ARGS = ("--as-of", "2026-07-31T23:59:59+05:30")


def _reconcile(folder: Path, out: Path) -> pd.DataFrame:
    subprocess.run(
        [sys.executable, "-m", "core", "reconcile", str(folder), "--out", str(out), *AS_OF_ARGS],
        check=True,
        capture_output=True,
    )
    return pd.read_csv(out, dtype=str, keep_default_na=False).set_index("entity_id")


@pytest.fixture(scope="module", params=["api_json", "dashboard_csv", "dashboard_xlsx"])
def outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> pd.DataFrame:
    out = tmp_path_factory.mktemp(request.param) / "results.csv"
    return _reconcile(REAL / request.param, out)


def _bank_line(outcomes: pd.DataFrame, credit: str) -> pd.Series:
    lines = outcomes[
        (outcomes["entity_type"] == "bank_entry") & (outcomes["actual_amount"] == credit)
    ]
    assert len(lines) == 1, credit
    return lines.iloc[0]


def test_every_regular_settlement_that_reached_the_bank_in_full_is_matched_by_its_utr(
    outcomes: pd.DataFrame,
) -> None:
    for settlement in (
        "setl_O7mgdboj3ANUtA",
        "setl_oqOu66O6puY43K",
        "setl_OudUoTjKvtEji1",
        "setl_LVB9lUJY80QM0n",
        "setl_h5ZRrtQ6htgMtJ",
        "setl_KdV4rAYmvMZ3jo",
        "setl_NwitnAUZhRBXEO",
        "setl_NgMev9gDk0yWtr",
        "setl_U3vMhW91LK5CP4",  # carries the instant settlement's settlement.ondemand debit
    ):
        row = outcomes.loc[settlement]
        assert (row["status"], row["match_method"], row["difference"]) == ("MATCHED", "utr", "0")


def test_an_instant_refund_fee_from_the_report_is_no_mismatch(outcomes: pd.DataFrame) -> None:
    assert outcomes.loc["rfnd_kWxHZYqLPMKU1y", "status"] == "MATCHED"


def test_an_instant_settlements_imps_credit_is_matched_to_its_payout(
    outcomes: pd.DataFrame,
) -> None:
    instant = outcomes.loc["setlod_NlpxpsPLlFrsjG"]
    assert (instant["entity_type"], instant["status"]) == ("instant_settlement", "MATCHED")
    assert instant["actual_amount"] == instant["expected_amount"] == "199410"
    credit = _bank_line(outcomes, "199410")
    assert (credit["status"], credit["settlement_id"]) == ("MATCHED", "setlod_NlpxpsPLlFrsjG")


def test_a_won_dispute_leaves_nothing_open(outcomes: pd.DataFrame) -> None:
    assert outcomes.loc["disp_1G1EiMsWE6IjEF", "status"] == "MATCHED"
    for adjustment in ("adj_lzGaxic4vGi2rk", "adj_COMEKbmIujyqz7"):  # its debit and reversal
        assert adjustment not in outcomes.index or outcomes.loc[adjustment, "status"] != "EXCEPTION"


def test_a_lost_dispute_is_a_realised_loss(outcomes: pd.DataFrame) -> None:
    lost = outcomes.loc["disp_QlUSRx4boeOkUV"]
    assert (lost["reason_code"], lost["exposure_class"], lost["exposure_amount"]) == (
        "DISPUTE_LOST",
        "realised_loss",
        "200000",
    )


def test_an_open_dispute_is_open_with_its_money_at_stake(outcomes: pd.DataFrame) -> None:
    open_dispute = outcomes.loc["disp_1myzfhghKTd6nG"]
    assert (open_dispute["reason_code"], open_dispute["exposure_amount"]) == (
        "DISPUTE_OPEN",
        "150000",
    )


def test_an_international_payment_and_its_refund_are_not_mismatches(outcomes: pd.DataFrame) -> None:
    payment = outcomes.loc["pay_49R0H6sJy1QyD6"]
    assert (payment["status"], payment["expected_amount"], payment["actual_amount"]) == (
        "MATCHED",
        "483265",  # INR: base_amount 501000 - fee 17735, never 6000 US cents
        "483265",
    )
    assert outcomes.loc["rfnd_63dkP7uP6VoSI8", "status"] == "MATCHED"
    # Captured 27/07 in USD: T+7 working days, so not yet due at the month end.
    assert outcomes.loc["pay_a3WOwqnx1Lnd4z", "status"] == "PENDING"


def test_a_route_transfer_and_its_reversal_are_matched(outcomes: pd.DataFrame) -> None:
    transfer = outcomes.loc["trf_uurzH2IdV3Rs1K"]
    assert (transfer["entity_type"], transfer["status"]) == ("transfer", "MATCHED")


def test_a_payment_settled_directly_by_a_bank_is_not_missing(outcomes: pd.DataFrame) -> None:
    direct = outcomes.loc["pay_fRBCu2he6zKG2b"]
    assert (direct["status"], direct["match_method"]) == ("MATCHED", "direct")


def test_the_planted_problems_are_found_and_nothing_else_is_open(outcomes: pd.DataFrame) -> None:
    short = outcomes.loc["setl_vvSLFdJ44ZOtJC"]
    assert (short["reason_code"], short["difference"]) == ("BANK_UTR_AMOUNT_MISMATCH", "-10000")
    assert outcomes.loc["pay_cA3uybco1pyHmP", "reason_code"] == "MISSING_RECONCILIATION_RECORD"
    assert _bank_line(outcomes, "432100")["reason_code"] == "UNMATCHED_BANK_CREDIT"
    # The credit naming an account number (A/C 50200012345678) is no gateway credit.
    assert outcomes[outcomes["actual_amount"] == "1250000"].empty
    assert outcomes.loc["pay_537gSyTpBeohbO", "status"] == "PENDING"  # due 03/08
    exceptions = set(outcomes.index[outcomes["status"] == "EXCEPTION"])
    assert exceptions == {
        "setl_vvSLFdJ44ZOtJC",
        "pay_cA3uybco1pyHmP",
        _bank_line(outcomes, "432100").name,
        "disp_QlUSRx4boeOkUV",
        "disp_1myzfhghKTd6nG",
        # The one disagreement with the hand-written expectations: P10 was held and released
        # (SCENARIOS.md), but its recon row says on_hold false, settled true on 22/07, twelve
        # days after its due date; the hold is written only in the payment's notes. From the
        # data, it settled late: a structural exception with no money at risk.
        "pay_phFyHBRv7RD5Nc",
    }
    assert outcomes.loc["pay_phFyHBRv7RD5Nc", "reason_code"] == "TIMING_WINDOW_EXCEEDED"


def test_a_kotak_statement_of_the_same_lines_gives_the_same_outcomes(tmp_path: Path) -> None:
    folder = tmp_path / "kotak"
    shutil.copytree(REAL / "api_json", folder)
    shutil.copy(REAL / "bank_kotak" / "bank_statement.csv", folder / "bank_statement.csv")
    hdfc = _reconcile(REAL / "api_json", tmp_path / "hdfc.csv")
    kotak = _reconcile(folder, tmp_path / "kotak.csv")

    # Bank line ids are '<file>:<line>' and the layouts differ in lines; the rest is the same.
    def without_bank_ids(frame: pd.DataFrame) -> pd.DataFrame:
        others = frame[frame["entity_type"] != "bank_entry"]
        bank = frame[frame["entity_type"] == "bank_entry"].sort_values("actual_amount")
        return pd.concat([others, bank.reset_index(drop=True)])

    pd.testing.assert_frame_equal(
        without_bank_ids(hdfc).reset_index(drop=True),
        without_bank_ids(kotak).reset_index(drop=True),
    )
