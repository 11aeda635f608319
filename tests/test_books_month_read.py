"""The Books page's month products (the journal, the GST bases, the fee check) built from
`core.db.raw.read_month_dataset`, which reads only the month's rows, are exactly what they
are built from every raw table (`read_dataset`), for every month of data that spans several
months with late settlements, refunds of earlier payments, disputes and transfers; on both
databases. On SQLite the month read finds its rows through indexes, never by reading every
payment or recon row. It reads only the columns each product lists (`MONTH_COLUMNS`): each
product run on frames holding only its listed columns gives what it gives from every
column, and every listed column is one the product reads."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from core.benchmark import generate
from core.benchmark.fees import PRICING_FILE
from core.books.close import month_bank_credits
from core.books.gst import gst_bases
from core.books.journal import journal_csv, month_vouchers, tally_xml
from core.books.pricing import (
    PricingPlan,
    PricingRule,
    fee_check,
    overcharge_summary,
    unclassified_cards,
)
from core.dataset import DATASET_TABLES, Dataset
from core.db import connect, migrate
from core.db.backend import is_postgres
from core.db.raw import (
    MONTH_COLUMNS,
    MONTH_PRODUCTS,
    RAW_TABLES,
    MonthProduct,
    month_columns,
    month_seconds,
    read_dataset,
    read_month_dataset,
)
from core.engine import EngineParams
from core.evaluation import read_pricing_plan
from core.ingest.load import store_dataset
from core.pipeline import load_folder, reconcile_folder_into_db
from tests.conftest import SPEC_EXAMPLE, postgres_index_definitions


def _stored(conn: sqlite3.Connection, root: Path, seed: int) -> tuple[PricingPlan, ...]:
    """A generated dataset reconciled into `conn` (its refund rows charged a fee); the
    benchmark's plan and a later version that prices cards by type only (no `card` line:
    card payments of unknown type are unclassified)."""
    generated = generate(root, payments=1500, seed=seed)
    reconcile_folder_into_db(conn, root, params=EngineParams(), as_of=generated.as_of)
    with conn:  # refunds carry no fee in the generated data: a fee on their rows must count
        conn.execute("UPDATE recon_rows SET fee = 118, tax = 18 WHERE type = 'refund'")
    # Card details (none in the generated data), so that pricing by network and type, and a
    # card issued abroad, change the fee check's classes: every card column counts.
    cards = [
        str(r[0]) for r in conn.execute("SELECT id FROM payments WHERE method = 'card' ORDER BY id")
    ]
    with conn:
        conn.executemany(
            "UPDATE payments SET card_network = ?, card_type = ?, card_sub_type = ?,"
            " card_international = ? WHERE id = ?",
            [(*_CARDS[i % len(_CARDS)], pid) for i, pid in enumerate(cards)],
        )
    (plan,) = read_pricing_plan(root / PRICING_FILE)
    middle = generated.as_of - 45 * 86_400
    kept = (r for r in plan.rules if r.method not in ("card", "credit", "debit"))
    by_type = (*kept, PricingRule("credit", 190), PricingRule("debit", 40))
    return plan, PricingPlan(plan.version + 1, middle, by_type, plan.gst_bp)


# (card_network, card_type, card_sub_type, card_international) given to card payments in turn.
_CARDS: tuple[tuple[str | None, ...], ...] = (
    ("Visa", "credit", None, "false"),
    ("RuPay", "debit", None, "false"),
    ("Mastercard", "debit", None, "false"),
    ("Visa", "credit", "business", "false"),
    ("Mastercard", "credit", None, "true"),
    (None, None, None, None),
)


def _months(dataset: Dataset) -> list[str]:
    stamps = pd.concat([dataset.payments["created_at"], dataset.settlements["created_at"]])
    ist = pd.to_datetime(stamps, unit="s", utc=True).dt.tz_convert("Asia/Kolkata")
    return sorted(set(ist.dt.strftime("%Y-%m")))


def _in_month(frame: pd.DataFrame, month: str) -> pd.DataFrame:
    start, end = month_seconds(month)
    stamps = frame["created_at"].astype("int64")
    return frame[(stamps >= start) & (stamps < end)].reset_index(drop=True)


def _frame_equal(left: pd.DataFrame, right: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(
        left.reset_index(drop=True), right.reset_index(drop=True), check_dtype=False
    )


def _in_order_within(part: pd.DataFrame, full: pd.DataFrame) -> bool:
    """Whether `part`'s rows are rows of `full`, in `full`'s order (a subsequence)."""
    rows = part.astype(object).where(part.notna(), None).itertuples(index=False, name=None)
    wanted = next(rows, None)
    for row in full.astype(object).where(full.notna(), None).itertuples(index=False, name=None):
        if wanted is not None and row == wanted:
            wanted = next(rows, None)
    return wanted is None


def test_every_months_journal_gst_and_fee_check_from_the_month_read_equal_the_whole_reads(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    plans = _stored(db_conn, tmp_path / "ds", 31)
    whole = read_dataset(db_conn)
    months = _months(whole)
    assert len(months) >= 3
    check = fee_check(whole, plans)
    summary = overcharge_summary(check)
    lost = unclassified_cards(whole, plans)
    assert len(summary) and len(lost)  # both tables have rows to compare
    settled_late = fewer_payments = 0
    for month in [*months, "2019-01"]:
        journal = read_month_dataset(db_conn, month, "journal")
        vouchers = month_vouchers(journal, month)
        expected = month_vouchers(whole, month)
        assert journal_csv(vouchers) == journal_csv(expected), month
        assert tally_xml(vouchers) == tally_xml(expected), month

        gst = read_month_dataset(db_conn, month, "gst")
        assert gst_bases(gst, month) == gst_bases(whole, month), month
        settled_late += len(gst.payments) - len(_in_month(gst.payments, month))

        fees = read_month_dataset(db_conn, month, "fees")
        _frame_equal(fee_check(fees, plans), _in_month(check, month))
        month_summary = summary[summary["month"] == month]
        _frame_equal(overcharge_summary(fee_check(fees, plans)), month_summary)
        _frame_equal(unclassified_cards(fees, plans), _in_month(lost, month))

        for read in (journal, gst, fees):
            assert len(read.recon) < len(whole.recon), month
            fewer_payments += len(read.payments) < len(whole.payments)
    assert settled_late > 0  # the GST read looked payments of other months up by id
    assert fewer_payments == 3 * (len(months) + 1)


def test_a_month_read_holds_its_products_columns_with_read_datasets_dtypes_and_row_order(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    _stored(db_conn, tmp_path / "ds", 31)
    whole = read_dataset(db_conn)
    month = _months(whole)[1]
    for product in MONTH_PRODUCTS:
        read = read_month_dataset(db_conn, month, product)
        for attribute in DATASET_TABLES:
            part, full = getattr(read, attribute), getattr(whole, attribute)
            listed = list(month_columns(product, attribute))
            if not listed:  # a frame the product does not read
                assert part.empty, (product, attribute)
                continue
            assert len(part) > 0, (product, attribute)
            # Only the listed columns, in the table's order, with read_dataset's dtypes.
            assert list(part.columns) == [c for c in full.columns if c in listed]
            assert sorted(listed) == sorted(MONTH_COLUMNS[product][attribute])
            assert list(part.dtypes.astype(str)) == list(full[listed].dtypes.astype(str))
            # The rows are the whole's rows, in the whole's order (fee_check takes the first).
            assert _in_order_within(part, full[listed]), (product, attribute)
    with pytest.raises(ValueError, match="unknown month product"):
        read_month_dataset(db_conn, month, "ledger")  # type: ignore[arg-type]


def test_the_month_read_searches_payments_and_recon_rows_through_indexes_never_a_scan(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    if is_postgres(db_conn):
        indexes = postgres_index_definitions(db_conn, "recon_rows")
        assert "WHERE (type = 'refund'::text)" in indexes["recon_rows_refund_created"]
        return
    _stored(db_conn, tmp_path / "ds", 31)
    month = _months(read_dataset(db_conn))[1]
    statements: list[str] = []
    db_conn.set_trace_callback(statements.append)  # the statements as run, values bound
    for product in MONTH_PRODUCTS:
        read_month_dataset(db_conn, month, product)
    db_conn.set_trace_callback(None)
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(reads) == 6 + 5 + 2  # journal, gst, fees: one per frame, and gst: named payments
    searched = set()
    for statement in reads:
        plan = " ".join(str(r[3]) for r in db_conn.execute(f"EXPLAIN QUERY PLAN {statement}"))
        assert "SCAN payments" not in plan, plan
        assert "SCAN recon_rows" not in plan, plan
        searched |= {word for word in plan.split() if word.startswith(("payments_", "recon_"))}
    assert {
        "payments_created",
        "payments_id",
        "recon_rows_settlement",
        "recon_rows_entity",
        "recon_rows_refund_created",
    } <= searched


def test_the_fee_read_sorts_the_months_payment_ids_before_sqlite_searches_recon_rows(
    tmp_path: Path,
) -> None:
    # SQLite builds an IN list into a temporary B-tree before searching with it: fed the
    # month's ids in creation order (random in id order) a large month's list went to a
    # temporary file page by page (docs/benchmark.md, "The fee check's month read: the
    # month's ids in id order"). The plan must sort them first.
    conn = connect(tmp_path / "fees.sqlite")
    migrate(conn)
    _stored(conn, tmp_path / "ds", 31)
    month = _months(read_dataset(conn))[1]
    statements: list[str] = []
    conn.set_trace_callback(statements.append)  # the statements as run, values bound
    read = read_month_dataset(conn, month, "fees")
    conn.set_trace_callback(None)
    assert len(read.recon) > 0
    (recon,) = [s for s in statements if "FROM recon_rows" in s]
    plan = [str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {recon}")]
    # The recon rows are found by recon_rows_entity with the list of the month's payment
    # ids, which is sorted (a temporary B-tree for ORDER BY) as it is read.
    after = plan[
        plan.index("SEARCH recon_rows USING COVERING INDEX recon_rows_entity (entity_id=?)") :
    ]
    assert after[1].startswith("LIST SUBQUERY"), plan
    assert after[2].startswith("SEARCH payments USING INDEX payments_created"), plan
    assert after[3:4] == ["USE TEMP B-TREE FOR ORDER BY"], plan
    conn.close()


def test_an_undated_refund_row_counts_in_the_epoch_month_as_the_whole_read_counts_it(
    db_conn: sqlite3.Connection,
) -> None:
    # gst_bases dates a refund row with no created_at at 0: 1970-01 in IST.
    dataset = load_folder(SPEC_EXAMPLE / "dataset").dataset
    recon = dataset.recon
    undated = recon[recon["type"].astype(str) == "refund"].head(1).copy()
    undated["row_key"] = "refund:undated:1"
    undated["created_at"] = pd.array([None], dtype="Int64")
    undated["settlement_id"] = pd.array([None], dtype="string")
    undated[["fee", "tax"]] = [118, 18]
    stored = dataclasses.replace(dataset, recon=pd.concat([recon, undated], ignore_index=True))
    store_dataset(db_conn, stored, source="files", location="spec", content_hash="undated")
    whole = read_dataset(db_conn)
    for month in ("1970-01", "2026-05", "2026-06"):
        read = read_month_dataset(db_conn, month, "gst")
        assert gst_bases(read, month) == gst_bases(whole, month), month
    epoch = gst_bases(read_month_dataset(db_conn, "1970-01", "gst"), "1970-01")
    assert (epoch.payment_fees, epoch.payment_gst) == (100, 18)


def test_the_close_report_reads_the_month_and_holds_what_every_raw_table_gives(
    db_conn: sqlite3.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.books import report
    from core.books.gst import tie_out
    from core.books.store import pricing_plans, save_pricing_plan

    for plan in _stored(db_conn, tmp_path / "ds", 31):
        save_pricing_plan(
            db_conn,
            effective_from=plan.effective_from,
            rules=plan.rules,
            actor="admin@example.com",
            request_id=f"req-plan-{plan.version}",
            gst_bp=plan.gst_bp,
        )
    plans = pricing_plans(db_conn)
    whole = read_dataset(db_conn)
    summary = overcharge_summary(fee_check(whole, plans))
    months = _months(whole)

    def refused(conn: object) -> Dataset:
        raise AssertionError("the close report read every raw table")

    monkeypatch.setattr("core.db.raw.read_dataset", refused)
    monkeypatch.setattr(report, "read_dataset", refused, raising=False)  # a name imported
    overcharged = 0
    for month in months[-2:]:
        built = report.build_report(db_conn, month)
        vouchers = month_vouchers(whole, month, credits=month_bank_credits(db_conn, month))
        assert built.files["journal.csv"] == journal_csv(vouchers), month
        assert built.files["tally.xml"] == tally_xml(vouchers), month
        assert built.files["gst_tie_out.csv"] == report._gst_csv(tie_out(whole, month)), month
        expected = summary[summary["month"] == month]
        assert built.overcharges == tuple(
            (str(m), str(k), int(n), int(p))
            for m, k, n, p in expected[
                ["month", "method_class", "payments", "overcharge"]
            ].itertuples(index=False, name=None)
        ), month
        overcharged += len(built.overcharges)
    assert overcharged > 0  # overcharges were there to compare


def _products(
    month: str, plans: tuple[PricingPlan, ...]
) -> dict[MonthProduct, Callable[[Dataset], object]]:
    """What each button (and the close report) builds from a month read, as comparable
    values."""

    def journal(dataset: Dataset) -> object:
        vouchers = month_vouchers(dataset, month)
        return journal_csv(vouchers), tally_xml(vouchers)

    def fees(dataset: Dataset) -> object:
        check = fee_check(dataset, plans)
        lost = unclassified_cards(dataset, plans)
        return check.to_csv(), overcharge_summary(check).to_csv(), lost.to_csv()

    return {"journal": journal, "gst": lambda dataset: gst_bases(dataset, month), "fees": fees}


def _only_listed(dataset: Dataset, product: MonthProduct, without: str = "") -> Dataset:
    """`dataset` with only the columns `product` lists (less `without`): a frame the product
    does not list has no column at all, so reading one fails."""
    frames = {
        attribute: getattr(dataset, attribute)[
            [c for c in month_columns(product, attribute) if c != without]
        ]
        if attribute in MONTH_COLUMNS[product]
        else pd.DataFrame()
        for attribute in DATASET_TABLES
    }
    return Dataset(**frames, has_bank_statement=dataset.has_bank_statement)


def test_each_month_product_gives_the_same_results_from_only_the_columns_its_list_names(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    # A product changed to read a column (or a frame) its list does not name fails here:
    # a KeyError, or a different result (pricing only looks at the card columns when present).
    plans = _stored(conn, tmp_path / "ds", 31)
    whole = read_dataset(conn)
    for product, listed in MONTH_COLUMNS.items():
        for attribute, columns in listed.items():
            assert set(columns) <= set(RAW_TABLES[attribute][2]), (product, attribute)
    for month in [*_months(whole), "2019-01"]:
        for product, build in _products(month, plans).items():
            assert build(_only_listed(whole, product)) == build(whole), (product, month)


def test_every_column_a_month_product_lists_is_one_it_reads(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    # The data exercise every column: without any one of them each product fails or gives
    # another result, in some month (so the test above would see a column left out).
    plans = _stored(conn, tmp_path / "ds", 31)
    whole = read_dataset(conn)
    months = _months(whole)
    for product, listed in MONTH_COLUMNS.items():
        for attribute, columns in listed.items():
            for column in columns:
                changed = False
                for month in months:
                    build = _products(month, plans)[product]
                    try:
                        changed = build(_only_listed(whole, product, column)) != build(whole)
                    except KeyError:
                        changed = True
                    if changed:
                        break
                assert changed, f"{product} does not read {attribute}.{column}"
