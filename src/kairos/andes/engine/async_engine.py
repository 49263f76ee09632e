"""The engine behind an asyncio server: the driver's loop on an engine thread, streams fan out.

The engine thread (a `TorchThread`) runs an asyncio loop of its own, and on it the Andes driver
(`kairos.andes.driver`, the loop the simulator runs) with the torch engine as its worker; the
model runs there (torch releases the GIL in its kernels, so the server's event loop keeps
serving HTTP meanwhile). Requests are added and aborted from the server's loop under the
engine's lock, and wake the driver through its clock. Each request gets an asyncio queue; the
engine thread hands it every token the moment an iteration ends (push-based streaming, spec
section 6). A consumer that stops early (the client went away) aborts its request, which frees
its KV blocks at once. If an iteration ever fails, every in-flight request ends with an error
event and is aborted, and the loop keeps serving new requests.

Build the engine on the thread that will run it (`AsyncEngine.build`): on a CPU, a model built
on the main thread leaves an OpenMP team there, and a second team on the engine thread makes
every parallel op wait for a wake-up (kairos.runtime.torch_threads: decode 1.4x slower on 2
CPUs).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import Future

from kairos.andes.engine.api import EngineStats, QoESpec, SamplingParams, TokenEvent
from kairos.andes.engine.engine import LLMEngine
from kairos.andes.policies.warm_up import compile_kernels
from kairos.runtime.torch_threads import TorchThread
from kairos.sim import AsyncioClock

log = logging.getLogger(__name__)


class AsyncEngine:
    def __init__(self, engine: LLMEngine, thread: TorchThread | None = None) -> None:
        """`thread`: the one that built `engine`, which then runs it; None: a new one."""
        self.engine = engine
        self._queues: dict[str, asyncio.Queue[TokenEvent]] = {}
        self.thread = thread or TorchThread("kairos-engine")
        self._running: Future[None] | None = None  # the engine loop, while started
        self._loop: asyncio.AbstractEventLoop | None = None  # the server's
        self._engine_loop: asyncio.AbstractEventLoop | None = None  # the engine thread's

    @classmethod
    def build(cls, factory: Callable[[], LLMEngine]) -> AsyncEngine:
        """`factory()` run on a new engine thread, the engine then run there: what a server
        should do (module docstring). The factory's exception is re-raised here."""
        thread = TorchThread("kairos-engine")
        try:
            return cls(thread.call(factory), thread)
        except BaseException:
            thread.close()
            raise

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
        if self._running is not None:
            return
        self._loop = asyncio.get_running_loop()
        ready = threading.Event()
        self._running = self.thread.submit(lambda: self._run(ready))
        await asyncio.to_thread(ready.wait)

    async def shutdown(self) -> None:
        loop = self._engine_loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        if self._running is not None:
            await asyncio.wrap_future(self._running)
            self._running = None
        for rid in list(self._queues):
            self.engine.abort(rid)

    async def generate(
        self, request_id: str, prompt_ids: list[int], params: SamplingParams, qoe: QoESpec
    ) -> AsyncIterator[TokenEvent]:
        if self._running is None:
            raise RuntimeError("the engine is not started (call start())")
        if request_id in self._queues:
            raise ValueError(f"request id {request_id!r} is already in flight")
        queue: asyncio.Queue[TokenEvent] = asyncio.Queue()
        self._queues[request_id] = queue
        finished = False
        try:
            self.engine.add_request(request_id, prompt_ids, params, qoe)  # ValueError: refused
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

    # -- the engine thread ---------------------------------------------------------------
    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._engine_loop = loop
        driver = self.engine.driver
        # the engine stamps arrivals with its wall clock: the loop's clock shares its origin
        driver.clock = AsyncioClock(loop, origin=self.engine.clock.origin)
        driver.on_error = self._failed
        self.engine.emit = self._publish_all
        compile_kernels(self.engine.scheduler.policy, self.engine.latency)
        ready.set()
        driver.wake()  # requests queued before the thread started
        try:
            loop.run_forever()
        finally:
            driver.clock = self.engine.clock
            driver.busy = False
            self.engine.emit = None
            loop.close()

    def _failed(self, exc: BaseException) -> None:
        log.error("engine iteration failed; aborting in-flight requests", exc_info=exc)
        self._fail_all()

    def _publish_all(self, events: list[TokenEvent]) -> None:
        """One hop to the server's loop per iteration, however many streams it fed."""
        if events and self._loop is not None:
            self._loop.call_soon_threadsafe(self._deliver, events)

    def _deliver(self, events: list[TokenEvent]) -> None:
        for event in events:
            queue = self._queues.get(event.request_id)
            if queue is not None:
                queue.put_nowait(event)

    def _publish(self, event: TokenEvent) -> None:
        queue = self._queues.get(event.request_id)
        if queue is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(queue.put_nowait, event)

    async def drain(self, grace_s: float) -> None:
        """Shutdown's first step: open requests get up to `grace_s` to finish; the rest end
        with finish_reason "shutdown", so each client gets a final event that says why."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        while self._queues and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if self._queues:
            log.warning("shutting down: ending %d open request(s)", len(self._queues))
            self._end_all("shutdown")

    def _fail_all(self) -> None:
        self._end_all("error")

    def _end_all(self, reason: str) -> None:
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
                    finish_reason=reason,
                )
            )
