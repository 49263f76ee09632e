"""A small, deterministic `EngineClient` for the HTTP tests (a fake belongs only in tests).

Token i of every answer is the text `w{i} `. Prompts are encoded one token per character, so
prompt lengths are easy to reason about. It records what the server handed it (prompt ids,
sampling params, QoE) and which requests were closed early (aborted).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from kairos.andes.engine.api import EngineStats, QoESpec, SamplingParams, TokenEvent


@dataclass
class Recorded:
    prompt_ids: list[int]
    params: SamplingParams
    qoe: QoESpec


@dataclass
class FakeEngine:
    model_name: str = "fake-model"
    max_model_len: int = 128
    cache_tokens: int = 100  # prompts longer than this raise ValueError, like a too-small cache
    delay_s: float = 0.002  # between tokens
    first_delay_s: float = 0.0  # extra wait before the first token (a queued request)
    eos_after: int = 1000  # tokens before the fake "model" emits EOS
    fail_after: int | None = None  # raise RuntimeError after this many tokens
    finish_with: str | None = None  # force this finish_reason (e.g. "abort") on the last event
    waiting: int = 0  # reported by stats(); set it to simulate a queue
    qoe_window: tuple[float, ...] = (0.5, 0.9, 1.0, 1.0)
    requests: dict[str, Recorded] = field(default_factory=dict)
    aborted: set[str] = field(default_factory=set)
    finished: set[str] = field(default_factory=set)
    started: bool = False
    stopped: bool = False

    def encode(self, text: str) -> list[int]:
        return [ord(c) % 1000 for c in text]

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> str:
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def generate(
        self, request_id: str, prompt_ids: list[int], params: SamplingParams, qoe: QoESpec
    ) -> AsyncIterator[TokenEvent]:
        return self._stream(request_id, prompt_ids, params, qoe)

    async def _stream(
        self, rid: str, prompt_ids: list[int], params: SamplingParams, qoe: QoESpec
    ) -> AsyncIterator[TokenEvent]:
        if len(prompt_ids) > self.cache_tokens:
            raise ValueError(
                f"prompt of {len(prompt_ids)} tokens can never fit the KV cache "
                f"({self.cache_tokens} tokens)"
            )
        self.requests[rid] = Recorded(list(prompt_ids), params, qoe)
        done = False
        try:
            await asyncio.sleep(self.first_delay_s)
            text = ""
            n = 0
            while True:
                await asyncio.sleep(self.delay_s)
                if self.fail_after is not None and n >= self.fail_after:
                    raise RuntimeError("simulated engine failure")
                piece = f"w{n} "
                n += 1
                reason: str | None = None
                hit = [s for s in params.stop if s in text + piece]
                if hit:  # stop short of the matched stop string
                    cut = min((text + piece).index(s) for s in hit)
                    piece, reason = (text + piece)[:cut][len(text) :], "stop"
                elif n >= params.max_tokens:
                    reason = "length"
                elif n >= self.eos_after and not params.ignore_eos:
                    reason = "stop"
                if reason is not None and self.finish_with is not None:
                    reason = self.finish_with
                text += piece
                done = reason is not None
                if done:
                    self.finished.add(rid)
                yield TokenEvent(rid, n, piece, 0.0, len(prompt_ids), n, reason)
                if done:
                    return
        finally:
            if not done:
                self.aborted.add(rid)

    def stats(self) -> EngineStats:
        return EngineStats(
            running=1,
            waiting=self.waiting,
            swapped=0,
            preempted_total=3,
            kv_usage=0.25,
            num_gpu_blocks=64,
            num_cpu_blocks=16,
            free_gpu_blocks=48,
            iterations=42,
            finished=len(self.finished),
            aborted=len(self.aborted),
            qoe=self.qoe_window,
        )

    async def start(self) -> None:
        self.started = True

    async def shutdown(self) -> None:
        self.stopped = True
