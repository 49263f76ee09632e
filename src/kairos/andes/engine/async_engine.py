"""The engine behind an asyncio server: a loop thread steps the engine, streams fan out.

The model runs in one background thread (torch releases the GIL in its kernels, so the event
loop keeps serving HTTP meanwhile). Each request gets an asyncio queue; the thread hands it
every token the moment an iteration ends (push-based streaming, spec section 6). A consumer
that stops early (the client went away) aborts its request, which frees its KV blocks at once.
If an iteration ever fails, every in-flight request ends with an error event and is aborted,
and the loop keeps serving new requests.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Sequence

from kairos.andes.engine.api import EngineStats, QoESpec, SamplingParams, TokenEvent
from kairos.andes.engine.engine import LLMEngine

log = logging.getLogger(__name__)


class AsyncEngine:
    def __init__(self, engine: LLMEngine) -> None:
        self.engine = engine
        self._queues: dict[str, asyncio.Queue[TokenEvent]] = {}
        self._wake = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- EngineClient ------------------------------------------------------------------
    @property
    def model_name(self) -> str:
        return self.engine.model_name

    @property
    def max_model_len(self) -> int:
        return self.engine.max_model_len

    def encode(self, text: str) -> list[int]:
        return self.engine.tokenizer.encode(text)

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> str:
        return self.engine.tokenizer.chat_prompt(messages)

    def stats(self) -> EngineStats:
        return self.engine.stats()

    async def start(self) -> None:
        if self._thread is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="kairos-engine", daemon=True)
        self._thread.start()

    async def shutdown(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
            self._thread = None
        for rid in list(self._queues):
            self.engine.abort(rid)

    async def generate(
        self, request_id: str, prompt_ids: list[int], params: SamplingParams, qoe: QoESpec
    ) -> AsyncIterator[TokenEvent]:
        if self._thread is None:
            raise RuntimeError("the engine is not started (call start())")
        if request_id in self._queues:
            raise ValueError(f"request id {request_id!r} is already in flight")
        queue: asyncio.Queue[TokenEvent] = asyncio.Queue()
        self._queues[request_id] = queue
        finished = False
        try:
            self.engine.add_request(request_id, prompt_ids, params, qoe)  # ValueError: refused
            with self._wake:
                self._wake.notify()
            while True:
                event = await queue.get()
                finished = event.finish_reason is not None
                yield event
                if finished:
                    return
        finally:
            self._queues.pop(request_id, None)
            if not finished:
                self.engine.abort(request_id)

    # -- the loop thread ---------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._stopping and not self.engine.has_unfinished:
                    self._wake.wait()
                if self._stopping:
                    return
            try:
                events = self.engine.step()
            except Exception:  # a failed iteration must not take the server down
                log.exception("engine iteration failed; aborting in-flight requests")
                self._fail_all()
                continue
            if not events and self.engine.has_unfinished:
                with self._wake:  # nothing could run (e.g. all waiting on memory): back off
                    self._wake.wait(0.001)
            for event in events:
                self._publish(event)

    def _publish(self, event: TokenEvent) -> None:
        queue = self._queues.get(event.request_id)
        if queue is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(queue.put_nowait, event)

    def _fail_all(self) -> None:
        now = self.engine.now()
        for rid in list(self.engine.seqs):
            seq = self.engine.seqs[rid]
            self.engine.abort(rid)
            self._publish(
                TokenEvent(
                    request_id=rid,
                    token_id=None,
                    text="",
                    time=now,
                    prompt_tokens=seq.request.prompt_len,
                    completion_tokens=seq.request.generated,
                    finish_reason="error",
                )
            )
