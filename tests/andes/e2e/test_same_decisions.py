"""One driver: the served torch engine decides what the simulator's driver decides.

The engine runs as `kairos serve` runs it (the OpenAI-compatible server on a real socket, in
front of `AsyncEngine`: the driver on its engine thread's asyncio clock, the model really
computing) on a KV cache small enough that the policy preempts, and records every decision;
clients stream completions over HTTP. The same `Driver`
then runs on simulated time over a worker that replays the real iterations (each ends when the
real one ended, and stops the requests the real one stopped), with the requests added when
the real ones arrived and the loop woken when the real one was woken from idle. Same policy,
same inputs: the same decisions at the same times, record by record. An altered record, or
another policy, must show as a divergence, or the comparison could not fail.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import deque
from dataclasses import dataclass, field

import httpx
import pytest

from kairos.andes.decisions import Iteration
from kairos.andes.driver import Driver, Executed
from kairos.andes.engine.async_engine import AsyncEngine
from kairos.andes.engine.engine import LLMEngine
from kairos.andes.policies.registry import make_policy
from kairos.andes.request import Request
from kairos.andes.scheduler import Scheduler, SchedulerOutput
from kairos.andes.server.app import create_app
from kairos.andes.server.settings import ServerSettings
from kairos.decisions import Entries, Entry, altered, first_divergence
from kairos.runtime.http import BackgroundServer
from kairos.sim import EventLoop, SimClock
from tests.andes.engine.conftest import make_engine

BLOCKS = 16  # 256 tokens of KV: three or four of the requests below at a time


@dataclass
class Capture:
    """The engine as the driver's worker, noting when each executed iteration was recorded
    (the real iteration's end) and which requests its tokens stopped."""

    engine: LLMEngine
    ends: list[tuple[float, tuple[str, ...]]] = field(default_factory=list)
    _executed: bool = False

    def execute(self, out: SchedulerOutput) -> Executed:
        self._executed = True
        return self.engine.execute(out)

    def recorded(self, out: SchedulerOutput, executed: Executed, t: float) -> None:
        if self._executed:  # not a decision that only stopped requests (nothing executed)
            self.ends.append((t, tuple(executed.stopped)))
            self._executed = False
        self.engine.recorded(out, executed, t)


@dataclass
class RealRun:
    decisions: list[Entry]
    ends: list[tuple[float, tuple[str, ...]]]
    requests: list[Request]
    engine: LLMEngine


def served(policy: str) -> RealRun:
    """Twelve streams over HTTP against the served engine on the wall clock: two bursts of
    four, and four more once those have finished (the loop woken from idle)."""
    built = AsyncEngine.build(
        lambda: make_engine(blocks=BLOCKS, cpu_blocks=16, policy=policy, max_model_len=128)
    )
    engine = built.engine
    entries = Entries()
    capture = Capture(engine)
    engine.driver.recorder, engine.driver.worker = entries, capture
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz "
    prompts = ["".join(rng.choices(letters, k=rng.randrange(15, 60))) for _ in range(12)]
    work = [(p, 0.3 * (i // 4), rng.randrange(20, 45), i) for i, p in enumerate(prompts)]
    app = create_app(built, ServerSettings(log_level="warning"))

    async def one(client: httpx.AsyncClient, prompt: str, at: float, n: int, seed: int) -> int:
        await asyncio.sleep(at + 0.01 * rng.random())
        qoe = {"ttft_s": 0.2, "tokens_per_s": 40}
        body = {"model": engine.model_name, "prompt": prompt, "max_tokens": n, "stream": True,
                "temperature": 0.8, "seed": seed, "qoe": qoe}  # fmt: skip
        chunks = 0
        async with client.stream("POST", "/v1/completions", json=body) as r:
            assert r.status_code == 200, await r.aread()
            async for line in r.aiter_lines():
                chunks += line.startswith("data: {")
        return chunks

    async def main(url: str) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            for part in (work[:8], work[8:]):  # the last four once the engine is idle
                done = await asyncio.gather(*(one(client, *w) for w in part))
                assert all(n > 0 for n in done)

    try:
        with BackgroundServer(app) as server:
            asyncio.run(main(server.url))
    finally:
        built.thread.close()
    requests = sorted(engine.scheduler.requests.values(), key=lambda r: r.arrival)
    return RealRun(list(entries), capture.ends, requests, engine)


class ReplayWorker:
    """Ends each iteration when the real one ended, stopping the requests it stopped."""

    def __init__(self, clock: SimClock, ends: list[tuple[float, tuple[str, ...]]]) -> None:
        self.clock, self.ends = clock, deque(ends)

    def execute(self, out: SchedulerOutput) -> Executed:
        now = self.clock.now()
        if not self.ends:  # a replay that decided more iterations than the run had
            return Executed([], 1e-3)
        end, stopped = self.ends.popleft()
        return Executed(list(stopped), _duration(now, end))

    def recorded(self, out: SchedulerOutput, executed: Executed, t: float) -> None: ...


def _duration(now: float, end: float) -> float:
    """The duration d with now + d == end exactly in floating point (when one exists)."""
    d = max(end - now, 0.0)
    for _ in range(4):
        if now + d < end:
            d = math.nextafter(d, math.inf)
        elif now + d > end:
            d = math.nextafter(d, -math.inf)
    return d


def replayed(run: RealRun, policy: str) -> list[Entry]:
    loop = EventLoop()
    clock = SimClock(loop)
    real = run.engine.scheduler
    scheduler = Scheduler(
        make_policy(policy),
        run.engine.latency,
        real.config,
        num_gpu_blocks=real.blocks.gpu.num_blocks,
        num_cpu_blocks=real.blocks.cpu.num_blocks,
    )
    entries = Entries()
    driver = Driver(scheduler, ReplayWorker(clock, run.ends), clock, recorder=entries)
    for r in run.requests:
        twin = Request(r.request_id, r.arrival, r.prompt_len, r.max_tokens, r.ttft_s,
                       r.tokens_per_s)  # fmt: skip
        loop.call_at(r.arrival, scheduler.add_request, twin)
    # the real loop decides right where an iteration ends; any other decision was a wake-up
    # from idle (a request arrived, or the engine thread started)
    ended = {t for t, _ in run.ends}
    for entry in run.decisions:
        if entry.t not in ended:
            loop.call_at(entry.t, driver.wake)
    loop.run()
    return list(entries)


@pytest.fixture(scope="module")
def andes_run() -> RealRun:
    return served("andes")


def _preempting(decisions: list[Entry]) -> list[int]:
    return [
        i
        for i, e in enumerate(decisions)
        if isinstance(e.record, Iteration) and (e.record.preempted or e.record.swapped_out)
    ]


def test_the_served_engine_decides_what_the_simulators_driver_decides(andes_run: RealRun) -> None:
    run = andes_run
    assert all(r.is_finished for r in run.requests) and len(run.requests) == 12
    # the policy had choices to make: requests were preempted (by recompute or swap)
    assert _preempting(run.decisions), "the cache must be small enough to force preemptions"
    assert sum(len(e.record.steps) > 1 for e in run.decisions) > 10  # batches, not a queue
    replay = replayed(run, "andes")
    divergence = first_divergence(run.decisions, replay)
    assert divergence is None, str(divergence)


def test_the_replay_notices_an_altered_decision(andes_run: RealRun) -> None:
    run = andes_run
    i = _preempting(run.decisions)[0]
    record = run.decisions[i].record
    change = {"preempted": ()} if record.preempted else {"swaps": ()}
    mutant = altered(run.decisions, i, **change)
    divergence = first_divergence(mutant, replayed(run, "andes"))
    assert divergence is not None and divergence.index == i


def test_the_replay_under_another_policy_decides_differently(andes_run: RealRun) -> None:
    divergence = first_divergence(andes_run.decisions, replayed(andes_run, "fcfs"))
    assert divergence is not None
