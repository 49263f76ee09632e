"""What the engine promises to its callers (the HTTP server, benchmarks, tests).

Kept free of torch so the server, the client tools and their tests import it on the core
install. `EngineClient` is the whole surface the server uses: a fake that satisfies it is
enough to test the HTTP layer, and the real `AsyncEngine` satisfies it over the torch engine.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kairos.andes.qoe import QoEParams


@dataclass(frozen=True)
class SamplingParams:
    """How to pick tokens and when to stop (the OpenAI request fields the engine honours)."""

    max_tokens: int = 256
    temperature: float = 1.0  # 0 means greedy
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not (self.temperature >= 0 and math.isfinite(self.temperature)):
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


# The user's expectation for one stream (first token within `ttft_s`, then a pace): the same
# validated type the QoE metric uses.
QoESpec = QoEParams


@dataclass(frozen=True)
class TokenEvent:
    """One generated token as it leaves the engine, or the end of a stream.

    `text` is the new text this token completes (it can be empty while a multi-byte
    character is still incomplete, and it stops short of a matched stop string). `time` is
    the engine clock (seconds since the engine started) when the token was produced.
    """

    request_id: str
    token_id: int | None
    text: str
    time: float
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None  # "stop", "length", "abort", "shutdown" or "error"


@dataclass(frozen=True)
class EngineStats:
    """A consistent snapshot for /metrics."""

    running: int
    waiting: int
    swapped: int
    preempted_total: int
    kv_usage: float  # share of GPU KV blocks in use
    num_gpu_blocks: int
    num_cpu_blocks: int
    free_gpu_blocks: int
    iterations: int
    finished: int
    aborted: int
    busy_s: float = 0.0  # wall time spent in iterations
    predicted_busy_s: float = 0.0  # the latency profile's estimate of the same iterations
    qoe: tuple[float, ...] = field(default=())  # QoE of recently finished requests


class EngineClient(Protocol):
    """The engine as the server sees it."""

    @property
    def model_name(self) -> str: ...

    @property
    def max_model_len(self) -> int:
        """Prompt plus output tokens one request may hold."""
        ...

    def encode(self, text: str) -> list[int]: ...

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> str:
        """The model's chat template applied to OpenAI-style messages."""
        ...

    def generate(
        self,
        request_id: str,
        prompt_ids: list[int],
        params: SamplingParams,
        qoe: QoESpec,
    ) -> AsyncIterator[TokenEvent]:
        """Stream a request's tokens. Raises ValueError before the first event when the
        request can never run (too long for the cache). Closing the iterator early (client
        gone) aborts the request and frees its KV blocks."""
        ...

    def stats(self) -> EngineStats: ...

    async def start(self) -> None:
        """Begin the engine loop (the server calls this at startup)."""
        ...

    async def shutdown(self) -> None:
        """Abort what is in flight and stop the loop."""
        ...
