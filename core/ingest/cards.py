"""A payment's card details from the Payments API's `card` object (docs/books.md section 3).

`GET /v1/payments/:id?expand[]=card` (and the list with `expand[]=card`) returns the card as
an object: `network` (Visa, MasterCard, RuPay, American Express, Diners Club, ...), `type`
(credit, debit, prepaid), `international`, `sub_type` (consumer, business), `issuer`. The
reader keeps the object as JSON text; here its four pricing fields become the Dataset's
card_* columns, each only where the file has no card_* column of its own for that row.
"""

from __future__ import annotations

import json

import pyarrow as pa

# Dataset column -> key of the `card` object.
CARD_FIELDS: dict[str, str] = {
    "card_network": "network",
    "card_type": "type",
    "card_international": "international",
    "card_sub_type": "sub_type",
}


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip()
    return text or None


def card_columns(card: pa.Array, columns: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """The card_* columns with the `card` object's values filled in where a row has none.
    A cell that is not a JSON object (empty, null, or a bare card id) gives nothing."""
    parsed: dict[str, dict[str, object]] = {}
    values = card.to_pylist()
    out: dict[str, list[str | None]] = {name: [] for name in CARD_FIELDS}
    for value in values:
        fields: dict[str, object] = {}
        if isinstance(value, str) and value.startswith("{"):
            fields = parsed.get(value, {})
            if value not in parsed:
                try:
                    loaded = json.loads(value)
                except ValueError:
                    loaded = {}
                fields = loaded if isinstance(loaded, dict) else {}
                parsed[value] = fields
        for name, key in CARD_FIELDS.items():
            out[name].append(_text(fields.get(key)))
    result: dict[str, pa.Array] = {}
    for name, derived in out.items():
        given = columns.get(name)
        if given is None:
            result[name] = pa.array(derived, type=pa.string())
            continue
        own = given.to_pylist()
        result[name] = pa.array(
            [o if o not in (None, "") else d for o, d in zip(own, derived, strict=True)],
            type=pa.string(),
        )
    return result
