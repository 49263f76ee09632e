"""What the driver needs from whatever runs trials: the simulator's device model, local
processes on virtual devices, or Ray actors. The driver decides; a backend only carries out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kairos.fluid.core.placement import Placement
from kairos.fluid.trial import Trial


@dataclass(frozen=True)
class Outcome:
    """One iteration's end: how long it took at the trial's width, the metric it reported
    (to maximise), or the error that ended the trial."""

    duration: float
    metric: float = float("nan")
    error: str | None = None


class Backend(Protocol):
    def run_iteration(self, trial: Trial, on_done: Callable[[Outcome], None]) -> None:
        """Run the trial's next iteration on `trial.placement`; call `on_done` through the
        driver's clock (thread-safely, for real backends) when it ends."""

    def resize(self, trial: Trial, old: Placement, on_ready: Callable[[], None]) -> None:
        """Move the trial from `old` to `trial.placement` at an iteration boundary
        (checkpoint, relaunch at the new width, restore), then call `on_ready`."""

    def release(self, trial: Trial) -> None:
        """The trial left its devices (done, stopped or failed): free what it held."""
