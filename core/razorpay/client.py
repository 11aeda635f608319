"""The seven read calls the sync makes, through the official `razorpay` SDK.

`RazorpayReader` exposes list calls only; it holds the SDK client privately and hands it a
`RetryingSession`, which refuses anything but GET. Pagination is done here: `from`/`to`/
`count`/`skip` with 100 per page for payments, refunds, settlements, instant settlements,
disputes and transfers; `year`/`month`/`day` with 1,000 per page for the settlement recon
report (`GET /v1/settlements/recon/combined`, the SDK's `settlement.report`).

Two lists are asked to expand a nested object (docs/razorpay.md, "Sync"): payments with
`expand[]=card` (without it Razorpay leaves the `card` object out, and the pricing check
cannot tell a card's network and type), instant settlements with
`expand[]=ondemand_payouts` (their payouts, each paid to the bank under its own UTR).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import razorpay
import requests
from razorpay.errors import BadRequestError, GatewayError, ServerError

from core import __version__
from core.calendar import IST
from core.razorpay.config import RazorpaySettings
from core.razorpay.errors import RazorpayAPIError
from core.razorpay.http import RetryingSession

ENTITY_PAGE_SIZE = 100  # Razorpay's maximum `count` for the entity lists
RECON_PAGE_SIZE = 1000  # and for the settlement recon report
MAX_PAGES = 100_000  # a server that ignores `skip` must not loop us forever

RESOURCES: tuple[str, ...] = (
    "payments",
    "refunds",
    "settlements",
    "settlement_recon",
    "instant_settlements",
    "disputes",
    "transfers",
)
# The nested object each list is asked for (Razorpay's `expand[]` query parameter).
EXPAND: dict[str, str] = {"payments": "card", "instant_settlements": "ondemand_payouts"}

Item = dict[str, Any]


def _identity(item: Item) -> str:
    """What tells two listed items apart: the id, or the whole row for recon rows (which
    carry none of their own)."""
    key = item.get("id")
    if isinstance(key, str) and key:
        return key
    return json.dumps(item, sort_keys=True, separators=(",", ":"), default=str)


def ist_day_bounds(day: dt.date) -> tuple[int, int]:
    """Unix seconds of the first and last second of an IST calendar day (both inclusive)."""
    start = dt.datetime.combine(day, dt.time(0, 0), tzinfo=IST)
    return int(start.timestamp()), int(start.timestamp()) + 86_399


class RazorpayReader:
    """Read-only access to Razorpay: one method per synced resource, each returning every item
    for one IST day (all pages).
    """

    def __init__(self, settings: RazorpaySettings, session: RetryingSession) -> None:
        self.session = session
        self._client = razorpay.Client(
            session=session, auth=(settings.key_id, settings.key_secret), base_url=settings.base_url
        )
        self._client.set_app_details({"title": "RazorRecon", "version": __version__})

    def fetch_day(self, resource: str, day: dt.date) -> list[Item]:
        """Every item of `resource` for IST date `day`."""
        if resource == "settlement_recon":
            # As Razorpay writes them: year YYYY, month MM, day DD (its example: month=06).
            params: dict[str, Any] = {
                "year": f"{day.year:04d}",
                "month": f"{day.month:02d}",
                "day": f"{day.day:02d}",
            }
            return self._pages(
                self._client.settlement.report, params, RECON_PAGE_SIZE, f"{resource} of {day}"
            )
        start, end = ist_day_bounds(day)
        call: Callable[..., Any] = {
            "payments": self._client.payment.all,
            "refunds": self._client.refund.all,
            "settlements": self._client.settlement.all,
            "instant_settlements": self._client.settlement.fetch_all_ondemand_settlement,
            "disputes": self._client.dispute.all,
            "transfers": self._client.transfer.all,
        }[resource]
        params = {"from": start, "to": end}
        if resource in EXPAND:  # the SDK sends it in the query string: expand%5B%5D=card
            params["expand[]"] = EXPAND[resource]
        return self._pages(call, params, ENTITY_PAGE_SIZE, f"{resource} of {day}")

    def _pages(
        self, call: Callable[..., Any], params: dict[str, Any], size: int, listing: str
    ) -> list[Item]:
        """Every page of one listing (`listing` names it in errors: "payments of <day>").

        Refused, with RazorpayAPIError naming the listing and the page: a page holding more
        items than `count` asked for, and a listing whose pages keep answering items it
        listed already (a server that ignores `skip`): once the repeats add up to a page's
        worth, paging is not advancing. (A few repeats are normal: a page boundary that
        moved while paging; the sync keeps one of each.) Nothing of the day is stored then.
        """
        items: list[Item] = []
        seen: set[str] = set()
        repeats = 0
        for number in range(1, MAX_PAGES + 1):
            page = self._call(call, {**params, "count": size, "skip": len(items)})
            batch = page.get("items")
            if not isinstance(batch, list) or not all(isinstance(i, dict) for i in batch):
                raise RazorpayAPIError(f"unexpected answer from Razorpay: {str(page)[:200]}")
            where = f"{listing}, page {number} (skip={len(items)})"
            if len(batch) > size:
                raise RazorpayAPIError(
                    f"Razorpay's answer for {listing}, page {number}: {len(batch)} items for "
                    f"count={size}; refused, nothing of this day is stored"
                )
            keys = [_identity(item) for item in batch]
            repeats += sum(1 for key in keys if key in seen)
            if repeats >= size:
                raise RazorpayAPIError(
                    f"Razorpay's pagination is not advancing for {where}: its pages repeat "
                    f"{repeats} items already listed for this day; stopping, nothing of "
                    "this day is stored"
                )
            seen.update(keys)
            items.extend(batch)
            if len(batch) < size:
                return items
        raise RazorpayAPIError(f"more than {MAX_PAGES} pages for {listing}: stopping")

    @staticmethod
    def _call(call: Callable[..., Any], params: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = call(params)
        except (BadRequestError, GatewayError, ServerError) as exc:
            raise RazorpayAPIError(f"Razorpay refused the request: {exc}") from exc
        except requests.RequestException as exc:  # e.g. a 4xx whose body is not JSON
            raise RazorpayAPIError(f"unreadable answer from Razorpay: {exc}") from exc
        if not isinstance(answer, dict):
            raise RazorpayAPIError(f"unexpected answer from Razorpay: {str(answer)[:200]}")
        return answer
