"""The families a day can change in the stored Books ledger (core.books.carry
.affected_families): the closure over both versions of the recon rows, exact whether it is
found in one go or continued from the day's families once the new run's flags are known."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from core.benchmark import generate
from core.books.carry import Families, _lost, _moved_times, affected_families, day_families
from core.books.rollforward import settle_times
from core.dataset import PAYMENT_COLUMNS, RECON_COLUMNS, Dataset
from core.engine.incremental import merge_rows
from core.pipeline import load_folder
from tests.test_pipeline_incremental import split_into_days

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))


def _frame(columns: dict[str, str], given: dict[str, list[str | None]]) -> pd.DataFrame:
    """Rows with the `given` text columns; the other columns zero, false or missing."""
    size = len(next(iter(given.values())))
    filled = {}
    for name, dtype in columns.items():
        if name in given:
            filled[name] = pd.Series(given[name], dtype=dtype)
        elif dtype in ("int64", "bool"):
            filled[name] = pd.Series(np.zeros(size, dtype=dtype))
        else:
            filled[name] = pd.Series([None] * size, dtype=dtype)
    return pd.DataFrame(filled)


def _recon(rows: list[tuple[str, str, str, str | None]]) -> pd.DataFrame:
    """Recon rows (row_key, type, entity_id, settlement_id)."""
    names = ("row_key", "type", "entity_id", "settlement_id")
    return _frame(
        RECON_COLUMNS, {n: list(v) for n, v in zip(names, zip(*rows, strict=True), strict=True)}
    )


def _payments(ids: list[str]) -> pd.DataFrame:
    return _frame(PAYMENT_COLUMNS, {"id": list(ids), "status": ["captured"] * len(ids)})


@pytest.fixture()
def corrected_day() -> tuple[Dataset, Dataset, Dataset]:
    """Row k1 moves from payment pA to pB (a correction); the day adds payment pD and its
    row k6; pA, pB each own one more row; pC and refund rX are not linked to the day."""
    before = Dataset(
        recon=_recon(
            [
                ("k1", "payment", "pA", None),
                ("k2", "payment", "pA", None),
                ("k3", "payment", "pB", None),
                ("k4", "refund", "rX", None),
                ("k5", "payment", "pC", None),
            ]
        )
    )
    day = Dataset(
        payments=_payments(["pD"]),
        recon=_recon([("k1", "payment", "pB", None), ("k6", "payment", "pD", "setl_9")]),
    )
    after, _ = merge_rows(before, day)
    return before, after, day


def test_the_day_reaches_the_rows_of_both_owners_of_a_corrected_row(
    corrected_day: tuple[Dataset, Dataset, Dataset],
) -> None:
    before, after, day = corrected_day
    families = affected_families(before, after, day, set())
    assert families == Families(
        payments=frozenset({"pA", "pB", "pD"}),
        refunds=frozenset(),
        row_keys=frozenset({"k1", "k2", "k3", "k6"}),
        settlements=frozenset({"setl_9"}),
        payouts=frozenset(),
    )


def test_a_changed_flag_adds_its_family_also_when_continued_from_the_days_families(
    corrected_day: tuple[Dataset, Dataset, Dataset],
) -> None:
    before, after, day = corrected_day
    flags = {("refund", "rX"), ("payment", "pC")}
    whole = affected_families(before, after, day, flags)
    assert whole.refunds == {"rX"}
    assert whole.row_keys == {"k1", "k2", "k3", "k4", "k5", "k6"}
    continued = affected_families(before, after, day, flags, day_families(before, after, day))
    assert continued == whole


def _plain_closure(
    before: Dataset, after: Dataset, day: Dataset, flags: set[tuple[str, str]]
) -> tuple[set[str], set[str], set[str], set[str], set[str]]:
    """The closure as a plain fixpoint: every key set probed whole, every round. A row
    brings its payment, refund or transfer (by entity_id and type) and its dispute in; each
    of those brings its rows in (ledger FORMAT 5: transfers and disputes own rows too)."""
    kinds = ("payment", "refund", "transfer", "dispute")
    flagged = {kind: {i for k, i in flags if k == kind} for kind in kinds}
    flagged_rows = {i for k, i in flags if k == "recon_row"}
    moved = _moved_times(settle_times(before), settle_times(after))
    seeds = set(day.recon["row_key"].dropna().astype(str)) | flagged_rows
    payments = set(day.payments["id"].dropna().astype(str)) | flagged["payment"]
    refunds = set(day.refunds["id"].dropna().astype(str)) | flagged["refund"]
    transfers = set(day.transfers["id"].dropna().astype(str)) | flagged["transfer"]
    disputes = (
        set(day.disputes["id"].dropna().astype(str))
        | _lost(before) ^ _lost(after)
        | flagged["dispute"]
    )
    keys: set[str] = set()
    while True:
        size = (len(payments), len(refunds), len(keys), len(transfers), len(disputes))
        for recon in (before.recon, after.recon):
            kind = recon["type"].astype(str)
            hit = (
                recon["row_key"].astype(str).isin(seeds | keys)
                | recon["entity_id"].astype(str).isin(flagged_rows)
                | recon["settlement_id"].astype(str).isin(moved)
                | recon["dispute_id"].astype(str).isin(disputes)
                | ((kind == "payment") & recon["entity_id"].astype(str).isin(payments))
                | ((kind == "refund") & recon["entity_id"].astype(str).isin(refunds))
                | ((kind == "transfer") & recon["entity_id"].astype(str).isin(transfers))
            )
            rows = recon[hit.to_numpy(dtype=bool)]
            keys |= set(rows["row_key"].dropna().astype(str))
            owners = rows["entity_id"].dropna().astype(str)
            payments |= set(owners[rows["type"].astype(str) == "payment"])
            refunds |= set(owners[rows["type"].astype(str) == "refund"])
            transfers |= set(owners[rows["type"].astype(str) == "transfer"])
            disputes |= set(rows["dispute_id"].dropna().astype(str))
        if (len(payments), len(refunds), len(keys), len(transfers), len(disputes)) == size:
            return payments, refunds, keys, transfers, disputes


@pytest.fixture(scope="module")
def generated_day(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, Dataset, Dataset]:
    root = tmp_path_factory.mktemp("carry-families")
    generated = generate(root / "full", payments=600, seed=5)
    cut = dt.datetime.fromtimestamp(generated.as_of, tz=IST).date() - dt.timedelta(days=2)
    base, new = split_into_days(root / "full", root / "days", [cut])
    before = load_folder(base).dataset
    day = load_folder(new).dataset
    after, _ = merge_rows(before, day)
    return before, after, day


def test_the_families_of_a_generated_day_are_the_plain_fixpoint_of_its_keys(
    generated_day: tuple[Dataset, Dataset, Dataset],
) -> None:
    before, after, day = generated_day
    rng = np.random.default_rng(3)
    payments = before.payments["id"].astype(str).to_numpy()
    refunds = before.refunds["id"].astype(str).to_numpy()
    keys = before.recon["row_key"].astype(str).to_numpy()
    flags = {("payment", str(i)) for i in rng.choice(payments, 15, replace=False)}
    flags |= {("refund", str(i)) for i in rng.choice(refunds, 5, replace=False)}
    flags |= {("recon_row", str(i)) for i in rng.choice(keys, 5, replace=False)}
    start = day_families(before, after, day)
    for found in (
        affected_families(before, after, day, flags),
        affected_families(before, after, day, flags, start),
    ):
        assert (
            set(found.payments),
            set(found.refunds),
            set(found.row_keys),
            set(found.transfers),
            set(found.disputes),
        ) == _plain_closure(before, after, day, flags)
    assert len(start.payments) < len(affected_families(before, after, day, flags).payments)
