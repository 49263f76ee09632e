"""How fast the machine runs now, against the batch-latency model: a real server's drift.

Orloj's distributions are solo latencies pushed through g_k, both measured when the server
was profiled. On a shared machine the worker can run 10-60% slower under load (the frontend,
other tenants), and the online profiler cannot say so quickly: its re-runs happen only on an
idle worker, and its histograms hold hundreds of samples. Clockwork's estimate, the p99 of its
last ten batches, follows such a change within ten batches; this gives Orloj the same feedback
without giving up its distributions: the ratio of measured to expected time over the last
`window` batches scales g_k as a whole (every batch distribution stretches along the time
axis). The paper's Orloj has no such term; it is off unless `speed_window` is set, and the
real server sets it (docs/orloj.md, "Where we differ").
"""

from __future__ import annotations

import math
from collections import deque

SERVED_SPEED_WINDOW = 20  # batches: what `kairos orloj serve` runs Orloj with
MIN_FACTOR, MAX_FACTOR = 0.25, 4.0  # one batch's ratio outside this is a stall, not drift


class SpeedTracker:
    """Measured over expected batch time (expected under the unscaled g_k), last `window`.

    The ratio of sums, not a mean of ratios: it is what scales expected times to measured
    ones over the window. A batch whose own ratio is outside [MIN_FACTOR, MAX_FACTOR] (a stall
    of the worker, a clock jump) is left out, or one 2 s hiccup among 50 ms batches would
    stretch every distribution threefold for a whole window."""

    def __init__(self, window: int, tolerance: float) -> None:
        if window < 1 or tolerance < 0:
            raise ValueError("need window >= 1 and tolerance >= 0")
        self.window = window
        self.tolerance = tolerance
        self.factor = 1.0  # what the batch model is scaled by now
        self._pairs: deque[tuple[float, float]] = deque(maxlen=window)
        self._measured = 0.0
        self._expected = 0.0

    def observe(self, measured_ms: float, expected_ms: float) -> float | None:
        """One finished batch; the new factor if it moved by more than the tolerance."""
        if not (math.isfinite(measured_ms) and math.isfinite(expected_ms) and expected_ms > 0):
            return None
        if not MIN_FACTOR <= measured_ms / expected_ms <= MAX_FACTOR:
            return None
        if len(self._pairs) == self.window:
            old_m, old_e = self._pairs[0]
            self._measured -= old_m
            self._expected -= old_e
        self._pairs.append((measured_ms, expected_ms))
        self._measured += measured_ms
        self._expected += expected_ms
        if len(self._pairs) < self.window:
            return None
        ratio = self._measured / self._expected  # within the bounds, as every pair's is
        if abs(ratio - self.factor) <= self.tolerance * self.factor:
            return None
        self.factor = ratio
        return ratio
