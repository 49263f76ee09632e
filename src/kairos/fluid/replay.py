"""Replaying a recorded run through the simulator's driver.

A real run's log holds its decisions and every iteration's `Measured` outcome with the time it
reached the driver. `replay` runs the same `Driver` on a `SimClock` over `ReplayBackend`, which
ends each iteration when the recorded one ended, with its measured duration and metric, and
returns the decisions the replay made: compared with the log by
`kairos.decisions.first_divergence`, they show whether simulation and reality decide alike
(the same tuner, built the same way, and the same `DriverConfig` must be given).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from kairos.decisions import Entries, Entry
from kairos.fluid.backend import Outcome
from kairos.fluid.core.placement import Placement
from kairos.fluid.decisions import Measured
from kairos.fluid.driver import Driver, DriverConfig
from kairos.fluid.trial import Trial
from kairos.fluid.tuner import Tuner
from kairos.sim import EventLoop, SimClock


class ReplayBackend:
    """Each trial's iterations end, in order, when and as the recorded ones did. An iteration
    the recorded run never saw end (it was in flight when the run ended) does not end."""

    def __init__(self, clock: SimClock, recorded: Sequence[Entry]) -> None:
        self.clock = clock
        self.left: dict[str, deque[Entry]] = {}
        for entry in recorded:
            if isinstance(entry.record, Measured):
                self.left.setdefault(entry.record.trial, deque()).append(entry)

    def run_iteration(self, trial: Trial, on_done: Callable[[Outcome], None]) -> None:
        queue = self.left.get(trial.trial_id)
        if not queue:
            return
        t, m = queue.popleft()
        outcome = Outcome(m.duration, m.metric_value, m.error)
        self.clock.call_at(max(t, self.clock.now()), on_done, outcome)

    def resize(self, trial: Trial, old: Placement, on_ready: Callable[[], None]) -> None:
        """The move's cost is in the next iteration's recorded end."""
        self.clock.call_soon_threadsafe(on_ready)

    def release(self, trial: Trial) -> None:
        """Nothing is held."""


def replay(recorded: Sequence[Entry], tuner: Tuner, n_gpus: int, config: DriverConfig) -> Entries:
    """The decisions (and measured outcomes) of the simulator's driver given the recorded
    run's outcomes; the run starts at t = 0, as `tune_local`'s does."""
    loop = EventLoop()
    clock = SimClock(loop)
    decided = Entries()
    driver = Driver(clock, ReplayBackend(clock, recorded), n_gpus, config, tuner, recorder=decided)
    loop.call_at(0.0, driver.start)
    loop.run()
    return decided
