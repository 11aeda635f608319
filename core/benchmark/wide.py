"""The wide layout (`generate --wide`): the API files with every column Razorpay's exports
carry, filled where Razorpay fills them, notes JSON and descriptions on every row.

The default benchmark writes the columns the engine reads plus a few; real exports are
wider (issue 16 measures speed on data as wide as Razorpay's). This rewrites the written
`payments.csv`, `refunds.csv` and `settlement_recon.csv` in place: it adds the Payments
entity's remaining fields (`invoice_id`, `card_id`, `vpa`, `customer_id`, `token_id`,
`error_source`, `error_step`, `error_reason`, `acquirer_data`; Razorpay API, Payments
Entity, https://razorpay.com/docs/api/payments/entity.md), the Refunds entity's
`acquirer_data`, `receipt`, `batch_id`, and fills the recon report's empty optional
columns (`posted_at`, `notes`, `order_receipt`, `upi_flow`, `card_issuer`, `card_type`).

Only columns the engine never reads are added or filled (descriptions, notes, ids of other
entities), and no value the engine reads changes: the labels hold as they are. Its random
draws come from a stream of their own (`[seed, WIDE_STREAM_KEY]`), so the default output
is byte for byte what it was.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from core.benchmark.files import PAYMENTS_FILE, RECON_FILE, REFUNDS_FILE, _write

WIDE_STREAM_KEY = 20_261_216
ALPHANUMERIC = np.frombuffer(
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", dtype=np.uint8
)
# The Payments entity's fields in the API's order (docs above); the money model's
# base_amount and settled_by stay where the generator put them.
PAYMENT_ORDER = (
    "id", "entity", "amount", "currency", "status", "order_id", "invoice_id", "international",
    "method", "amount_refunded", "refund_status", "captured", "description", "card_id", "bank",
    "wallet", "vpa", "email", "contact", "customer_id", "token_id", "notes", "fee", "tax",
    "error_code", "error_description", "error_source", "error_step", "error_reason",
    "acquirer_data", "base_amount", "settled_by", "created_at",
)  # fmt: skip
REFUND_ORDER = (
    "id", "entity", "amount", "currency", "payment_id", "notes", "receipt", "acquirer_data",
    "created_at", "batch_id", "status", "speed_processed", "speed_requested", "base_amount",
    "settled_by",
)  # fmt: skip
CITIES = ("Mumbai", "Bengaluru", "Delhi", "Pune", "Chennai", "Hyderabad", "Kolkata", "Jaipur")
PRODUCTS = ("Annual plan", "Groceries, delivery", "Course fee", "Spare parts", "Hotel, 2 nights")
UPI_HANDLES = ("okhdfcbank", "okicici", "ybl", "paytm", "axl", "ibl")
CARD_ISSUERS = ("HDFC", "ICIC", "SBIN", "UTIB", "KKBK")
REFUND_REASONS = ("customer request", "item out of stock", "duplicate order", "late delivery")


def _read(path: Path) -> pa.Table:
    """A written CSV with every cell as text (empty = null), so unchanged cells write back
    exactly as they were."""
    with path.open("rb") as stream:
        header = stream.readline().decode().rstrip("\n").split(",")
    return pa_csv.read_csv(
        path,
        parse_options=pa_csv.ParseOptions(newlines_in_values=True),
        convert_options=pa_csv.ConvertOptions(
            column_types={name: pa.string() for name in header},
            null_values=[""],
            strings_can_be_null=True,
        ),
    )


def _token(n: int, width: int, rng: np.random.Generator) -> pa.Array:
    """`n` random alphanumeric strings of `width` characters (Razorpay's id bodies)."""
    letters = ALPHANUMERIC[rng.integers(0, len(ALPHANUMERIC), (n, width))]
    return pa.array(np.ascontiguousarray(letters).view(f"S{width}").ravel()).cast(pa.string())


def _digits(n: int, low: int, high: int, rng: np.random.Generator) -> pa.Array:
    return pc.cast(pa.array(rng.integers(low, high, n)), pa.string())


def _pick(options: tuple[str, ...], n: int, rng: np.random.Generator) -> pa.Array:
    return pc.take(pa.array(options, type=pa.string()), pa.array(rng.integers(0, len(options), n)))


def _join(*parts: pa.Array | str) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


def _only(values: pa.Array, where: npt.NDArray[np.bool_]) -> pa.Array:
    """`values` where `where`, null elsewhere."""
    return pc.if_else(pa.array(where), values, pa.scalar(None, pa.string()))


def _fill(column: pa.ChunkedArray | pa.Array | None, values: pa.Array) -> pa.Array:
    """The column's own cells, `values` where it is empty (or the column is missing)."""
    if column is None:
        return values
    return pc.coalesce(column, values)


def _column(table: pa.Table, name: str) -> pa.ChunkedArray | None:
    return table.column(name) if name in table.column_names else None


def _ordered(columns: dict[str, pa.Array], order: tuple[str, ...]) -> pa.Table:
    names = [n for n in order if n in columns] + [n for n in columns if n not in order]
    return pa.table({n: columns[n] for n in names})


def _method_is(table: pa.Table, *methods: str) -> npt.NDArray[np.bool_]:
    method = _column(table, "method")
    if method is None:
        return np.zeros(table.num_rows, dtype=np.bool_)
    found = pc.is_in(method, value_set=pa.array(methods, type=pa.string()))
    return np.asarray(pc.fill_null(found, False).to_numpy(zero_copy_only=False), dtype=np.bool_)


def _widen_payments(path: Path, rng: np.random.Generator) -> None:
    table = _read(path)
    n = table.num_rows
    columns = {name: table.column(name) for name in table.column_names}
    card = _method_is(table, "card", "emi")
    upi = _method_is(table, "upi")
    status = columns["status"]
    failed = np.asarray(
        pc.fill_null(pc.equal(status, "failed"), False).to_numpy(zero_copy_only=False), np.bool_
    )
    customer = _digits(n, 10_000, 99_999, rng)  # the vpa's name
    order_ref = _digits(n, 100_000, 999_999, rng)
    columns["invoice_id"] = _fill(_column(table, "invoice_id"), _join("inv_", _token(n, 14, rng)))
    columns["description"] = _join(
        pc.fill_null(columns["description"], "Payment"), " - ", _pick(PRODUCTS, n, rng)
    )
    columns["card_id"] = _only(_join("card_", _token(n, 14, rng)), card)
    columns["vpa"] = _only(_join("customer", customer, "@", _pick(UPI_HANDLES, n, rng)), upi)
    columns["customer_id"] = _join("cust_", _token(n, 14, rng))
    columns["token_id"] = _only(_join("token_", _token(n, 14, rng)), card)
    columns["notes"] = _join(
        '{"order_ref": "ORD-', order_ref, '", "city": "', _pick(CITIES, n, rng), '"}'
    )
    columns["error_source"] = _only(_pick(("customer", "issuer_bank", "gateway"), n, rng), failed)
    columns["error_step"] = _only(
        _pick(("payment_authentication", "payment_authorization"), n, rng), failed
    )
    columns["error_reason"] = _only(
        _pick(("payment_cancelled", "incorrect_otp", "insufficient_funds"), n, rng), failed
    )
    rrn = _digits(n, 100_000_000_000, 999_999_999_999, rng)
    columns["acquirer_data"] = pc.if_else(
        pa.array(card),
        _join('{"auth_code": "', _digits(n, 100_000, 999_999, rng), '"}'),
        pc.if_else(
            pa.array(upi),
            _join('{"rrn": "', rrn, '"}'),
            _join('{"bank_transaction_id": "', rrn, '"}'),
        ),
    )
    _write(_ordered(columns, PAYMENT_ORDER), path)


def _widen_refunds(path: Path, rng: np.random.Generator) -> None:
    table = _read(path)
    n = table.num_rows
    columns = {name: table.column(name) for name in table.column_names}
    processed = np.asarray(
        pc.fill_null(pc.equal(columns["status"], "processed"), False).to_numpy(
            zero_copy_only=False
        ),
        np.bool_,
    )
    columns["notes"] = _join('{"reason": "', _pick(REFUND_REASONS, n, rng), '"}')
    columns["receipt"] = _fill(
        _column(table, "receipt"), _join("Receipt No. ", _digits(n, 1_000, 99_999, rng))
    )
    columns["acquirer_data"] = _only(_join('{"arn": "7', _token(n, 14, rng), '"}'), processed)
    columns["batch_id"] = _fill(_column(table, "batch_id"), _join("batch_", _token(n, 14, rng)))
    _write(_ordered(columns, REFUND_ORDER), path)


def _widen_recon(path: Path, rng: np.random.Generator) -> None:
    table = _read(path)
    n = table.num_rows
    columns = {name: table.column(name) for name in table.column_names}
    card = _method_is(table, "card", "emi")
    upi = _method_is(table, "upi")
    columns["description"] = _fill(_column(table, "description"), _pick(PRODUCTS, n, rng))
    if "posted_at" in columns and "settled_at" in columns:
        columns["posted_at"] = _fill(columns["posted_at"], columns["settled_at"])
    columns["notes"] = _fill(
        _column(table, "notes"),
        _join('{"ref": "', _digits(n, 100_000, 999_999, rng), '"}'),
    )
    if "order_receipt" in columns and "order_id" in columns:
        has_order = np.asarray(
            pc.is_valid(columns["order_id"]).to_numpy(zero_copy_only=False), np.bool_
        )
        receipt = _only(_join("rcpt_", _digits(n, 100_000, 999_999, rng)), has_order)
        columns["order_receipt"] = _fill(columns["order_receipt"], receipt)
    if "upi_flow" in columns:
        flow = _only(_pick(("collect", "intent"), n, rng), upi)
        columns["upi_flow"] = _fill(columns["upi_flow"], flow)
    for name, options in (("card_issuer", CARD_ISSUERS), ("card_type", ("credit", "debit"))):
        if name in columns:
            columns[name] = _fill(columns[name], _only(_pick(options, n, rng), card))
    _write(pa.table(columns), path)


def widen(out_dir: Path, seed: int) -> None:
    """Rewrite the API files in `out_dir` in the wide layout (see the module text)."""
    rng = np.random.default_rng([seed, WIDE_STREAM_KEY])
    _widen_payments(out_dir / PAYMENTS_FILE, rng)
    _widen_refunds(out_dir / REFUNDS_FILE, rng)
    _widen_recon(out_dir / RECON_FILE, rng)
