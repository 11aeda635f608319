"""`make bench`: speed and memory of generate / reconcile / persist at 5k, 100k and 1M payments.

Every step runs as its own `python -m core ...` process, exactly as a user runs it, and is
measured from outside: wall seconds, and peak resident memory from the kernel's accounting
of that one child (`os.wait4`). The 5,000-payment total (generate, import, reconcile,
results.csv, persist) is also measured inside one process. Prints a table with the machine;
asserts nothing.

    python -m benchmarks.run [--sizes 5000,100000,1000000] [--seed 42] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = (5_000, 100_000, 1_000_000)
# The targets, printed beside the measurements (never asserted).
TARGETS = {
    ("reconcile", 1_000_000): "<= 8 s, <= 2.5 GB",
    ("persist", 1_000_000): "<= 25 s",
    ("persist-pg", 1_000_000): "(SQLite's row above)",
    ("total", 5_000): "< 2 s",
    ("wide", 1_000_000): "<= 5 s, <= 2 GB",
    ("wide-db", 1_000_000): "<= 10 s",
    ("stream", 10_000_000): "<= 16 GB peak",
    ("stream-db", 10_000_000): "<= 16 GB peak",
    ("pages", 10_000_000): "each page < 1 s (table below)",
}
# Issue 16: the whole process on data as wide as Razorpay's exports (`generate --wide`),
# each measured this many times.
WIDE_REPEATS = 2
# From this size on the files are over the import cap: only the streamed path runs
# (reconcile --stream into a window store, then the store on Dask). Dask rows from DASK_FROM.
STREAM_FROM = 10_000_000
DASK_FROM = 1_000_000


@dataclass(frozen=True)
class Measurement:
    """One child process: wall seconds, CPU seconds (user + system), peak resident memory
    (bytes), exit code, its stderr."""

    seconds: float
    cpu_seconds: float
    peak_bytes: int
    exit_code: int
    error: str


def measure(command: list[str], log_dir: Path) -> Measurement:
    """Run `command` and measure it alone: wall time and the child's own peak RSS."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = log_dir / "stdout.txt", log_dir / "stderr.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    process.returncode = code  # already reaped by wait4
    peak = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    error = err_path.read_text(errors="replace").strip()[-400:] if code else ""
    cpu = usage.ru_utime + usage.ru_stime
    return Measurement(seconds, cpu, peak, code, error)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f", {int(line.split()[1]) / 1024 / 1024:.0f} GB RAM"
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores{memory}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def one_process(payments: int, seed: int, folder: Path) -> Measurement:
    """generate + import + reconcile + results.csv + persist, timed inside one process."""
    script = (
        "import time, sys\n"
        "from pathlib import Path\n"
        "started = time.perf_counter()\n"
        "from core.benchmark import generate\n"
        "from core.db import connect, migrate\n"
        "from core.evaluation import run_pipeline\n"
        f"folder = Path({str(folder)!r})\n"
        f"g = generate(folder / 'dataset', payments={payments}, seed={seed})\n"
        "conn = connect(folder / 'bench.sqlite')\n"
        "migrate(conn)\n"
        "run_pipeline(conn, folder / 'dataset', g.as_of, folder / 'results.csv')\n"
        "conn.close()\n"
        "print(time.perf_counter() - started)\n"
    )
    return measure([sys.executable, "-c", script], folder / "log-one")


def inside_seconds(folder: Path) -> float:
    """The in-process total printed by `one_process` (imports included, interpreter start not)."""
    return float((folder / "log-one" / "stdout.txt").read_text().split()[-1])


def persist_on_postgresql(
    python: list[str], folder: Path, common: list[str]
) -> dict[str, Measurement]:
    """`reconcile --db` into a new database on a PostgreSQL server started for it (Debian's
    binaries, run as the `postgres` user, fsync on); nothing when PostgreSQL is not
    installed. The server's own CPU and memory are not in the row (another process)."""
    from tests.postgres_server import OWNER_ROLE, TEMPLATE_DB, PostgresServer, postgres_bin

    if postgres_bin() is None:
        return {}
    server = PostgresServer(durable=True).start()
    try:
        server.migrate_template()
        os.environ["DATABASE_OWNER_URL"] = server.url(TEMPLATE_DB, OWNER_ROLE)
        return {
            "persist-pg": measure(
                [
                    *python,
                    "reconcile",
                    str(folder),
                    "--out",
                    str(folder / "results-pg.csv"),
                    *common,
                    "--db",
                    server.url(TEMPLATE_DB),
                ],
                folder / "log-persist-pg",
            )
        }
    finally:
        os.environ.pop("DATABASE_OWNER_URL", None)
        server.stop()


def run_size(payments: int, seed: int, work: Path) -> dict[str, Measurement]:
    from core.benchmark import DEFAULT_AS_OF

    folder = work / f"p{payments}"
    shutil.rmtree(folder, ignore_errors=True)
    python = [sys.executable, "-m", "core"]
    results: dict[str, Measurement] = {}
    # 10M is written as quarters of 1M (the generator holds a whole dataset in memory).
    chunks = ["--chunks", str(payments // 1_000_000)] if payments >= STREAM_FROM else []
    results["generate"] = measure(
        [*python, "generate", str(folder), "--payments", str(payments), "--seed", str(seed),
         *chunks],
        folder / "log-generate",
    )  # fmt: skip
    if results["generate"].exit_code:
        return results
    common = ["--as-of", DEFAULT_AS_OF]
    if payments >= STREAM_FROM:
        store = folder / "store"
        results["stream"] = measure(
            [*python, "reconcile", str(folder), "--out", str(folder / "results.csv"), *common,
             "--stream", "--store", str(store)],
            folder / "log-stream",
        )  # fmt: skip
        results["dask"] = measure(
            [*python, "reconcile", str(store), "--out", str(folder / "results-dask.csv"),
             *common, "--scheduler", "local"],
            folder / "log-dask",
        )  # fmt: skip
        results.update(stream_into_database(python, folder, common))
        return results
    results["import"] = measure(
        [*python, "import", str(folder), "--db", str(folder / "import.sqlite")],
        folder / "log-import",
    )
    results["reconcile"] = measure(
        [*python, "reconcile", str(folder), "--out", str(folder / "results.csv"), *common],
        folder / "log-reconcile",
    )
    database = folder / "bench.sqlite"
    results["persist"] = measure(
        [*python, "reconcile", str(folder), "--out", str(folder / "results-db.csv"), *common,
         "--db", str(database)],
        folder / "log-persist",
    )  # fmt: skip
    if payments >= DASK_FROM:
        results.update(persist_on_postgresql(python, folder, common))
        results["dask"] = measure(
            [*python, "reconcile", str(folder), "--out", str(folder / "results-dask.csv"),
             *common, "--scheduler", "local", "--store", str(folder / "store")],
            folder / "log-dask",
        )  # fmt: skip
    if payments <= 5_000:
        whole = one_process(payments, seed, work / f"one{payments}")
        results["process"] = whole
        if whole.exit_code == 0:
            inside = inside_seconds(work / f"one{payments}")
            results["total"] = Measurement(inside, whole.cpu_seconds, whole.peak_bytes, 0, "")
    return results


def stream_into_database(
    python: list[str], folder: Path, common: list[str]
) -> dict[str, Measurement]:
    """Issue 16 item 3 (opt-in with the 10M size): `reconcile --stream --db` into a new
    SQLite database, then every page of the app timed on it (benchmarks/ui.py
    --every-page; its table is in log-pages/stdout.txt, printed below the rows)."""
    database = folder / "stream.sqlite"
    command = [*python, "reconcile", str(folder), "--out", str(folder / "results-stream-db.csv"),
               *common, "--stream", "--db", str(database)]  # fmt: skip
    results = {"stream-db": measure(command, folder / "log-stream-db")}
    if results["stream-db"].exit_code == 0:
        results["pages"] = measure(
            [sys.executable, "-m", "benchmarks.ui", "--db", str(database), "--skip-cold-start",
             "--skip-pages", "--skip-workflow", "--every-page"],
            folder / "log-pages",
        )  # fmt: skip
    return results


def run_wide(payments: int, seed: int, work: Path) -> list[tuple[str, Measurement]]:
    """Issue 16: `reconcile` files -> results.csv, and with --db into a new database, as whole
    processes (interpreter start and exit included) on the wide layout, WIDE_REPEATS times."""
    from core.benchmark import DEFAULT_AS_OF

    folder = work / f"wide{payments}"
    shutil.rmtree(folder, ignore_errors=True)
    python = [sys.executable, "-m", "core"]
    generated = measure(
        [*python, "generate", str(folder), "--payments", str(payments), "--seed", str(seed),
         "--wide"],
        folder / "log-generate",
    )  # fmt: skip
    rows: list[tuple[str, Measurement]] = [("wide-generate", generated)]
    if generated.exit_code:
        return rows
    common = [str(folder), "--out", str(folder / "results.csv"), "--as-of", DEFAULT_AS_OF]
    for attempt in range(WIDE_REPEATS):
        rows.append(
            ("wide", measure([*python, "reconcile", *common], folder / f"log-wide{attempt}"))
        )
    for attempt in range(WIDE_REPEATS):
        database = folder / f"wide{attempt}.sqlite"
        database.unlink(missing_ok=True)
        command = [*python, "reconcile", *common, "--db", str(database)]
        rows.append(("wide-db", measure(command, folder / f"log-wide-db{attempt}")))
        for leftover in folder.glob(f"wide{attempt}.sqlite*"):
            if leftover.is_dir():
                shutil.rmtree(leftover)
            else:
                leftover.unlink()
    return rows


def format_row(payments: int, step: str, m: Measurement) -> str:
    label = {
        "wide-generate": "generate --wide (every column filled)",
        "wide": "wide: reconcile -> results.csv, process",
        "wide-db": "wide: reconcile --db, new db, process",
        "generate": "generate (files + labels)",
        "import": "import (files -> new database)",
        "reconcile": "reconcile (files -> results.csv)",
        "persist": "reconcile --db (persisted)",
        "persist-pg": "reconcile --db postgresql:// (PostgreSQL 15)",
        "process": "  same, process wall incl. interpreter",
        "total": "generate+reconcile+persist, 1 process",
        "stream": "reconcile --stream (files -> store -> csv)",
        "dask": "reconcile on Dask (LocalCluster, 2 workers)",
        "stream-db": "reconcile --stream --db (into SQLite)",
        "pages": "every page timed on that database",
    }[step]
    target = TARGETS.get((step, payments), "")
    if m.exit_code:
        return (
            f"{payments:>10,}  {label:<40} failed (exit {m.exit_code}): {m.error.splitlines()[-1:]}"
        )
    rate = payments / m.seconds if m.seconds else 0.0
    return (
        f"{payments:>10,}  {label:<40}{m.seconds:>9.2f}{m.cpu_seconds:>9.2f}{rate:>14,.0f}"
        f"{m.peak_bytes / 2**20:>11,.0f}   {target}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DEFAULT_SIZES),
        help="comma-separated payment counts (default 5000,100000,1000000; 10000000 runs "
        "the streamed path and Dask only)",
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--keep", metavar="DIR", help="keep the datasets and results in DIR")
    parser.add_argument(
        "--wide-sizes",
        default="1000000",
        help="payment counts for the whole-process rows on wide data (issue 16); '' for none",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    wide_sizes = [int(s) for s in args.wide_sizes.split(",") if s]
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="razorrecon-bench-"))
    print(f"machine: {machine()}")
    print(f"load average (1, 5, 15 min) at the start: {load_average()}")
    print(
        f"seed {args.seed}; each step is its own process; CPU = its user + system seconds; "
        "peak = its max RSS; payments/s from wall seconds\n"
    )
    print(
        f"{'payments':>10}  {'step':<40}{'wall s':>9}{'CPU s':>9}{'payments/s':>14}"
        f"{'peak MB':>11}   target"
    )
    memory_lines: list[str] = []
    try:
        for payments in sizes:
            measured = run_size(payments, args.seed, work)
            order = [
                "generate", "import", "reconcile", "persist", "persist-pg", "stream", "dask",
                "stream-db", "pages", "total", "process",
            ]  # fmt: skip
            for step in sorted(measured, key=order.index):
                print(format_row(payments, step, measured[step]), flush=True)
            pages_log = work / f"p{payments}" / "log-pages" / "stdout.txt"
            if "pages" in measured and pages_log.is_file():
                table = pages_log.read_text(errors="replace").split("page            first s")
                if len(table) > 1:
                    print("page            first s" + table[-1].rstrip(), flush=True)
            if "import" in measured and not measured["import"].exit_code:
                memory_lines.append(import_memory(payments, work, measured["import"]))
        for payments in wide_sizes:
            for step, measurement in run_wide(payments, args.seed, work):
                print(format_row(payments, step, measurement), flush=True)
        if max(sizes) >= 1_000_000:  # issue 16: 50,000 new payments on top of 1,000,000
            from benchmarks.incremental import bench_lines

            print("\n" + "\n".join(bench_lines(work, measure)), flush=True)
            from benchmarks.incremental_stored import bench_lines as stored_lines

            print("\n".join(stored_lines(work, measure)), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if memory_lines:
        print(
            "\nimport peak RSS against the input, all files the import reads "
            "(target for inputs of 100 MB and more: <= 4x)"
        )
        print("\n".join(memory_lines))
    print(f"\nload average (1, 5, 15 min) at the end: {load_average()}")
    return 0


READ_SUFFIXES = (".csv", ".json", ".txt", ".xlsx", ".xls")


def import_memory(payments: int, work: Path, m: Measurement) -> str:
    """Peak RSS of `import` over the largest file's size and over all files read."""
    folder = work / f"p{payments}"
    sizes = {
        p.name: p.stat().st_size
        for p in folder.iterdir()
        if p.suffix in READ_SUFFIXES
        and p.name not in ("ground_truth.csv", "results.csv")
        and not p.name.startswith("results")
    }
    largest = max(sizes, key=sizes.__getitem__)
    total = sum(sizes.values())
    ratio = m.peak_bytes / total
    if total < 100 << 20:
        verdict = "input under 100 MB: the target does not apply"
    else:
        verdict = "within the target" if ratio <= 4 else "OVER the target"
    return (
        f"{payments:>10,}  peak {m.peak_bytes / 2**20:,.0f} MB = {ratio:.2f}x the "
        f"{len(sizes)} files read ({total / 2**20:,.0f} MB): {verdict}; "
        f"{m.peak_bytes / sizes[largest]:.1f}x the largest, {largest} "
        f"({sizes[largest] / 2**20:,.0f} MB)"
    )


def load_average() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
