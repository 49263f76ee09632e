"""The interface every Orloj-style batch scheduler implements (spec section 6.1).

One worker runs one non-preemptive batch at a time. The runtime (simulator or real server)
tells the policy about arrivals and finished batches, and asks it for the next batch whenever
the worker is free (or at a wake-up time the policy asked for). Policies are pure
(docs/architecture.md, "A policy decides; it does not act"): no wall clock, no I/O; time is
the `now` they are handed, in milliseconds; randomness only from an injected generator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

import numpy as np


class Outcome(StrEnum):
    OK = "ok"  # finished by its deadline
    LATE = "late"  # finished after its deadline
    TIMED_OUT = "timed_out"  # dropped or rejected by the scheduler before running


@dataclass(eq=False)
class Request:
    """One inference request. Times in ms; `deadline = release + slo`."""

    request_id: int
    app: str  # application tag: whose latency distribution it follows
    release: float
    slo: float
    payload: object | None = None  # what the real model runs (sim: unused)
    solo_ms: float | None = None  # ground truth, known only to the simulator's worker
    # an optional piece-wise step cost: ((deadline_ms, cost), ...) with increasing deadlines;
    # None means one step of cost 1 at `deadline`
    cost_steps: tuple[tuple[float, float], ...] | None = None
    outcome: Outcome | None = None
    finish: float = float("nan")
    batch_size: int = 0  # size of the batch it ran in (0 if it never ran)

    @property
    def deadline(self) -> float:
        return self.release + self.slo


@dataclass
class Batch:
    requests: list[Request]
    # the latest start the worker accepts (Clockwork's action window); None = no limit
    latest_start: float | None = None
    meta: dict[str, float] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.requests)


@dataclass(frozen=True)
class ProfileSnapshot:
    """Solo latencies (ms) observed per application since the last snapshot."""

    samples: Mapping[str, Sequence[float]]


class BatchPolicy(Protocol):
    name: str

    def on_arrival(self, request: Request, now: float) -> list[Request]:
        """Queue a request; returns requests it timed out right away (rejected on arrival)."""
        ...

    def next_batch(self, now: float) -> tuple[Batch | None, list[Request]]:
        """The batch to run now (None: nothing to run) and requests dropped while choosing."""
        ...

    def on_batch_done(self, batch: Batch, now: float, measured_ms: float) -> None: ...

    def next_wakeup(self, now: float) -> float | None:
        """When to ask again even if nothing happens (timers); None: only on events."""
        ...

    def on_profile(self, snapshot: ProfileSnapshot) -> None: ...

    def pending(self) -> int: ...


PolicyRng = np.random.Generator
