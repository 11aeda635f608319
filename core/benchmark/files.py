"""Writing the generated entities as Razorpay-shaped CSV files (spec section 2).

API-shaped files hold integer paise and Unix-second timestamps; column names are the API's
field names, in the order Razorpay's exports use. Arrow's CSV writer does the heavy lifting
so a million rows take a fraction of a second.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.benchmark.world import (
    METHODS,
    STATUS_NAMES,
    Calendar,
    Payments,
    Refunds,
    Settlements,
)

PAYMENTS_FILE = "payments.csv"
REFUNDS_FILE = "refunds.csv"
SETTLEMENTS_FILE = "settlements.csv"
RECON_FILE = "settlement_recon.csv"
DESCRIPTIONS = ("Order payment", "Subscription renewal", "Café order ☕", 'Bulk order, "urgent"')
NOTES = ('{"source": "web"}', '{"source": "app"}', "[]", "{}")
BANKS = ("HDFC", "ICIC", "SBIN", "UTIB", "KKBK")
WALLETS = ("paytm", "phonepe", "amazonpay", "mobikwik")
CARD_NETWORKS = ("Visa", "MasterCard", "RuPay")
CHUNK_ROWS = 250_000


def text(values: npt.NDArray[np.bytes_]) -> pa.Array:
    """Fixed-width ASCII bytes to an Arrow string column; b"" becomes null."""
    array = pa.array(values, type=pa.binary(), mask=values == b"")
    return array.cast(pa.string())


def pick(
    options: tuple[str, ...],
    index: npt.NDArray[np.int64],
    mask: npt.NDArray[np.bool_] | None = None,
) -> pa.Array:
    """options[index] as an Arrow string column, null where mask is True."""
    array = pa.array(index, mask=mask)
    return pc.take(pa.array(options, type=pa.string()), array)


def integers(values: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_] | None = None) -> pa.Array:
    return pa.array(values, type=pa.int64(), mask=mask)


def nulls(n: int) -> pa.Array:
    return pa.nulls(n, type=pa.string())


def _cells(column: pa.Array) -> pa.Array:
    """A column as CSV cell text: quoted only when the value needs it (RFC 4180)."""
    if pa.types.is_large_string(column.type):
        column = pc.cast(column, pa.string())
    if not pa.types.is_string(column.type):
        return pc.cast(column, pa.string())  # ints as digits, booleans as true/false
    needs = pc.match_substring_regex(column, '[",\r\n]')
    if not pc.any(needs).as_py():
        return column
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(column, '"', '""'), '"', "")
    return pc.if_else(needs, quoted, column)


def _write(table: pa.Table, path: Path) -> None:
    """Write `table` as CSV the way exports look: a plain header, quotes only where a value
    needs them, empty for null, LF line ends. Arrow's own writer quotes every string, which
    makes the file slower to parse; this builds the lines with vectorised string kernels.
    """
    with open(path, "wb") as handle:
        handle.write((",".join(table.column_names) + "\n").encode())
        for start in range(0, table.num_rows, CHUNK_ROWS):
            part = table.slice(start, CHUNK_ROWS)
            cells = [_cells(part.column(i).combine_chunks()) for i in range(part.num_columns)]
            lines = pc.binary_join_element_wise(
                *cells, ",", null_handling="replace", null_replacement=""
            )
            lines = pc.binary_join_element_wise(lines, "\n", "")
            _, offsets, data = lines.buffers()
            bounds = np.frombuffer(offsets, dtype=np.int32)[
                lines.offset : lines.offset + len(lines) + 1
            ]
            handle.write(memoryview(data)[int(bounds[0]) : int(bounds[-1])])


def write_frame(frame: pd.DataFrame, path: Path) -> None:
    """A DataFrame of strings as CSV, quoted only where needed."""
    _write(pa.Table.from_pandas(frame.astype(str), preserve_index=False), path)


def _with_money_columns(
    columns: dict[str, pa.Array], n: int, *, before: str = "created_at"
) -> dict[str, pa.Array]:
    """The API columns plus `base_amount` and `settled_by` (null for the world's own rows),
    placed before `before`."""
    out: dict[str, pa.Array] = {}
    for name, column in columns.items():
        if name == before:
            out["base_amount"] = pa.nulls(n, type=pa.int64())
            out["settled_by"] = nulls(n)
        out[name] = column
    return out


def _append(
    table: pa.Table, records: list[dict[str, object]], defaults: dict[str, object]
) -> pa.Table:
    """`table` with `records` (dicts of API fields; missing fields from `defaults`, else
    null) appended as rows of the same schema."""
    if not records:
        return table
    extra = pa.table(
        {
            field.name: pa.array(
                [r.get(field.name, defaults.get(field.name)) for r in records], type=field.type
            )
            for field in table.schema
        }
    )
    return pa.concat_tables([table, extra])


def write_records(records: list[dict[str, object]], columns: tuple[str, ...], path: Path) -> int:
    """Plain records (None = empty, booleans as true/false) as CSV with the given columns."""
    cells: dict[str, pa.Array] = {}
    for name in columns:
        values = [r.get(name) for r in records]
        text_values = [
            None if v is None else ("true" if v is True else "false" if v is False else str(v))
            for v in values
        ]
        cells[name] = pa.array(text_values, type=pa.string())
    _write(pa.table(cells), path)
    return len(records)


def write_payments(
    p: Payments,
    out_dir: Path,
    rng: np.random.Generator,
    extra: list[dict[str, object]] | None = None,
) -> int:
    n = len(p.id)
    captured = p.captured
    refunded = p.amount_refunded > 0
    refund_status = np.where(p.amount_refunded >= p.amount, 1, 0)
    failed = p.status == 2
    table = pa.table(
        {
            "id": text(p.id),
            "entity": pa.array(np.full(n, "payment")),
            "amount": integers(p.amount),
            "currency": pa.array(np.full(n, "INR")),
            "status": pick(STATUS_NAMES, p.status),
            "order_id": text(p.order_id),
            "invoice_id": nulls(n),
            "international": pa.array(p.international),
            "method": pick(METHODS, p.method),
            "amount_refunded": integers(p.amount_refunded),
            "refund_status": pick(("partial", "full"), refund_status, ~refunded),
            "captured": pa.array(captured),
            "description": pick(DESCRIPTIONS, rng.integers(0, len(DESCRIPTIONS), n)),
            "bank": pick(BANKS, rng.integers(0, len(BANKS), n), p.method != 2),
            "wallet": pick(WALLETS, rng.integers(0, len(WALLETS), n), p.method != 3),
            "email": pc.binary_join_element_wise(
                "customer",
                pa.array(rng.integers(1, 50_000, n)).cast(pa.string()),
                "@example.com",
                "",
            ),
            "contact": pc.binary_join_element_wise(
                "+9198", pa.array(rng.integers(10_000_000, 99_999_999, n)).cast(pa.string()), ""
            ),
            "notes": pick(NOTES, rng.integers(0, len(NOTES), n)),
            "fee": integers(p.fee, ~captured),
            "tax": integers(p.tax, ~captured),
            "error_code": pick(("BAD_REQUEST_ERROR",), np.zeros(n, dtype=np.int64), ~failed),
            "error_description": pick(
                ("Payment failed because the bank declined it",),
                np.zeros(n, dtype=np.int64),
                ~failed,
            ),
            "created_at": integers(p.created_at),
        }
    )
    if extra is not None:
        columns = dict(zip(table.column_names, table.columns, strict=True))
        table = pa.table(_with_money_columns(columns, n))
        defaults = {
            "entity": "payment",
            "captured": True,
            "description": DESCRIPTIONS[0],
            "email": "customer.intl@example.com",
            "contact": "+919800000000",
            "notes": "{}",
        }
        for record in extra:
            record.setdefault("refund_status", "partial" if record.get("amount_refunded") else None)
        table = _append(table, extra, defaults)
    _write(table, out_dir / PAYMENTS_FILE)
    return int(table.num_rows)


def write_refunds(
    r: Refunds, p: Payments, out_dir: Path, extra: list[dict[str, object]] | None = None
) -> int:
    n = len(r.id)
    table = pa.table(
        {
            "id": text(r.id),
            "entity": pa.array(np.full(n, "refund")),
            "amount": integers(r.amount),
            "currency": pa.array(np.full(n, "INR")),
            "payment_id": text(p.id[r.payment]),
            "notes": pa.array(np.full(n, "{}")),
            "receipt": nulls(n),
            "created_at": integers(r.created_at),
            "batch_id": nulls(n),
            "status": pa.array(r.status.astype(str)),
            "speed_requested": pa.array(r.speed.astype(str)),
            "speed_processed": pa.array(r.speed.astype(str)),
        }
    )
    if extra is not None:
        columns = dict(zip(table.column_names, table.columns, strict=True))
        columns["base_amount"] = pa.nulls(n, type=pa.int64())
        columns["settled_by"] = nulls(n)
        table = _append(
            pa.table(columns),
            extra,
            {
                "entity": "refund",
                "notes": "{}",
                "speed_requested": "normal",
                "speed_processed": "normal",
            },
        )
    _write(table, out_dir / REFUNDS_FILE)
    return int(table.num_rows)


def write_settlements(s: Settlements, out_dir: Path) -> int:
    n = len(s.id)
    table = pa.table(
        {
            "id": text(s.id),
            "entity": pa.array(np.full(n, "settlement")),
            "amount": integers(s.amount),
            "status": pa.array(s.status.astype(str)),
            "fees": integers(s.fees),
            "tax": integers(s.tax),
            "utr": text(s.utr),
            "created_at": integers(s.created_at),
        }
    )
    _write(table, out_dir / SETTLEMENTS_FILE)
    return n


def write_recon(
    rows: dict[str, np.ndarray],
    s: Settlements,
    calendar: Calendar,
    out_dir: Path,
    rng: np.random.Generator,
) -> int:
    key = rows["key"]
    n = len(key)
    inside = key >= 0
    where = s.index_of_key(np.where(inside, key, s.key[0]))
    settled_at = np.where(inside, calendar.cycle_time[np.maximum(key, 0)], rows["settled_at"])
    anchor = np.where(settled_at >= 0, settled_at, calendar.as_of)
    created_at = np.where(
        rows["created_at"] > 0, rows["created_at"], anchor - rng.integers(3600, 20 * 3600, n)
    )
    settlement_id = np.where(inside, s.id[where], rows["unknown_settlement"])
    settlement_utr = np.where(inside, s.utr[where], b"")
    order = np.lexsort(
        (rows["entity_id"], created_at, np.where(inside, settled_at, np.iinfo(np.int64).max))
    )
    card = rows["method"] == b"card"

    def col(values: np.ndarray) -> np.ndarray:
        return values[order]

    table = pa.table(
        {
            "entity_id": text(col(rows["entity_id"])),
            "type": text(col(rows["type"])),
            "debit": integers(col(rows["debit"])),
            "credit": integers(col(rows["credit"])),
            "amount": integers(col(rows["amount"])),
            "currency": pa.array(np.full(n, "INR")),
            "fee": integers(col(rows["fee"])),
            "tax": integers(col(rows["tax"])),
            "on_hold": pa.array(col(rows["on_hold"])),
            "settled": pa.array(col(rows["settled"])),
            "created_at": integers(col(created_at)),
            "settled_at": integers(col(settled_at), col(settled_at) < 0),
            "settlement_id": text(col(settlement_id)),
            "posted_at": nulls(n),
            "credit_type": pa.array(np.full(n, "default")),
            "description": text(col(rows["description"])),
            "notes": nulls(n),
            "payment_id": text(col(rows["payment_id"])),
            "settlement_utr": text(col(settlement_utr)),
            "order_id": text(col(rows["order_id"])),
            "order_receipt": nulls(n),
            "method": text(col(rows["method"])),
            "upi_flow": nulls(n),
            "card_network": pick(CARD_NETWORKS, rng.integers(0, 3, n), ~col(card)),
            "card_issuer": nulls(n),
            "card_type": nulls(n),
            "dispute_id": text(col(rows["dispute_id"])),
        }
    )
    if "transfer_id" in rows:  # the money model's columns
        table = table.append_column("transfer_id", text(col(rows["transfer_id"])))
        table = table.append_column("settled_by", text(col(rows["settled_by"])))
    _write(table, out_dir / RECON_FILE)
    return n
