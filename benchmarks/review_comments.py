"""Speed of comments and attachments (prints; asserts nothing).

`python -m benchmarks.review_comments [--comments 1000] [--attachment-kb 2048]` opens
exceptions in a temporary SQLite file (WAL), then times: `add_comment` with text only
(each its own transaction, audit entry and anchor), `add_comment` with one attachment of
the given size, `list_comments` of an exception with 20 comments and 20 attachments,
reading one attachment back (with its SHA-256 check), and a re-sync in which every
commented exception is no longer found.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.db import connect, migrate
from core.review import add_comment, attachment, list_comments, sync_exceptions
from core.review.comments import ATTACHMENT_KB_ENV
from tests.review_support import Finding, add_people, write_run

ACTOR = "asha@example.com"


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(median, max) milliseconds of `repeat` calls."""
    took = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        took.append((time.perf_counter() - start) * 1000)
    return statistics.median(took), max(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--comments", type=int, default=1000)
    parser.add_argument("--attachment-kb", type=int, default=2048)
    args = parser.parse_args()
    os.environ.setdefault(ATTACHMENT_KB_ENV, str(max(args.attachment_kb, 1)))
    payload = b"%PDF-1.7\n" + os.urandom(args.attachment_kb * 1024 - 9)
    with tempfile.TemporaryDirectory() as tmp:
        conn = connect(Path(tmp) / "bench.sqlite")
        migrate(conn)
        add_people(conn, {ACTOR: "reviewer"})
        n = args.comments
        sync_exceptions(conn, write_run(conn, [Finding(f"pay_{i:06d}") for i in range(n)]))
        ids = [int(r[0]) for r in conn.execute("SELECT id FROM exceptions ORDER BY id")]
        counter = iter(range(10**9))

        def text_only() -> None:
            k = next(counter)
            add_comment(conn, ids[k % n], actor=ACTOR, body=f"note {k}", request_id=f"t{k}")

        median, worst = _timed(text_only, n)
        print(f"add_comment, text only      {median:7.2f} ms median {worst:7.2f} ms max  n={n}")

        def with_file() -> None:
            k = next(counter)
            add_comment(
                conn,
                ids[0],
                actor=ACTOR,
                body=f"statement {k}",
                request_id=f"f{k}",
                attachments=[(f"statement-{k}.pdf", payload)],
            )

        median, worst = _timed(with_file, 20)
        print(
            f"add_comment, {args.attachment_kb} KiB file  {median:7.2f} ms median "
            f"{worst:7.2f} ms max  n=20"
        )
        median, worst = _timed(lambda: list_comments(conn, ids[0]), 50)
        print(f"list_comments (20 files)    {median:7.2f} ms median {worst:7.2f} ms max")
        first = list_comments(conn, ids[0])[-1].attachments[0].id
        median, worst = _timed(lambda: attachment(conn, first), 50)
        print(f"attachment read + SHA-256   {median:7.2f} ms median {worst:7.2f} ms max")
        start = time.perf_counter()
        summary = sync_exceptions(conn, write_run(conn, []))
        took = (time.perf_counter() - start) * 1000
        print(
            f"re-sync, all commented      {took:7.2f} ms  no_longer_found="
            f"{summary.no_longer_found} auto_cleared={summary.auto_cleared}"
        )
        size = (Path(tmp) / "bench.sqlite").stat().st_size
        print(f"database file               {size / 1024 / 1024:7.1f} MiB")
        conn.close()


if __name__ == "__main__":
    main()
