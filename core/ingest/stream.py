"""A dataset folder too large to hold at once, imported in batches into a window store
(docs/scale.md; the store's layout is core.engine.distributed's).

The three files that grow with payments (payments, refunds, settlement_recon, as API CSV)
are read by Arrow's streaming CSV reader (`pyarrow.csv.open_csv`) one block of rows at a
time; each block is validated and converted by the importer's own `build_frame` (the same
checks and the same file:line:column problems as `load_dataset`) and spilled to Parquet.
Everything else (settlements, the bank statement, instant settlements, disputes,
transfers: a few rows a day) goes through `load_dataset` as usual. Then the rows are given
to settlement windows (`core.engine.partition.assign`, which reads only the key columns)
and copied window by window into the store. At no point is a whole large file, or a
whole large table, in memory.

Each block is checked on its own rows; what only the whole file shows is checked on the
spilled columns once the file is read: an id repeated in another block is refused as the
whole import refuses it (`payments.csv:LINE:id: duplicate id '...' (first on line N)`), and
a recon row repeated in another block gets the occurrence the whole import gives it
(`row_key`), so both paths store the same rows.

Limits, stated rather than guessed around: streamed files must be CSV (JSON and
spreadsheets of that size are refused, exit 2), one record per line (a quoted line break
would make the line numbers in problems approximate), and `--amount-unit auto` is
decided on the first block of each file and then held for the rest. A file's size cap
(`RAZORRECON_MAX_FILE_MB`) does not apply to the streamed files, since they are never
held whole; it still applies to the others.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from core.dataset import Dataset, empty_frame
from core.engine.distributed import COLUMNS, OWN, StoreMeta, write_ledger_and_meta
from core.engine.params import EngineParams
from core.engine.partition import DEFAULT_DAYS_PER_WINDOW, ROW_TABLES, Placement, assign
from core.errors import InputError, Problem
from core.ingest.convert import duplicate_rows, to_bool_numpy
from core.ingest.entities import build_frame, duplicate_text, occurrences
from core.ingest.layouts import wanted_columns
from core.ingest.load import folder_problems, load_dataset
from core.ingest.readers import RawTable, ReadFailure, _header_of, header_keys, text_columns
from core.ingest.recon_rows import split_recon_rows
from core.ingest.tables import TABLES, TableSpec

# The files streamed, by Dataset attribute; everything else is loaded whole.
STREAMED: dict[str, str] = {
    "payments": "payments",
    "refunds": "refunds",
    "recon": "settlement_recon",
}
BLOCK_BYTES = 64 << 20
# Streamed files start with their header (`_blocks`): the first row is on line 2.
FIRST_ROW_LINE = 2
# As many problems as one file reports before the import stops (`_stream_file`).
MAX_PROBLEMS = 100
# Spill and window files are read once or twice, on this machine: not worth compressing.
SPILL_COMPRESSION = "none"
# The columns `assign` reads from each streamed table.
KEY_COLUMNS: dict[str, tuple[str, ...]] = {
    "payments": ("id", "created_at"),
    "refunds": ("id", "created_at"),
    "recon": ("entity_id", "transfer_id", "dispute_id", "settlement_id", "created_at"),
}
Progress = Callable[[str, int], None]


def _blocks(spec: TableSpec, path: Path, block_bytes: int) -> Iterator[RawTable]:
    """The file's rows, a block at a time, as the importer's RawTable (strings)."""
    with path.open("rb") as stream:
        first = stream.read(1 << 16)
    head = first.decode("utf-8-sig", errors="replace")
    header_line, header = _header_of(head)
    if not header:
        raise InputError([Problem(path.name, 0, "", "the file is empty: no header row")])
    if header_line != 1:
        raise InputError(
            [Problem(path.name, header_line, "", "streamed files start with their header")]
        )
    wanted = wanted_columns(spec)
    try:
        _, written, ignored, aliased = header_keys(
            header, wanted, None, file=path.name, line=header_line
        )
    except ReadFailure as failure:  # a column named twice (load_dataset refused it first)
        raise InputError(failure.problems) from failure
    keep = [key for key in wanted if key in written]
    reader = pa_csv.open_csv(
        str(path),
        read_options=pa_csv.ReadOptions(block_size=block_bytes, skip_rows=0),
        parse_options=pa_csv.ParseOptions(newlines_in_values=False),
        convert_options=text_columns(written, keep),
    )
    del first  # Arrow's reader drops a UTF-8 BOM itself
    row = 0
    for batch in reader:
        n = batch.num_rows
        start = row

        def lines(start: int = start, n: int = n) -> npt.NDArray[np.int64]:
            return np.arange(header_line + 1 + start, header_line + 1 + start + n, dtype=np.int64)

        yield RawTable(
            file=path.name,
            fmt="csv",
            columns={k: batch.column(written[k]) for k in keep},
            written_names={k: written[k] for k in keep},
            ignored=ignored,
            n_rows=n,
            header_line=header_line,
            line_finder=lines,
            aliased=aliased,
        )
        row += n


def _stream_file(
    attribute: str,
    path: Path,
    spill: Path,
    amount_unit: str,
    block_bytes: int,
    progress: Progress | None,
) -> tuple[int, list[Problem]]:
    """Convert one large CSV block by block into a Parquet spill file; (rows, problems)."""
    spec = TABLES[STREAMED[attribute]]
    unit = amount_unit
    problems: list[Problem] = []
    writer: pq.ParquetWriter | None = None
    schema: pa.Schema | None = None
    rows = 0
    try:
        for raw in _blocks(spec, path, block_bytes):
            table = raw
            if spec.kind == "settlement_recon":
                table, settlement_rows = split_recon_rows(raw)
                if settlement_rows is not None:
                    problems.append(
                        Problem(path.name, 0, "type", "settlement rows: import this file whole")
                    )
                    break
            frame, report, found = build_frame(spec, table, unit, consume=True)
            unit = report.amount_unit  # decided on the first block, then held
            problems.extend(found)
            if len(problems) > MAX_PROBLEMS:
                break
            arrow = pa.Table.from_pandas(frame.astype(COLUMNS[attribute]), preserve_index=False)
            if writer is None:
                schema = arrow.schema
                writer = pq.ParquetWriter(spill, schema, compression=SPILL_COMPRESSION)
            writer.write_table(arrow.cast(schema))
            rows += len(frame)
            if progress is not None:
                progress(path.name, len(frame))
    finally:
        if writer is not None:
            writer.close()
    if writer is None and not problems:
        pq.write_table(
            pa.Table.from_pandas(empty_frame(COLUMNS[attribute]), preserve_index=False), spill
        )
    elif writer is not None and not problems:
        if spec.unique:
            problems.extend(_ids_repeated_across_blocks(spec.unique, path.name, spill))
        if spec.kind == "settlement_recon":
            _count_recon_repeats_across_blocks(spill)
    return rows, problems


def _ids_repeated_across_blocks(column: str, file: str, spill: Path) -> list[Problem]:
    """The ids of the spilled file that repeat an earlier block's (each block's own repeats
    were refused by `build_frame`), as the whole import names them."""
    ids = pq.read_table(spill, columns=[column]).column(column).combine_chunks()
    repeated, firsts = duplicate_rows(ids)
    repeated, firsts = repeated[:MAX_PROBLEMS], firsts[:MAX_PROBLEMS]
    values = ids.take(pa.array(repeated, type=pa.int64())).to_pylist()
    return [
        Problem(
            file,
            FIRST_ROW_LINE + int(row),
            column,
            duplicate_text(column, value, f"line {FIRST_ROW_LINE + int(first)}"),
        )
        for row, first, value in zip(repeated, firsts, values, strict=True)
    ]


def _count_recon_repeats_across_blocks(spill: Path) -> None:
    """`row_key` is type:entity_id:settlement_id:occurrence, the occurrence counted in file
    order (`core.ingest.entities._row_keys`), but each block counts from 1: a recon row
    repeated in another block got its first copy's key, and the store would keep one of the
    two. Count those rows again over the whole file and rewrite the spill (only then)."""
    keys = pq.read_table(spill, columns=["row_key"]).column("row_key").combine_chunks()
    repeated, _ = duplicate_rows(keys)
    if not len(repeated):
        return
    bases = pc.replace_substring_regex(keys, pattern=r":[0-9]+$", replacement="")
    again = pc.unique(bases.take(pa.array(repeated, type=pa.int64())))
    rows = np.flatnonzero(to_bool_numpy(pc.is_in(bases, value_set=again)))
    taken = bases.take(pa.array(rows, type=pa.int64())).to_pylist()
    renamed = [f"{base}:{n}" for base, n in zip(taken, occurrences(taken), strict=True)]
    mask = np.zeros(len(keys), dtype=bool)
    mask[rows] = True
    fixed = pc.replace_with_mask(keys, pa.array(mask), pa.array(renamed, type=keys.type))
    source = pq.ParquetFile(spill)
    rewritten = spill.with_name(spill.name + ".counted")
    done = 0
    with pq.ParquetWriter(rewritten, source.schema_arrow, compression=SPILL_COMPRESSION) as out:
        for batch in source.iter_batches(batch_size=1 << 20):
            position = batch.schema.get_field_index("row_key")
            out.write_batch(
                batch.set_column(position, "row_key", fixed.slice(done, batch.num_rows))
            )
            done += batch.num_rows
    rewritten.replace(spill)  # a file of the import's own work folder


def stream_folder_to_store(
    folder: Path,
    root: Path,
    params: EngineParams,
    as_of: int,
    *,
    days_per_window: int = DEFAULT_DAYS_PER_WINDOW,
    amount_unit: str = "auto",
    block_bytes: int = BLOCK_BYTES,
    progress: Progress | None = None,
) -> StoreMeta:
    """Import `folder` in blocks into the window store `root` (replaced only when the whole
    import succeeded; on any problem nothing is written and InputError names them all)."""
    refused = folder_problems(folder)  # a FIFO refunds.csv is refused, not skipped
    if refused:
        raise InputError(refused)
    large: dict[str, Path] = {}
    for attribute, stem in STREAMED.items():
        if (folder / f"{stem}.csv").is_file():
            large[attribute] = folder / f"{stem}.csv"
        elif any((folder / f"{stem}{s}").exists() for s in (".json", ".xlsx", ".xls")):
            raise InputError([Problem(f"{stem}.json", 0, "", "streamed import reads CSV only")])
    work = Path(tempfile.mkdtemp(prefix=".razorrecon-stream-", dir=root.parent))
    try:
        small = work / "small"
        small.mkdir()
        for entry in folder.iterdir():
            stem = entry.name.rsplit(".", 1)[0]
            if entry.is_file() and stem not in STREAMED.values():
                (small / entry.name).symlink_to(entry.resolve())
        for path in large.values():
            # Header only: load_dataset checks the file's shape; the rows come streamed.
            with path.open("rb") as stream:
                (small / path.name).write_bytes(stream.readline())
        ledger, _ = load_dataset(small, amount_unit)
        problems: list[Problem] = []
        for attribute, path in large.items():
            _, found = _stream_file(
                attribute, path, work / f"{attribute}.parquet", amount_unit, block_bytes, progress
            )
            problems.extend(found)
        if problems:
            raise InputError(problems)
        keys = {
            attribute: pq.read_table(
                work / f"{attribute}.parquet", columns=list(KEY_COLUMNS[attribute])
            ).to_pandas()
            for attribute in large
        }
        keyed = Dataset(
            payments=keys.get("payments", ledger.payments),
            refunds=keys.get("refunds", ledger.refunds),
            recon=keys.get("recon", ledger.recon),
            settlements=ledger.settlements,
            bank=ledger.bank,
            has_bank_statement=ledger.has_bank_statement,
            instant_settlements=ledger.instant_settlements,
            instant_payouts=ledger.instant_payouts,
            disputes=ledger.disputes,
            transfers=ledger.transfers,
        )
        assignment = assign(keyed, params, as_of, days_per_window)
        del keys, keyed
        staged = work / "store"
        staged.mkdir()
        sizes = np.zeros(assignment.windows, dtype=np.int64)
        for table in ROW_TABLES:
            placed = assignment.rows[table]
            if table in large:
                source = pq.ParquetFile(work / f"{table}.parquet")
                batches: Iterator[pa.RecordBatch] = source.iter_batches(batch_size=1 << 20)
            else:
                whole = getattr(ledger, table)
                # Loaded whole (small): its Arrow columns may come in chunks.
                table_whole = pa.Table.from_pandas(whole, preserve_index=False)
                batches = iter(table_whole.combine_chunks().to_batches())
            _split_by_window(batches, placed, staged / "rows" / table, sizes, table)
        meta = write_ledger_and_meta(ledger, assignment, staged, tuple(int(n) for n in sizes))
        if root.exists():
            shutil.rmtree(root)
        staged.rename(root)
        return meta
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _split_by_window(
    batches: Iterator[pa.RecordBatch],
    placed: Placement,
    folder: Path,
    sizes: npt.NDArray[np.int64],
    table: str,
) -> None:
    """Append each batch's rows to the files of the windows they are placed in, in row
    order, with the `_own` column."""
    by_row = np.lexsort((placed.window, placed.row))
    rows, windows, owns = placed.row[by_row], placed.window[by_row], placed.own[by_row]
    writers: dict[int, pq.ParquetWriter] = {}
    offset = 0
    try:
        for batch in batches:
            lo, hi = np.searchsorted(rows, [offset, offset + batch.num_rows])
            local = rows[lo:hi] - offset
            mine, own = windows[lo:hi], owns[lo:hi]
            offset += batch.num_rows
            order = np.argsort(mine, kind="stable")  # by window, rows ascending within
            bounds = np.flatnonzero(np.diff(mine[order])) + 1
            for piece in np.split(order, bounds):
                if len(piece) == 0:
                    continue
                k = int(mine[piece[0]])
                part = pa.Table.from_batches([batch.take(pa.array(local[piece]))])
                part = part.append_column(OWN, pa.array(own[piece], pa.bool_()))
                if k not in writers:
                    (folder / f"window={k}").mkdir(parents=True)
                    writers[k] = pq.ParquetWriter(
                        folder / f"window={k}" / "part-0.parquet",
                        part.schema,
                        compression=SPILL_COMPRESSION,
                    )
                writers[k].write_table(part)
                if table in ("payments", "recon"):
                    sizes[k] += len(piece)
    finally:
        for writer in writers.values():
            writer.close()


__all__ = ["stream_folder_to_store"]
