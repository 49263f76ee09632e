"""Device availability: when each device checks in, and for how long it stays online.

A check-in is one online session (charging and on WiFi) of one device: `(device, start, end)`.
Sources produce check-ins in consecutive chunks of `period_s` (a day for the diurnal model, the
trace length for a replayed trace), so a simulator can run for as long as it needs without
materialising weeks of sessions up front. Chunk `k` is a pure function of the source and its
seed, which keeps runs reproducible whatever the horizon.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

DAY_S = 86_400.0


@dataclass(frozen=True)
class CheckIns:
    """Sessions sorted by start time; `end` is when the device goes offline."""

    device: np.ndarray  # int64 index into the population
    start: np.ndarray
    end: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.start)
        if len(self.device) != n or len(self.end) != n:
            raise ValueError("device, start and end must have equal length")
        if n and np.any(np.diff(self.start) < 0):
            raise ValueError("check-ins must be sorted by start time")
        if n and np.any(self.end < self.start):
            raise ValueError("a session cannot end before it starts")

    def __len__(self) -> int:
        return len(self.start)

    def shifted(self, dt: float) -> CheckIns:
        return CheckIns(self.device, self.start + dt, self.end + dt)

    @staticmethod
    def build(device: np.ndarray, start: np.ndarray, end: np.ndarray) -> CheckIns:
        """Sort unsorted sessions by start (stable, so equal starts keep their order)."""
        order = np.argsort(start, kind="stable")
        return CheckIns(
            np.asarray(device, dtype=np.int64)[order],
            np.asarray(start, dtype=np.float64)[order],
            np.asarray(end, dtype=np.float64)[order],
        )


class CheckInSource(Protocol):
    """Anything that yields check-ins chunk by chunk: chunk k covers [k*period, (k+1)*period)."""

    @property
    def period_s(self) -> float: ...

    @property
    def n_devices(self) -> int: ...

    def chunk(self, k: int) -> CheckIns: ...


class DiurnalAvailability(BaseModel):
    """Every device checks in `per_day` times a day at a time drawn from a daily cycle.

    The time-of-day density is proportional to `1 + amplitude*cos(2π(h - peak_hour)/24)`: with
    the default amplitude 0.5 the peak (02:00, night charging) has 3x the trough's rate, the
    diurnal swing of the FedScale trace. Sessions last LogNormal(median, sigma) seconds, cut at
    `session_max_s`. One check-in per device per day also enforces "one job per device per day".
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    devices: int = Field(43_000, ge=1)
    per_day: int = Field(1, ge=1)
    amplitude: float = Field(0.5, ge=0, lt=1)
    peak_hour: float = Field(2.0, ge=0, lt=24)
    session_median_s: float = Field(900.0, gt=0)
    session_sigma: float = Field(0.8, ge=0)
    session_max_s: float = Field(4 * 3600.0, gt=0)
    seed: int = Field(0, ge=0)

    @property
    def period_s(self) -> float:
        return DAY_S

    @property
    def n_devices(self) -> int:
        return self.devices

    @property
    def mean_rate(self) -> float:
        """Check-ins per second averaged over a day."""
        return self.devices * self.per_day / DAY_S

    def _time_of_day(self, u: np.ndarray) -> np.ndarray:
        """Inverse CDF of the diurnal density on a fine grid (vectorised, exact to ~1 s)."""
        grid = np.linspace(0.0, DAY_S, 8641)
        h = grid / 3600.0
        density = 1.0 + self.amplitude * np.cos(2 * np.pi * (h - self.peak_hour) / 24.0)
        cdf = np.concatenate([[0.0], np.cumsum((density[1:] + density[:-1]) / 2)])
        return np.interp(u * cdf[-1], cdf, grid)

    def chunk(self, k: int) -> CheckIns:
        rng = np.random.default_rng([self.seed, int(k)])
        n = self.devices * self.per_day
        device = np.tile(np.arange(self.devices, dtype=np.int64), self.per_day)
        start = k * DAY_S + self._time_of_day(rng.random(n))
        length = np.minimum(
            rng.lognormal(np.log(self.session_median_s), self.session_sigma, size=n),
            self.session_max_s,
        )
        return CheckIns.build(device, start, start + length)


@dataclass(frozen=True)
class TraceAvailability:
    """Replays recorded online windows over and over, shifted by the trace's period.

    `stretch_s` lengthens every window (the Venn artifact adds 80 s so that a device that checks
    in near the end of a window can still be dispatched).
    """

    windows: CheckIns
    period: float
    devices: int
    stretch_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.period > 0:
            raise ValueError(f"the trace period must be > 0, got {self.period}")

    @property
    def period_s(self) -> float:
        return self.period

    @property
    def n_devices(self) -> int:
        return self.devices

    def chunk(self, k: int) -> CheckIns:
        w = self.windows
        shift = k * self.period
        return CheckIns(w.device, w.start + shift, w.end + self.stretch_s + shift)
