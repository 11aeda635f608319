"""Bank statements: golden files per layout, line ids, amounts, dates and UTRs.

The `*.expected.csv` files beside each statement were checked by hand against the statement
(amounts in paise, IST dates, the UTR each narration carries, physical line numbers).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from core.dataset import BANK_COLUMNS, empty_frame
from core.ingest.bank import parse_bank_statement
from core.ingest.readers import ReadFailure
from core.ingest.utr import extract_utr

from .conftest import FIXTURES

BANK = FIXTURES / "bank"
LAYOUTS = {
    "hdfc.csv": "HDFC",
    "icici.csv": "ICICI",
    "sbi.csv": "SBI",
    "axis.csv": "Axis",
    # An independent tester's hand-written Axis corporate statement ('Transaction
    # Particulars', one Amount(INR) column with 'DR|CR'): its narrations went unread.
    "axis_corporate.csv": "Axis",
    "generic_amount_drcr.csv": "generic",
    "kotak.csv": "Kotak",
    "hdfc_delimited.txt": "HDFC",
    "hdfc_netbanking.xlsx": "HDFC",
    "icici_sheet.xls": "ICICI",
}


def _parse(path: Path) -> tuple[pd.DataFrame, str | None, list[str]]:
    frame, report, problems = parse_bank_statement(path.name, path.read_bytes())
    return frame, report.bank_layout, [str(p) for p in problems]


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_bank_statement_matches_its_golden_file(name: str) -> None:
    frame, layout, problems = _parse(BANK / name)
    assert problems == []
    assert layout == LAYOUTS[name]
    expected = pd.read_csv(
        BANK / f"{Path(name).stem}.expected.csv", dtype=str, keep_default_na=False
    )
    actual = frame.drop(columns=["file"]).astype(object).where(frame.notna(), "").astype(str)
    actual = actual.drop(columns=["file"], errors="ignore").reset_index(drop=True)
    pd.testing.assert_frame_equal(actual, expected, check_dtype=False)
    assert frame.dtypes.equals(empty_frame(BANK_COLUMNS).dtypes)


def test_line_ids_count_banner_header_and_every_line_of_a_quoted_cell() -> None:
    frame, _, _ = _parse(BANK / "hdfc.csv")
    lines = (BANK / "hdfc.csv").read_text(encoding="utf-8").splitlines()
    ids = frame["id"].tolist()
    # The RTGS narration is quoted over lines 13-14, so the next transaction is on line 15.
    assert ids == [f"hdfc.csv:{n}" for n in (10, 11, 12, 13, 15, 16)]
    for line_no, txn_date in zip(frame["line_no"], frame["txn_date"], strict=True):
        year, month, day = txn_date.split("-")
        assert lines[line_no - 1].startswith(f"{day}/{month}/{year[2:]},")


def test_indian_grouping_and_cr_dr_suffixes() -> None:
    frame, _, _ = _parse(BANK / "generic_amount_drcr.csv")
    assert frame["credit"].tolist() == [13_500_000, 0, 0]
    assert frame["debit"].tolist() == [0, 25_000, 30_000_000]
    assert frame["balance"].tolist() == [23_500_000, 23_475_000, -6_525_000]


def test_tab_separated_sbi_export_with_month_names() -> None:
    frame, layout, _ = _parse(BANK / "sbi.csv")
    assert layout == "SBI"
    assert frame["txn_date"].tolist()[:2] == ["2026-06-01", "2026-06-02"]
    assert frame.loc[2, "utr"] == "SBINR52026060300000042"


def test_no_recognisable_header_is_refused() -> None:
    data = b"Account statement\nfoo,bar,baz\n1,2,3\n"
    with pytest.raises(ReadFailure) as caught:
        parse_bank_statement("bank_statement.csv", data)
    assert "no recognisable header" in str(caught.value.problems[0])


def test_unparsable_and_impossible_dates_name_their_cells() -> None:
    data = (
        b"Date,Narration,Chq./Ref.No.,Value Dt,Withdrawal Amt.,Deposit Amt.,Closing Balance\n"
        b"01/06/26,A,1,01/06/26,,100.00,100.00\n"
        b"31/02/26,B,2,01/06/26,,100.00,200.00\n"
        b"0l/06/26,C,3,01/06/26,,100.00,300.00\n"
        b"03/06/26,D,4,03/06/26,,1O0.00,400.00\n"
        b"04/06/26,E,5,04/06/26,,100.00,500.00\n"
    )
    _, _, problems = parse_bank_statement("bank_statement.csv", data)
    assert [str(p) for p in problems] == [
        "bank_statement.csv:3:Date: impossible date '31/02/26'",
        "bank_statement.csv:4:Date: unparsable date '0l/06/26'",
        "bank_statement.csv:5:Deposit Amt.: malformed amount '1O0.00'",
    ]


def test_amount_without_date_inside_the_table_is_a_problem() -> None:
    data = (
        b"Date,Narration,Chq./Ref.No.,Value Dt,Withdrawal Amt.,Deposit Amt.,Closing Balance\n"
        b"01/06/26,A,1,01/06/26,,100.00,100.00\n"
        b",B,2,,,100.00,200.00\n"
        b"02/06/26,C,3,02/06/26,,100.00,300.00\n"
    )
    _, _, problems = parse_bank_statement("bank_statement.csv", data)
    assert [str(p) for p in problems] == ["bank_statement.csv:3:Date: amount without a date"]


def test_narration_continuation_lines_join_the_transaction_above() -> None:
    data = (
        b"Date,Narration,Chq./Ref.No.,Value Dt,Withdrawal Amt.,Deposit Amt.,Closing Balance\n"
        b"01/06/26,NEFT CR-UTIB0000123-RAZORPAY SOFTWARE,,01/06/26,,100.00,100.00\n"
        b",PVT LTD-AXISCN1153863727,,,,,\n"
        b"02/06/26,C,3,02/06/26,,100.00,200.00\n"
    )
    frame, _, problems = parse_bank_statement("bank_statement.csv", data)
    assert problems == []
    assert frame["id"].tolist() == ["bank_statement.csv:2", "bank_statement.csv:4"]
    assert frame.loc[0, "utr"] == "AXISCN1153863727"


@pytest.mark.parametrize(
    ("narration", "reference", "utr"),
    [
        ("NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-AXISCN1153863727", "", "AXISCN1153863727"),
        ("neft cr-razorpay software pvt ltd-utr: hdfcn57935380338", "", "HDFCN57935380338"),
        ("RTGS CR-HDFCR52026060300012345-RAZORPAY SOFTWARE", "", "HDFCR52026060300012345"),
        ("IMPS/P2A/623412341234/VENDOR REFUND", "024077218654", "623412341234"),
        ("IMPS/KKBKH31009587010/RAZORPAY/SETTLEMENT", "000032027838", "KKBKH31009587010"),
        ("UPI/612345678901/razorpay@icici/Payment", "", "612345678901"),
        ("NEFT CR-YESB0000001-RAZORPAY SOFTWARE PRIVATE LIMITED-475423368670", "NEFT",
         "475423368670"),
        ("BY TRANSFER-NEFT*UTIB0000123*AXISCN1153863727*RAZORPAY", "TRANSFER FROM 31994",
         "AXISCN1153863727"),
        # A truncated narration: the longer UTR in the reference column wins.
        ("NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-AXISCN115386", "AXISCN1153863727",
         "AXISCN1153863727"),
        ("POS 4xxxx1234 AMAZON PAY", "927715150280", "927715150280"),
        ("INT.PD:01-06-2026 TO 30-06-2026", "", None),
        ("NEFT CR-HDFC0000240-ACME DISTRIBUTORS-INV 2231", "", None),
        ("CASH DEPOSIT", "UTR-AXIS CN 1153 8637 27", "AXISCN1153863727"),
    ],
)  # fmt: skip
def test_utr_is_found_in_narration_or_reference(
    narration: str, reference: str, utr: str | None
) -> None:
    assert extract_utr(narration, reference) == utr


def test_direction_words_and_unspaced_suffixes() -> None:
    data = (
        b"Txn Date,Particulars,Amount,Type,Balance\n"
        b"01/06/2026,Razorpay,1000.00Cr,,1000.00Cr\n"
        b"02/06/2026,Fee,10.00,Debit,990.00 CR\n"
        b"03/06/2026,Refund in,5.00,Deposit,995.00\n"
        b"04/06/2026,Cash out,-20.00,,975.00\n"
        b"05/06/2026,Unknown,7.00,,968.00\n"
    )
    frame, report, problems = parse_bank_statement("bank.csv", data)
    assert frame["credit"].tolist() == [100000, 0, 500, 0, 0]
    assert frame["debit"].tolist() == [0, 1000, 0, 2000, 0]
    assert frame["balance"].tolist()[:2] == [100000, 99000]
    assert [str(p) for p in problems] == ["bank.csv:6:Amount: cannot tell debit from credit"]
    assert report.bank_layout == "generic"


def _corporate(old: str, new: str) -> bytes:
    """The Axis corporate statement with one header cell renamed."""
    data = (BANK / "axis_corporate.csv").read_bytes()
    assert old.encode() in data
    return data.replace(old.encode(), new.encode(), 1)


def test_a_statement_with_no_narration_column_says_so_naming_the_columns_not_read() -> None:
    data = _corporate("Transaction Particulars", "Particulars of Txn")
    frame, report, problems = parse_bank_statement("bank.csv", data)
    assert problems == [] and frame["narration"].isna().all()
    assert report.ignored_columns == ("Particulars of Txn", "Branch Name")
    assert report.warnings == (
        "no narration column (columns not read: Particulars of Txn, Branch Name): UTRs are"
        " read from the reference column alone, so a settlement credit whose UTR is in its"
        " narration will not match; if one of these is the narration, save a column"
        " mapping for this header (`python -m core bank-mapping save`)",
    )


def test_the_columns_a_statement_has_but_are_not_read_are_reported() -> None:
    data = (BANK / "axis_corporate.csv").read_bytes()
    _, report, _ = parse_bank_statement("axis_corporate.csv", data)
    assert report.ignored_columns == ("Branch Name",)
    _, kotak, _ = parse_bank_statement("kotak.csv", (BANK / "kotak.csv").read_bytes())
    assert kotak.ignored_columns == ("Sl. No.",)  # its second Dr / Cr is the balance's sign


def test_a_single_amount_column_with_no_direction_column_is_refused_once_at_the_header() -> None:
    data = _corporate("DR|CR", "Flag")
    _, _, problems = parse_bank_statement("bank.csv", data)
    assert [str(p) for p in problems] == [
        "bank.csv:7:Amount(INR): cannot tell debit from credit in any row: 'Amount(INR)' has"
        " no Cr/Dr mark or sign and no column says which (columns not read: Flag, Branch"
        " Name); if one of these holds DR/CR, save a column mapping naming it `direction`"
        " (`python -m core bank-mapping save`)"
    ]


@pytest.mark.parametrize(
    ("narration", "reference", "utr"),
    [
        ("NEFT DR-HDFC0000240-ACME DISTRIBUTORS-A/C 50200012345678", "", None),
        ("FUNDS TRF TO A/C NO: 50200012345678 UTR: HDFCN57935380338", "", "HDFCN57935380338"),
        ("IMPS/P2A/623412341234/TO A/C XXXXXX12345678/VENDOR", "", "623412341234"),
        ("TO A/C XXXXXXXX5678 NEFT HDFCN57935380338", "", "HDFCN57935380338"),
        ("TRANSFER FROM AC NO 50200012345678", "AXISCN1153863727", "AXISCN1153863727"),
        ("ACCOUNT NO. 50200012345678 RAZORPAY SETTLEMENT", "", None),
        ("ACCT 50200012345678-RTGS CR-HDFCR52026060300012345", "", "HDFCR52026060300012345"),
        ("BY CLG A/C50200012345678 ACC NO-918020012345678", "", None),
        ("UPI/612345678901/A/C 50200012345678/razorpay@icici", "", "612345678901"),
    ],
)  # fmt: skip
def test_an_account_number_in_the_narration_is_never_the_utr(
    narration: str, reference: str, utr: str | None
) -> None:
    assert extract_utr(narration, reference) == utr
