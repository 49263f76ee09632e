"""An iteration-level simulator of an LLM serving engine: the one driver
(`kairos.andes.driver`) on the kairos event loop with a simulated worker.

It drives the same `Scheduler` and policy objects as the torch engine. What it simulates is
time: each iteration lasts what the latency model says (prefill, decode, or a Sarathi mixed
step, plus swap copies and, optionally, the policy's own decision time), and every token is
pushed to its client the instant its iteration ends. The simulator knows each request's true
output length and reports the stop to the scheduler; the policy never sees it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kairos.andes.driver import DecisionHook, Driver, Executed
from kairos.andes.iteration import decode_batch, iteration_time
from kairos.andes.latency import LatencyModel
from kairos.andes.metrics import delivery_speed, first_token_wait, tail_metrics
from kairos.andes.policy import Policy
from kairos.andes.qoe import ttft_target
from kairos.andes.request import Request, Status
from kairos.andes.scheduler import Scheduler, SchedulerConfig, SchedulerOutput
from kairos.decisions import Recorder
from kairos.sim import EventLoop, SimClock
from kairos.workloads import Trace


@dataclass
class SimulationResult:
    requests: list[Request]
    output_lens: dict[str, int]
    stats: dict[str, list[float]]  # per-second: time, running, waiting, preempted, kv_usage
    iterations: int
    decision_s: list[float] = field(default_factory=list)
    end_time: float = 0.0
    solve_s: list[float] = field(default_factory=list)  # decisions that ran the optimiser
    prefill_time_share: float = 0.0  # engine time in iterations that prefilled / all of it

    def qoe(self) -> np.ndarray:
        return np.array([r.qoe.qoe_at(r.finish_time, finished=True) for r in self.requests])

    def ttft(self) -> np.ndarray:
        return np.array([first_token_wait(r.token_times, r.arrival) for r in self.requests])

    def tds(self) -> np.ndarray:
        return np.array([delivery_speed(r.token_times) for r in self.requests])

    def preemptions(self) -> np.ndarray:
        return np.array([r.preemptions for r in self.requests], dtype=float)

    def summary(self) -> dict[str, Any]:
        q, ttft, tds, preemptions = self.qoe(), self.ttft(), self.tds(), self.preemptions()
        return {
            "requests": len(self.requests),
            "avg_qoe": float(q.mean()) if q.size else math.nan,
            "share_qoe_095": float((q >= 0.95).mean()) if q.size else math.nan,
            "avg_ttft": float(np.nanmean(ttft)) if q.size else math.nan,
            "avg_tds": float(np.nanmean(tds)) if q.size else math.nan,
            "preemptions_per_request": float(preemptions.mean()) if q.size else math.nan,
            # TDS counts a pause: the streams never paused, apart (Andes' batch-size effect)
            "tds_unpreempted": _nanmean(tds[preemptions == 0]),
            "peak_waiting": float(max(self.stats["waiting"], default=0.0)),
            # requests never started (preempted ones left out): the queue FCFS builds
            "peak_new_waiting": float(max(self.stats.get("new", []), default=0.0)),
            "kv_peak": float(max(self.stats["kv_usage"], default=0.0)),
            "prefill_time_share": self.prefill_time_share,
            "iterations": self.iterations,
            "end_time": self.end_time,
        } | tail_metrics(q, ttft, np.array([r.prompt_len for r in self.requests]))


def _nanmean(x: np.ndarray) -> float:
    """The mean of the finite entries, NaN when there are none (no warning)."""
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else math.nan


class SimWorker:
    """Carries a decision out in simulated time: the iteration lasts what the latency profile
    says (plus the regather cost when the decode batch changed, and optionally the policy's
    decision time), and a request stops when it reaches its true output length."""

    def __init__(self, latency: LatencyModel, count_decision_time: bool = False) -> None:
        self.latency = latency
        self.count_decision_time = count_decision_time
        self.output_lens: dict[str, int] = {}
        self._last_batch: tuple[str, ...] | None = None  # the last iteration's decode batch
        # engine time, and the part of it in iterations that prefilled (which regime a run is
        # in: where prefills take most of it, streams stall behind them)
        self.busy_s = 0.0
        self.prefill_busy_s = 0.0

    def execute(self, out: SchedulerOutput) -> Executed:
        lens = self.output_lens
        stopped = [
            s.request.request_id
            for s in out.steps
            if s.samples and s.request.generated + 1 >= lens[s.request.request_id]
        ]
        if out.is_empty and not out.block_copies:
            return Executed(stopped, 0.0)
        batch = decode_batch(out)
        regather = batch is None or batch != self._last_batch
        self._last_batch = batch
        duration = iteration_time(self.latency, out, regather=regather)
        if self.count_decision_time:
            duration += out.decision_s
        self.busy_s += duration
        if out.prefills:
            self.prefill_busy_s += duration
        return Executed(stopped, max(duration, 1e-6))

    def recorded(self, out: SchedulerOutput, executed: Executed, t: float) -> None:
        """Tokens reach their clients the instant the iteration ends: nothing to stream."""


class Simulator:
    """The driver on simulated time with the simulated worker, plus per-second statistics."""

    def __init__(
        self,
        policy: Policy,
        latency: LatencyModel,
        config: SchedulerConfig | None = None,
        *,
        count_decision_time: bool = False,
        stats_interval_s: float = 1.0,
        max_time_s: float | None = None,
        on_decision: DecisionHook | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.loop = EventLoop()
        self.scheduler = Scheduler(policy, latency, config)
        self.worker = SimWorker(latency, count_decision_time)
        self.driver = Driver(
            self.scheduler,
            self.worker,
            SimClock(self.loop),
            on_decision=self._decided,
            recorder=recorder,
        )
        self.on_decision = on_decision
        self.latency = latency
        self.stats_interval_s = stats_interval_s
        self.max_time_s = max_time_s
        self._requests: list[Request] = []
        self._stats: dict[str, list[float]] = {
            k: [] for k in ("time", "running", "waiting", "new", "preempted", "kv_usage")
        }
        self._decision_s: list[float] = []
        self._solve_s: list[float] = []
        self._pending_arrivals = 0

    def add(self, request: Request, output_len: int) -> None:
        if output_len < 1:
            raise ValueError(f"request {request.request_id}: output length must be >= 1")
        self.worker.output_lens[request.request_id] = output_len  # max_tokens: scheduler's cut
        self._requests.append(request)
        self._pending_arrivals += 1
        self.loop.call_at(request.arrival, self._arrive, request)

    def _decided(self, t: float, out: SchedulerOutput) -> None:
        self._decision_s.append(out.decision_s)
        if out.solved:
            self._solve_s.append(out.decision_s)
        if self.on_decision is not None:
            self.on_decision(t, out)

    def _arrive(self, request: Request) -> None:
        self._pending_arrivals -= 1
        self.driver.add(request)

    def _sample(self) -> None:
        s = self.scheduler
        self._stats["time"].append(self.loop.now)
        self._stats["running"].append(len(s.running))
        self._stats["waiting"].append(len(s._new) + len(s._preempted))
        self._stats["new"].append(len(s._new))  # never started: the paper's queue of Fig. 3
        self._stats["preempted"].append(len(s._preempted) + len(s.swapped))
        self._stats["kv_usage"].append(s.blocks.usage)
        if s.num_unfinished or self._pending_arrivals:
            self.loop.call_after(self.stats_interval_s, self._sample)

    def run(self) -> SimulationResult:
        self.loop.call_at(0.0, self._sample)
        self.loop.run(until=self.max_time_s)
        unfinished = [r for r in self._requests if r.status is not Status.FINISHED]
        for r in unfinished:  # a horizon cut the run short: score what was delivered
            r.finish_time = self.loop.now
        done = [r.finish_time for r in self._requests if r.status is Status.FINISHED]
        end = self.loop.now if unfinished or not done else max(done)
        return SimulationResult(
            requests=self._requests,
            output_lens=self.worker.output_lens,
            stats=self._stats,
            iterations=self.scheduler.iteration,
            decision_s=self._decision_s,
            end_time=end,
            solve_s=self._solve_s,
            prefill_time_share=self.worker.prefill_busy_s / max(self.worker.busy_s, 1e-12),
        )


def requests_from_trace(
    trace: Trace,
    speeds: np.ndarray,
    *,
    prefill_tokens_per_s: float = 5000.0,
    max_tokens: int | None = None,
) -> list[tuple[Request, int]]:
    """(request, true output length) pairs; max_tokens defaults to the true length's cap."""
    ttft = ttft_target(trace.prompt_tokens, prefill_tokens_per_s)
    out = []
    for i in range(len(trace)):
        n_out = max(1, int(trace.output_tokens[i]))
        req = Request(
            request_id=str(i),
            arrival=float(trace.arrivals[i]),
            prompt_len=max(1, int(trace.prompt_tokens[i])),
            max_tokens=max_tokens or max(n_out, 4096),
            ttft_s=float(ttft[i]),
            tokens_per_s=float(speeds[i]),
        )
        out.append((req, n_out))
    return out


def simulate(
    policy: Policy,
    latency: LatencyModel,
    trace: Trace,
    speeds: np.ndarray,
    config: SchedulerConfig | None = None,
    **kwargs: Any,
) -> SimulationResult:
    sim = Simulator(policy, latency, config, **kwargs)
    for req, n_out in requests_from_trace(trace, speeds):
        sim.add(req, n_out)
    return sim.run()
