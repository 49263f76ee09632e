"""The scheduling mechanism, shaped like vLLM v1's scheduler.

`add_request`, `schedule(now) -> SchedulerOutput`, `update_from_output(output, now, stopped)`,
`finish_requests(ids)`. Each `schedule` asks the policy for a `Decision` and carries it out
under the engine's hard limits (KV blocks with a watermark, `max_num_seqs`,
`max_num_batched_tokens`, the swap pool). The simulator and the torch engine both drive this
class; only how long an iteration takes and who decides that a request stopped differ.

Token accounting: a running request's `computed` tokens have KV in the cache. Scheduling n
tokens computes their KV; when that reaches the whole context, the step samples one new token.
So a decode is a 1-token step, a prefill a `prompt`-token step, and a resume after recompute
preemption a `prompt + generated`-token step.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from kairos.andes.decisions import Iteration, Step, Swap
from kairos.andes.kv_blocks import BlockManager
from kairos.andes.latency import LatencyModel
from kairos.andes.policy import Decision, Policy, PreemptMode, SchedulerView
from kairos.andes.request import Request, Status
from kairos.andes.request_table import RequestTable


class SchedulerConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_num_seqs: PositiveInt = 512
    max_num_batched_tokens: PositiveInt = 200_000
    watermark: float = Field(0.01, ge=0, lt=1)  # share of GPU blocks kept free at admission
    chunk_size: PositiveInt = 512  # per-iteration token budget for chunked-prefill policies


@dataclass
class ScheduledStep:
    request: Request
    tokens: int  # context tokens computed this iteration
    samples: bool  # completes the context, so a new token is produced
    cached: int = 0  # context tokens already in the cache (earlier chunks): attention reads them

    @property
    def is_decode(self) -> bool:
        """One token after output began (anything else computes prompt or recompute KV)."""
        return self.tokens == 1 and self.request.generated > 0


@dataclass
class SchedulerOutput:
    """The scheduler's side of an iteration (live requests, for recording its results);
    `decision()` is what the mechanism executes and a decision log holds."""

    steps: list[ScheduledStep] = field(default_factory=list)
    swap_in: list[tuple[Request, list[tuple[int, int]]]] = field(default_factory=list)
    swap_out: list[tuple[Request, list[tuple[int, int]]]] = field(default_factory=list)
    recomputed: list[Request] = field(default_factory=list)
    # the swaps above in the order they happened: a block freed by one copy can be the
    # target of the next, so an engine must replay them in this order
    block_copies: list[Swap] = field(default_factory=list)
    decision_s: float = 0.0  # wall time the policy took
    solved: bool = False  # the policy ran its optimiser (so decision_s is a solve time)
    finished: list[Request] = field(default_factory=list)  # stopped here: outgrew the cache
    _decision: Iteration | None = field(default=None, repr=False, compare=False)

    def decision(self) -> Iteration:
        """The decision as a plain record, built once on first use (the simulator, which
        only charges time, never pays for it unless a recorder asks)."""
        if self._decision is None:
            self._decision = Iteration(
                steps=tuple(
                    Step(s.request.request_id, s.tokens, s.cached, s.samples) for s in self.steps
                ),
                preempted=tuple(r.request_id for r in self.recomputed),
                swaps=tuple(self.block_copies),
                finished=tuple(r.request_id for r in self.finished),
            )
        return self._decision

    @property
    def is_empty(self) -> bool:
        return not self.steps

    @property
    def prefill_tokens(self) -> list[int]:
        return [s.tokens for s in self.steps if not s.is_decode]

    @property
    def decode_steps(self) -> list[ScheduledStep]:
        return [s for s in self.steps if s.is_decode]

    @property
    def decodes(self) -> bool:
        """Some step produces a decode token (stops at the first; asked every iteration)."""
        return any(s.is_decode for s in self.steps)

    @property
    def prefills(self) -> bool:
        """Some step computes prompt or recompute KV."""
        return not all(s.is_decode for s in self.steps)


class Scheduler:
    def __init__(
        self,
        policy: Policy,
        latency: LatencyModel,
        config: SchedulerConfig | None = None,
        *,
        num_gpu_blocks: int | None = None,
        num_cpu_blocks: int | None = None,
    ) -> None:
        self.policy = policy
        self.latency = latency
        self.config = config or SchedulerConfig()
        bs = latency.block_size
        gpu = num_gpu_blocks if num_gpu_blocks is not None else latency.kv_capacity_tokens // bs
        cpu = num_cpu_blocks if num_cpu_blocks is not None else latency.swap_capacity_tokens // bs
        self.blocks = BlockManager(gpu, cpu, bs)
        self.requests: dict[str, Request] = {}
        self.running: list[Request] = []
        self._preempted: dict[str, Request] = {}  # recompute-preempted: front of the queue
        self._new: dict[str, Request] = {}  # never run: arrival order
        self.swapped: dict[str, Request] = {}
        self.table = RequestTable()
        self.iteration = 0
        self._now = 0.0
        self._admissions = 0
        # (time, produced decode tokens?) of recent iterations: the token latency running
        # streams actually see, prefill stalls included (the paper's compute-bound trigger)
        self._recent: deque[tuple[float, bool]] = deque(maxlen=16)

    # -- queue views -------------------------------------------------------------------
    @property
    def waiting(self) -> list[Request]:
        return [*reversed(self._preempted.values()), *self._new.values()]

    @property
    def num_unfinished(self) -> int:
        return len(self.running) + len(self._preempted) + len(self._new) + len(self.swapped)

    def add_request(self, request: Request) -> None:
        """Queue a request; one that could never run is refused here, never accepted and lost."""
        if request.request_id in self.requests:
            raise ValueError(f"duplicate request id {request.request_id!r}")
        room = (self.blocks.gpu.num_blocks - self._reserve()) * self.blocks.block_size
        if request.prompt_len + 1 > room:
            raise ValueError(
                f"request {request.request_id}: prompt of {request.prompt_len} tokens does not "
                f"fit the KV cache ({room} tokens)"
            )
        if (
            not self.policy.chunked_prefill
            and request.prompt_len > self.config.max_num_batched_tokens
        ):
            raise ValueError(
                f"request {request.request_id}: prompt of {request.prompt_len} tokens exceeds "
                f"max_num_batched_tokens={self.config.max_num_batched_tokens}"
            )
        self.requests[request.request_id] = request
        self._new[request.request_id] = request
        self.table.add(request)

    def finish_requests(
        self, request_ids: Iterable[str], now: float, reason: str = "abort"
    ) -> None:
        """Remove requests wherever they are (client gone, stop hit) and free their blocks."""
        for rid in request_ids:
            r = self.requests.get(rid)
            if r is None or r.is_finished:
                continue
            if r.status is Status.RUNNING:
                self.running.remove(r)
            self._preempted.pop(rid, None)
            self._new.pop(rid, None)
            self.swapped.pop(rid, None)
            self.blocks.free(rid)
            r.status = Status.FINISHED
            r.finish_time = now
            r.finish_reason = reason
            self.table.remove(rid)

    def view(self, now: float) -> SchedulerView:
        return SchedulerView(
            now=now,
            iteration=self.iteration,
            running=list(self.running),
            waiting=self.waiting,
            swapped=list(self.swapped.values()),
            free_blocks=self.blocks.gpu.free,
            total_blocks=self.blocks.gpu.num_blocks,
            free_cpu_blocks=self.blocks.cpu.free,
            block_size=self.blocks.block_size,
            latency=self.latency,
            max_num_seqs=self.config.max_num_seqs,
            max_num_batched_tokens=self.config.max_num_batched_tokens,
            watermark_blocks=self._reserve(),
            token_interval_s=self.token_interval(now),
            table=self.table,
        )

    def token_interval(self, now: float) -> float:
        """Seconds per decode step over the recent iterations (0 when nothing decoded)."""
        if not self._recent:
            return 0.0
        decodes = sum(1 for _, d in self._recent if d)
        return (now - self._recent[0][0]) / decodes if decodes else 0.0

    def _reserve(self) -> int:
        return int(self.config.watermark * self.blocks.gpu.num_blocks)

    # -- one iteration -----------------------------------------------------------------
    def schedule(self, now: float) -> SchedulerOutput:
        self.iteration += 1
        view = self.view(now)
        t0 = time.perf_counter()
        decision = self.policy.decide(view)
        out = SchedulerOutput(decision_s=time.perf_counter() - t0, solved=decision.solved)
        for v, mode in decision.preempt:
            r = self.requests[v.request_id]  # the policy named it; the scheduler changes it
            if r.status is Status.RUNNING:
                self._preempt(r, mode, out)
        self._now = now
        self._admit(decision, out)
        self._compose(decision, out)
        if out.steps:
            self._recent.append((now, out.decodes))
        return out

    def _admit(self, decision: Decision, out: SchedulerOutput) -> None:
        reserve = self._reserve()
        budget = self.config.max_num_batched_tokens
        chunked = self.policy.chunked_prefill
        for v in decision.admit:
            room = len(self.running) < self.config.max_num_seqs
            rid = v.request_id
            r = self.requests[rid]
            if r.status is Status.SWAPPED:
                fits = room and self.blocks.can_swap_in(rid, reserve)
                if fits:
                    mapping = self.blocks.swap_in(rid)
                    out.swap_in.append((r, mapping))
                    out.block_copies.append(Swap(rid, "in", tuple(mapping)))
                    del self.swapped[rid]
                    self._start(r)
            elif r.status is Status.WAITING:
                fits = room and self.blocks.can_grow(rid, r.context_len, reserve)
                fits = fits and (chunked or r.to_compute <= budget)
                if fits:
                    self.blocks.grow(rid, r.context_len)
                    budget -= r.to_compute
                    self._preempted.pop(rid, None)
                    self._new.pop(rid, None)
                    self._start(r)
            else:
                continue  # already running or finished: nothing to admit
            if not fits and decision.stop_at_first_misfit:
                break

    def _start(self, r: Request) -> None:
        self.table.touch(r)
        r.admitted_at = self._now
        r.status = Status.RUNNING
        r.admitted_seq = self._admissions
        self._admissions += 1
        self.running.append(r)

    def _compose(self, decision: Decision, out: SchedulerOutput) -> None:
        prefilling: list[Request] = []
        decoding: list[Request] = []
        for r in self.running:
            decodes = r.generated > 0 and r.to_compute == 1
            (decoding if decodes else prefilling).append(r)
        if prefilling and not self.policy.chunked_prefill:
            out.steps = [ScheduledStep(r, r.to_compute, True, r.computed) for r in prefilling]
            return  # vLLM 0.6: a prefill iteration runs alone
        decoding.sort(key=_admission_order)
        if self.blocks.grow_all([(r.request_id, r.context_len) for r in decoding]):
            steps = [ScheduledStep(r, 1, True, r.computed) for r in decoding]  # no one evicted
        else:
            steps = self._decode_evicting(decoding, decision, out)
        if self.policy.chunked_prefill:
            chunk = self.policy.chunk_size or self.config.chunk_size
            budget = chunk - len(steps)
            for r in sorted(prefilling, key=_admission_order):
                if budget <= 0 or r.status is not Status.RUNNING:
                    continue
                n = min(r.to_compute, budget)
                budget -= n
                steps.append(ScheduledStep(r, n, n == r.to_compute, r.computed))
        out.steps = steps

    def _decode_evicting(
        self, decoding: list[Request], decision: Decision, out: SchedulerOutput
    ) -> list[ScheduledStep]:
        """Oldest admission first; each takes its block by evicting the policy's victims."""
        named = decision.victims
        victims = [self.requests[v.request_id] for v in named] if named is not None else None
        scheduled: set[str] = set()
        steps: list[ScheduledStep] = []
        for r in decoding:
            if r.status is not Status.RUNNING:
                continue  # evicted as a victim of an earlier request this iteration
            if not self._make_room(r, victims, scheduled, out, decision.victim_mode):
                continue  # it evicted itself
            self.blocks.grow(r.request_id, r.context_len)
            scheduled.add(r.request_id)
            steps.append(ScheduledStep(r, 1, True, r.computed))
        return steps

    def _make_room(
        self,
        r: Request,
        victims: list[Request] | None,
        scheduled: set[str],
        out: SchedulerOutput,
        mode: PreemptMode = PreemptMode.RECOMPUTE,
    ) -> bool:
        """Evict victims until `r` can hold its next token; False if `r` itself was evicted."""
        rid = r.request_id
        while not self.blocks.can_grow(rid, r.context_len):
            order = victims if victims is not None else self._newest_first()
            candidates = [
                v
                for v in order
                if v.status is Status.RUNNING and v.request_id not in scheduled and v is not r
            ]
            if not candidates and len(self.running) == 1:
                # alone and still no room: the context outgrew the whole cache; stop it
                # rather than preempt and re-admit it forever
                self.finish_requests([r.request_id], r.token_times[-1], "length")
                out.finished.append(r)
                return False
            victim = candidates[0] if candidates else r
            self._preempt(victim, mode, out)
            if victim is r:
                return False
        return True

    def _newest_first(self) -> list[Request]:
        return sorted(self.running, key=_admission_order, reverse=True)

    def _preempt(self, r: Request, mode: PreemptMode, out: SchedulerOutput) -> None:
        rid = r.request_id
        self.running.remove(r)
        self.table.touch(r)
        r.preemptions += 1
        if mode is PreemptMode.SWAP and self.blocks.can_swap_out(rid):
            mapping = self.blocks.swap_out(rid)
            out.swap_out.append((r, mapping))
            out.block_copies.append(Swap(rid, "out", tuple(mapping)))
            r.status = Status.SWAPPED
            self.swapped[rid] = r
            return
        self.blocks.free(rid)
        r.computed = 0
        r.status = Status.WAITING
        self._preempted[rid] = r
        out.recomputed.append(r)

    def update_from_output(
        self, out: SchedulerOutput, now: float, stopped: Iterable[str] = ()
    ) -> list[Request]:
        """Record the iteration's results at time `now`; returns the requests that finished.

        `stopped` names requests whose newest token ends them (EOS, stop string, or the
        simulator's true output length); `max_tokens` is enforced here.
        """
        stop = set(stopped)
        done: list[Request] = []
        for step in out.steps:
            r = step.request
            if r.status is not Status.RUNNING:
                continue
            r.computed += step.tokens
            self.table.touch(r)  # read when a policy next asks: the token below included
            if step.samples:
                r.deliver(now)
                reason = (
                    "stop" if r.request_id in stop else ("length" if r.remaining_cap <= 0 else "")
                )
                if reason:
                    self.finish_requests([r.request_id], now, reason)
                    done.append(r)
        return done


def _admission_order(r: Request) -> int:
    return r.admitted_seq
