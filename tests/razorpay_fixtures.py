"""Fixtures for the Razorpay tests, loaded with `pytest_plugins` so that one synced database
serves every test that only needs to read one.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from core.db import connect, migrate
from tests.fake_razorpay import FakeRazorpay
from tests.razorpay_support import AFTER_SPEC, SPEC_DATASET, SPEC_FROM, SPEC_TO, fake_settings

if TYPE_CHECKING:
    from core.razorpay.sync import SyncReport


@dataclass(frozen=True)
class SyncedTemplate:
    """A database synced once from the rate-limiting fake serving the spec example.

    path: the SQLite file (copy it, never write to it). report: that sync's SyncReport.
    statuses: the HTTP status of every request the fake answered, in order.
    """

    path: Path
    report: SyncReport
    statuses: tuple[int, ...]


@pytest.fixture(scope="session")
def synced_template(tmp_path_factory: pytest.TempPathFactory) -> SyncedTemplate:
    from core.razorpay.sync import sync

    path = tmp_path_factory.mktemp("razorpay") / "synced.sqlite"
    with FakeRazorpay() as fake:
        fake.load_dataset(SPEC_DATASET)
        fake.state.rate_limit_every = 5
        conn = connect(path)
        try:
            migrate(conn)
            report = sync(
                conn,
                fake_settings(fake),
                SPEC_FROM,
                SPEC_TO,
                today=AFTER_SPEC,
                sleep=lambda _: None,
            )
        finally:
            conn.close()  # checkpoints the WAL into the file
        statuses = tuple(r.status for r in fake.requests())
    return SyncedTemplate(path, report, statuses)


@pytest.fixture
def synced_db(synced_template: SyncedTemplate, tmp_path: Path) -> Path:
    """A private copy of the synced template."""
    path = tmp_path / "synced.sqlite"
    shutil.copyfile(synced_template.path, path)
    return path
