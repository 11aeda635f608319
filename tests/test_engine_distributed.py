"""The partitioned engine over a window store (Parquet by settlement window), in this
process and on Dask (a real dask.distributed LocalCluster on 127.0.0.1), gives exactly the
single-process engine's outcomes; and the command line's --partitions / --scheduler /
--store flags write the same results.csv."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from core.benchmark import generate
from core.engine import EngineParams, reconcile
from core.engine.distributed import read_meta, read_window, reconcile_store, write_store
from core.engine.partition import assign
from core.errors import ConfigError
from core.ingest import load_dataset

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        dashboard_address=None,
        host="127.0.0.1",
    ) as local:
        yield str(local.scheduler_address)


@pytest.mark.parametrize(("seed", "payments", "days"), [(4, 3000, 2), (17, 4000, 5)])
def test_dask_outcomes_equal_single_process_on_seeded_benchmarks(
    tmp_path: Path, cluster: str, seed: int, payments: int, days: int
) -> None:
    generated = generate(tmp_path / "ds", payments=payments, seed=seed)
    dataset, _ = load_dataset(tmp_path / "ds")
    params = EngineParams()
    meta = write_store(dataset, assign(dataset, params, generated.as_of, days), tmp_path / "st")
    assert meta.windows > 3
    seen: list[tuple[int, int]] = []
    outcomes = reconcile_store(
        tmp_path / "st",
        params,
        generated.as_of,
        scheduler=cluster,
        progress=lambda done, total: seen.append((done, total)),
    )
    pd.testing.assert_frame_equal(outcomes, reconcile(dataset, params, generated.as_of))
    assert seen[-1] == (meta.windows, meta.windows)


def test_window_store_in_process_equals_single_process_and_reads_only_its_window(
    tmp_path: Path,
) -> None:
    generated = generate(tmp_path / "ds", payments=3000, seed=23)
    dataset, _ = load_dataset(tmp_path / "ds")
    params = EngineParams()
    write_store(dataset, assign(dataset, params, generated.as_of, 3), tmp_path / "st")
    meta = read_meta(tmp_path / "st")
    rows = reported = 0
    for window in range(meta.windows):
        sub, owned = read_window(tmp_path / "st", window, meta)
        rows += len(sub.recon)
        reported += len(owned.ids["payment"])
        # Dtypes survive Parquet: the Dataset's own, column for column.
        assert dict(sub.recon.dtypes.astype(str)) == dict(dataset.recon.dtypes.astype(str))
    # A recon row sits in its settlement's window and, when another window reports its
    # entity, there too: at most twice. Every payment is reported once.
    assert len(dataset.recon) <= rows < 2 * len(dataset.recon)
    assert reported == len(dataset.payments)
    outcomes = reconcile_store(tmp_path / "st", params, generated.as_of)
    pd.testing.assert_frame_equal(outcomes, reconcile(dataset, params, generated.as_of))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", "reconcile", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_cli_partitions_scheduler_and_store_write_the_same_results_csv(tmp_path: Path) -> None:
    generate(tmp_path / "ds", payments=3000, seed=31)
    as_of = ["--as-of", "2026-06-30T23:59:59+05:30"]
    runs: dict[str, Any] = {
        "single": [],
        "partitions": ["--partitions", "--days-per-window", "2"],
        "dask": ["--scheduler", "local", "--store", str(tmp_path / "st")],
    }
    texts = {}
    for name, flags in runs.items():
        done = _cli(str(tmp_path / "ds"), "--out", str(tmp_path / f"{name}.csv"), *as_of, *flags)
        assert done.returncode == 0, done.stderr
        texts[name] = (tmp_path / f"{name}.csv").read_text()
    # The store written by --store is itself a dataset the command reconciles.
    done = _cli(str(tmp_path / "st"), "--out", str(tmp_path / "store.csv"), *as_of)
    assert done.returncode == 0, done.stderr
    texts["store"] = (tmp_path / "store.csv").read_text()
    assert texts["single"].count("\n") > 3000
    assert {name: text == texts["single"] for name, text in texts.items()} == {
        name: True for name in texts
    }
    assert "window" in done.stderr  # the progress bar (tqdm, on stderr)


def test_cli_refuses_a_remote_scheduler_without_a_shared_store(tmp_path: Path) -> None:
    generate(tmp_path / "ds", payments=500, seed=2)
    done = _cli(str(tmp_path / "ds"), "--out", str(tmp_path / "r.csv"), "--scheduler", "tcp://x:1")
    assert done.returncode == 2
    assert "--store" in done.stderr
    assert not (tmp_path / "r.csv").exists()


def test_a_store_refuses_to_be_read_when_it_is_not_one(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_text("{}")
    with pytest.raises(ConfigError, match="format"):
        read_meta(tmp_path)


def test_streamed_import_in_small_blocks_gives_the_single_process_outcomes(tmp_path: Path) -> None:
    from core.ingest.stream import stream_folder_to_store

    generated = generate(tmp_path / "ds", payments=4000, seed=13)
    dataset, _ = load_dataset(tmp_path / "ds")
    params = EngineParams()
    blocks: list[tuple[str, int]] = []
    meta = stream_folder_to_store(
        tmp_path / "ds",
        tmp_path / "st",
        params,
        generated.as_of,
        days_per_window=3,
        block_bytes=64 << 10,  # many blocks per file
        progress=lambda name, rows: blocks.append((name, rows)),
    )
    assert sum(rows for name, rows in blocks if name == "payments.csv") == len(dataset.payments)
    assert len([name for name, _ in blocks if name == "payments.csv"]) > 5
    outcomes = reconcile_store(tmp_path / "st", params, generated.as_of)
    pd.testing.assert_frame_equal(outcomes, reconcile(dataset, params, generated.as_of))
    assert meta.windows > 3


def test_streamed_import_fails_closed_naming_file_line_and_column(tmp_path: Path) -> None:
    from core.errors import InputError
    from core.ingest.stream import stream_folder_to_store

    generated = generate(tmp_path / "ds", payments=3000, seed=13)
    path = tmp_path / "ds" / "payments.csv"
    lines = path.read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    cells = lines[2500].rstrip("\n").split(",")
    cells[header.index("amount")] = "12x34"
    lines[2500] = ",".join(cells) + "\n"
    path.write_text("".join(lines))
    with pytest.raises(InputError) as raised:
        stream_folder_to_store(
            tmp_path / "ds", tmp_path / "st", EngineParams(), generated.as_of, block_bytes=64 << 10
        )
    problem = raised.value.problems[0]
    assert (problem.file, problem.line, problem.column) == ("payments.csv", 2501, "amount")
    assert not (tmp_path / "st").exists()


def test_chunked_benchmark_appends_quarters_and_streams_to_the_single_process_outcomes(
    tmp_path: Path,
) -> None:
    from core.benchmark.chunked import generate_chunked
    from core.engine.cli import parse_as_of
    from core.ingest.stream import stream_folder_to_store

    generate_chunked(tmp_path / "ds", 6000, chunks=2, seed=3)
    dataset, _ = load_dataset(tmp_path / "ds")
    assert len(dataset.payments) == 6000
    assert not (tmp_path / "ds" / "ground_truth.csv").exists()
    days = (dataset.payments["created_at"].max() - dataset.payments["created_at"].min()) / 86400
    assert days > 150  # two quarters of history, one after the other
    as_of = parse_as_of("2026-06-30T23:59:59+05:30")
    params = EngineParams()
    stream_folder_to_store(tmp_path / "ds", tmp_path / "st", params, as_of)
    outcomes = reconcile_store(tmp_path / "st", params, as_of)
    pd.testing.assert_frame_equal(outcomes, reconcile(dataset, params, as_of))
