"""Which of two ways to run an iteration is faster now: measured, not assumed.

The CPU hook (hook.py) has three such choices, each a candidate path against the plain one:
decode lanes against one pass (lanes.py), decode-sized products split over the threads
against one GEMM each (row_split.py), and every intra-op thread against one. Which is faster
depends on the machine (its BLAS and cores) and on its load at the moment: with one core
left to the process two lanes run slower than one pass (each reads every weight), and a BLAS
that threads skinny products well needs no split. So the hook asks a `PathChoice`, which
keeps using the path it measured faster and re-measures now and then: every `period`
eligible iterations it runs `probe` of them on the other path and switches if those ran
faster per decoded row (medians, the probe's first iteration left out: for the lanes it
regathers the decode contexts that the other path's staging held).

Cost in a steady state: `probe` iterations in `period + probe` on the slower path (and, for
the lanes, two regathers), about 1-2% of decode time at the defaults. Where the other path
can be far slower (two intra-op threads on cores other processes hold ran a server's decode
6.5x slower than one), `max_period` above `period` backs off: each probe that keeps the
current path doubles the period up to it, and a switch brings it back to `period`.
"""

from __future__ import annotations

import statistics
from collections import deque

PERIOD = 64  # eligible iterations between probes
PROBE = 4  # iterations on the other path per probe
FIRST_PROBE_AFTER = 8  # the first probe comes early: the starting path may be the wrong one


class PathChoice:
    """Starts on the candidate path (`now()` True) and keeps the faster of the two."""

    def __init__(
        self,
        period: int = PERIOD,
        probe: int = PROBE,
        first_after: int = FIRST_PROBE_AFTER,
        max_period: int | None = None,
    ) -> None:
        if probe < 2:
            raise ValueError("a probe needs 2 or more iterations (its first one is left out)")
        self.base_period = period
        self.max_period = max(period, max_period or period)
        self.period = period
        self.probe = probe
        self.on_candidate = True  # the path in use between probes
        self.switches = 0
        self._since_probe = period - first_after
        self._probe_left = 0
        self._per_row: dict[bool, deque[float]] = {
            True: deque(maxlen=probe),
            False: deque(maxlen=probe),
        }

    @property
    def probing(self) -> bool:
        """Whether the iterations now run the other path, to time it."""
        return self._probe_left > 0

    def now(self) -> bool:
        """The path of this eligible iteration: True for the candidate."""
        if not self._probe_left and self._since_probe >= self.period:
            self._probe_left = self.probe
            self._per_row[not self.on_candidate].clear()
        return self.on_candidate if not self._probe_left else not self.on_candidate

    def record(self, candidate: bool, seconds: float, rows: int) -> None:
        """How long the iteration `now` chose took, for how many decoded rows."""
        self._per_row[candidate].append(seconds / rows)
        if candidate == self.on_candidate:
            self._since_probe += 1
            return
        self._probe_left -= 1
        if self._probe_left:
            return
        self._since_probe = 0
        tried = statistics.median(list(self._per_row[candidate])[1:])
        current = self._per_row[self.on_candidate]
        if not current or tried < statistics.median(current):
            self.on_candidate = candidate
            self.switches += 1
            self.period = self.base_period
        else:
            self.period = min(2 * self.period, self.max_period)
