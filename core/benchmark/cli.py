"""`python -m core generate OUT_DIR [--payments 5000] [--seed 42] [--as-of ISO]`."""

from __future__ import annotations

import argparse

from core.cli_types import bounded_int
from core.errors import ConfigError


def payments_count(text: str) -> int:
    """An argparse type: a number of payments within the generator's bounds."""
    from core.benchmark.world import MAX_PAYMENTS, MIN_PAYMENTS

    return bounded_int(MIN_PAYMENTS, MAX_PAYMENTS, "payments")(text)


seed_number = bounded_int(0, None)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="write a seeded benchmark dataset and its ground truth",
        description=(
            "Write a Razorpay-shaped benchmark dataset (payments, refunds, settlements, "
            "settlement_recon, HDFC bank statement) into OUT_DIR, with the expected outcome "
            "of every entity in OUT_DIR/ground_truth.csv. The same arguments always give the "
            "same bytes."
        ),
    )
    parser.add_argument("out_dir", metavar="OUT_DIR", help="folder to write (created if missing)")
    parser.add_argument(
        "--payments", type=int, default=5000, help="number of payments (default 5000)"
    )
    parser.add_argument("--seed", type=seed_number, default=42, help="random seed (default 42)")
    parser.add_argument(
        "--as-of",
        default=None,
        metavar="ISO",
        help="the instant the data ends (default 2026-06-30T23:59:59+05:30; no offset = IST)",
    )
    parser.add_argument("--no-faults", action="store_true", help="plant no faults")
    parser.add_argument("--no-bank-statement", action="store_true", help="write no bank statement")
    parser.add_argument(
        "--money-model",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=(
            "also plant Razorpay's money model beyond the spec: international payments and "
            "refunds, settled_by others, released holds, disputes, Route transfers, instant "
            "settlements (default on; --no-money-model gives the spec-only benchmark)"
        ),
    )
    parser.add_argument(
        "--layout",
        choices=("api", "dashboard", "dashboard-xlsx"),
        default="api",
        help=(
            "api: API field names, paise, Unix seconds (default); dashboard: Razorpay "
            "Dashboard reports (rupees, dd/mm/YYYY HH:MM:SS IST, display headers); "
            "dashboard-xlsx: the same as .xlsx workbooks"
        ),
    )
    parser.add_argument(
        "--wide",
        action="store_true",
        help=(
            "API layout with every column Razorpay's exports carry, filled (notes JSON and "
            "descriptions on every row): as wide as real exports, for speed measurements"
        ),
    )
    parser.add_argument(
        "--chunks",
        type=bounded_int(1, 1000),
        default=1,
        help="write the payments as this many generated quarters of history appended into "
        "one folder (for sizes the generator cannot hold at once, e.g. 10M; no ground truth; "
        "core/benchmark/chunked.py)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.benchmark import generate
    from core.benchmark.world import MAX_PAYMENTS

    if args.payments > MAX_PAYMENTS:  # chunks too: generate() checks each piece alone
        raise ConfigError(f"at most {MAX_PAYMENTS:,} payments")

    if args.chunks > 1:
        if args.wide:
            raise ConfigError("--wide and --chunks cannot be combined yet; choose one")
        return _run_chunked(args)

    try:
        result = generate(
            args.out_dir,
            payments=args.payments,
            seed=args.seed,
            as_of=args.as_of,
            faults=not args.no_faults,
            bank_statement=not args.no_bank_statement,
            money_model=args.money_model,
            layout=args.layout,
            wide=args.wide,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    print(f"wrote {result.out_dir} in {result.seconds:.2f} s")
    print(f"  payments {result.payments}, seed {result.seed}, as of {result.as_of_iso}")
    for name in result.files:
        print(f"  {name:<22} {result.counts[name]:>10,} rows")
    print(
        f"  {result.ground_truth.name:<22} {result.counts['labels']:>10,} labels "
        f"({result.counts['labels_held_out']:,} held out)"
    )
    print(f"  fingerprint {result.fingerprint}")
    return 0


def _run_chunked(args: argparse.Namespace) -> int:
    from pathlib import Path

    from core.benchmark.chunked import generate_chunked
    from core.benchmark.generator import DEFAULT_AS_OF

    def report(done: int, total: int) -> None:
        print(f"chunk {done}/{total} written", flush=True)

    generate_chunked(
        Path(args.out_dir),
        args.payments,
        chunks=args.chunks,
        seed=args.seed,
        as_of=args.as_of or DEFAULT_AS_OF,
        progress=report,
    )
    print(f"wrote {args.payments:,} payments in {args.chunks} chunks to {args.out_dir}")
    return 0
