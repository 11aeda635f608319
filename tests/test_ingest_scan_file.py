"""Reading a CSV file once for its sha256 and its NUL check (core.ingest.readers.scan_file)
against hashlib and a plain search."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from core.ingest.readers import file_has_nul, scan_csv_file, scan_file


@settings(deadline=None)
@given(st.binary(max_size=300), st.integers(1, 64), st.booleans())
def test_one_read_of_a_file_gives_its_sha256_and_whether_it_holds_a_nul(
    content: bytes, chunk: int, hashing: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "payments.csv"
        path.write_bytes(content)
        digest, has_nul = scan_file(path, hashing=hashing, chunk_bytes=chunk)
        assert has_nul == (b"\0" in content) == file_has_nul(path)
        assert digest == (hashlib.sha256(content).hexdigest() if hashing else "")


@settings(deadline=None)
@given(st.binary(max_size=300), st.integers(1, 64))
def test_the_same_read_counts_the_files_lines_and_finds_a_bare_carriage_return(
    content: bytes, chunk: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "payments.csv"
        path.write_bytes(content)
        scan = scan_csv_file(path, hashing=True, chunk_bytes=chunk)
        assert scan.sha256 == hashlib.sha256(content).hexdigest()
        assert scan.has_nul == (b"\0" in content)
        ends_open = bool(content) and not content.endswith(b"\n")
        assert scan.lines == content.count(b"\n") + ends_open
        assert scan.bare_cr == (content.count(b"\r") != content.count(b"\r\n"))
