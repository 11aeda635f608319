"""Bank statements (spec section 3): HDFC, ICICI, SBI, Axis, Kotak and look-alikes, as CSV,
delimited text (HDFC NetBanking "Delimited" `.txt`), XLSX or XLS; any other layout through a
column mapping the user saved once (core.ingest.mappings).

Every format becomes the same records, (line, cells): CSV and text through `csv` (line: the
1-based physical line), sheets through core.ingest.sheets (line: the 1-based sheet row). A
cell written as an Excel text formula, `="12345"` (Kotak), is unwrapped to `12345`
everywhere, and cells are compared and read stripped of padding (HDFC Delimited pads every
cell with spaces). From there one parser does the rest:

The parser finds the header row below any banner lines, maps columns by their names
(case-, space- and punctuation-insensitive), skips separator rows (`********`), blank
lines, the summary footer, and the page furniture of multi-page exports (the header line
repeated exactly, `Page 2 of 5` lines), and reads rupee amounts with Indian digit grouping
and optional `Cr`/`Dr` suffixes. Each transaction line keeps the id `<file name>:<line>`
where line is the 1-based physical line of the file, counting banner and header lines
and every line of a quoted cell that spans lines.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from core.dataset import BANK_COLUMNS
from core.errors import Problem
from core.ingest import convert
from core.ingest.headers import BankMapping, header_key, header_signature, repeated_column
from core.ingest.readers import ReadFailure, decode_text, oversize_cells
from core.ingest.report import FileReport
from core.ingest.sheets import is_sheet, read_sheet
from core.ingest.utr import extract_utr

# Field -> header names seen in real exports, compared after `header_key`.
ALIASES: dict[str, tuple[str, ...]] = {
    "txn_date": (
        "Date",
        "Txn Date",
        "Transaction Date",
        "Tran Date",
        "Trans Date",
        "Txn Posted Date",
        "Posting Date",
    ),
    "value_date": ("Value Date", "Value Dt", "Value Dat"),
    "narration": (
        "Narration",
        "Description",
        "Transaction Remarks",
        "Particulars",
        "Transaction Particulars",  # Axis corporate statements
        "Remarks",
        "Transaction Details",
    ),
    "reference": (
        "Chq./Ref.No.",
        "Ref No./Cheque No.",
        "Reference",
        "UTR",
        "UTR No",
        "Cheque Number",
        "Cheque No.",
        "Chq No",
        "CHQNO",
        "Ref No.",
        "Reference No.",
        "Chq/Ref Number",
        "Chq / Ref No.",
    ),
    "credit": (
        "Deposit Amt.",
        "Credit",
        "Deposit Amount (INR )",
        "Cr",
        "Deposit",
        "Deposits",
        "Credit Amount",
        "Credit Amt.",
    ),
    "debit": (
        "Withdrawal Amt.",
        "Debit",
        "Withdrawal Amount (INR )",
        "Dr",
        "Withdrawal",
        "Withdrawals",
        "Debit Amount",
        "Debit Amt.",
    ),
    "balance": ("Closing Balance", "Balance", "Balance (INR )", "BAL", "Available Balance"),
    "amount": ("Amount", "Transaction Amount", "Amount (INR)", "Txn Amount"),
    "direction": (
        "Dr/Cr",
        "Dr / Cr",
        "Cr/Dr",
        "Debit/Credit",
        "Type",
        "Txn Type",
        "Transaction Type",
        "Cr/Dr Indicator",
        # 'DR|CR' (Axis corporate statements), 'Dr Cr', 'DRCR': header_key drops the bar.
        "Dr Cr",
        "Cr Dr",
    ),
}

# Header signatures of the layouts we know (keys as `header_key` makes them).
LAYOUTS: tuple[tuple[str, frozenset[str]], ...] = (
    ("HDFC", frozenset({"narration", "chq/refno", "valuedt"})),
    # NetBanking "Delimited" text: 'Value Dat' (cut to 9 characters) and 'Chq/Ref Number'.
    ("HDFC", frozenset({"narration", "valuedat", "chq/refnumber"})),
    # Kotak: one Amount column with 'Dr / Cr' beside it, 'Chq / Ref No.', 'Sl. No.'.
    ("Kotak", frozenset({"slno", "chq/refno", "amount", "dr/cr"})),
    ("Kotak", frozenset({"description", "chq/refno", "amount", "dr/cr"})),
    ("ICICI", frozenset({"transactionremarks"})),
    ("ICICI", frozenset({"withdrawalamountinr", "depositamountinr"})),
    ("SBI", frozenset({"txndate", "refno/chequeno"})),
    ("Axis", frozenset({"trandate", "particulars"})),
    ("Axis", frozenset({"chqno", "particulars"})),
)
BANNERS = (
    ("HDFC", re.compile(r"\bHDFC\s+BANK\b", re.I)),
    ("ICICI", re.compile(r"\bICICI\s+BANK\b", re.I)),
    ("SBI", re.compile(r"\bSTATE\s+BANK\s+OF\s+INDIA\b|\bSBI\b", re.I)),
    ("Axis", re.compile(r"\bAXIS\s+BANK\b", re.I)),
    ("Kotak", re.compile(r"\bKOTAK\s+MAHINDRA\b", re.I)),
)
HEADER_SEARCH_RECORDS = 200
DELIMITERS = (",", "\t", ";", "|")
_SEPARATOR = re.compile(r"^[*\-=_~.#\s]+$")
_DATE_LIKE = re.compile(r"^\d{1,4}[/\-. ]+(\d{1,2}|[A-Za-z]{3,9})[/\-. ,]+\d{2,4}")
# A line that only numbers the printed page: 'Page 2 of 5', 'Page No .: 2', 'PAGE 3/7'.
_PAGE_NUMBER = re.compile(r"^page(\s*no)?[\s.:#-]*\d+(\s*(of|/)\s*\d+)?$", re.I)
_SUFFIX = re.compile(r"\s*\(?(?<![a-z])(cr|dr)\.?\)?\s*$", re.I)
CREDIT_WORDS = frozenset({"cr", "c", "credit", "deposit"})
DEBIT_WORDS = frozenset({"dr", "d", "debit", "withdrawal"})
# An Excel text formula as a CSV cell: ="12345" (quotes inside doubled).
_FORMULA_TEXT = re.compile(r'^\s*="(.*)"\s*$', re.S)
NO_HEADER_MESSAGE = (
    "no recognisable header row: expected a date column and a credit/amount column named as "
    "in HDFC, ICICI, SBI, Axis or Kotak exports (e.g. Date, Narration, Chq./Ref.No., Value Dt, "
    "Withdrawal Amt., Deposit Amt., Closing Balance), or a column mapping saved for this header "
    "(Data page, or `python -m core bank-mapping save`)"
)
Record = tuple[int, list[str]]


def unwrap_cell(cell: str) -> str:
    """'="00123"' -> '00123' (Kotak writes every cell so); any other cell as it is."""
    match = _FORMULA_TEXT.match(cell)
    return match.group(1).replace('""', '"') if match else cell


FIELD_OF: dict[str, str] = {header_key(a): f for f, names in ALIASES.items() for a in names}


@dataclass(frozen=True)
class BankHeader:
    """Where the header is and what each column means."""

    index: int  # position in the record list
    line: int
    delimiter: str
    fields: dict[str, int]  # field -> column position
    labels: dict[str, str]  # field -> header text as written
    keys: frozenset[str]
    mapping: BankMapping | None = None  # the saved mapping that read this header, if any


def _map_header(cells: list[str]) -> tuple[dict[str, int], dict[str, str]]:
    fields: dict[str, int] = {}
    labels: dict[str, str] = {}
    for position, cell in enumerate(cells):
        field = FIELD_OF.get(header_key(cell))
        if field and field not in fields:
            fields[field] = position
            labels[field] = cell.strip()
    if "txn_date" not in fields and "value_date" in fields:
        fields["txn_date"] = fields["value_date"]
        labels["txn_date"] = labels["value_date"]
    return fields, labels


def _quote_formula_cells(text: str, delimiter: str) -> str:
    """Kotak writes cells as unquoted text formulas, `="1,35,000.00"`, so the delimiter inside
    one would split it: each such cell (at the start of a field, up to the closing quote
    before the next delimiter or line end) becomes a quoted CSV cell, `"1,35,000.00"`.
    Doubled quotes inside stay doubled, which CSV reads as one. No line is added or removed."""
    if '="' not in text:
        return text
    d = re.escape(delimiter)
    pattern = re.compile(rf'(?:(?<={d})|(?<=^)|(?<=\n))="((?:[^"\r\n]|"")*)"(?={d}|\r|\n|$)')
    return pattern.sub(lambda m: f'"{m.group(1)}"', text)


def _records(text: str, delimiter: str) -> list[Record]:
    text = _quote_formula_cells(text, delimiter)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    records: list[Record] = []
    previous_end = 0
    for cells in reader:
        start = previous_end + 1
        previous_end = reader.line_num
        records.append((start, [unwrap_cell(c) for c in cells]))
    return records


def record_sets(
    file: str, data: bytes, *, refuse_long_cells: bool = True
) -> tuple[str, list[tuple[str, list[Record]]]]:
    """(format, [(delimiter, records), ...]) to try in order: one set for a sheet, one per
    delimiter for text. A cell longer than the csv module's default limit is refused
    whatever the delimiter (by column number: no header is known yet), unless the caller
    refuses it itself (`long_cells`)."""
    if is_sheet(file):
        sheet = read_sheet(file, data)
        records = [(line, [unwrap_cell(c) for c in cells]) for line, cells in sheet.rows]
        return file.rsplit(".", 1)[-1].lower(), [("", records)]
    text = decode_text(file, data)
    fmt = "txt" if file.lower().endswith(".txt") else "csv"
    sets = [(d, _records(text, d)) for d in DELIMITERS]
    if refuse_long_cells and (found := long_cells(file, sets, None)):
        raise ReadFailure(found)
    return fmt, sets


def long_cells(
    file: str,
    sets: list[tuple[str, list[Record]]],
    found: tuple[BankHeader, list[Record]] | None,
) -> list[Problem]:
    """Cells longer than the csv module's default limit, in any column (a statement's every
    cell is refused so). Below a header found, a cell is named as the header writes its
    column; otherwise by column number, in the delimiter's records that split the fewest."""
    if found is None:
        return min((oversize_cells(file, records) for _, records in sets), key=len)
    header, records = found
    cells = records[header.index][1]
    names = {position: cell.strip() for position, cell in enumerate(cells) if cell.strip()}
    return oversize_cells(file, records, names, header.line)


def _mapped_header(
    index: int, line: int, delimiter: str, cells: list[str], mapping: BankMapping
) -> BankHeader:
    positions = {header_key(c): i for i, c in reversed(list(enumerate(cells)))}
    fields: dict[str, int] = {}
    labels: dict[str, str] = {}
    for field, name in mapping.fields:
        fields[field] = positions[header_key(name)]
        labels[field] = cells[fields[field]].strip()
    if "txn_date" not in fields and "value_date" in fields:
        fields["txn_date"] = fields["value_date"]
        labels["txn_date"] = labels["value_date"]
    keys = frozenset(header_key(c) for c in cells)
    return BankHeader(index, line, delimiter, fields, labels, keys, mapping)


def find_header(
    sets: list[tuple[str, list[Record]]], mappings: Sequence[BankMapping] = ()
) -> tuple[BankHeader, list[Record]] | None:
    """The header row: one a saved mapping names exactly (its header signature), else the
    first row with a date column, a credit/amount column and three recognised columns."""
    by_signature = {m.signature: m for m in mappings}
    for delimiter, records in sets:
        for index, (line, cells) in enumerate(records[:HEADER_SEARCH_RECORDS]):
            mapping = by_signature.get(_header_keys(cells)) if by_signature else None
            if mapping is not None:
                return _mapped_header(index, line, delimiter, cells, mapping), records
            fields, labels = _map_header(cells)
            has_amount = "credit" in fields or "amount" in fields
            if "txn_date" in fields and has_amount and len(fields) >= 3:
                keys = frozenset(header_key(c) for c in cells)
                return BankHeader(index, line, delimiter, fields, labels, keys), records
    return None


def mapping_layout(mapping: BankMapping) -> str:
    """The layout name a file read through a saved mapping reports."""
    return f"saved mapping {mapping.name!r} v{mapping.version}"


def detect_layout(header: BankHeader, banner: str) -> str:
    if header.mapping is not None:
        return mapping_layout(header.mapping)
    for name, signature in LAYOUTS:
        if signature <= header.keys:
            return name
    for name, pattern in BANNERS:
        if pattern.search(banner):
            return name
    return "generic"


def _cell(cells: list[str], position: int | None) -> str:
    if position is None or position >= len(cells):
        return ""
    return cells[position].strip()


def _is_separator(cells: list[str]) -> bool:
    filled = [c for c in cells if c.strip()]
    return bool(filled) and all(_SEPARATOR.match(c) for c in filled)


def _header_keys(cells: list[str]) -> tuple[str, ...]:
    return header_signature(cells)


def _is_page_number(cells: list[str]) -> bool:
    return bool(_PAGE_NUMBER.match(" ".join(c.strip() for c in cells if c.strip())))


def _near_header_problem(
    file: str, line: int, cells: list[str], header: BankHeader, header_cells: list[str]
) -> Problem | None:
    """A line that repeats most of the header but not all of it, named at its first differing
    cell; None when the line does not look like the header."""
    keys = _header_keys(cells)
    expected = _header_keys(header_cells)
    same = sum(1 for a, b in zip(keys, expected, strict=False) if a and a == b)
    if same < 2 or 2 * same < sum(1 for b in expected if b):
        return None
    width = max(len(keys), len(expected))
    differing = [
        i
        for i in range(width)
        if (keys[i] if i < len(keys) else "") != (expected[i] if i < len(expected) else "")
    ]
    if not differing:
        return None
    position = differing[0]
    found = _cell(cells, position)
    wanted = _cell(header_cells, position)
    column = wanted or str(position + 1)
    if not wanted:
        detail = f"an extra cell {found!r}"
    elif not found:
        detail = f"an empty cell where the header has {wanted!r}"
    else:
        detail = f"{found!r} where the header has {wanted!r}"
    more = f" (and {len(differing) - 1} more differing cell(s))" if len(differing) > 1 else ""
    message = (
        f"not a transaction: repeats the header of line {header.line} but has {detail}{more}; "
        "only an exact repeat of the header is skipped"
    )
    return Problem(file, line, column, message)


def _line_list(lines: list[int], limit: int = 10) -> str:
    shown = ", ".join(str(n) for n in lines[:limit])
    return shown + (f" and {len(lines) - limit} more" if len(lines) > limit else "")


def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _split_suffix(values: list[str]) -> tuple[list[str], list[str]]:
    """'1,000.00 Cr' -> ('1,000.00', 'cr'); no suffix -> ''."""
    amounts: list[str] = []
    marks: list[str] = []
    for value in values:
        match = _SUFFIX.search(value)
        if match and match.start() > 0:
            amounts.append(value[: match.start()].strip())
            marks.append(match.group(1).lower())
        else:
            amounts.append(value)
            marks.append("")
    return amounts, marks


def _strings(values: list[str]) -> pa.Array:
    return convert.clean_strings(pa.array(values, type=pa.string()))


def _iso_dates(days: np.ndarray[Any, Any]) -> list[str]:
    return [str(d) for d in days.astype("datetime64[D]")]


def parse_bank_statement(
    file: str, data: bytes, mappings: Sequence[BankMapping] = ()
) -> tuple[pd.DataFrame, FileReport, list[Problem]]:
    """Parse one bank statement (CSV, text, XLSX or XLS by its name). `mappings`: the saved
    column mappings; one whose header signature a row matches reads the file. Problems are
    returned (all of them), not raised; a file that cannot be read at all raises ReadFailure."""
    fmt, sets = record_sets(file, data, refuse_long_cells=False)
    found = find_header(sets, mappings)
    too_long = long_cells(file, sets, found)
    if too_long:
        raise ReadFailure(too_long)
    if found is None:
        raise ReadFailure([Problem(file, 0, "", NO_HEADER_MESSAGE)])
    return parse_bank_records(file, fmt, found)


def repeated_fields(file: str, header: BankHeader, cells: list[str]) -> list[Problem]:
    """Header cells that name a field an earlier cell names (`Deposit Amt.` twice; `Credit`
    and `Deposit Amt.`): which of the two is meant cannot be known. One exception, read by
    the parser: a direction column right after the balance (Kotak's second `Dr / Cr`) is
    the balance's sign, not the amount's direction again. A header read through a saved
    mapping has none: the mapping names each field's column."""
    if header.mapping is not None:
        return []
    balance_sign = balance_sign_column(header.fields, cells)
    # With credit or debit columns the parser reads neither an amount nor a direction column
    # (a `Transaction Type` of NEFT/UPI beside a `Dr/Cr`): never read, twice or not.
    unread = {"amount", "direction"} if {"credit", "debit"} & set(header.fields) else set()
    first: dict[str, int] = {}
    problems: list[Problem] = []
    for position, cell in enumerate(cells):
        field = FIELD_OF.get(header_key(cell))
        if field is None or field in unread:
            continue  # a column the parser does not read: never read, twice or not
        if field == "direction" and position == balance_sign:
            continue
        if field not in first:
            first[field] = position
            continue
        at = first[field]
        problem = repeated_column(file, header.line, position, cell, at, cells[at], field)
        if header_key(cell) != header_key(cells[at]):  # a mapping can tell these two apart
            problem = dataclasses.replace(
                problem,
                message=f"{problem.message}; a column mapping saved for this header says which"
                " is which (`python -m core bank-mapping save`)",
            )
        problems.append(problem)
    return problems


def balance_sign_column(fields: dict[str, int], cells: Sequence[str]) -> int | None:
    """Kotak's second `Dr / Cr`: a direction column right after the balance, not the
    amount's direction column, gives the balance's sign. Its position, else None."""
    if "balance" not in fields:
        return None
    after = fields["balance"] + 1
    if after == fields.get("direction") or after >= len(cells):
        return None
    return after if FIELD_OF.get(header_key(cells[after])) == "direction" else None


def unread_columns(header: BankHeader, cells: Sequence[str]) -> tuple[str, ...]:
    """The header's named columns the parser does not read, as written: beside credit or
    debit columns an amount or direction column is not read; Kotak's second direction
    column (right after the balance) is, as the balance's sign."""
    fields = header.fields
    read = set(fields.values())
    if {"credit", "debit"} & set(fields):
        read -= {fields.get("amount"), fields.get("direction")}
    sign = balance_sign_column(fields, cells)
    if sign is not None:
        read.add(sign)
    return tuple(c.strip() for i, c in enumerate(cells) if c.strip() and i not in read)


def columns_not_read(ignored: Sequence[str]) -> str:
    """'columns not read: A, B', as a refusal or warning about a missing column names them."""
    return f"columns not read: {', '.join(ignored)}" if ignored else "no other column"


def no_direction_column(file: str, header: BankHeader, ignored: Sequence[str]) -> Problem:
    """A single amount column whose amounts carry no Cr/Dr mark or sign, with no column
    that says debit or credit: refused at the header, naming what was not read."""
    amount = header.labels["amount"]
    not_read = columns_not_read(ignored)
    return Problem(
        file,
        header.line,
        amount,
        f"cannot tell debit from credit in any row: {amount!r} has no Cr/Dr mark or sign and"
        f" no column says which ({not_read}); if one of these holds DR/CR, save a column"
        " mapping naming it `direction` (`python -m core bank-mapping save`)",
    )


def parse_bank_records(
    file: str, fmt: str, found: tuple[BankHeader, list[Record]]
) -> tuple[pd.DataFrame, FileReport, list[Problem]]:
    """The parser proper, from the header found and the file's records. A header that names
    a field twice raises ReadFailure (`repeated_fields`): nothing of the file is read."""
    header, records = found
    repeated = repeated_fields(file, header, records[header.index][1])
    if repeated:
        raise ReadFailure(repeated)
    banner = " ".join(" ".join(cells) for _, cells in records[: header.index])
    layout = detect_layout(header, banner)
    f = header.fields
    labels = header.labels
    problems: list[Problem] = []
    warnings: list[str] = []

    # Classify every record below the header.
    header_cells = records[header.index][1]
    ignored = unread_columns(header, header_cells)
    if "narration" not in f:
        # The Axis corporate layout's 'Transaction Particulars' went unread, silently: every
        # settlement whose UTR only its narration carries was missing from the bank.
        not_read = columns_not_read(ignored)
        warnings.append(
            f"no narration column ({not_read}): UTRs are read from the reference column"
            " alone, so a settlement credit whose UTR is in its narration will not match;"
            " if one of these is the narration, save a column mapping for this header"
            " (`python -m core bank-mapping save`)"
        )
    header_keys = _header_keys(header_cells)
    body = records[header.index + 1 :]
    kinds: list[str] = []  # 'txn', 'skip', 'header', 'page', 'text'
    for _, cells in body:
        date_text = _cell(cells, f["txn_date"])
        if not any(c.strip() for c in cells) or _is_separator(cells):
            kinds.append("skip")
        elif date_text and _DATE_LIKE.match(date_text):
            kinds.append("txn")
        elif _header_keys(cells) == header_keys:
            kinds.append("header")  # printed again at the top of each page
        elif _is_page_number(cells):
            kinds.append("page")
        else:
            kinds.append("text")
    txn_positions = [i for i, k in enumerate(kinds) if k == "txn"]
    first = txn_positions[0] if txn_positions else len(body)
    last = txn_positions[-1] if txn_positions else -1

    amount_fields = [k for k in ("credit", "debit", "amount") if k in f]
    rows: list[int] = []
    continuation: dict[int, list[str]] = {}
    skipped_outside: list[int] = []
    skipped_inside: list[int] = []
    repeated_headers: list[int] = []
    page_numbers: list[int] = []
    for i, ((line, cells), kind) in enumerate(zip(body, kinds, strict=True)):
        if kind == "txn":
            rows.append(i)
        elif kind == "header":
            repeated_headers.append(line)
        elif kind == "page":
            page_numbers.append(line)
        elif kind == "text":
            if not first < i < last:
                skipped_outside.append(line)
                continue
            date_text = _cell(cells, f["txn_date"])
            extra = _cell(cells, f.get("narration"))
            if any(_cell(cells, f[k]) for k in amount_fields):
                near_header = _near_header_problem(file, line, cells, header, header_cells)
                if near_header is not None:
                    problems.append(near_header)
                else:
                    message = (
                        f"unparsable date {date_text!r}" if date_text else "amount without a date"
                    )
                    problems.append(Problem(file, line, labels["txn_date"], message))
            elif extra and not date_text:
                # A narration that continues on its own line.
                continuation.setdefault(rows[-1], []).append(extra)
            else:
                skipped_inside.append(line)
    if repeated_headers:
        warnings.append(
            f"skipped {_counted(len(repeated_headers), 'repeated header line')}: "
            f"{_line_list(repeated_headers)}"
        )
    if page_numbers:
        warnings.append(
            f"skipped {_counted(len(page_numbers), 'page-number line')}: {_line_list(page_numbers)}"
        )
    if skipped_inside:
        warnings.append(
            f"skipped {_counted(len(skipped_inside), 'text line')} inside the table (no amount, "
            f"and not a narration continuation): {_line_list(skipped_inside)}"
        )
    if skipped_outside:
        shown = ", ".join(str(n) for n in skipped_outside[:5])
        more = f" and {len(skipped_outside) - 5} more" if len(skipped_outside) > 5 else ""
        warnings.append(
            f"skipped {len(skipped_outside)} non-transaction line(s) around the table "
            f"(lines {shown}{more})"
        )

    lines = [body[i][0] for i in rows]
    cells_of = [body[i][1] for i in rows]

    def column(field: str) -> list[str]:
        return [_cell(cells, f.get(field)) for cells in cells_of]

    narrations = column("narration")
    for position, i in enumerate(rows):
        if i in continuation:
            narrations[position] = " ".join([narrations[position], *continuation[i]])
    # A narration quoted over several lines reads as one line.
    narrations = [" ".join(text.split()) for text in narrations]
    # Banks write '-' for "no cheque/reference number".
    references = ["" if _SEPARATOR.match(ref) else ref for ref in column("reference")]

    def report_bad(field: str, bad: convert.BadCells) -> None:
        for row, message in zip(bad.rows.tolist(), bad.messages, strict=True):
            problems.append(Problem(file, lines[row], labels[field], message))

    dates = convert.parse_times(_strings(column("txn_date")), allow_unix=False)
    report_bad("txn_date", dates.bad)
    value_dates: list[str | None] = [None] * len(rows)
    if "value_date" in f and f["value_date"] != f["txn_date"]:
        parsed_values = convert.parse_times(_strings(column("value_date")), allow_unix=False)
        report_bad("value_date", parsed_values.bad)
        iso_values = _iso_dates(parsed_values.days)
        value_dates = [
            iso if ok else None for iso, ok in zip(iso_values, parsed_values.present, strict=True)
        ]

    n = len(rows)
    credit = np.zeros(n, dtype=np.int64)
    debit = np.zeros(n, dtype=np.int64)
    if "credit" in f or "debit" in f:
        for field, target in (("credit", credit), ("debit", debit)):
            if field not in f:
                continue
            amounts, _ = _split_suffix(column(field))
            parsed = convert.parse_rupees(_strings(amounts))
            report_bad(field, parsed.bad)
            target[:] = parsed.values
    else:
        amounts, marks = _split_suffix(column("amount"))
        signs = [a.startswith("-") for a in amounts]
        amounts = [a[1:] if s else a for a, s in zip(amounts, signs, strict=True)]
        parsed = convert.parse_rupees(_strings(amounts))
        report_bad("amount", parsed.bad)
        directions = (
            [d.lower().strip(". ") for d in column("direction")] if "direction" in f else [""] * n
        )
        undecided: list[int] = []
        for row in range(n):
            mark = marks[row] or directions[row]
            if mark in CREDIT_WORDS:
                credit[row] = parsed.values[row]
            elif mark in DEBIT_WORDS or signs[row]:
                debit[row] = parsed.values[row]
            elif parsed.present[row]:
                undecided.append(row)
        if undecided and "direction" not in f and len(undecided) == int(parsed.present.sum()):
            # No column says debit or credit and no amount carries a mark: one problem at the
            # header naming the columns not read, not the same line for every row.
            problems.append(no_direction_column(file, header, ignored))
        else:
            problems += [
                Problem(file, lines[row], labels["amount"], "cannot tell debit from credit")
                for row in undecided
            ]

    balance = pd.array([None] * n, dtype="Int64")
    if "balance" in f:
        raw_balance, marks = _split_suffix(column("balance"))
        after = balance_sign_column(f, header_cells)
        if after is not None:
            signs_after = [_cell(cells, after).lower().strip(". ") for cells in cells_of]
            marks = [
                m or ("dr" if s in DEBIT_WORDS else "")
                for m, s in zip(marks, signs_after, strict=True)
            ]
        negative = [b.startswith("-") or m == "dr" for b, m in zip(raw_balance, marks, strict=True)]
        unsigned = [b[1:] if b.startswith("-") else b for b in raw_balance]
        parsed = convert.parse_rupees(_strings(unsigned), ceiling=convert.MAX_BALANCE_PAISE)
        report_bad("balance", parsed.bad)
        signed = np.where(negative, -parsed.values, parsed.values)
        balance = pd.arrays.IntegerArray(signed.astype(np.int64), ~parsed.present)

    utrs = [extract_utr(nar, ref) for nar, ref in zip(narrations, references, strict=True)]
    frame = pd.DataFrame(
        {
            "id": [f"{file}:{line}" for line in lines],
            "file": [file] * n,
            "line_no": np.asarray(lines, dtype=np.int64),
            "txn_date": _iso_dates(dates.days),
            "value_date": value_dates,
            "narration": [x or None for x in narrations],
            "reference": [x or None for x in references],
            "utr": utrs,
            "debit": debit,
            "credit": credit,
            "balance": balance,
        }
    ).astype(BANK_COLUMNS)
    problems.sort(key=lambda p: p.line)
    report = FileReport(
        kind="bank_statement",
        file=file,
        fmt=fmt,
        rows=n,
        amount_unit="rupees",
        unit_reason="bank statements are in rupees",
        date_style=", ".join(
            convert.DATE_STYLES[s] for s in ("dmy", "dmy_time", "iso", "dmony") if s in dates.styles
        ),
        bank_layout=layout,
        ignored_columns=ignored,
        warnings=tuple(warnings),
    )
    return frame, report, problems


@dataclass(frozen=True)
class HeaderGuess:
    """The row that most likely heads an unrecognised statement: its line and cells."""

    file: str
    line: int
    cells: tuple[str, ...]


def header_row(file: str, data: bytes) -> HeaderGuess | None:
    """The statement's header row: the recognised one, else the best guess (below), else
    None. What a column mapping for this file is made from."""
    _, sets = record_sets(file, data)
    found = find_header(sets)
    if found is not None:
        header, records = found
        return HeaderGuess(file, header.line, tuple(c.strip() for c in records[header.index][1]))
    return unrecognised_header(file, data)


def unrecognised_header(
    file: str, data: bytes, mappings: Sequence[BankMapping] = ()
) -> HeaderGuess | None:
    """None when the statement's header is recognised (by name or a saved mapping); else the
    row a user should map: the first row of three or more non-empty cells, none of them a
    date, that a row holding a date follows, else the first
    row with the most non-empty cells. Raises ReadFailure when the file cannot be read."""
    _, sets = record_sets(file, data)
    if find_header(sets, mappings) is not None:
        return None
    best: HeaderGuess | None = None
    best_width = 0
    for _, records in sets:
        window = records[:HEADER_SEARCH_RECORDS]
        for position, (line, cells) in enumerate(window):
            filled = [c.strip() for c in cells if c.strip()]
            if len(filled) < 3 or any(_DATE_LIKE.match(c) for c in filled):
                continue
            following = next(
                (r for _, r in window[position + 1 :] if any(c.strip() for c in r)), []
            )
            if any(_DATE_LIKE.match(c.strip()) for c in following):
                return HeaderGuess(file, line, tuple(c.strip() for c in cells))
            if len(filled) > best_width:
                best, best_width = (
                    HeaderGuess(file, line, tuple(c.strip() for c in cells)),
                    len(filled),
                )
    return best
