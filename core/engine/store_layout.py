"""Whether a folder is a window store (core.engine.distributed) rather than a dataset folder.

Kept apart from core.engine.distributed so that `reconcile` on a dataset folder asks without
importing the store's modules (Parquet, partitioning, pricing)."""

from __future__ import annotations

from pathlib import Path

META = "meta.json"


def is_store(folder: Path) -> bool:
    return (folder / META).is_file()
