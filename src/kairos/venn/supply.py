"""The supply monitor: how fast devices of each atom check in.

IRS sizes eligible sets as rates (check-ins per second). Momentary rates swing threefold over a
day, so the default estimate is the average over a trailing 24 h window (§4.4.4), which lets
the plan look past the daily cycle. Before 24 h of history exist the elapsed time is the
window (at least 10 minutes). The Venn artifact instead uses the last 1000 check-ins; that is
`SupplyMonitor(count=1000)` (`supply_window="count:1000"`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Protocol


class Supply(Protocol):
    def record(self, atom: int, t: float) -> None: ...

    def rates(self, now: float) -> dict[int, float]: ...


class SupplyMonitor:
    """Per-atom check-in rate over a trailing time window, or over the last `count` check-ins."""

    def __init__(
        self, window_s: float = 86_400.0, min_window_s: float = 600.0, count: int | None = None
    ) -> None:
        if window_s <= 0 or min_window_s <= 0:
            raise ValueError("supply windows must be > 0")
        if count is not None and count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        self.window_s = window_s
        self.min_window_s = min_window_s
        self.count = count
        self._times: dict[int, deque[float]] = {}
        self._recent: deque[tuple[float, int]] = deque()
        self._counts: dict[int, int] = {}
        self._first: float | None = None

    @staticmethod
    def parse(spec: str) -> SupplyMonitor:
        """`"24h"`, `"3600s"`, `"90m"` (a time window) or `"count:1000"` (last N check-ins)."""
        spec = spec.strip().lower()
        if spec.startswith("count:"):
            return SupplyMonitor(count=int(spec.split(":", 1)[1]))
        units = {"h": 3600.0, "m": 60.0, "s": 1.0}
        try:
            if spec and spec[-1] in units:
                return SupplyMonitor(window_s=float(spec[:-1]) * units[spec[-1]])
            return SupplyMonitor(window_s=float(spec))
        except ValueError:
            raise ValueError(
                f"bad supply_window {spec!r}: use e.g. '24h', '3600s' or 'count:1000'"
            ) from None

    def record(self, atom: int, t: float) -> None:
        if self._first is None:
            self._first = t
        if self.count is None:
            q = self._times.get(atom)
            if q is None:
                q = self._times[atom] = deque()
            q.append(t)
            return
        self._recent.append((t, atom))
        self._counts[atom] = self._counts.get(atom, 0) + 1
        if len(self._recent) > self.count:
            _, old = self._recent.popleft()
            self._counts[old] -= 1

    def rates(self, now: float) -> dict[int, float]:
        if self._first is None:
            return {}
        if self.count is not None:
            span = max(now - self._recent[0][0], 1.0)
            return {a: c / span for a, c in self._counts.items() if c > 0}
        cutoff = now - self.window_s
        window = min(self.window_s, max(now - self._first, self.min_window_s))
        out: dict[int, float] = {}
        for atom, q in self._times.items():
            while q and q[0] < cutoff:
                q.popleft()
            if q:
                out[atom] = len(q) / window
        return out


class StaticSupply:
    """Known, fixed rates (toy examples, oracles, benchmarks); records are ignored."""

    def __init__(self, rates: Mapping[int, float]) -> None:
        self._rates = dict(rates)

    def record(self, atom: int, t: float) -> None:
        return None

    def rates(self, now: float) -> dict[int, float]:
        return dict(self._rates)
