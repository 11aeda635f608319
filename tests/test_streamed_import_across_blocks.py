"""What only the whole file shows, checked by the streamed import too (`core.ingest.stream`,
which reads large CSV files a block at a time): an id repeated in another block is refused
as the whole import refuses it, naming the same file, line and column, and nothing is
written; a recon row repeated in another block (a finding, not bad input) is stored twice,
under the keys the whole import gives it."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.benchmark import generate
from core.db import open_database
from core.engine import EngineParams
from core.errors import InputError
from core.ingest import load_dataset
from core.ingest.stream import stream_folder_to_store
from core.streamed import stream_folder_into_db

SMALL_BLOCKS = 8 << 10


def _append_a_copy_of_the_first_row(path: Path, starts: str = "") -> tuple[int, str]:
    """Write the file's first data row (starting with `starts`) again at its end; the
    copy's line number and the row."""
    lines = path.read_text().splitlines(keepends=True)
    first = next(line for line in lines[1:] if line.startswith(starts))
    path.write_text("".join([*lines, first]))
    return len(lines) + 1, first


@pytest.mark.parametrize("file", ["payments.csv", "refunds.csv"])
def test_an_id_repeated_in_another_block_is_refused_as_the_whole_import_refuses_it(
    file: str, tmp_path: Path
) -> None:
    generated = generate(tmp_path / "ds", payments=3000, seed=13)
    copy_line, _ = _append_a_copy_of_the_first_row(tmp_path / "ds" / file)
    with pytest.raises(InputError) as whole:
        load_dataset(tmp_path / "ds")
    blocks: list[str] = []
    with pytest.raises(InputError) as streamed:
        stream_folder_to_store(
            tmp_path / "ds",
            tmp_path / "st",
            EngineParams(),
            generated.as_of,
            block_bytes=SMALL_BLOCKS,
            progress=lambda name, _rows: blocks.append(name),
        )
    assert blocks.count(file) >= 2  # the copy is in another block than its first row
    assert [(p.file, p.line, p.column) for p in whole.value.problems] == [(file, copy_line, "id")]
    assert streamed.value.problems == whole.value.problems
    assert "(first on line 2)" in streamed.value.problems[0].message
    assert not (tmp_path / "st").exists()


def test_a_streamed_build_refuses_a_repeated_payment_and_writes_nothing(
    db_url: str, tmp_path: Path
) -> None:
    generated = generate(tmp_path / "ds", payments=1500, seed=4)
    copy_line, _ = _append_a_copy_of_the_first_row(tmp_path / "ds" / "payments.csv")
    with open_database(db_url) as conn:
        with pytest.raises(InputError) as refused:
            stream_folder_into_db(
                conn, tmp_path / "ds", EngineParams(), generated.as_of, block_bytes=SMALL_BLOCKS
            )
        assert refused.value.problems[0].line == copy_line
        for table in ("imports", "runs", "payments", "recon_rows"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0


def test_a_recon_row_repeated_in_another_block_is_stored_twice_under_the_whole_imports_keys(
    db_url: str, tmp_path: Path
) -> None:
    generated = generate(tmp_path / "ds", payments=2000, seed=5)
    _, row = _append_a_copy_of_the_first_row(tmp_path / "ds" / "settlement_recon.csv", "pay_")
    whole, _ = load_dataset(tmp_path / "ds")
    with open_database(db_url) as conn:
        stream_folder_into_db(
            conn, tmp_path / "ds", EngineParams(), generated.as_of, block_bytes=SMALL_BLOCKS
        )
        stored = sorted(row[0] for row in conn.execute("SELECT row_key FROM recon_rows"))
    assert stored == sorted(whole.recon["row_key"])
    copied = [key for key in stored if key.startswith(f"payment:{row.split(',')[0]}:")]
    assert [key.rsplit(":", 1)[1] for key in copied] == ["1", "2"]
