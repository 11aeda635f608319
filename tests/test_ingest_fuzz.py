"""Fuzzed input: whatever the files hold, `python -m core import` exits 0 or 2, never with a
traceback, and a refused import never writes (no database file made, an existing one left
byte-identical; on PostgreSQL every row of every table as it was). Generated malformed CSV
and JSON, and mutations of real fixtures. PostgreSQL runs the first few examples only
(PG_EXAMPLES): the same importer, so what it adds is the database's side of "nothing
written", not more input shapes."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.__main__ import main
from core.db import connect, migrate

from .conftest import FIXTURES, SPEC_EXAMPLE, database_rows

SPEC_DATASET = SPEC_EXAMPLE / "dataset"
API_JSON = FIXTURES / "real_exports" / "api_json"
FUZZ = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


PG_EXAMPLES = 4


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def pg(request: pytest.FixtureRequest) -> str | None:
    """None: each example gets its own SQLite file; else one PostgreSQL database (a URL)
    that every example of the test imports into, holding whatever earlier ones stored."""
    return str(request.getfixturevalue("pg_url")) if request.param == "postgres" else None


def _fuzz(pg: str | None) -> settings:
    return settings(FUZZ, max_examples=FUZZ.max_examples if pg is None else PG_EXAMPLES)


def _import_exit_code(folder: Path, db: str) -> int:
    """The importer in-process, as the command line runs it; output swallowed."""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        try:
            return main(["import", str(folder), "--db", db])
        except SystemExit as exit_:  # argparse; never expected here
            return int(exit_.code or 0)


def _check(
    template: Path, name: str, data: bytes, existing_db: bool, pg: str | None = None
) -> None:
    """Put `data` in a copy of `template` as `name`, import it: 0, or 2 and nothing written."""
    with tempfile.TemporaryDirectory(prefix="razorrecon-fuzz-") as work:
        folder = Path(work) / "dataset"
        shutil.copytree(template, folder)
        (folder / name).write_bytes(data)
        if pg is not None:  # a PostgreSQL database always exists: every row stays as it was
            rows = database_rows(pg)
            code = _import_exit_code(folder, pg)
            assert code in (0, 2)
            if code == 2:
                assert database_rows(pg) == rows
            return
        db = Path(work) / "fuzz.sqlite"
        before = b""
        if existing_db:
            conn = connect(db)
            migrate(conn)
            conn.close()
            before = db.read_bytes()
        code = _import_exit_code(folder, str(db))
        assert code in (0, 2)
        if code == 2:
            if existing_db:
                assert db.read_bytes() == before
            else:
                assert not db.exists()


CSV_CELL = st.one_of(
    st.text(alphabet=st.sampled_from('ab1,"\n\r\x00 .-₹'), max_size=12),
    st.sampled_from(["", "9" * 5000, "-1", "1e400", "\ufeff", '"', "x" * 140_000]),
    st.text(max_size=8),
)


@st.composite
def malformed_csv(draw: st.DrawFn) -> bytes:
    header = draw(
        st.lists(
            st.sampled_from(["id", "amount", "status", "created_at", "currency", "x", '"', ""]),
            min_size=0,
            max_size=6,
        )
    )
    rows = draw(st.lists(st.lists(CSV_CELL, max_size=7), max_size=5))
    text = "\n".join(",".join(cells) for cells in [header, *rows])
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1"]))
    return text.encode(encoding, errors="replace")


JSON_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(max_size=10),
    st.sampled_from(["captured", "pay_x", 10**30, -1]),
)
JSON_VALUE = st.recursive(
    JSON_SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)


@st.composite
def malformed_json(draw: st.DrawFn) -> bytes:
    item = st.dictionaries(
        st.sampled_from(["id", "amount", "status", "created_at", "notes", "entity", "x"]),
        JSON_VALUE,
        max_size=6,
    )
    items = draw(st.lists(item | JSON_VALUE, max_size=4))
    shape = draw(st.sampled_from(["envelope", "list", "other"]))
    document = {"entity": "collection", "items": items} if shape == "envelope" else items
    if shape == "other":
        document = draw(JSON_VALUE)
    text = json.dumps(document)
    # Hand-made defects json.dumps cannot write: a key twice, deep nesting, a huge number.
    defect = draw(st.sampled_from(["", "dup", "deep", "huge", "cut"]))
    if defect == "dup" and text.startswith('{"entity"'):
        text = text.replace('{"entity": "collection"', '{"entity": "a", "entity": "b"', 1)
    elif defect == "deep":
        text = text.replace("[", "[" * 3000 + "0" + "]" * 2999 + ",", 1)
    elif defect == "huge":
        text = text.replace("[", "[" + "7" * 6000 + ",", 1)
    elif defect == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    return text.encode()


def _as_value(data: bytes, at: int, value: bytes) -> bytes:
    """`value` written where a value starts: after the first `: ` or `,` from `at` on."""
    found = [i for i in (data.find(b": ", at), data.find(b",", at)) if i >= 0]
    if not found:
        return data + value
    cut = min(found) + (2 if data[min(found) : min(found) + 2] == b": " else 1)
    return data[:cut] + value + b"," + data[cut:]


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """Truncation, byte flips, inserted quotes and NULs, and deep nesting, huge numbers,
    huge cells or a repeated key written where a value starts."""
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["cut", "flip", "quote", "nul", "deep", "huge", "wide", "dup"]))
        if kind == "cut":
            data = data[:at]
        elif kind == "flip" and at < len(data):
            data = data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1 :]
        elif kind == "quote":
            data = data[:at] + b'"' + data[at:]
        elif kind == "nul":
            data = data[:at] + b"\0" + data[at:]
        elif kind == "deep":
            data = _as_value(data, at, b"[" * 2000 + b"]" * 2000)
        elif kind == "huge":
            data = _as_value(data, at, b"8" * 5000)
        elif kind == "wide":
            data = _as_value(data, at, b"w" * 140_000)
        elif kind == "dup" and b'"amount": ' in data:
            data = data.replace(b'"amount": ', b'"amount": 1, "amount": ', 1)
    return data


def test_generated_malformed_csv_exits_0_or_2_and_never_writes_on_2(pg: str | None) -> None:
    @_fuzz(pg)
    @given(
        data=malformed_csv(),
        name=st.sampled_from(["payments.csv", "refunds.csv"]),
        db=st.booleans(),
    )
    def check(data: bytes, name: str, db: bool) -> None:
        folder = Path(tempfile.mkdtemp(prefix="razorrecon-fuzz-template-"))
        try:
            for path in SPEC_DATASET.iterdir():
                if not path.name.startswith("payments"):
                    shutil.copy(path, folder / path.name)
            if name != "payments.csv":
                shutil.copy(SPEC_DATASET / "payments.json", folder / "payments.json")
            _check(folder, name, data, db, pg)
        finally:
            shutil.rmtree(folder)

    check()


def test_generated_malformed_json_exits_0_or_2_and_never_writes_on_2(pg: str | None) -> None:
    @_fuzz(pg)
    @given(data=malformed_json(), db=st.booleans())
    def check(data: bytes, db: bool) -> None:
        _check(SPEC_DATASET, "payments.json", data, db, pg)

    check()


FIXTURE_FILES = [
    *((SPEC_DATASET, p.name) for p in sorted(SPEC_DATASET.iterdir())),
    *((API_JSON, p.name) for p in sorted(API_JSON.iterdir())),
]


def test_mutated_real_fixtures_exit_0_or_2_and_never_write_on_2(pg: str | None) -> None:
    @_fuzz(pg)
    @given(choice=st.sampled_from(FIXTURE_FILES), db=st.booleans(), data=st.data())
    def check(choice: tuple[Path, str], db: bool, data: st.DataObject) -> None:
        template, name = choice
        original = (template / name).read_bytes()
        _check(template, name, data.draw(mutated(original)), db, pg)

    check()
