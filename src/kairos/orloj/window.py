"""Per-application solo-latency windows: what the scheduler currently believes (spec 3.1).

Inputs drift (diurnal load, changing interests), so Orloj forgets: profile memory is reset
every `window_ms`. A hard reset would leave an app with a handful of samples right after it, so
two generations are kept: an app's histogram comes from the current window alone once that
holds `min_samples` of it, otherwise from the previous full window plus the current one, and
if both are empty (the app went quiet) from the last histogram it had. Mixture weights are the
apps' shares of arrivals over the same two windows. An offline profile (the warm start) is the
generation before the first window.

Every histogram shares one model-wide grid on [0, headroom x largest sample ever seen]; a new
maximum grows the grid and every histogram is rebuilt on it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np

from kairos.orloj.dist import DEFAULT_BINS, DEFAULT_HEADROOM, FloatArray, Histogram, make_grid


class LatencyWindows:
    def __init__(
        self,
        n_bins: int = DEFAULT_BINS,
        window_ms: float = 300_000.0,
        min_samples: int = 100,
        headroom: float = DEFAULT_HEADROOM,
    ) -> None:
        if window_ms <= 0 or min_samples < 1 or headroom < 1.0:
            raise ValueError("window_ms > 0, min_samples >= 1 and headroom >= 1 are required")
        self.n_bins = n_bins
        self.window_ms = window_ms
        self.min_samples = min_samples
        self.headroom = headroom
        self.window_start = 0.0
        self.x_max = 0.0
        self._current: dict[str, list[float]] = defaultdict(list)
        self._previous: dict[str, list[float]] = defaultdict(list)
        self._last: dict[str, FloatArray] = {}  # last non-empty sample set per app
        self._arrivals: dict[str, int] = defaultdict(int)
        self._prev_arrivals: dict[str, int] = defaultdict(int)

    # -- input ----------------------------------------------------------------------------
    def warm_start(self, samples: Mapping[str, Iterable[float]]) -> None:
        """Offline solo runs per app: the generation before the first window."""
        for app, values in samples.items():
            self._add(self._previous, app, values)

    def add(self, app: str, values: Iterable[float], now: float) -> None:
        """Solo latencies (ms) the profiler measured for `app`."""
        self.advance(now)
        self._add(self._current, app, values)

    def record_arrival(self, app: str, now: float) -> None:
        """Counts arrivals for the mixture weights (cheap: called on the hot path)."""
        if now >= self.window_start + self.window_ms:
            self.advance(now)
        self._arrivals[app] += 1

    def advance(self, now: float) -> bool:
        """Rotates generations if the window is over; True if it did."""
        if now < self.window_start + self.window_ms:
            return False
        whole = int((now - self.window_start) // self.window_ms)
        for app in self.apps:
            vals = self.samples(app)
            if vals.size:
                self._last[app] = vals
        if whole == 1:
            self._previous, self._current = self._current, defaultdict(list)
            self._prev_arrivals, self._arrivals = self._arrivals, defaultdict(int)
        else:  # a whole window without input: the previous generation is empty too
            self._previous, self._current = defaultdict(list), defaultdict(list)
            self._prev_arrivals, self._arrivals = defaultdict(int), defaultdict(int)
        self.window_start += whole * self.window_ms
        return True

    def _add(self, store: dict[str, list[float]], app: str, values: Iterable[float]) -> None:
        vals = [float(v) for v in values]
        if not vals:
            return
        if min(vals) < 0 or not all(np.isfinite(vals)):
            raise ValueError(f"solo latencies of app {app!r} must be finite and >= 0")
        store[app].extend(vals)
        self.x_max = max(self.x_max, max(vals))

    # -- output ---------------------------------------------------------------------------
    @property
    def apps(self) -> list[str]:
        names = set(self._last) | {a for a, v in self._previous.items() if v}
        names |= {a for a, v in self._current.items() if v}
        return sorted(names)

    def edges(self) -> FloatArray:
        if self.x_max <= 0:
            raise ValueError("no latency samples yet: warm-start from an offline profile")
        return make_grid(self.headroom * self.x_max, self.n_bins)

    def samples(self, app: str) -> FloatArray:
        """The samples `app`'s histogram is built from (see the module docstring)."""
        current = self._current.get(app, [])
        if len(current) >= self.min_samples:
            return np.asarray(current, dtype=np.float64)
        both = self._previous.get(app, []) + current
        if both:
            return np.asarray(both, dtype=np.float64)
        return self._last.get(app, np.empty(0))

    def histograms(self) -> dict[str, Histogram]:
        edges = self.edges()
        edges.flags.writeable = False  # one shared grid: later same-grid checks are identity
        out = {}
        for app in self.apps:
            vals = self.samples(app)
            if vals.size:
                out[app] = Histogram.from_samples(vals, edges)
        return out

    def pooled(self) -> Histogram:
        """One histogram of every app's samples together (the no-app-tagging ablation)."""
        vals = [self.samples(a) for a in self.apps]
        return Histogram.from_samples(np.concatenate(vals), self.edges())

    def weights(self, apps: Iterable[str]) -> dict[str, float]:
        """Shares of arrivals over the two windows; uniform before anything arrived."""
        names = list(apps)
        counts = np.array(
            [self._arrivals.get(a, 0) + self._prev_arrivals.get(a, 0) for a in names], float
        )
        if not counts.sum() > 0:
            counts = np.ones(len(names))
        return {a: float(c / counts.sum()) for a, c in zip(names, counts, strict=True)}
