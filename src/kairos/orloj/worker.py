"""What the Orloj driver asks of a worker, and what a worker hands back.

A worker runs one batch at a time, non-preemptively, in the order batches were handed over.
The simulated worker (`kairos.orloj.simulator.SimWorker`) takes the time the batch latency
model says; the real ones (`kairos.orloj.runtime.executor`) run PyTorch models. Either way,
what comes back is a `BatchRun` (ran, rejected for missing `latest_start`, or failed) or a
`SoloRun` (a profiler re-run of one request), handed to `deliver` on the driver's clock.
Times in these records are milliseconds, Orloj's unit (the kernel's clock is in seconds).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kairos.orloj.policy import Batch, Request


@dataclass(frozen=True)
class BatchRun:
    """What became of a submitted batch: run (outputs in member order), rejected, or failed."""

    batch: Batch
    start_ms: float
    end_ms: float
    outputs: list[dict[str, Any]] | None = None
    rejected: bool = False
    error: str | None = None
    # a batch of one's solo latency where the worker knows it exactly (the simulated worker's
    # ground truth, which its batch model maps to a slightly different batch time)
    solo_ms: float | None = None

    @property
    def measured_ms(self) -> float:
        """The batch's wall time; NaN when it did not run (what policies expect then)."""
        return self.end_ms - self.start_ms if self.outputs is not None else math.nan


@dataclass(frozen=True)
class SoloRun:
    """A profiler re-run of one finished request at batch size 1."""

    request: Request
    solo_ms: float
    error: str | None = None


Delivery = Callable[[BatchRun | SoloRun], None]


class Worker(Protocol):
    """`shadow_profiling`: profiler re-runs happen beside the worker (a profiling replica, the
    paper's "off the critical path"), not on it; the driver then hands them over at once
    instead of waiting for the worker to be idle."""

    shadow_profiling: bool

    def submit(self, batch: Batch, not_before_ms: float = -math.inf) -> None:
        """Queue a batch. `not_before_ms`: the simulated scheduler is still deciding until
        then (charged decision time); a real worker ignores it, its clock already moved."""
        ...

    def submit_solo(self, request: Request) -> None: ...


@dataclass(frozen=True)
class BatchRecord:
    """One decision as carried out: when it was decided, when it ran, whom it held."""

    decided: float
    start: float
    end: float
    ids: tuple[int, ...]  # request ids, in batch order
    rejected: bool = False

    @property
    def size(self) -> int:
        return len(self.ids)
