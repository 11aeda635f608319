"""What every checker of one run shares: the dataset, the calendar and per-row lookups
computed once (recon row type, the settlement each recon row names)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.calendar import WorkingCalendar, ist_dates
from core.dataset import Dataset
from core.engine.columns import BoolArray, IntArray, lookup, text
from core.engine.params import EngineParams

DayArray = npt.NDArray[np.datetime64]


@dataclass
class Context:
    """Shared, read-only state of one run.

    as_of_day: the IST date of the run's as-of instant; due and overdue are decided
    against it. recon_settlement: for each recon row, the position of the settlement it
    names in `dataset.settlements`; for a row naming an instant settlement (setlod_...),
    len(settlements) + its position in `dataset.instant_settlements` (so `>= 0` means
    "settled" for every checker); -1 when the id is empty or unknown. Sums per regular
    settlement take `recon_regular_settlement`, which is -1 for instant-settled rows.
    """

    dataset: Dataset
    params: EngineParams
    calendar: WorkingCalendar
    as_of_day: np.datetime64
    recon_type: pa.Array
    recon_settlement: IntArray
    recon_in_instant: BoolArray
    _texts: dict[tuple[int, str], pa.Array] = field(default_factory=dict)

    @classmethod
    def build(cls, dataset: Dataset, params: EngineParams, as_of: int) -> Context:
        recon = dataset.recon
        regular = lookup(recon["settlement_id"], dataset.settlements["id"])
        instant = lookup(recon["settlement_id"], dataset.instant_settlements["id"])
        in_instant: BoolArray = (regular < 0) & (instant >= 0)
        settlement: IntArray = np.where(
            in_instant, len(dataset.settlements) + instant, regular
        ).astype(np.int64)
        return cls(
            dataset=dataset,
            params=params,
            calendar=WorkingCalendar(params.calendar.holidays),
            as_of_day=ist_dates(np.array([as_of], dtype=np.int64))[0],
            recon_type=pc.utf8_lower(text(recon["type"])),
            recon_settlement=settlement,
            recon_in_instant=in_instant,
        )

    @property
    def recon_regular_settlement(self) -> IntArray:
        """For each recon row, the position of the regular settlement it names, -1 when
        none (an instant-settled row is outside every regular settlement's sum)."""
        result: IntArray = np.where(self.recon_in_instant, -1, self.recon_settlement)
        return result

    @property
    def recon_instant_settlement(self) -> IntArray:
        """For each recon row, the position of the instant settlement it names, else -1."""
        offset = len(self.dataset.settlements)
        result: IntArray = np.where(self.recon_in_instant, self.recon_settlement - offset, -1)
        return result

    def text(self, frame: pd.DataFrame, column: str) -> pa.Array:
        """`frame[column]` as one large_string Arrow array, converted once per run."""
        key = (id(frame), column)
        if key not in self._texts:
            self._texts[key] = text(frame[column])
        return self._texts[key]

    def recon_rows_of_type(self, kind: str) -> IntArray:
        """Row numbers of the recon rows of one type (payment, refund, transfer, adjustment)."""
        is_kind: BoolArray = np.asarray(
            pc.equal(self.recon_type, kind).fill_null(False).to_numpy(zero_copy_only=False),
            dtype=bool,
        )
        result: IntArray = np.flatnonzero(is_kind).astype(np.int64)
        return result

    def deadline(self, created_at: IntArray, working_days: int | IntArray) -> DayArray:
        """IST date of `created_at` plus `working_days` working days."""
        days = ist_dates(created_at)
        return self.calendar.add_working_days_array(days, working_days)
