"""What the Orloj driver counts: outcomes per application, batches, busy and predicted worker
time, scheduler CPU time per decision, and the decisions as carried out (`BatchRecord`)."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kairos.orloj.policy import Outcome
from kairos.orloj.worker import BatchRecord


def _bounded(n: int | None) -> Callable[[], deque[Any]]:
    return lambda: deque(maxlen=n)


@dataclass
class DriverStats:
    """What the driver counts. `history` bounds the per-decision records (a server keeps the
    last 10,000; a simulation keeps all)."""

    history: int | None = None
    outcomes: Counter[str] = field(default_factory=Counter)
    by_app: dict[str, Counter[str]] = field(default_factory=dict)
    batches: int = 0
    rejected_batches: int = 0
    failed_batches: int = 0
    batched_requests: int = 0
    busy_ms: float = 0.0
    predicted_ms: float = 0.0  # the calibration's g_k for the same batches (drift = ratio)
    decisions: int = 0
    decide_cpu_total_s: float = 0.0
    profile_cpu_s: float = 0.0  # on_profile calls (table rebuilds)
    decide_cpu_s: deque[float] = field(init=False)
    arrival_cpu_s: deque[float] = field(init=False)
    records: deque[BatchRecord] = field(init=False)  # every decision as carried out
    # the last batches: (start ms, size, measured ms, predicted ms or NaN), for diagnostics
    recent: deque[tuple[float, int, float, float]] = field(init=False)

    def __post_init__(self) -> None:
        for name in ("decide_cpu_s", "arrival_cpu_s", "records", "recent"):
            setattr(self, name, _bounded(self.history)())

    def count(self, app: str, outcome: Outcome) -> None:
        self.outcomes[outcome.value] += 1
        self.by_app.setdefault(app, Counter())[outcome.value] += 1
