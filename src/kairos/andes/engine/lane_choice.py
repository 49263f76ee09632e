"""Whether a decode iteration runs on the decode lanes (lanes.py): measured, not assumed.

Lanes trade more work for parallelism: each lane reads every weight matrix for its part of
the batch, so a step on lanes does the layers' weight reads once per lane. With a core per
lane that buys up to the idle core's time; with fewer free cores (a shared machine where
another process takes one) it is a loss: on the 56M anchor model, with one core left to the
process, 4 decodes ran 0.75x as fast on two lanes as in one pass (docs/andes.md, must-show
6). Which holds depends on the machine's load at the moment, so the runner asks a
`LaneChoice`, which keeps using the path it measured faster and re-measures now and then:
every `period` eligible iterations it runs `probe` of them on the other path and switches if
those ran faster per decoded row (medians, the probe's first iteration left out: it
regathers the decode contexts that the other path's staging held).

Cost in a steady state: `probe` iterations in `period + probe` on the slower path and two
regathers, about 1-2% of decode time at the defaults.
"""

from __future__ import annotations

import statistics
from collections import deque

PERIOD = 64  # eligible decode iterations between probes
PROBE = 4  # iterations on the other path per probe
FIRST_PROBE_AFTER = 8  # the first probe comes early: the default path may be the wrong one


class LaneChoice:
    def __init__(
        self, period: int = PERIOD, probe: int = PROBE, first_after: int = FIRST_PROBE_AFTER
    ) -> None:
        if probe < 2:
            raise ValueError("a probe needs 2 or more iterations (its first one regathers)")
        self.period = period
        self.probe = probe
        self.use_lanes = True  # the path in use between probes
        self.switches = 0
        self._since_probe = period - first_after
        self._probe_left = 0
        self._per_row: dict[bool, deque[float]] = {
            True: deque(maxlen=probe),
            False: deque(maxlen=probe),
        }

    def lanes_now(self) -> bool:
        """The path of this eligible iteration: True for the lanes."""
        if not self._probe_left and self._since_probe >= self.period:
            self._probe_left = self.probe
            self._per_row[not self.use_lanes].clear()
        return self.use_lanes if not self._probe_left else not self.use_lanes

    def record(self, lanes: bool, seconds: float, rows: int) -> None:
        """How long the iteration `lanes_now` chose took, for how many decoded rows."""
        self._per_row[lanes].append(seconds / rows)
        if lanes == self.use_lanes:
            self._since_probe += 1
            return
        self._probe_left -= 1
        if self._probe_left:
            return
        self._since_probe = 0
        tried = statistics.median(list(self._per_row[lanes])[1:])
        current = self._per_row[self.use_lanes]
        if not current or tried < statistics.median(current):
            self.use_lanes = lanes
            self.switches += 1
