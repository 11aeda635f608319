"""A benchmark larger than the generator holds in memory, written in chunks of history.

`generate` builds a whole dataset in memory (about 1.8 GB of peak per million payments),
so 10M payments at once would pass the 16 GB the scale issue allows. `generate_chunked`
writes `chunks` ordinary benchmarks, each `payments / chunks` payments over its own
quarter of history (chunk k ends `k * CHUNK_WEEKS` weeks before `as_of`, so weekdays
stay weekdays), each from its own seed, and appends their files into one dataset folder:
Razorpay files row after row under one header, bank statements line after line under the
first chunk's banner (bank line ids are physical lines, so they stay unique). Ids are the
generator's random ids from different seeds (14 characters of base 62: a collision is
not a practical concern). No ground truth is written: each chunk's labels were decided
at its own as-of, not the dataset's. Peak memory is one chunk's.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from core.benchmark.generator import DEFAULT_AS_OF, generate, parse_as_of
from core.dataset import BANK_FILE

CHUNK_WEEKS = 14  # a little more than the generator's history (HISTORY_DAYS)
BANK_HEADER_LINES = 7  # banner (4), blank, header, separator: written once
SKIPPED = ("ground_truth.csv", "invoice_truth.json", "pricing_plan.json", "tax_invoice.csv")


def generate_chunked(
    out_dir: Path,
    payments: int,
    *,
    chunks: int,
    seed: int = 42,
    as_of: str = DEFAULT_AS_OF,
    progress: Callable[[int, int], None] | None = None,
    only: range | None = None,
) -> Path:
    """Write a `payments`-payment dataset into `out_dir` from `chunks` generated pieces.
    `only`: write just these chunks (the first of them with headers), so that several
    processes can write parts that `append_folder` then joins in order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    end = parse_as_of(as_of)
    per_chunk = payments // chunks
    wanted = only if only is not None else range(chunks)
    for k in wanted:
        size = per_chunk if k < chunks - 1 else payments - per_chunk * (chunks - 1)
        chunk_as_of = end - k * CHUNK_WEEKS * 7 * 86_400
        with tempfile.TemporaryDirectory(prefix="chunk-", dir=out_dir.parent) as folder:
            piece = Path(folder) / "ds"
            generate(piece, payments=size, seed=seed * 1_000 + k, as_of=chunk_as_of)
            for path in sorted(piece.iterdir()):
                if path.name in SKIPPED:
                    continue
                _append(path, out_dir / path.name, first=k == wanted[0])
        if progress is not None:
            progress(k + 1, chunks)
    return out_dir


def append_folder(source: Path, target: Path) -> None:
    """Append a folder written by `generate_chunked(..., only=...)` to another's files."""
    for path in sorted(source.iterdir()):
        _append(path, target / path.name, first=False)


def _append(source: Path, target: Path, *, first: bool) -> None:
    if first:
        shutil.copyfile(source, target)
        return
    skip = BANK_HEADER_LINES if source.name == BANK_FILE else 1
    with source.open("rb") as reader, target.open("ab") as writer:
        for _ in range(skip):
            reader.readline()
        shutil.copyfileobj(reader, writer, 16 << 20)


__all__ = ["append_folder", "generate_chunked"]
