"""Razorpay-shaped random identifiers and bank UTRs, generated a million at a time.

Ids are `<prefix>` + 14 base-62 characters, as Razorpay writes them (`pay_eGWUFu8wRUHPhL`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

ALPHABET = np.frombuffer(
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", dtype=np.uint8
)
DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)
ID_LENGTH = 14

# Strings are kept as fixed-width ASCII bytes: cheap to build, index and hand to Arrow.
StrArray = npt.NDArray[np.bytes_]


def _bytes_to_str(matrix: npt.NDArray[np.uint8]) -> StrArray:
    width = matrix.shape[1]
    result: StrArray = np.ascontiguousarray(matrix).view(f"S{width}").ravel()
    return result


class IdFactory:
    """Hands out ids and UTRs for one generated dataset.

    Random ids are not checked for clashes: 62**14 (about 1.2e25) possible ids make a clash
    among a few million practically impossible. UTRs live in a far smaller space, so every
    UTR and every fixed number printed in the bank statement is checked against the others.
    """

    def __init__(self, rng: np.random.Generator, taken: set[str] | None = None) -> None:
        self._rng = rng
        self._taken: set[str] = set() if taken is None else taken

    @property
    def taken(self) -> set[str]:
        """The UTRs and fixed numbers reserved so far (share it with another factory)."""
        return self._taken

    def ids(self, prefix: str, n: int) -> StrArray:
        """`n` new ids: `prefix` + 14 base-62 characters."""
        head = np.frombuffer(prefix.encode("ascii"), dtype=np.uint8)
        out = np.empty((n, len(head) + ID_LENGTH), dtype=np.uint8)
        out[:, : len(head)] = head
        out[:, len(head) :] = ALPHABET[self._rng.integers(0, 62, size=(n, ID_LENGTH))]
        return _bytes_to_str(out)

    def utrs(self, n: int, *, lettered: bool = False) -> StrArray:
        """`n` unique bank UTRs in the shapes Indian banks print for Razorpay settlements:
        AXISCN + 10 digits, KKBKH / HDFCN + 11 digits, or (unless `lettered`) 12 digits
        starting 4-9.
        """
        out: list[str] = []
        while len(out) < n:
            kind = int(self._rng.integers(0, 3 if lettered else 4))
            if kind == 0:
                text = "AXISCN" + self.digits(10)
            elif kind == 1:
                text = "KKBKH" + self.digits(11)
            elif kind == 2:
                text = "HDFCN" + self.digits(11)
            else:
                text = str(int(self._rng.integers(4, 10))) + self.digits(11)
            if self.take(text):
                out.append(text)
        return np.array([u.encode("ascii") for u in out], dtype="S16")

    def take(self, value: str) -> bool:
        """Reserve `value`; False when it was already taken."""
        if value in self._taken:
            return False
        self._taken.add(value)
        return True

    def digits(self, n: int) -> str:
        """A string of n random digits."""
        return bytes(DIGITS[self._rng.integers(0, 10, size=n)]).decode("ascii")
