"""Drive the real app: `streamlit run app.py` on 127.0.0.1 and Debian's Chromium.

Used by the browser tests and by `benchmarks/ui.py`. The server gets its own database
(DATABASE_URL: a SQLite file, or a PostgreSQL URL with DATABASE_OWNER_URL beside it, see
`database_env`) and a free port; `stop()` ends exactly the process group it started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.db.backend import is_postgres_url

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGE_PATHS = {
    "overview": "",
    "exceptions": "exceptions",
    "settlement": "settlement",
    "investigation": "investigation",
    "data": "data",
    "evaluation": "evaluation",
    "audit": "audit",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def database_env(database: Path | str) -> dict[str, str]:
    """The app's database settings: DATABASE_URL, and for a PostgreSQL database of the
    tests' server (tests/postgres_server.py) DATABASE_OWNER_URL, the owner role of the same
    database, so the app's bootstrap runs any migration as the owner, as in production."""
    url = str(database)
    if not is_postgres_url(url):
        return {"DATABASE_URL": url}
    from tests.postgres_server import APP_ROLE, OWNER_ROLE

    owner = url.replace(f"//{APP_ROLE}:", f"//{OWNER_ROLE}:", 1)
    if owner == url:
        raise ValueError(f"not a {APP_ROLE} URL of the tests' PostgreSQL server: {url}")
    return {"DATABASE_URL": url, "DATABASE_OWNER_URL": owner}


@dataclass
class Server:
    """A running `streamlit run app.py`."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)


def start_server(
    database: Path | str,
    log: Path,
    extra_env: dict[str, str] | None = None,
    *,
    port: int | None = None,
    extra_args: tuple[str, ...] = (),
    script: str = "app.py",
) -> Server:
    """`streamlit run app.py` on 127.0.0.1 (so, without other configuration, the app runs
    as the local single user) on `database`, a SQLite file or a PostgreSQL URL (an empty
    database gets the app's cold-start bootstrap on either); `extra_args` add options such
    as --secrets.files; `script="serve.py"` starts it as `make run` does."""
    port = port or free_port()
    inherited = {
        k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_OWNER_URL")
    }
    env = {**inherited, **database_env(database), **(extra_env or {})}
    handle = open(log, "wb")  # noqa: SIM115 - the server writes to it until stopped
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / script),
            "--server.address=127.0.0.1",
            f"--server.port={port}",
            "--server.headless=true",
            "--server.fileWatcherType=none",
            "--browser.gatherUsageStats=false",
            *extra_args,
        ],
        cwd=ROOT,
        env=env,
        stdout=handle,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Server(process, port, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited: {log.read_text(errors='replace')[-2000:]}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=2) as r,
        ):
            if r.status == 200:
                return server
        time.sleep(0.2)
    server.stop()
    raise RuntimeError("streamlit did not become healthy within 60 s")


@contextlib.contextmanager
def running_server(
    database: Path | str,
    log: Path,
    extra_env: dict[str, str] | None = None,
    *,
    port: int | None = None,
    extra_args: tuple[str, ...] = (),
    script: str = "app.py",
) -> Iterator[Server]:
    server = start_server(database, log, extra_env, port=port, extra_args=extra_args, script=script)
    try:
        yield server
    finally:
        server.stop()


def wait_rendered(page: object, timeout_ms: int = 60_000) -> None:
    """Wait until the script run is over: a title is shown and nothing is running."""
    page.wait_for_selector("h1", timeout=timeout_ms)  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText"
        ".includes('Running')",
        timeout=timeout_ms,
    )
    page.wait_for_timeout(300)  # type: ignore[attr-defined]


def screen_errors(page: object) -> list[str]:
    """Tracebacks and error boxes on the screen (an empty list means a clean page)."""
    found = []
    for selector in ('[data-testid="stException"]', '[data-testid="stAlertContentError"]'):
        found += [el.inner_text() for el in page.query_selector_all(selector)]  # type: ignore[attr-defined]
    return found


def open_exception(page: Any, exception_id: int | str) -> None:
    """Open one exception on the Investigation page by typing its id, as a person would
    (the page's default exception depends on the queue, and the box shows it only once
    the page has settled: a test reads the id it chose, never the box)."""
    field = page.get_by_label("Exception id")
    field.fill(str(exception_id))
    field.press("Enter")
    wait_rendered(page)
    page.wait_for_selector(f"text=#{exception_id} ·", timeout=30_000)
