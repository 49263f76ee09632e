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

One factor for every batch size cannot repair a calibration whose *shape* is wrong: a start-up
fit 23% off at its median point (docs/orloj.md, "Online correction") is too slow for some k and
too fast for others, and the window's ratio averages the two away. `SizeCorrection` adds one
factor per batch size on top of the machine's speed, learned from that size's own batches.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any

SERVED_SPEED_WINDOW = 20  # batches: what `kairos orloj serve` runs Orloj with
MIN_FACTOR, MAX_FACTOR = 0.25, 4.0  # the factor's range
STALL = 4.0  # one batch counts as at most this many times what it was expected to take
# one batch of size k moves that size's factor by at most this ratio (times its weight)
OUTLIER = 1.5
PRIOR = 3  # pseudo-batches at the global speed a size's factor starts from


def served_options(policy: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """A served Orloj follows the machine's speed unless told otherwise (`given` wins)."""
    defaults = {"speed_window": SERVED_SPEED_WINDOW} if policy == "orloj" else {}
    return defaults | dict(given)


class SpeedTracker:
    """Measured over expected batch time (expected under the unscaled g_k), last `window`.

    The ratio of sums, not a mean of ratios: it is what scales expected times to measured
    ones over the window. Single batches legitimately run far from their expectation (a batch
    of one short request against a mean that mixes long ones), so none is left out; but one
    counts as at most STALL x its expectation, or one 2 s hiccup of the worker among 50 ms
    batches would stretch every distribution threefold for a whole window."""

    def __init__(self, window: int, tolerance: float) -> None:
        if window < 1 or tolerance < 0:
            raise ValueError("need window >= 1 and tolerance >= 0")
        self.window = window
        self.tolerance = tolerance
        self.factor = 1.0  # what the batch model is scaled by now
        self._pairs: deque[tuple[float, float]] = deque(maxlen=window)

    def observe(self, measured_ms: float, expected_ms: float) -> float | None:
        """One finished batch; the new factor if it moved by more than the tolerance."""
        finite = math.isfinite(measured_ms) and math.isfinite(expected_ms)
        if not (finite and measured_ms > 0 and expected_ms > 0):
            return None
        self._pairs.append((min(measured_ms, STALL * expected_ms), expected_ms))
        if len(self._pairs) < self.window:
            return None
        ratio = sum(m for m, _ in self._pairs) / sum(e for _, e in self._pairs)
        ratio = min(max(ratio, MIN_FACTOR), MAX_FACTOR)
        if abs(ratio - self.factor) <= self.tolerance * self.factor:
            return None
        self.factor = ratio
        return ratio


class SizeCorrection:
    """Per batch size, measured over expected time (expected under g_k times the speed factor
    in force), exponentially weighted: a size's n-th batch weighs 1 / min(n + PRIOR, window),
    so the first `window` batches are averaged (starting from PRIOR pseudo-batches at ratio 1,
    the global speed) and later ones forget with a memory of about `window` batches of that
    size. Weighted sums of measured and of expected time, not a mean of ratios (as in
    `SpeedTracker`). The outlier guard: a batch's measured time is clipped to within OUTLIER x
    of what the size's current factor predicts, so one stall (or one freak fast run) moves the
    factor by at most 1 + weight x (OUTLIER - 1) times, while a lasting change still gets
    through, one bounded step per batch."""

    def __init__(self, window: int) -> None:
        if window < 1:
            raise ValueError("need window >= 1")
        self.window = window
        self._sums: dict[int, tuple[float, float, int]] = {}  # k -> (measured, expected, n)

    def factor(self, k: int) -> float:
        """What batches of size k take against g_k x the global speed (1: no evidence yet)."""
        m, e, _ = self._sums.get(k, (1.0, 1.0, 0))
        return m / e

    def factors(self) -> dict[int, float]:
        return {k: self.factor(k) for k in sorted(self._sums)}

    def observe(self, k: int, measured_ms: float, expected_ms: float) -> None:
        """One finished batch of size k; `expected_ms` already includes the global speed."""
        finite = math.isfinite(measured_ms) and math.isfinite(expected_ms)
        if not (finite and measured_ms > 0 and expected_ms > 0 and k >= 1):
            return
        m, e, n = self._sums.get(k, (expected_ms, expected_ms, 0))
        now = m / e
        clipped = min(max(measured_ms, expected_ms * now / OUTLIER), expected_ms * now * OUTLIER)
        w = 1.0 / min(n + 1 + PRIOR, self.window)
        e = (1 - w) * e + w * expected_ms
        ratio = min(max(((1 - w) * m + w * clipped) / e, MIN_FACTOR), MAX_FACTOR)
        self._sums[k] = (ratio * e, e, n + 1)
