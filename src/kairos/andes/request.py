"""A request as the scheduler sees it: prompt, progress, QoE state and KV residency.

The true output length is deliberately absent: the engine (or the simulator, which knows it)
reports when a request finishes. Policies can only use `max_tokens` as an upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum

from kairos.andes.qoe import QoETracker


class Status(IntEnum):
    WAITING = 0  # never run, or preempted by recompute (its KV cache was dropped)
    RUNNING = 1
    SWAPPED = 2  # preempted by swap: its KV cache sits in host memory
    FINISHED = 3


@dataclass(eq=False)
class Request:
    request_id: str
    arrival: float
    prompt_len: int
    max_tokens: int
    ttft_s: float
    tokens_per_s: float
    status: Status = Status.WAITING
    generated: int = 0  # output tokens produced so far
    computed: int = 0  # context tokens whose KV is in the cache (prefill progress)
    admitted_seq: int = -1  # admission order, for newest-first victim selection
    admitted_at: float = math.nan  # when it last started running (admission or restore)
    preemptions: int = 0
    token_times: list[float] = field(default_factory=list)
    finish_time: float = math.nan
    finish_reason: str = ""
    qoe: QoETracker = field(init=False)
    # told about every delivered token (the scheduler's numpy mirror listens here)
    on_change: Callable[[Request], None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.prompt_len < 1:
            raise ValueError(f"request {self.request_id}: prompt must have at least one token")
        if self.max_tokens < 1:
            raise ValueError(f"request {self.request_id}: max_tokens must be >= 1")
        self.qoe = QoETracker(self.arrival, self.ttft_s, self.tokens_per_s)

    @property
    def context_len(self) -> int:
        """Tokens whose KV the request needs: prompt plus generated output."""
        return self.prompt_len + self.generated

    @property
    def to_compute(self) -> int:
        """Context tokens still to prefill before the next token can be produced."""
        return self.context_len - self.computed

    @property
    def remaining_cap(self) -> int:
        return self.max_tokens - self.generated

    @property
    def is_finished(self) -> bool:
        return self.status is Status.FINISHED

    def deliver(self, t: float) -> None:
        """One new output token, pushed to the client at time t."""
        self.generated += 1
        self.token_times.append(t)
        self.qoe.deliver(t)
        if self.on_change is not None:
            self.on_change(self)
