"""What the Data page starts: import uploaded files, run reconciliation, sync Razorpay.

Each function calls the core module that owns the work; the page only collects inputs and
shows the answer. Uploaded files are written to a private temporary folder under their
own names (the importer recognises the five dataset file names) and removed afterwards.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from core import activity, bootstrap, demo_mode, ingest, razorpay
from core.audit.rawcheck import refuse_unrecorded_changes
from core.calendar import IST, CalendarParams
from core.dataset import BANK_FILES, DATASET_FILES
from core.db import database_path
from core.db.raw import latest_import_id
from core.db.run_lock import run_lock, shown_as_progress
from core.engine import EngineParams
from core.errors import InputError, Problem
from core.ingest import bank, load, mappings
from core.razorpay import config
from ui import auth, shell

# Every file the importer reads: Razorpay files in any of their formats, the bank statement.
DATASET_NAMES = DATASET_FILES
UPLOAD_TYPES = ["csv", "json", "txt", "xlsx", "xls"]
Progress = Callable[[float, str], None]


def _quiet(_fraction: float, _message: str) -> None:
    return None


OLDER_HINT = "tick 'Take older rows as corrections' to import them anyway"
OLDER_HELP = (
    "A file that would move a stored payment, refund or settlement back in its lifecycle"
    " (captured back to authorized, processed back to pending, a payment's amount refunded"
    " lowered) looks older than what is stored and is refused. Tick to import it anyway"
    " (recorded in the audit trail)."
)


def import_uploads(
    uploads: Iterable[Any],
    amount_unit: str,
    replace: bool,
    progress: Progress = _quiet,
    accept_older: bool = False,
) -> Any:
    """Write the uploaded files to a temporary folder and import it; the ImportReport.
    `progress(fraction, message)` hears each step (the page's st.progress). Files that
    would move a stored row's status backwards are refused (core.ingest.lifecycle
    OlderRowsError, each row named by file, line and column) unless `accept_older`."""
    auth.require("admin", "import")
    progress(0.05, "Checking the uploaded files")
    files = list(uploads)
    unknown = [f.name for f in files if Path(f.name).name.lower() not in DATASET_NAMES]
    if unknown:
        raise InputError(
            [
                Problem(
                    name,
                    0,
                    "",
                    "not a dataset file name; expected one of " + ", ".join(DATASET_NAMES),
                )
                for name in unknown
            ]
        )
    names = sorted(Path(f.name).name.lower() for f in files)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(
            [Problem(n, 0, "", "uploaded twice; remove one of the two") for n in twice]
        )
    # Our size cap (RAZORRECON_MAX_FILE_MB), before anything is written or read.
    limit = load.max_file_bytes()
    sizes = [(Path(f.name).name, len(f.getvalue())) for f in files]
    too_big = [p for n, size in sizes if (p := load.size_problem(n, size, limit)) is not None]
    if too_big:
        raise InputError(too_big)
    saved = shell.read(mappings.saved_mappings)
    with tempfile.TemporaryDirectory(prefix="razorrecon-upload-") as folder:
        for n, f in enumerate(files, 1):
            progress(0.05 + 0.15 * n / len(files), f"Received {Path(f.name).name}")
            (Path(folder) / Path(f.name).name.lower()).write_bytes(f.getvalue())
        progress(0.25, "Reading and checking " + ", ".join(names))
        # Added to data already imported, a day's files need not hold every required one (a
        # weekend without settlements is normal): the stored rows stay (as `import-day`).
        required = replace or shell.read(latest_import_id) == 0
        dataset, loaded = ingest.load_dataset(folder, amount_unit, saved, required_files=required)
        progress(0.6, f"Storing {len(dataset.payments):,} payments and the other tables")
        # Not inside a run (core.db.run_lock), as the `import` command. Stored while the
        # folder exists: a refused row is named by its file's line, read from there.
        with (
            shell.connection() as conn,
            run_lock(conn, "an import from the app", on_wait=shown_as_progress(progress)),
        ):
            if not replace:  # adding to rows no audited action stored would vouch for them
                refuse_unrecorded_changes(conn, macs=False)
            report = ingest.store_dataset(
                conn,
                dataset,
                source="files",
                location="upload: " + ", ".join(names),
                content_hash=loaded.content_hash,
                replace=replace,
                files=loaded.files,
                accept_older=accept_older,
                folder=folder,
                older_hint=OLDER_HINT,
                actor=auth.actor_name(),
            )
            activity.record_import(conn, report, actor=auth.actor_name(), how="upload (app)")
    progress(1.0, "Imported")
    return report


def stream_folder(
    folder: str, amount_unit: str, calendar: CalendarParams, as_of: int, progress: Progress
) -> Any:
    """Import a dataset folder on this server that is too large to upload (API CSVs of any
    size), reconcile it window by window and store the run (core.streamed): the raw
    tables are replaced. `progress` hears each block and window."""
    auth.require("admin", "import and reconcile")
    demo_mode.refuse(demo_mode.SERVER_FOLDER)  # a visitor's own uploads only
    from core.streamed import stream_folder_into_db

    path = Path(folder.strip()).expanduser()
    if not folder.strip() or not path.is_dir():
        raise InputError([Problem(folder.strip() or "(empty)", 0, "", "not a dataset folder")])
    with (
        shell.connection() as conn,
        run_lock(conn, "a streamed import from the app", on_wait=shown_as_progress(progress)),
    ):
        return stream_folder_into_db(
            conn,
            path,
            EngineParams(calendar=calendar),
            as_of,
            amount_unit=amount_unit,
            progress=progress,
            actor=auth.actor_name(),
            how="server folder import and reconcile (app)",
        )


def parse_holidays(text: str) -> frozenset[dt.date]:
    days: set[dt.date] = set()
    problems: list[Problem] = []
    for number, raw in enumerate(text.splitlines(), 1):
        value = raw.split("#", 1)[0].strip()
        if not value:
            continue
        try:
            days.add(dt.date.fromisoformat(value))
        except ValueError:
            problems.append(Problem("holidays", number, "1", f"not an ISO date: {value!r}"))
    if problems:
        raise InputError(problems)
    return frozenset(days)


def as_of_seconds(day: dt.date, moment: dt.time) -> int:
    return int(dt.datetime.combine(day, moment, tzinfo=IST).timestamp())


def reconcile(calendar: CalendarParams, as_of: int, progress: Progress) -> Any:
    """Reconcile the raw tables as of `as_of`: persist the run, open exceptions."""
    auth.require("admin", "reconcile")
    params = EngineParams(calendar=calendar)
    with (
        shell.connection() as conn,
        run_lock(conn, "a reconcile from the app", on_wait=shown_as_progress(progress)),
    ):
        return bootstrap.reconcile_stored(
            conn, as_of=as_of, params=params, progress=progress, actor=auth.actor_name()
        )


def razorpay_status() -> Any:
    return shell.read(razorpay.sync_status)


def razorpay_sync(date_from: dt.date, date_to: dt.date, progress: Progress) -> Any:
    """Read the range from the Razorpay API into the raw tables (read-only keys from env)."""
    auth.require("admin", "sync")
    from core.razorpay import sync as syncing  # the Razorpay SDK loads only when syncing

    settings = config.settings_from_env()
    days = max(1, (date_to - date_from).days + 1) * 4

    steps = {"n": 0}

    def on_step(resource: str, day: dt.date, items: int) -> None:
        steps["n"] += 1
        progress(min(0.99, steps["n"] / days), f"{resource} {day.isoformat()}: {items} items")

    with shell.connection() as conn:
        return syncing.sync(
            conn, settings, date_from, date_to, on_step=on_step, actor=auth.actor_name()
        )


def database_name() -> str:
    return Path(database_path()).name


def unmapped_statement(uploads: Iterable[Any]) -> Any:
    """The uploaded bank statement whose header no layout and no saved mapping recognises:
    (file name, bytes, HeaderGuess), or None."""
    saved = shell.read(mappings.saved_mappings)
    for f in uploads:
        name = Path(f.name).name.lower()
        if name in BANK_FILES:
            try:
                guess = bank.unrecognised_header(name, f.getvalue(), saved)
            except Exception:
                return None  # unreadable: the import's problems say why
            return (name, f.getvalue(), guess) if guess is not None else None
    return None


def save_bank_mapping(name: str, data: bytes, assignments: dict[str, str], label: str) -> Any:
    """Check the mapping against the statement and save it (audited as the signed-in admin)."""
    auth.require("admin", "save a bank mapping")
    with shell.connection() as conn:
        return mappings.save_statement_mapping(
            conn, name, data, assignments, name=label, actor=auth.actor_name()
        )
