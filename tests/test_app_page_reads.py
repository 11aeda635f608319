"""The pages' cheap reads at scale (core.db.page_reads, ui.shell.read_marked, ui.warm):
the same answers as the queries they replace, figures that follow every change, and a
first render that loads only what it shows."""

from __future__ import annotations

import ast
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.db import connect, migrate
from core.db.page_reads import age_distribution, data_mark, settlement_choices, top_open_exception
from core.db.views import OPEN_STATUSES, QueueFilter
from core.views.queue import queue
from tests.app_builder import Built, build
from tests.app_signin import signed_in
from tests.conftest import ROOT
from tests.review_support import add_people
from ui import keys

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")
# Loaded only when a person asks the investigator or exports a packet, never by a render.
NOT_FOR_A_RENDER = (
    "pydantic",
    "google.genai",
    "fpdf",
    "core.investigate.service",
    "core.investigate.gemini",
    "core.investigate.redact",
    "core.review.packet",
)


@pytest.fixture
def app_db(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Built]]:
    conn = connect(db_url)
    built = build(conn, payments=1500, seed=11)
    add_people(conn)
    conn.close()
    monkeypatch.setenv("DATABASE_URL", db_url)
    yield db_url, built


# The plain queries the page reads replaced (a CASE per row, a join over every settlement):
# the oracles the cheap reads are checked against.
def _placeholders(values: tuple[str, ...]) -> str:
    return ", ".join("?" for _ in values)


def _case_age_distribution(
    conn: sqlite3.Connection, as_of: int, bounds_days: tuple[int, ...], statuses: tuple[str, ...]
) -> list[dict[str, object]]:
    cases = " ".join(
        f"WHEN entity_created_at > ? - {int(days) * 86_400} THEN {i}"
        for i, days in enumerate(bounds_days)
    )
    sql = (
        f"SELECT CASE WHEN entity_created_at IS NULL THEN -1 {cases} "
        f"ELSE {len(bounds_days)} END AS bucket, count(*) AS n, "
        "coalesce(sum(exposure_amount), 0) AS exposure FROM exceptions "
        f"WHERE status IN ({_placeholders(statuses)}) GROUP BY bucket ORDER BY bucket"
    )
    params = (*[as_of] * len(bounds_days), *statuses)
    return [dict(r) for r in conn.execute(sql, params).fetchall()]


def _joined_settlement_choices(
    conn: sqlite3.Connection, search: str, limit: int
) -> list[dict[str, object]]:
    escaped = search.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    term = f"%{escaped}%"
    sql = (
        "SELECT s.id, s.amount, s.status, s.utr, s.created_at, "
        "coalesce(e.exposure, 0) AS exposure FROM settlements s LEFT JOIN ("
        "  SELECT settlement_id, sum(exposure_amount) AS exposure FROM exceptions "
        f"  WHERE status IN ({_placeholders(OPEN_STATUSES)}) GROUP BY settlement_id"
        ") e ON e.settlement_id = s.id WHERE s.id LIKE ? ESCAPE '\\' OR s.utr LIKE ? ESCAPE '\\' "
        "ORDER BY coalesce(e.exposure, 0) DESC, s.created_at DESC LIMIT ?"
    )
    params = (*OPEN_STATUSES, term, term, limit)
    return [dict(r) for r in conn.execute(sql, params).fetchall()]


def _ordered(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """The joined query's order, its ties (same exposure and day) broken by id."""
    return sorted(
        rows, key=lambda r: (-int(str(r["exposure"])), -int(str(r["created_at"])), r["id"])
    )


def test_the_queue_first_row_is_read_without_sorting_the_queue(
    app_db: tuple[str, Built],
) -> None:
    path, _ = app_db
    conn = connect(path)
    try:
        first = queue(conn, QueueFilter(), page_size=1).items[0].id
        assert top_open_exception(conn, OPEN_STATUSES) == first
        # A tie on the largest exposure, across two statuses: the lower id comes first.
        top, other = conn.execute(
            "SELECT id, exposure_amount FROM exceptions ORDER BY exposure_amount DESC, id LIMIT 2"
        ).fetchall()
        with conn:
            conn.execute(
                "UPDATE exceptions SET status = 'ESCALATED', exposure_amount = ? WHERE id = ?",
                (top[1], other[0]),
            )
        expected = queue(conn, QueueFilter(), page_size=1).items[0].id
        assert expected == min(top[0], other[0])
        assert top_open_exception(conn, OPEN_STATUSES) == expected
        assert top_open_exception(conn, ("RESOLVED",)) is None
        assert top_open_exception(conn, ()) is None
    finally:
        conn.close()


def test_the_ageing_read_by_index_ranges_equals_the_case_expression(
    app_db: tuple[str, Built],
) -> None:
    path, _ = app_db
    conn = connect(path)
    try:
        as_of = int(conn.execute("SELECT max(as_of) FROM runs").fetchone()[0])
        bounds = (8, 16, 31, 61, 91)
        ids = [r[0] for r in conn.execute("SELECT id FROM exceptions ORDER BY id LIMIT 8")]
        with conn:  # exactly on each bound, a second inside it, and no date at all
            for n, days in enumerate(bounds):
                conn.execute(
                    "UPDATE exceptions SET entity_created_at = ? WHERE id = ?",
                    (as_of - days * 86_400, ids[n]),
                )
            conn.execute(
                "UPDATE exceptions SET entity_created_at = ? WHERE id = ?",
                (as_of - 8 * 86_400 + 1, ids[5]),
            )
            conn.execute("UPDATE exceptions SET entity_created_at = NULL WHERE id = ?", (ids[6],))
            conn.execute("UPDATE exceptions SET status = 'ESCALATED' WHERE id = ?", (ids[7],))
        for statuses in (OPEN_STATUSES, ("OPEN",), ("RESOLVED",)):
            expected = _case_age_distribution(conn, as_of, bounds, statuses)
            assert age_distribution(conn, as_of, bounds, statuses) == expected, statuses
        assert {r["bucket"] for r in age_distribution(conn, as_of, bounds, OPEN_STATUSES)} >= {
            -1,
            0,
            5,
        }
    finally:
        conn.close()


def test_settlement_choices_are_those_of_the_joined_query(app_db: tuple[str, Built]) -> None:
    path, _ = app_db
    conn = connect(path)
    try:
        some = conn.execute("SELECT id, utr FROM settlements ORDER BY id LIMIT 1").fetchone()
        with conn:  # some exposure closed, so the order is not the insertion order
            conn.execute("UPDATE exceptions SET status = 'RESOLVED' WHERE id % 3 = 0")
        for search, limit in (("", 200), ("", 3), (some[0][-4:], 200), (some[1], 5), ("%_", 9)):
            joined = _ordered(_joined_settlement_choices(conn, search, limit))
            mine = settlement_choices(conn, search, limit, OPEN_STATUSES)
            assert [r["id"] for r in mine] == [r["id"] for r in joined], search
            assert mine == joined, search
        assert any(r["exposure"] for r in settlement_choices(conn, "", 200, OPEN_STATUSES))
    finally:
        conn.close()


def _matching(at: AppTest) -> str:
    return next(m.value for m in at.markdown if "exceptions match" in m.value)


def test_the_cached_figures_follow_a_decision_made_in_another_session(
    app_db: tuple[str, Built],
) -> None:
    """Overview, queue and Settlement picker are cached per data mark; a decision is
    audited, so the next render of any session reads them again."""
    path, built = app_db
    viewer = signed_in()
    viewer.run()
    assert {m.label: m.value for m in viewer.metric}["Open exceptions"] == f"{built.exceptions:,}"
    viewer.switch_page("pages/exceptions.py")
    viewer.run()
    assert _matching(viewer).startswith(f"**{built.exceptions:,}** exceptions match")
    viewer.switch_page("pages/overview.py")
    viewer.run()
    conn = connect(path)
    mark = data_mark(conn)
    conn.close()

    reviewer = signed_in()
    reviewer.run()
    reviewer.switch_page("pages/investigation.py")
    reviewer.run()
    chosen = int(reviewer.number_input(key=keys.INVESTIGATE_ID).value)
    reviewer.text_area(key=keys.DECISION_NOTE).input("Credited: bank statement line 4.").run()
    reviewer.button(key=keys.DECISION_RESOLVE).click().run()
    assert not reviewer.exception, [e.value for e in reviewer.exception]

    conn = connect(path)
    assert data_mark(conn)[2] > mark[2]  # the decision was audited: the mark moved
    settlement = conn.execute(
        "SELECT settlement_id FROM exceptions WHERE id = ?", (chosen,)
    ).fetchone()[0]
    conn.close()
    viewer.run()
    metrics = {m.label: m.value for m in viewer.metric}
    assert metrics["Open exceptions"] == f"{built.exceptions - 1:,}"
    viewer.switch_page("pages/exceptions.py")
    viewer.run()
    assert _matching(viewer).startswith(f"**{built.exceptions - 1:,}** exceptions match")

    viewer.switch_page("pages/settlement.py")
    viewer.run()
    conn = connect(path)
    joined = _ordered(_joined_settlement_choices(conn, "", 200))
    conn.close()
    options = viewer.selectbox(key=keys.SETTLEMENT_CHOICE).options
    assert [o.split(" · ")[0] for o in options[: len(joined)]] == [r["id"] for r in joined]
    assert settlement is None or settlement in [r["id"] for r in joined]


def _page_imports(path: Path) -> set[str]:
    """The modules a page imports at its top level (`from x import y`: x, and x.y when y
    is a module)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {
                f"{node.module}.{a.name}"
                for a in node.names
                if (ROOT / node.module.replace(".", "/") / f"{a.name}.py").exists()
            }
    return {n for n in names if n.split(".")[0] in ("core", "ui")}  # ours; not streamlit


def test_the_warm_up_imports_every_module_a_page_imports() -> None:
    warm = ast.parse((ROOT / "ui" / "warm.py").read_text(encoding="utf-8"))
    warmed = {a.name for n in ast.walk(warm) if isinstance(n, ast.Import) for a in n.names}
    wanted: set[str] = set()
    for page in sorted((ROOT / "pages").glob("*.py")):
        wanted |= _page_imports(page)
    missing = {
        m for m in wanted if m not in warmed and not any(w.startswith(m + ".") for w in warmed)
    }
    assert missing == set()
    assert "core.investigate.gather" in warmed  # the evidence, imported inside a render
    assert warmed.isdisjoint(NOT_FOR_A_RENDER)


RENDER = """
import json, os, sys
from streamlit import config
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest
from core.db import connect, migrate
from tests.app_builder import build

conn = connect(sys.argv[1]); migrate(conn); build(conn, payments=400, seed=5); conn.close()
os.environ["DATABASE_URL"] = sys.argv[1]
config.set_option("server.address", "127.0.0.1")  # the local single user, as make run
original = PagesManager.__init__
def init(self, *args, **kwargs):
    original(self, *args, **kwargs)
    PagesManager.uses_pages_directory = False
PagesManager.__init__ = init
if sys.argv[2] == "warm":
    from ui import warm
    warm.imports()
else:
    at = AppTest.from_file("app.py", default_timeout=120)
    at.run()
    at.switch_page("pages/investigation.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(e.label.startswith("Exception") for e in at.expander), "no evidence shown"
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("what", ["render", "warm"])
def test_an_investigation_render_and_the_warm_up_load_no_model_client(
    tmp_path: Path, what: str
) -> None:
    """The Investigation page shows evidence without the investigator's model client,
    redactor or PDF packet (pydantic, the Gemini SDK, fpdf: about half a second of imports
    in a fresh process); the server's warm-up (ui.warm) does not load them either."""
    done = subprocess.run(
        [sys.executable, "-c", RENDER, str(tmp_path / "r.sqlite"), what],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = set(__import__("json").loads(done.stdout.strip().splitlines()[-1]))
    assert "core.views.exception" in loaded and "core.investigate.gather" in loaded
    assert loaded.isdisjoint(NOT_FOR_A_RENDER), sorted(loaded & set(NOT_FOR_A_RENDER))


def test_a_database_made_again_under_the_same_name_never_shares_a_mark_with_the_old_one(
    tmp_path: Path,
) -> None:
    # A cached read is keyed by the database's name and its mark (ui.shell.read_marked). A
    # database made again under that name (restored, rebuilt, a test's) may reach the same
    # run ids and audit seq with another history: a fresh-clone run's Books page showed the
    # old database's "no write-off" for one where a write-off had just been made.
    path = tmp_path / "same.sqlite"
    marks = []
    for person in ("asha@example.com", "ravi@example.com"):
        conn = connect(path)
        try:
            migrate(conn)
            add_people(conn, {person: "reviewer"})
            marks.append(data_mark(conn))
        finally:
            conn.close()
        for leftover in tmp_path.glob("same.sqlite*"):
            leftover.unlink()
    assert marks[0][:3] == marks[1][:3]  # the same run ids and seq: alone, they repeat
    assert marks[0] != marks[1]
