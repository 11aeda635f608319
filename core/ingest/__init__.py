"""The importer: dataset folders and API items in, validated `Dataset` frames out.

Public API (docs/CONTRACTS.md):
- `load_dataset(folder, amount_unit="auto") -> (Dataset, ImportReport)`
- `frames_from_items(kind, items, source_name) -> DataFrame`
- `store_dataset(conn, dataset, *, source, location, content_hash, replace=False)`
- `import_dataset(conn, folder, amount_unit="auto", replace=False) -> ImportReport`

The names are imported on first use (PEP 562), so `core.ingest.readers` can be imported
without pandas: `reconcile` starts parsing its big CSV files before pandas is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_getattr

if TYPE_CHECKING:
    from core.ingest.entities import frames_from_items
    from core.ingest.load import import_dataset, load_dataset, store_dataset
    from core.ingest.report import FileReport, ImportReport

_HOME = {
    "FileReport": "core.ingest.report",
    "ImportReport": "core.ingest.report",
    "frames_from_items": "core.ingest.entities",
    "import_dataset": "core.ingest.load",
    "load_dataset": "core.ingest.load",
    "store_dataset": "core.ingest.load",
}

__all__ = [
    "FileReport",
    "ImportReport",
    "frames_from_items",
    "import_dataset",
    "load_dataset",
    "store_dataset",
]


__getattr__ = lazy_getattr(__name__, globals(), _HOME)
