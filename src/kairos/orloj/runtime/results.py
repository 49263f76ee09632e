"""What the dispatcher hands back: a `Completion` per request, or an error. What it counts
while serving is the driver's (`kairos.orloj.stats.DriverStats`, read by `report`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kairos.orloj.policy import Outcome

# The error of every job a dead worker process held: the server answers it with 503 and
# Retry-After (the request is fine, the worker is being replaced), not with a model failure.
WORKER_EXITED = "the worker process exited"


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
    # how long before the server saw it the client sent it (its `sent_at_ms` stamp; 0 without
    # one): the deadline, `release_ms` and `latency_ms` count from the client's send
    transit_ms: float = 0.0

    @property
    def latency_ms(self) -> float:
        return self.finish_ms - self.release_ms

    @property
    def server_latency_ms(self) -> float:
        """From the server's own arrival stamp: what it would report without the client's."""
        return self.latency_ms - self.transit_ms

    @property
    def queue_ms(self) -> float:
        started = self.start_ms if math.isfinite(self.start_ms) else self.finish_ms
        return started - self.release_ms
