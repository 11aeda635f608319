"""A Razorpay sync under rate limiting, in simulated time (prints; asserts nothing).

`python -m benchmarks.sync_ratelimit [--payments 2500] [--latency 0.25] [--limit 5]
[--rate-step 0.1]`
runs the real sync (real SDK, real SQLite, the stand-in of tests/fake_razorpay.py on
127.0.0.1) with a simulated clock: every request costs `--latency` simulated seconds and
every wait of the pacer or the backoff is added instead of slept. Two stand-ins:

1. issue 16's: 429 to one request in 7 and 502 to one in 23 (by request counter), serving a
   generated merchant's quarter of `--payments` payments; synced with the fixed budget of
   30 shared by 429s and 5xx (before issue 16) and with the default policy;
2. a token bucket of `--limit` requests per second (bursts of 2x that), 125 empty days (one
   request per resource a day), no Retry-After; unpaced (429s retried after backoff only,
   pacer off) and paced.

Printed per run: requests, 429s, other retries, simulated seconds (latency + waits), of
which pacing and backoff, the achieved rate, wall and CPU seconds of this process.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import tempfile
import time
from pathlib import Path

from core.benchmark import generate
from core.db import connect, migrate
from core.razorpay.client import RESOURCES
from core.razorpay.config import RazorpaySettings, RetryPolicy
from core.razorpay.errors import RazorpayUnavailableError
from core.razorpay.sync import sync
from tests.fake_razorpay import KEY_ID, KEY_SECRET, FakeRazorpay, TokenBucket

QUARTER_FROM, QUARTER_TO = dt.date(2026, 4, 1), dt.date(2026, 6, 30)
TODAY = dt.date(2026, 7, 15)


class SimulatedClock:
    def __init__(self) -> None:
        self.now = 1_780_000_000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def run(
    label: str,
    workdir: Path,
    fake: FakeRazorpay,
    policy: RetryPolicy,
    clock: SimulatedClock,
    latency: float,
    days: tuple[dt.date, dt.date],
) -> None:
    fake.state.log.clear()
    fake.state.on_request = lambda _: clock.sleep(latency)
    path = workdir / f"{label.replace(' ', '_')}.sqlite"
    conn = connect(path)
    migrate(conn)
    settings = RazorpaySettings(KEY_ID, KEY_SECRET, base_url=fake.base_url, retry=policy)
    start, wall, cpu = clock.now, time.perf_counter(), cpu_seconds()
    outcome, waits = "completed", "waits unknown"
    try:
        report = sync(
            conn,
            settings,
            *days,
            today=TODAY,
            sleep=clock.sleep,
            rng=random.Random(16),
            clock=clock.monotonic,
            wall_clock=lambda: clock.now,
        )
        waits = f"pacing {report.paced_seconds:.1f}, backoff {report.backoff_seconds:.1f}"
    except RazorpayUnavailableError as exc:
        outcome = "STOPPED: " + str(exc).split(": ", 1)[1][:110]
    finally:
        conn.close()
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    statuses = [r.status for r in fake.state.log]
    simulated = clock.now - start
    limited = statuses.count(429)
    others = sum(1 for s in statuses if s >= 500 or s == 0)
    print(
        f"  {label:<34} {len(statuses):>6} req {limited:>5} x429 {others:>4} x5xx "
        f"{simulated:>8.1f} sim s ({waits}) "
        f"{len(statuses) / simulated:>5.2f} req/s | {wall:.1f} s wall {cpu:.1f} s CPU"
    )
    print(f"  {'':<34} {outcome}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--payments", type=int, default=2_500)
    parser.add_argument("--latency", type=float, default=0.25, help="simulated s per request")
    parser.add_argument("--limit", type=float, default=5.0, help="token bucket, requests/s")
    parser.add_argument(
        "--rate-step", type=float, default=RetryPolicy().rate_step, help="RAZORPAY_RATE_STEP"
    )
    args = parser.parse_args()
    paced = RetryPolicy(rate_step=args.rate_step)
    unpaced = RetryPolicy(rate_step=1e9)  # recovers to unpaced speed on the next answer
    # before issue 16: one fixed budget for 429s and 5xx, no pacing
    fixed = RetryPolicy(budget=30, budget_share=0.0, shared_budget=True, rate_step=1e9)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        generate(workdir / "merchant", payments=args.payments, seed=16, faults=False,
                 money_model=False)  # fmt: skip
        print(
            f"1. issue 16: 429 every 7th, 502 every 23rd request; {args.payments} payments, "
            f"{(QUARTER_TO - QUARTER_FROM).days + 1} days, {args.latency} s per request"
        )
        for label, policy in (("fixed budget of 30 (before)", fixed), ("default policy", paced)):
            with FakeRazorpay() as fake:
                fake.load_dataset(workdir / "merchant")
                fake.state.rate_limit_every, fake.state.error_every = 7, 23
                run(label, workdir, fake, policy, SimulatedClock(),
                    args.latency, (QUARTER_FROM, QUARTER_TO))  # fmt: skip
        latency = min(args.latency, 0.5 / args.limit)  # so the limit, not latency, binds
        print(
            f"2. token bucket: {args.limit:g} requests/s, bursts of {2 * args.limit:g}, no "
            f"Retry-After; 125 days x {len(RESOURCES)} resources, empty; {latency:g} s per request "
            f"(natural {1 / latency:g} requests/s)"
        )
        for label, policy in (
            ("unpaced, backoff only", unpaced),
            ("paced (default policy)", paced),
        ):
            clock = SimulatedClock()
            with FakeRazorpay() as fake:
                fake.state.admit = TokenBucket(args.limit, 2 * args.limit, clock.monotonic)
                first = QUARTER_FROM
                run(label, workdir, fake, policy, clock, latency,
                    (first, first + dt.timedelta(days=124)))  # fmt: skip


if __name__ == "__main__":
    main()
