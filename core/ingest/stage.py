"""A dataset's raw tables written to staging files on worker threads (core.db.staging), so
that storing a large dataset costs the caller's thread a page copy, not a bind per value."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from core.audit.rawcheck import holds_intact_import
from core.dataset import Dataset
from core.db import raw
from core.db.staging import StagedFile, staging_directory, worth_staging, write_staged_file


@dataclass(frozen=True)
class RawStaging:
    """Raw tables being staged: `import_id` is the id their rows carry (the one
    `raw.next_import_id` promised when staging began); `files()` waits for the writers.
    `into_stored`: staged without indexes, to be upserted into tables that held rows when
    staging began (`raw.upsert_staged_table`), never copied whole into empty ones."""

    import_id: int
    content_hash: str
    pending: tuple[Future[StagedFile], ...]
    into_stored: bool = False

    def files(self) -> list[StagedFile]:
        return [future.result() for future in self.pending]


def _worth_staging(
    conn: sqlite3.Connection, dataset: Dataset, content_hash: str, replace: bool
) -> bool:
    """Whether `store_dataset` would read staged tables: outside a transaction, a dataset
    large enough, and not the content stored already (copied whole into empty tables,
    upserted into tables that hold rows)."""
    if not worth_staging(conn, sum(len(getattr(dataset, a)) for a in raw.RAW_TABLES)):
        return False
    return not holds_intact_import(conn, content_hash, replace=replace)


@contextmanager
def staging_raw_tables(
    conn: sqlite3.Connection,
    dataset: Dataset,
    content_hash: str,
    *,
    replace: bool,
    cache_kib: int | None = None,
) -> Iterator[RawStaging | None]:
    """Start staging the dataset's raw tables on worker threads and yield at once (None when
    staging would not pay, see `_worth_staging`); on exit wait for the writers and remove
    their files. Pass what it yields to `store_dataset` inside. `cache_kib`: each writer's
    page cache (core.db.staging.write_staged_file)."""
    if not _worth_staging(conn, dataset, content_hash, replace):
        yield None
        return
    import_id = raw.next_import_id(conn)
    into_stored = not replace and not raw.raw_tables_empty(conn)
    groups = raw.staged_raw_tables(conn, dataset, import_id, indexes=not into_stored)
    with staging_directory() as folder, ThreadPoolExecutor(len(groups), "staging") as pool:
        pending = tuple(
            pool.submit(write_staged_file, folder / f"raw{i}.sqlite", group, cache_kib)
            for i, group in enumerate(groups)
        )
        del groups  # each writer's rows are freed when it is done, not when the store is
        yield RawStaging(import_id, content_hash, pending, into_stored)
