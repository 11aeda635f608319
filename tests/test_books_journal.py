"""Journal entries (core.books.journal): every settlement's voucher balances to the paisa,
differences go to suspense and nowhere else, and the Tally XML is Tally's voucher import
request (checked against a hand-written sample)."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from core.books.journal import (
    Ledgers,
    journal_csv,
    month_vouchers,
    settlement_vouchers,
    tally_xml,
)
from core.dataset import RECON_COLUMNS, SETTLEMENT_COLUMNS, Dataset
from core.pipeline import load_folder
from tests.conftest import FIXTURES, SPEC_EXAMPLE
from tests.engine_support import ts

SAMPLE = FIXTURES / "books" / "tally_sample.xml"
JUNE_2 = ts("2026-06-02T10:00")


def _recon(rows: list[dict[str, object]]) -> pd.DataFrame:
    base: dict[str, object] = {
        "currency": "INR",
        "on_hold": False,
        "settled": True,
        "created_at": JUNE_2,
        "settled_at": JUNE_2,
        "fee": 0,
        "tax": 0,
        "debit": 0,
        "credit": 0,
    }
    frame = pd.DataFrame([{**base, **r} for r in rows], columns=list(RECON_COLUMNS))
    return frame.astype(RECON_COLUMNS)


def _dataset(rows: list[dict[str, object]], paid: int, sid: str = "setl_P") -> Dataset:
    settlement = pd.DataFrame(
        [{"id": sid, "amount": paid, "status": "processed", "created_at": JUNE_2}],
        columns=list(SETTLEMENT_COLUMNS),
    ).astype(SETTLEMENT_COLUMNS)
    return Dataset(settlements=settlement, recon=_recon(rows))


fee_and_tax = st.integers(0, 50_000).flatmap(lambda f: st.tuples(st.just(f), st.integers(0, f)))
row = st.one_of(
    st.tuples(st.just("payment"), st.integers(1, 10_000_000), fee_and_tax),
    st.tuples(st.just("refund"), st.integers(1, 1_000_000), fee_and_tax),
    st.tuples(st.just("transfer"), st.integers(1, 1_000_000), fee_and_tax),
    st.tuples(st.just("dispute_debit"), st.integers(1, 1_000_000), st.just((0, 0))),
    st.tuples(st.just("dispute_credit"), st.integers(1, 1_000_000), st.just((0, 0))),
    st.tuples(st.just("adjustment"), st.integers(-500_000, 500_000), st.just((0, 0))),
)


def _row(i: int, kind: str, amount: int, fee: int, tax: int) -> dict[str, object]:
    r: dict[str, object] = {"row_key": f"k{i}", "entity_id": f"e{i}", "settlement_id": "setl_P"}
    if kind == "payment":
        return {
            **r,
            "type": "payment",
            "amount": amount,
            "fee": fee,
            "tax": tax,
            "credit": amount - fee,
        }
    if kind in ("refund", "transfer"):
        return {**r, "type": kind, "amount": amount, "fee": fee, "tax": tax, "debit": amount + fee}
    if kind.startswith("dispute"):
        side = "debit" if kind == "dispute_debit" else "credit"
        return {**r, "type": "adjustment", "amount": amount, side: amount, "dispute_id": f"d{i}"}
    side = "credit" if amount > 0 else "debit"
    return {**r, "type": "adjustment", "amount": abs(amount), side: abs(amount)}


@settings(max_examples=120, deadline=None)
@given(rows=st.lists(row, min_size=0, max_size=12), short=st.integers(-100_000, 100_000))
def test_every_settlement_voucher_balances_to_the_paisa_and_only_a_short_payment_is_suspense(
    rows: list[tuple[str, int, tuple[int, int]]], short: int
) -> None:
    built = [_row(i, kind, amount, *ft) for i, (kind, amount, ft) in enumerate(rows)]
    frame = _recon(built) if built else _recon([])
    due = int(frame["credit"].sum() - frame["debit"].sum())
    (voucher,) = settlement_vouchers(_dataset(built, due - short))
    assert voucher.debits == voucher.credits
    by_ledger: dict[str, int] = {}
    for line in voucher.lines:
        by_ledger[line.ledger] = by_ledger.get(line.ledger, 0) + line.debit - line.credit
        assert line.debit >= 0 and line.credit >= 0 and (line.debit == 0 or line.credit == 0)
    assert by_ledger.get("Razorpay suspense", 0) == short
    # What it paid is in transit until a bank line shows it (no bank line here).
    assert by_ledger.get("Razorpay settlements in transit", 0) == due - short
    assert "Bank" not in by_ledger
    fees = sum(ft[0] for _, _, ft in rows)
    assert (
        by_ledger.get("Payment gateway charges", 0) + by_ledger.get("GST input credit", 0) == fees
    )


def test_every_line_traces_to_the_recon_rows_of_its_settlement() -> None:
    dataset = load_folder(SPEC_EXAMPLE / "dataset").dataset
    recon = dataset.recon
    for voucher in settlement_vouchers(dataset):
        assert voucher.debits == voucher.credits
        mine = set(recon.loc[recon["settlement_id"] == voucher.reference, "row_key"])
        for line in voucher.lines:
            assert line.source_rows and set(line.source_rows) <= mine


def test_month_journal_csv_has_a_balanced_voucher_per_settlement_and_the_captured_one() -> None:
    dataset = load_folder(SPEC_EXAMPLE / "dataset").dataset
    vouchers = month_vouchers(dataset, "2026-06")
    frame = pd.read_csv(io.StringIO(journal_csv(vouchers)), dtype=str)
    assert frame["voucher"].iloc[0] == "RZP-CAPTURED-2026-06"
    cents = frame[["debit", "credit"]].fillna("0").map(lambda s: int(s.replace(".", "")))
    sums = cents.groupby(frame["voucher"]).sum()
    assert (sums["debit"] == sums["credit"]).all()
    assert len(sums) == len(vouchers)


def _shape(element: ET.Element) -> list[tuple[str, str]]:
    return [(e.tag, (e.text or "").strip()) for e in element.iter()]


def test_tally_xml_matches_a_hand_written_import_request() -> None:
    rows = [
        {
            "row_key": "r1",
            "entity_id": "pay_1",
            "type": "payment",
            "amount": 100_000,
            "fee": 1_770,
            "tax": 270,
            "credit": 98_230,
            "settlement_id": "setl_HAND0000000001",
        },
        {
            "row_key": "r2",
            "entity_id": "pay_2",
            "type": "payment",
            "amount": 74_950,
            "fee": 1_180,
            "tax": 180,
            "credit": 73_770,
            "settlement_id": "setl_HAND0000000001",
        },
        {
            "row_key": "r3",
            "entity_id": "rfnd_1",
            "type": "refund",
            "amount": 30_000,
            "debit": 30_000,
            "settlement_id": "setl_HAND0000000001",
        },
    ]
    dataset = _dataset(rows, 142_000, sid="setl_HAND0000000001")
    # A settlement pays into transit (the Bank ledger, renamed here, is a bank line's).
    ledgers = Ledgers.from_mapping({"bank": "HDFC Current A/c"})
    ours = ET.fromstring(tally_xml(settlement_vouchers(dataset, ledgers)))
    sample = ET.parse(SAMPLE).getroot()
    assert _shape(ours) == _shape(sample)
    # Tally's structure and sign rule, read back from our XML
    assert ours.findtext("HEADER/TALLYREQUEST") == "Import Data"
    assert ours.findtext("BODY/IMPORTDATA/REQUESTDESC/REPORTNAME") == "Vouchers"
    voucher = ours.find("BODY/IMPORTDATA/REQUESTDATA/TALLYMESSAGE/VOUCHER")
    assert voucher is not None and voucher.get("VCHTYPE") == "Journal"
    total = 0
    for entry in voucher.iter("ALLLEDGERENTRIES.LIST"):
        amount = int((entry.findtext("AMOUNT") or "").replace(".", ""))
        assert (entry.findtext("ISDEEMEDPOSITIVE") == "Yes") == (amount < 0)
        total += amount
    assert total == 0


def test_ledger_names_are_configurable_and_unknown_keys_refused() -> None:
    assert Ledgers.from_mapping({"gst": "Input IGST"}).gst == "Input IGST"
    try:
        Ledgers.from_mapping({"gts": "typo"})
    except ValueError as exc:
        assert "gts" in str(exc)
    else:
        raise AssertionError("an unknown ledger key was accepted")
