"""The importer: dataset folders and API items in, validated `Dataset` frames out.

Public API (docs/CONTRACTS.md):
- `load_dataset(folder, amount_unit="auto") -> (Dataset, ImportReport)`
- `frames_from_items(kind, items, source_name) -> DataFrame`
- `store_dataset(conn, dataset, *, source, location, content_hash, replace=False)`
- `import_dataset(conn, folder, amount_unit="auto", replace=False) -> ImportReport`
"""

from core.ingest.entities import frames_from_items
from core.ingest.load import import_dataset, load_dataset, store_dataset
from core.ingest.report import FileReport, ImportReport

__all__ = [
    "FileReport",
    "ImportReport",
    "frames_from_items",
    "import_dataset",
    "load_dataset",
    "store_dataset",
]
