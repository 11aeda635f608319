"""The rules' advice matches what the Books journal already does, and asks of a reviewer only
what a reviewer can do (independent tester, findings 4 and 5).

A lost dispute's debit is posted to Chargebacks by the journal voucher of the settlement
that carries it (docs/books.md section 2): advising the reviewer to book the same loss by
hand books it twice. A reversed instant payout is ordinary Razorpay balance again, paid in a
regular settlement without any row naming it: no data can show "a later regular settlement
carries it", and the exception stays open until a person resolves it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.books.close import month_journal
from core.db import connect
from core.db.migrate import migrate
from core.investigate import ClientConfig, investigate
from tests import investigate_world as world
from tests.books_late_support import close
from tests.review_support import seal_raw_rows

NO_MODEL = ClientConfig()
LOST_ROW = "adjustment:adj_LOST010:setl_GOOD01:0"


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "LLM_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[tuple[sqlite3.Connection, dict[str, int]]]:
    conn = connect(tmp_path / "world.sqlite")
    migrate(conn)
    ids = world.build(conn)
    conn.commit()
    yield conn, ids
    conn.close()


def test_a_lost_dispute_the_journal_already_posts_is_not_suggested_again(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    journal = month_journal(conn, "2026-06")
    voucher = next(v for v in journal.vouchers if v.number == "RZP-setl_GOOD01")
    assert any(
        line.ledger == "Chargebacks" and LOST_ROW in line.source_rows for line in voucher.lines
    )

    result = investigate(conn, ids["DISPUTE_LOST_FUNDS"], client_config=NO_MODEL)
    assert "Suggested journal entry" not in result.recommendation
    assert "Dr Chargebacks" not in result.recommendation
    assert "voucher RZP-setl_GOOD01" in result.recommendation
    assert "already posts" in result.recommendation
    assert "do not book it again" in result.recommendation
    assert result.requires_human_review


def test_a_dispute_lost_after_its_month_closed_names_the_prior_period_voucher(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    conn.execute("UPDATE disputes SET status = 'open' WHERE id = 'disp_LOST01'")
    conn.commit()
    seal_raw_rows(conn)  # as a sync would store it: the close refuses a row edited by hand
    close(conn, "2026-06")  # the voucher kept at the close holds it as a disputed amount
    conn.execute("UPDATE disputes SET status = 'lost' WHERE id = 'disp_LOST01'")
    conn.commit()
    july = month_journal(conn, "2026-07")
    ppa = next(v for v in july.vouchers if v.number == "RZP-setl_GOOD01-PPA-2026-07")
    assert any(line.ledger == "Chargebacks" and line.debit == 30000 for line in ppa.lines)

    result = investigate(conn, ids["DISPUTE_LOST_FUNDS"], client_config=NO_MODEL)
    assert "Dr Chargebacks" not in result.recommendation
    assert "RZP-setl_GOOD01-PPA-2026-07" in result.recommendation
    assert "Disputed amounts" in result.recommendation


def test_a_lost_dispute_whose_settlement_is_not_paid_is_left_to_the_journal(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    conn.execute("UPDATE settlements SET status = 'created' WHERE id = 'setl_GOOD01'")
    conn.commit()
    result = investigate(conn, ids["DISPUTE_LOST_FUNDS"], client_config=NO_MODEL)
    assert "Dr Chargebacks" not in result.recommendation
    assert "when settlement setl_GOOD01 is processed" in result.recommendation


def test_a_lost_dispute_with_no_debit_row_suggests_no_entry_the_journal_will_post(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    conn.execute("DELETE FROM recon_rows WHERE row_key = ?", (LOST_ROW,))
    conn.commit()
    result = investigate(conn, ids["DISPUTE_LOST_FUNDS"], client_config=NO_MODEL)
    assert "Dr Chargebacks" not in result.recommendation
    assert "no settlement row debits it yet" in result.recommendation


def test_a_reversed_instant_payout_asks_only_what_a_reviewer_can_do(
    seeded: tuple[sqlite3.Connection, dict[str, int]],
) -> None:
    conn, ids = seeded
    result = investigate(conn, ids["INSTANT_PAYOUT_RETURNED"], client_config=NO_MODEL)
    text = result.recommendation
    assert "Check that a later regular settlement carries it" not in text
    assert "No human review needed" not in text
    assert "Nothing to chase" not in text
    assert result.requires_human_review
    assert "no recon row names" in text
    assert "stays open until a person resolves it" in text
    assert "Razorpay Dashboard" in text
