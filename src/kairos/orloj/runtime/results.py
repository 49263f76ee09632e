"""What the dispatcher hands back (a `Completion` per request, or an error) and what it counts
while serving (`DispatchStats`, read by `report` for /v1/stats and /metrics)."""

from __future__ import annotations

import math
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from kairos.orloj.policy import Outcome


class Overloaded(RuntimeError):
    """Too many requests are open; the caller should retry later (HTTP 429)."""


class Unavailable(RuntimeError):
    """The dispatcher is not running (starting, stopping, or its worker died; HTTP 503)."""


@dataclass(frozen=True)
class Completion:
    request_id: int
    app: str
    outcome: Outcome
    release_ms: float
    finish_ms: float
    start_ms: float = math.nan  # when its batch started (NaN: it never ran)
    batch_size: int = 0
    output: dict[str, Any] | None = None
    rejected: bool = False  # its batch missed `latest_start` and was rejected by the worker
    error: str | None = None

    @property
    def latency_ms(self) -> float:
        return self.finish_ms - self.release_ms

    @property
    def queue_ms(self) -> float:
        started = self.start_ms if math.isfinite(self.start_ms) else self.finish_ms
        return started - self.release_ms


@dataclass
class DispatchStats:
    outcomes: Counter[str] = field(default_factory=Counter)
    by_app: dict[str, Counter[str]] = field(default_factory=dict)
    batches: int = 0
    rejected_batches: int = 0
    failed_batches: int = 0
    batched_requests: int = 0
    busy_ms: float = 0.0
    predicted_ms: float = 0.0  # the calibration's g_k for the same batches (drift = ratio)
    decide_cpu_s: deque[float] = field(default_factory=lambda: deque(maxlen=10_000))
    decisions: int = 0
    decide_cpu_total_s: float = 0.0
    profile_cpu_s: float = 0.0  # on_profile calls (table rebuilds)
    # the last batches: (start ms, size, measured ms, predicted ms or NaN), for diagnostics
    recent: deque[tuple[float, int, float, float]] = field(
        default_factory=lambda: deque(maxlen=10_000)
    )

    def count(self, app: str, outcome: Outcome) -> None:
        self.outcomes[outcome.value] += 1
        self.by_app.setdefault(app, Counter())[outcome.value] += 1
