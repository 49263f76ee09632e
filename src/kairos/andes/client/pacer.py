"""Client-side token pacer (Andes spec section 8).

`TokenPacer` wraps any async stream of token texts and releases them to the user on the ideal
timeline of spec section 2: token j (1-based) is released at

    R_j = max(t_j, I_j, R_{j-1} + 1/s),    I_j = start + ttft + (j-1)/s,

never before it arrived (`t_j`), never before its ideal time, never faster than `s` tokens/s.
This is exactly the consumption timeline `C_j` of `kairos.andes.qoe`: `C_1 = max(t_1, I_1)` and
`C_j = max(t_j, C_{j-1} + 1/s)`, because `C_{j-1} >= I_{j-1}` gives
`C_{j-1} + 1/s >= I_{j-1} + 1/s = I_j`, so the extra `I_j` term never binds after the first token.
With a consumer that keeps iterating, the recorded release times are the `C_j` of `qoe_at`.

A background task reads the source into a buffer while the iterator releases on schedule, so
arrival times are stamped when tokens really arrive. Use it as an async context manager (or call
`aclose()`) so leaving early cancels the reader and closes the source:

    async with pace_openai_stream(stream, ttft_s=1.0, tokens_per_s=4.33) as pacer:
        async for piece in pacer:
            print(piece, end="", flush=True)

A stall is a pause in reading: the user has consumed everything released so far and is ready
for token j at `max(I_j, R_{j-1} + 1/s)` (for j = 1, at `I_1`), but it arrives later, at `t_j`.
The stall lengths add up to the final lag `R_n - I_n`, the quantity QoE penalises.

The browser pacer `kairos/andes/server/static/pacer.js` has the same semantics.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable
from types import TracebackType
from typing import Any, Protocol

from kairos.andes.client.sse import StreamError, openai_chunks
from kairos.andes.qoe import QoEParams, qoe_at
from kairos.sim.clock import WallClock

__all__ = [
    "PacerClock",
    "TokenPacer",
    "chunk_text",
    "openai_text_deltas",
    "pace_openai_stream",
]

# A release woken this little before its target counts as on time (float/clock rounding only).
_EPS = 1e-9


class PacerClock(Protocol):
    """What the pacer needs from a clock: `kairos.sim.clock.WallClock` is one."""

    def now(self) -> float: ...

    async def sleep_until(self, t: float) -> None: ...


class TokenPacer:
    """Async iterator releasing one text piece per source item on the ideal timeline.

    `start` is the request's arrival time on `clock` (default: `clock.now()` at construction,
    so build the pacer when the request is sent). Each source item is one token's text.
    """

    def __init__(
        self,
        source: AsyncIterable[str],
        *,
        ttft_s: float,
        tokens_per_s: float,
        clock: PacerClock | None = None,
        start: float | None = None,
    ) -> None:
        params = QoEParams(ttft_s, tokens_per_s)  # validates both
        self.ttft_s = params.ttft_s
        self.tokens_per_s = params.tokens_per_s
        self._clock: PacerClock = WallClock() if clock is None else clock
        self.start = self._clock.now() if start is None else float(start)
        self._source = source
        self._iter: AsyncIterator[str] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: deque[str] = deque()
        self._arrivals: list[float] = []
        self._releases: list[float] = []
        self._stalls: list[tuple[float, float]] = []
        self._wake = asyncio.Event()
        self._finished = False
        self._closed = False
        self._error: BaseException | None = None
        with contextlib.suppress(RuntimeError):  # no running loop: start on first use
            asyncio.get_running_loop()
            self._start_reader()

    # -- timeline ---------------------------------------------------------------------------
    def ideal(self, j: int) -> float:
        """Ideal consumption time `I_j` of token j (1-based)."""
        return self.start + self.ttft_s + (j - 1) / self.tokens_per_s

    @property
    def arrival_times(self) -> list[float]:
        """When each token arrived from the source (clock time)."""
        return list(self._arrivals)

    @property
    def release_times(self) -> list[float]:
        """When each token was released to the user (clock time)."""
        return list(self._releases)

    @property
    def stalls(self) -> list[tuple[float, float]]:
        """(start, end) of each pause: the user was ready for a token that had not arrived."""
        return list(self._stalls)

    @property
    def buffered_tokens(self) -> int:
        """Tokens that arrived but are not released yet."""
        return len(self._arrivals) - len(self._releases)

    @property
    def buffered_seconds(self) -> float:
        """Reading time the buffer holds: `buffered_tokens / tokens_per_s`."""
        return self.buffered_tokens / self.tokens_per_s

    @property
    def finished(self) -> bool:
        """The source is exhausted (or failed, or the pacer was closed)."""
        return self._finished

    @property
    def done(self) -> bool:
        """Every token of a finished source has been released."""
        return self._finished and self.buffered_tokens == 0

    def qoe(self, t: float | None = None) -> float:
        """Client-side QoE from the arrival times, via `kairos.andes.qoe.qoe_at`.

        A finished stream is scored over all its tokens; one in flight at `t` (default now).
        """
        if self._finished and t is None:
            return qoe_at(self._arrivals, self.start, self.ttft_s, self.tokens_per_s)
        now = self._clock.now() if t is None else t
        return qoe_at(
            self._arrivals, self.start, self.ttft_s, self.tokens_per_s, t=now, finished=False
        )

    # -- reading the source ------------------------------------------------------------------
    def _start_reader(self) -> None:
        if self._reader is None and not self._closed:
            self._iter = aiter(self._source)
            self._reader = asyncio.get_running_loop().create_task(self._read(self._iter))

    async def _read(self, it: AsyncIterator[str]) -> None:
        try:
            async for text in it:
                self._arrivals.append(self._clock.now())
                self._pending.append(text)
                self._wake.set()
        except Exception as exc:  # handed to the consumer after the tokens that did arrive
            self._error = exc
        finally:
            self._finished = True
            self._wake.set()

    # -- releasing ---------------------------------------------------------------------------
    def __aiter__(self) -> TokenPacer:
        return self

    async def __anext__(self) -> str:
        if self._closed:
            raise StopAsyncIteration
        self._start_reader()
        j = len(self._releases) + 1
        while not self._pending:
            if self._closed or self._finished:
                if self._error is not None and not self._closed:
                    error, self._error = self._error, None
                    raise error
                raise StopAsyncIteration
            self._wake.clear()
            await self._wake.wait()
        arrived = self._arrivals[j - 1]
        due = self.ideal(j)
        if j > 1:
            due = max(due, self._releases[-1] + 1.0 / self.tokens_per_s)
        if arrived > due + _EPS:
            self._stalls.append((due, arrived))
        target = max(due, arrived)
        while self._clock.now() < target - _EPS:
            await self._clock.sleep_until(target)
        if self._closed:
            raise StopAsyncIteration
        self._releases.append(self._clock.now())
        return self._pending.popleft()

    async def aclose(self) -> None:
        """Stop: cancel the reader and close the source. Buffered tokens are dropped."""
        if self._closed:
            return
        self._closed = True
        self._finished = True
        self._wake.set()
        if self._reader is not None and not self._reader.done():
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        for obj in (self._iter, self._source):
            close = getattr(obj, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    @property
    def reader_done(self) -> bool:
        """The background reader task has ended (or never started)."""
        return self._reader is None or self._reader.done()

    async def __aenter__(self) -> TokenPacer:
        self._start_reader()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


# -- OpenAI-compatible streams -------------------------------------------------------------------
def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def chunk_text(chunk: Any) -> str:
    """Text of one chat (`choices[0].delta.content`) or completion (`choices[0].text`) chunk.

    Works on openai model objects and on plain dicts; a chunk without text (role-only,
    usage-only, empty choices) gives "".
    """
    choices = _field(chunk, "choices")
    if not choices:
        return ""
    choice = choices[0]
    delta = _field(choice, "delta")
    text = _field(delta, "content") if delta is not None else _field(choice, "text")
    return text if isinstance(text, str) else ""


async def openai_text_deltas(
    stream: Any, on_chunk: Callable[[Any], None] | None = None
) -> AsyncIterator[str]:
    """Non-empty text deltas of an OpenAI-compatible stream, one per chunk.

    `stream` is an `openai` `AsyncStream` (of `ChatCompletionChunk` or `Completion`) or any
    async iterable of such chunks or dicts, or a streaming `httpx.Response` carrying raw SSE
    (decoded as the bench client decodes it, `kairos.andes.client.sse`). `on_chunk` sees every
    chunk (e.g. to keep the final `usage`). An error chunk, a malformed one or an answer that
    is not an event stream raises `StreamError`. The stream is closed at the end.
    """
    chunks = openai_chunks(stream) if hasattr(stream, "aiter_bytes") else stream
    try:
        async for chunk in chunks:
            if isinstance(chunk, dict) and "error" in chunk:
                raise StreamError(f"stream error: {chunk['error']}")
            if on_chunk is not None:
                on_chunk(chunk)
            text = chunk_text(chunk)
            if text:
                yield text
    finally:
        close = getattr(stream, "aclose", None) or getattr(stream, "close", None)
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result):
                await result


def pace_openai_stream(
    stream: Any,
    *,
    ttft_s: float,
    tokens_per_s: float,
    clock: PacerClock | None = None,
    start: float | None = None,
    on_chunk: Callable[[Any], None] | None = None,
) -> TokenPacer:
    """A `TokenPacer` over an OpenAI-compatible stream (see `openai_text_deltas`)."""
    return TokenPacer(
        openai_text_deltas(stream, on_chunk),
        ttft_s=ttft_s,
        tokens_per_s=tokens_per_s,
        clock=clock,
        start=start,
    )
