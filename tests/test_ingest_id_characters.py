"""Ids (payment, refund, settlement, recon entity ids, UTRs) with a control, invisible, bidi,
space or path-separator character are refused naming file:line:column, nothing written:
`pay_\\u202e1000009KAFEDUP` displays as `pay_PUDEFAK9000001` (independent attacker F5).
Free text (descriptions, notes) keeps its text, and every ordinary fixture still loads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from core.ingest import convert, load_dataset

from .conftest import FIXTURES, SPEC_EXAMPLE
from .test_ingest_hostile_input import Refused, _replace_once, refused  # noqa: F401

DATASET = SPEC_EXAMPLE / "dataset"
MESSAGE = "holds a control, invisible, bidi, space or path-separator character"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "dataset"
    shutil.copytree(DATASET, target)
    return target


def test_a_payment_id_with_a_right_to_left_override_is_refused(
    folder: Path,
    refused: Refused,  # noqa: F811
) -> None:
    _replace_once(
        folder / "payments.json",
        b'"id": "pay_eGWUFu8wRUHPhL"',
        b'"id": "pay_\\u202e1000009KAFEDUP"',
    )
    assert refused(folder) == [
        f"payments.json:1:id: item 1: id 'pay_\\u202e1000009KAFEDUP' {MESSAGE}"
    ]


def test_a_refund_payment_id_with_a_path_is_refused(folder: Path, refused: Refused) -> None:  # noqa: F811
    _replace_once(folder / "refunds.csv", b",pay_vo8DnMRkTtfKAT,", b",../../etc/passwd,")
    assert refused(folder) == [f"refunds.csv:2:payment_id: id '../../etc/passwd' {MESSAGE}"]


def test_a_refund_id_with_a_newline_inside_is_refused(folder: Path, refused: Refused) -> None:  # noqa: F811
    _replace_once(folder / "refunds.csv", b"rfnd_xmv1k0VLhgemhG,", b'"rfnd_xmv1\nk0VLhgemhG",')
    assert refused(folder) == [f"refunds.csv:2:id: id 'rfnd_xmv1\\nk0VLhgemhG' {MESSAGE}"]


@pytest.mark.parametrize(
    "bad",
    [
        "pay_\u202e1",
        "pay_\u2066x\u2069",
        "pay_\u200bx",
        "pay_\ufeffx",
        "a\tb",
        "a b",
        "a\u00a0b",
        "a\u2028b",
        "a/b",
        "a\\b",
        "a\x7fb",
        "a\x01b",
        "a\x9fb",
    ],
)
def test_the_id_rule_refuses_control_format_space_and_separator_characters(bad: str) -> None:
    assert convert.bad_id_cells(pa.array([bad])).rows.tolist() == [0]


@pytest.mark.parametrize(
    "good",
    [
        "pay_29QQoUBi66xm2f",
        "setl_ABC",
        "HDFCN57935380338",
        "AXISCN0676613626",
        "txn-1.2:3",
        "pay_0000001",
        "ordér_1",
    ],
)
def test_the_id_rule_keeps_ordinary_ids(good: str) -> None:
    assert len(convert.bad_id_cells(pa.array([good, None]))) == 0


def test_a_description_keeps_spaces_and_other_text(folder: Path) -> None:
    data = json.loads((folder / "payments.json").read_text())
    data["items"][0]["description"] = "Café order ☕ / table\u00a04"
    (folder / "payments.json").write_text(json.dumps(data))
    dataset, _ = load_dataset(folder)
    assert "Café order ☕ / table\u00a04" in set(dataset.payments["description"])


@pytest.mark.parametrize(
    "dataset",
    sorted(
        p.parent for p in FIXTURES.rglob("payments.*") if p.suffix in (".csv", ".json", ".xlsx")
    ),
    ids=lambda p: str(p.relative_to(FIXTURES)),
)
def test_every_fixture_dataset_still_loads(dataset: Path) -> None:
    load_dataset(dataset)


def test_a_nul_in_an_id_is_reported_once_as_a_nul_character() -> None:
    assert len(convert.bad_id_cells(pa.array(["pay_A\x00B"]))) == 0
