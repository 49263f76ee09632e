"""A request as the scheduler sees it: prompt, progress, QoE state and KV residency.

This is the one home of a request's state: the scheduler changes it (and marks it changed in
its numpy mirror, request_table.py, which only copies it); a policy gets the same objects
typed as `RequestView`, a read-only protocol, so the type checker refuses a policy that
writes to one. The true output length is deliberately absent: the engine (or the simulator,
which knows it) reports when a request finishes. Policies can only use `max_tokens` as an
upper bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

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


class QoEView(Protocol):
    """What a policy reads of a stream's QoE state."""

    @property
    def arrival(self) -> float: ...

    @property
    def ttft(self) -> float: ...

    @property
    def speed(self) -> float: ...

    @property
    def k(self) -> int: ...  # tokens delivered

    @property
    def lag(self) -> float: ...

    @property
    def lag_sum(self) -> float: ...

    def qoe_at(self, t: float, finished: bool = False) -> float: ...


class RequestView(Protocol):
    """A request as a policy sees it: read-only (kairos.andes.policy)."""

    @property
    def request_id(self) -> str: ...

    @property
    def arrival(self) -> float: ...

    @property
    def prompt_len(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    @property
    def ttft_s(self) -> float: ...

    @property
    def tokens_per_s(self) -> float: ...

    @property
    def status(self) -> Status: ...

    @property
    def generated(self) -> int: ...

    @property
    def computed(self) -> int: ...

    @property
    def admitted_seq(self) -> int: ...

    @property
    def admitted_at(self) -> float: ...

    @property
    def context_len(self) -> int: ...

    @property
    def to_compute(self) -> int: ...

    @property
    def qoe(self) -> QoEView: ...
