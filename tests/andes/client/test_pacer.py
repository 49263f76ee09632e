"""The Python token pacer, on a virtual-time asyncio loop (sleeps cost no wall time)."""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from types import SimpleNamespace
from typing import Any, TypeVar

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.andes.client.pacer import TokenPacer, chunk_text, pace_openai_stream
from kairos.andes.qoe import qoe_at

T = TypeVar("T")
TOL = 1e-9


class _VirtualSelector(selectors.DefaultSelector):
    """Never blocks: when the loop would wait for its next timer, jump the clock to it."""

    def __init__(self, clock: list[float]) -> None:
        super().__init__()
        self._clock = clock

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready:
            return ready
        if timeout is None:
            raise RuntimeError("virtual-time loop deadlocked: nothing ready, no timer pending")
        self._clock[0] += max(timeout, 0.0)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._virtual = [0.0]
        super().__init__(_VirtualSelector(self._virtual))

    def time(self) -> float:
        return self._virtual[0]


class LoopClock:
    """Reads the running loop's time, so on a VirtualTimeLoop it is virtual."""

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep_until(self, t: float) -> None:
        await asyncio.sleep(max(0.0, t - self.now()))


def run_virtual(make: Callable[[], Awaitable[T]]) -> T:
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        return runner.run(make())  # type: ignore[arg-type]


async def timed_tokens(times: Sequence[float], clock: LoopClock) -> AsyncIterator[str]:
    for i, t in enumerate(times):
        await clock.sleep_until(t)
        yield f"tok{i} "


def consumption(times: Sequence[float], a: float, ttft: float, s: float) -> list[float]:
    """qoe.py's consumption timeline: C_1 = max(t_1, I_1), C_j = max(t_j, C_{j-1} + 1/s)."""
    out: list[float] = []
    for j, t in enumerate(times):
        out.append(max(t, a + ttft) if j == 0 else max(t, out[-1] + 1 / s))
    return out


def pace(times: Sequence[float], ttft: float, speed: float, start: float = 0.0) -> TokenPacer:
    """Run a pacer over tokens arriving at `times`, checking the buffer at every release."""

    async def go() -> TokenPacer:
        clock = LoopClock()
        pacer = TokenPacer(
            timed_tokens(times, clock), ttft_s=ttft, tokens_per_s=speed, clock=clock, start=start
        )
        async with pacer:
            texts = []
            async for piece in pacer:
                now = clock.now()
                k = len(pacer.release_times)
                arrived = len(pacer.arrival_times)
                # every token due by now has arrived, none from the future (up to float rounding)
                assert sum(t < now - TOL for t in times) <= arrived
                assert arrived <= sum(t <= now + TOL for t in times)
                assert pacer.buffered_tokens == arrived - k
                assert pacer.buffered_seconds == pytest.approx(pacer.buffered_tokens / speed)
                texts.append(piece)
            assert texts == [f"tok{i} " for i in range(len(times))]
            assert pacer.done and pacer.buffered_tokens == 0
        return pacer

    return run_virtual(go)


timelines = st.lists(st.floats(0.0, 30.0), min_size=0, max_size=30).map(sorted)


@settings(max_examples=150, deadline=None)
@given(times=timelines, ttft=st.floats(0.0, 3.0), speed=st.floats(0.5, 20.0))
def test_release_timeline_properties(times: list[float], ttft: float, speed: float) -> None:
    p = pace(times, ttft, speed)
    r, a = p.release_times, p.arrival_times
    assert a == pytest.approx(times, abs=TOL)
    for j, (rj, tj) in enumerate(zip(r, a, strict=True)):
        assert rj >= tj - TOL  # never before arrival
        assert rj >= p.ideal(j + 1) - TOL  # never before the ideal time
        if j:
            assert rj - r[j - 1] >= 1 / speed - TOL  # never faster than the reader
    # the release timeline is exactly qoe.py's consumption timeline
    assert r == pytest.approx(consumption(a, 0.0, ttft, speed), abs=TOL)
    assert p.qoe() == qoe_at(a, 0.0, ttft, speed)
    if r:  # QoE recomputed from the release times agrees with qoe_at
        ideal = [p.ideal(j + 1) for j in range(len(r))]
        whole = sum(r[-1] - i for i in ideal)
        q = 1.0 if whole <= 0 else 1 - sum(c - i for c, i in zip(r, ideal, strict=True)) / whole
        assert q == pytest.approx(p.qoe(), abs=1e-7)
        # stall lengths add up to the final lag, the thing QoE penalises
        assert sum(e - s for s, e in p.stalls) == pytest.approx(r[-1] - ideal[-1], abs=1e-6)
    for s, e in p.stalls:
        assert e > s and any(abs(e - t) <= TOL for t in a)


@settings(max_examples=60, deadline=None)
@given(times=timelines, ttft=st.floats(0.5, 3.0), speed=st.floats(0.5, 20.0))
def test_early_tokens_follow_the_ideal_timeline_exactly(
    times: list[float], ttft: float, speed: float
) -> None:
    early = [min(t, ttft) * 0.99 for t in times]  # every token before I_1 <= I_j
    p = pace(early, ttft, speed)
    assert p.release_times == pytest.approx([ttft + j / speed for j in range(len(early))], abs=TOL)
    assert p.stalls == []
    assert p.qoe() == 1.0


def test_burst_fills_then_drains_the_buffer() -> None:
    async def go() -> tuple[list[int], TokenPacer]:
        clock = LoopClock()
        src = timed_tokens([0.5] * 10, clock)
        pacer = TokenPacer(src, ttft_s=1.0, tokens_per_s=2.0, clock=clock, start=0.0)
        seen = []
        async with pacer:
            await clock.sleep_until(0.75)
            assert pacer.buffered_tokens == 10 and pacer.buffered_seconds == 5.0
            assert pacer.qoe() == 1.0  # nothing due yet
            async for _ in pacer:
                seen.append(pacer.buffered_tokens)
        return seen, pacer

    seen, p = run_virtual(go)
    assert seen == list(range(9, -1, -1))
    assert p.release_times == pytest.approx([1.0 + 0.5 * j for j in range(10)])


def test_late_tokens_record_stalls() -> None:
    # a=0, T0=1, s=1: ideal 1, 2, 3, 4. Token 2 is 3 s late, token 4 half a second late.
    p = pace([0.2, 5.0, 5.1, 7.5], 1.0, 1.0)
    assert p.release_times == pytest.approx([1.0, 5.0, 6.0, 7.5])
    assert p.stalls == [(pytest.approx(2.0), 5.0), (pytest.approx(7.0), 7.5)]
    assert p.qoe() == pytest.approx(qoe_at([0.2, 5.0, 5.1, 7.5], 0.0, 1.0, 1.0))
    # a late first token is a stall too; spec worked example: arrivals 0 and 10 -> 1 - 8/17
    p = pace([3.0], 1.0, 1.0)
    assert p.stalls == [(1.0, 3.0)]
    p = pace([0.0, 10.0], 1.0, 1.0)
    assert p.qoe() == pytest.approx(1 - 8 / 17)
    assert p.stalls == [(2.0, 10.0)]


def test_in_flight_qoe_matches_qoe_at() -> None:
    async def go() -> list[tuple[float, float]]:
        clock = LoopClock()
        pacer = TokenPacer(
            timed_tokens([1.0, 4.0], clock), ttft_s=1.0, tokens_per_s=1.0, clock=clock, start=0.0
        )
        out = []
        async with pacer:
            for t in (0.5, 1.5, 3.0, 3.9):
                await clock.sleep_until(t)
                q = qoe_at([1.0], 0.0, 1.0, 1.0, t=t, finished=False)
                out.append((pacer.qoe(), q))
            assert not pacer.finished
        return out

    results = run_virtual(go)
    assert results[0] == (1.0, 1.0) and results[2][0] == pytest.approx(1 - 2 / 6)
    for got, want in results:
        assert got == want


def test_closing_early_cancels_the_reader_and_closes_the_source() -> None:
    state = {"closed": False, "produced": 0}

    async def endless(clock: LoopClock) -> AsyncIterator[str]:
        try:
            while True:
                await clock.sleep_until(clock.now() + 0.1)
                state["produced"] += 1
                yield "x"
        finally:
            state["closed"] = True

    async def go() -> TokenPacer:
        clock = LoopClock()
        pacer = TokenPacer(endless(clock), ttft_s=0.0, tokens_per_s=5.0, clock=clock)
        async with pacer:
            got = []
            async for piece in pacer:
                got.append(piece)
                if len(got) == 3:
                    break
            assert got == ["x"] * 3 and not pacer.reader_done
        assert pacer.reader_done and state["closed"]
        produced = state["produced"]
        await clock.sleep_until(clock.now() + 5.0)
        assert state["produced"] == produced  # nothing reads the source any more
        assert [p async for p in pacer] == []
        return pacer

    p = run_virtual(go)
    assert len(p.release_times) == 3 and p.finished


def test_source_error_is_raised_after_the_tokens_that_arrived() -> None:
    async def failing() -> AsyncIterator[str]:
        yield "a"
        yield "b"
        raise ConnectionError("dropped")

    async def go() -> list[str]:
        clock = LoopClock()
        got: list[str] = []
        async with TokenPacer(failing(), ttft_s=0.5, tokens_per_s=4.0, clock=clock) as pacer:
            with pytest.raises(ConnectionError, match="dropped"):
                async for piece in pacer:
                    got.append(piece)
        return got

    assert run_virtual(go) == ["a", "b"]


def test_rejects_bad_parameters() -> None:
    async def empty() -> AsyncIterator[str]:
        return
        yield ""

    with pytest.raises(ValueError):
        TokenPacer(empty(), ttft_s=1.0, tokens_per_s=0.0)
    with pytest.raises(ValueError):
        TokenPacer(empty(), ttft_s=-1.0, tokens_per_s=4.0)


def _chat_chunks() -> list[Any]:
    from openai.types.chat import ChatCompletionChunk
    from openai.types.completion import Completion

    def chat(delta: dict[str, Any]) -> ChatCompletionChunk:
        return ChatCompletionChunk.model_validate(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
        )

    usage = ChatCompletionChunk.model_validate(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    )
    completion = Completion.model_validate(
        {
            "id": "d",
            "object": "text_completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "text": "!", "finish_reason": "stop"}],
        }
    )
    texts = [chat({"role": "assistant"})] + [chat({"content": c}) for c in ("Hi", "", " there")]
    return [*texts, usage, completion]


def test_openai_chunks_are_paced_and_usage_is_seen() -> None:
    chunks = _chat_chunks()
    assert [chunk_text(c) for c in chunks] == ["", "Hi", "", " there", "", "!"]
    assert chunk_text(SimpleNamespace(choices=[SimpleNamespace(delta=None, text="x")])) == "x"
    seen: list[Any] = []

    class FakeStream:
        closed = False

        async def __aiter__(self) -> AsyncIterator[Any]:
            for c in chunks:
                yield c

        async def close(self) -> None:
            FakeStream.closed = True

    async def go() -> tuple[list[str], TokenPacer]:
        clock = LoopClock()
        pacer = pace_openai_stream(
            FakeStream(), ttft_s=1.0, tokens_per_s=2.0, clock=clock, on_chunk=seen.append
        )
        async with pacer:
            return [p async for p in pacer], pacer

    texts, p = run_virtual(go)
    assert texts == ["Hi", " there", "!"] and FakeStream.closed
    assert p.release_times == pytest.approx([1.0, 1.5, 2.0], abs=TOL)
    assert any(getattr(c, "usage", None) is not None for c in seen)


def test_raw_sse_over_httpx_is_parsed() -> None:
    body = (
        'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
        'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
        ": keep-alive comment\n\n"
        'data: {"choices":[{"index":0,"delta":{"content":"lo"}}]}\n\n'
        'data: {"choices":[],"usage":{"completion_tokens":2}}\n\n'
        "data: [DONE]\n\n"
    )

    async def go() -> list[str]:
        async def parts() -> AsyncIterator[bytes]:
            for i in range(0, len(body), 7):  # split mid-line on purpose
                yield body[i : i + 7].encode()

        response = httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=parts()
        )
        clock = LoopClock()
        async with pace_openai_stream(
            response, ttft_s=0.0, tokens_per_s=100.0, clock=clock
        ) as pacer:
            out = [p async for p in pacer]
        assert response.is_closed
        return out

    assert run_virtual(go) == ["Hel", "lo"]
