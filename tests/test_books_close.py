"""Closing a month (core.books.close): the month is frozen; later data that touches it is a
prior-period adjustment in the next open month, never a silent change of the closed one."""

from __future__ import annotations

from pathlib import Path

from core.audit import AuditFilter, query
from core.books.close import PRIOR_PERIOD, books_view, close_month, closed_months
from core.books.rollforward import month_rollforward
from core.books.store import stored_events
from core.db import connect
from core.engine import EngineParams
from core.pipeline import reconcile_folder_into_db
from tests.engine_support import ts

AS_OF = ts("2026-06-30T23:59:59+05:30")


def test_a_closed_month_stays_as_closed_and_later_data_is_a_prior_period_adjustment(
    benchmark_1500: Path, db_url: str
) -> None:
    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        events = stored_events(conn)
        may = close_month(conn, events, "2026-05", actor="admin@example.com", request_id="c1")
        again = close_month(conn, events, "2026-05", actor="someone", request_id="c2")
        assert again == may and again.closed_by == "admin@example.com"
        assert len(query(conn, AuditFilter(action="month_closed"))) == 1
        # A payment captured in May disappears behind the books' back.
        row = conn.execute(
            "SELECT id, amount - fee FROM payments WHERE created_at BETWEEN ? AND ?"
            " AND status = 'captured' AND id NOT IN (SELECT entity_id FROM recon_rows)"
            " ORDER BY id LIMIT 1",
            (ts("2026-05-05T00:00"), ts("2026-05-25T00:00")),
        ).fetchone()
        assert row is not None
        with conn:
            conn.execute("DELETE FROM payments WHERE id = ?", (row[0],))
        later = stored_events(conn)
        closes = closed_months(conn)
    finally:
        conn.close()
    assert books_view(later, "2026-05", closes) == may.snapshot
    assert month_rollforward(later, "2026-05").closing == may.snapshot.closing - int(row[1])
    june = books_view(later, "2026-06", closes)
    moves = dict(june.movements)
    assert june.opening == may.snapshot.closing
    assert moves[PRIOR_PERIOD] == -int(row[1])
    assert june.opening + sum(moves.values()) == june.closing
    assert june.closing == month_rollforward(later, "2026-06").closing


def test_an_open_month_after_an_open_month_has_no_prior_period_line(
    benchmark_1500: Path, db_url: str
) -> None:
    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        events = stored_events(conn)
        view = books_view(events, "2026-06", closed_months(conn))
    finally:
        conn.close()
    assert view == month_rollforward(events, "2026-06")
    assert PRIOR_PERIOD not in dict(view.movements)


def test_close_report_cli_writes_a_bundle_and_a_pdf(
    benchmark_1500: Path, db_url: str, tmp_path: Path
) -> None:
    import zipfile

    from core.__main__ import main

    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        close_month(conn, stored_events(conn), "2026-05", actor="admin", request_id="r")
    finally:
        conn.close()
    out, pdf = tmp_path / "close.zip", tmp_path / "close.pdf"
    args = ["close-report", "--db", str(db_url), "--month", "2026-05"]
    assert main([*args, "--out", str(out), "--pdf", str(pdf)]) == 0
    with zipfile.ZipFile(out) as archive:
        names = {n.split("/", 1)[1] for n in archive.namelist()}
        roll = archive.read("close-2026-05/rollforward.csv").decode()
        head = archive.read("close-2026-05/audit_head.txt").decode()
    assert {
        "rollforward.csv",
        "journal.csv",
        "tally.xml",
        "open_exceptions_by_class.csv",
        "open_exceptions_by_age.csv",
        "fee_overcharges.csv",
        "audit_head.txt",
    } <= names
    assert "residual,residual,0.00,0" in roll
    assert head.startswith("seq ") and int(head.split()[1]) > 0
    assert pdf.read_bytes().startswith(b"%PDF")


def test_every_close_report_csv_reads_in_rupees_with_the_paise_after(
    benchmark_1500: Path, db_url: str
) -> None:
    import csv
    import io
    from decimal import Decimal

    from core.books.report import build_report

    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        report = build_report(conn, "2026-05")
    finally:
        conn.close()
    checked = 0
    for name, text in report.files.items():
        if not name.endswith(".csv"):
            continue
        rows = list(csv.DictReader(io.StringIO(text)))
        header = list(rows[0]) if rows else []
        for column in (c for c in header if c == "paise" or c.endswith("_paise")):
            rupees = column.removesuffix("paise") + "rupees"
            assert rupees in header, (name, column)
            assert header.index(rupees) < header.index(column), (name, column)
            for row in rows:
                if row[column]:
                    assert Decimal(row[rupees]) * 100 == int(row[column]), (name, row)
            checked += 1
    assert checked >= 5  # daily, drill-down, exceptions by class and age, GST tie-out, ...


def test_no_close_report_csv_cell_is_a_formula_a_spreadsheet_would_run(
    db_url: str, tmp_path: Path
) -> None:
    # An attacker's settlement id (independent check F2) reached journal.csv bare.
    import csv
    import io
    import shutil
    from decimal import Decimal

    from core.books.report import build_report
    from tests.conftest import SPEC_EXAMPLE

    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    # An id holds no space or path separator since 2026-12-04 (core.ingest.convert): the
    # formula still runs a command without them.
    hostile = "=2+2*cmd|'calc.exe'!A0"
    for path in folder.iterdir():
        text = path.read_text(encoding="utf-8-sig")
        path.write_text(text.replace("setl_zmoEBJJpl9oLDD", hostile), encoding="utf-8")
    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, folder, params=EngineParams(), as_of=AS_OF)
        month = next(m for m in ("2026-05", "2026-06") if hostile in str(build_report(conn, m)))
        report = build_report(conn, month)
    finally:
        conn.close()
    seen = 0
    for name, text in report.files.items():
        if not name.endswith(".csv"):
            continue
        for row in csv.reader(io.StringIO(text)):
            for cell in row:
                seen += hostile in cell
                if cell.startswith("-"):
                    Decimal(cell.replace(",", ""))  # a negative amount, never text
                else:
                    assert not cell.startswith(("=", "+", "@", "\t", "\r")), (name, cell)
    assert seen > 0  # the id is in the report, written as text


def test_the_close_report_splits_input_tax_credit_by_the_merchants_gst_state(
    db_url: str, tmp_path: Path
) -> None:
    """An independent tester: the close report always split the input tax credit as CGST +
    SGST (Razorpay's own state, Karnataka) with no way to say the merchant is registered
    elsewhere, where it is IGST (docs/books.md section 5)."""
    import csv
    import io
    import zipfile

    from core.__main__ import main
    from tests.conftest import SPEC_EXAMPLE

    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, SPEC_EXAMPLE / "dataset", params=EngineParams(), as_of=AS_OF)
    finally:
        conn.close()

    def itc(*extra: str) -> tuple[dict[str, str], str]:
        out = tmp_path / f"close{len(extra)}.zip"
        args = ["close-report", "--db", str(db_url), "--month", "2026-06", "--out", str(out)]
        assert main([*args, *extra]) == 0
        with zipfile.ZipFile(out) as archive:
            tie = archive.read("close-2026-06/gst_tie_out.csv").decode()
            readme = archive.read("close-2026-06/README.txt").decode()
        rows = {r["line"]: r["gst_paise"] for r in csv.DictReader(io.StringIO(tie))}
        return {k: v for k, v in rows.items() if k.startswith("itc_")}, readme

    karnataka, said = itc()
    maharashtra, told = itc("--gst-state", "Maharashtra")

    assert set(karnataka) == {"itc_cgst", "itc_sgst"}
    assert set(maharashtra) == {"itc_igst"}
    total = int(maharashtra["itc_igst"])
    assert total > 0 and int(karnataka["itc_cgst"]) + int(karnataka["itc_sgst"]) == total
    assert "registered in Karnataka: CGST + SGST" in said
    assert "registered in Maharashtra: IGST" in told
