"""Andes as a vLLM v1 scheduler: kairos's policy object deciding, vLLM's mechanisms acting.

    vllm serve MODEL --no-async-scheduling \\
        --scheduler-cls kairos.andes.integrations.vllm.AndesScheduler \\
        --logits-processors kairos.andes.integrations.vllm:QoEArgsValidator \\
        --additional-config '{"andes": {"policy": "andes"}}'

`AndesScheduler` subclasses vLLM's own `Scheduler` and changes only what enters it. Each
step it gives the policy (the same object kairos's engine runs, `kairos.andes.policy`) a
`SchedulerView` of vLLM's running and waiting requests, its free and total KV blocks and the
latency profile, then carries the `Decision` out with vLLM's machinery:

- `decision.preempt`: each named running request goes through vLLM's `_preempt_request`
  (preemption by recompute: blocks freed, back to the front of the queue, reported in
  `SchedulerOutput.preempted_req_ids` like any vLLM preemption);
- `decision.victims`: the running list is ordered so that vLLM, which evicts from the end
  when `allocate_slots` fails, evicts the policy's victims first;
- `decision.admit`: for this step the waiting queue holds only the named requests, in the
  policy's order; vLLM's own admission loop then admits them while its KV cache manager
  finds blocks and stops at the first misfit. The others are put back, in queue order.

vLLM's limits stay in force: its token budget, `max_num_seqs`, and its rule of admitting
nothing in a step where it had to preempt for memory. The anti-starvation rule and buffer
pacing are the policy's own (`AndesConfig` defaults), so they come along unchanged.

Per-request QoE travels in `vllm_xargs` (names in `qoe_args`). `QoEArgsValidator` is a no-op
logits processor whose `validate_params` vLLM calls in the API server, so a malformed value is
answered with 400 naming it; without it the scheduler falls back to the server default and
logs why. Settings: `settings.IntegrationSettings`. Not supported: async scheduling (the
policy must see each step's results before the next decision), KV connectors.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import torch
from vllm.sampling_params import SamplingParams
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.core.sched.request_queue import RequestQueue, SchedulingPolicy
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.request import Request as VllmRequest
from vllm.v1.request import RequestStatus
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor

from kairos.andes.integrations.qoe_args import QoEArgError, parse_qoe
from kairos.andes.integrations.settings import IntegrationSettings
from kairos.andes.policies.warm_up import compile_kernels
from kairos.andes.policy import Decision, SchedulerView
from kairos.andes.request import Request, RequestView, Status

logger = logging.getLogger(__name__)


class AndesScheduler(Scheduler):
    """vLLM's `Scheduler` whose admissions and preemptions a kairos Andes policy decides
    (`andes_policy`; vLLM's own `policy` attribute, its queue discipline, stays FCFS)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.policy != SchedulingPolicy.FCFS:
            raise ValueError(
                "the Andes policy orders the queue itself: start vLLM with the default "
                "--scheduling-policy fcfs"
            )
        if self.scheduler_config.async_scheduling:
            raise ValueError(
                "the Andes scheduler needs each step's results before it decides the next: "
                "start vLLM with --no-async-scheduling"
            )
        if self.connector is not None:
            raise ValueError("the Andes scheduler does not support KV connectors")
        self.andes = IntegrationSettings.from_additional_config(self.vllm_config.additional_config)
        self.andes_policy = self.andes.make_policy()
        self.latency = self.andes.latency()
        compile_kernels(self.andes_policy, self.latency)  # not in the first decision
        # the QoE clock; vLLM stamps `arrival_time` with time.time() in the API server
        self.clock: Callable[[], float] = time.time
        self.mirror: dict[str, Request] = {}  # kairos's view of each unfinished request
        self.iteration = 0
        self.last_decision: Decision | None = None
        self._admissions = 0
        self._recent: deque[tuple[float, bool]] = deque(maxlen=16)

    # -- requests ----------------------------------------------------------------------
    def add_request(self, request: VllmRequest) -> None:
        try:
            qoe = parse_qoe(
                request.sampling_params.extra_args if request.sampling_params else None,
                request.num_prompt_tokens,
                self.andes.qoe,
            )
        except QoEArgError as exc:  # only without QoEArgsValidator in the API server
            logger.warning("request %s: %s; using the server default", request.request_id, exc)
            qoe = parse_qoe(None, request.num_prompt_tokens, self.andes.qoe)
        self.mirror[request.request_id] = Request(
            request.request_id,
            arrival=request.arrival_time,
            prompt_len=request.num_prompt_tokens,
            max_tokens=max(1, request.max_tokens),
            ttft_s=qoe.ttft_s,
            tokens_per_s=qoe.tokens_per_s,
        )
        super().add_request(request)

    def finish_requests(self, request_ids: Any, finished_status: RequestStatus) -> Any:
        done = super().finish_requests(request_ids, finished_status)
        self._forget(r.request_id for r in done)
        return done

    def _forget(self, request_ids: Iterable[str]) -> None:
        for rid in request_ids:
            m = self.mirror.pop(rid, None)
            if m is not None:
                m.status = Status.FINISHED

    # -- one step ----------------------------------------------------------------------
    def view(self, now: float) -> SchedulerView:
        """The policy's snapshot of vLLM's state; `running` in admission order as kairos's
        scheduler gives it (vLLM's own list is in the policy's victim order)."""
        for r in self.running:
            self.mirror[r.request_id].computed = r.num_computed_tokens
        running = sorted((self.mirror[r.request_id] for r in self.running), key=_admitted)
        pool = self.kv_cache_manager.block_pool
        return SchedulerView(
            now=now,
            iteration=self.iteration,
            running=running,
            waiting=[self.mirror[r.request_id] for r in self.waiting],
            swapped=[],
            free_blocks=pool.get_num_free_blocks(),
            total_blocks=pool.num_gpu_blocks - 1,  # less vLLM's null block
            free_cpu_blocks=0,
            block_size=self.block_size,
            latency=self.latency,
            max_num_seqs=self.max_num_active_reqs,
            max_num_batched_tokens=self.max_num_scheduled_tokens,
            watermark_blocks=0,
            token_interval_s=self._token_interval(now),
        )

    def schedule(self, *args: Any, **kwargs: Any) -> SchedulerOutput:
        now = self.clock()
        self.iteration += 1
        decision = self.andes_policy.decide(self.view(now))
        self.last_decision = decision
        stamp = time.monotonic()
        for v, _mode in decision.preempt:  # recompute: vLLM v1 has no swap space
            r = self.requests.get(v.request_id)
            if r is not None and r.status == RequestStatus.RUNNING and r in self.running:
                self.running.remove(r)
                self._preempt_request(r, stamp)
        if decision.victims is not None:
            rank = {v.request_id: i for i, v in enumerate(decision.victims)}
            # vLLM evicts from the end: the policy's first victim goes last
            self.running.sort(key=lambda r: rank.get(r.request_id, len(rank)), reverse=True)
        queued = list(self.waiting)
        if _same_order(decision.admit, queued):  # the queue is already the policy's order
            out: SchedulerOutput = super().schedule(*args, **kwargs)
        else:
            named = {r.request_id: r for r in queued}
            _refill(
                self.waiting,
                (named[v.request_id] for v in decision.admit if v.request_id in named),
            )
            try:
                out = super().schedule(*args, **kwargs)
            finally:
                # newly preempted first (vLLM prepends them), then the queue as it was
                before = {r.request_id for r in queued}
                fresh = [r for r in self.waiting if r.request_id not in before]
                _refill(self.waiting, [*fresh, *(r for r in queued if _waits(r))])
        self._after_schedule(out, now)
        return out

    def _after_schedule(self, out: SchedulerOutput, now: float) -> None:
        mirror = self.mirror
        decodes = False
        for rid, n in out.num_scheduled_tokens.items():
            if n == 1 and mirror[rid].generated > 0:
                decodes = True
                break
        for rid in out.preempted_req_ids or ():
            gone = mirror.get(rid)
            if gone is not None and gone.status is Status.RUNNING:
                gone.status = Status.WAITING
                gone.computed = 0
                gone.preemptions += 1
        for r in self.running:
            m = mirror[r.request_id]
            if m.status is not Status.RUNNING:
                m.status = Status.RUNNING
                m.admitted_at = now
                m.admitted_seq = self._admissions
                self._admissions += 1
        if out.num_scheduled_tokens:
            self._recent.append((now, decodes))

    def update_from_output(
        self, scheduler_output: SchedulerOutput, model_runner_output: ModelRunnerOutput
    ) -> Any:
        requests = self.requests
        stepped = [
            (rid, r) for rid in scheduler_output.num_scheduled_tokens if (r := requests.get(rid))
        ]
        result = super().update_from_output(scheduler_output, model_runner_output)
        now = self.clock()
        mirror = self.mirror
        for rid, r in stepped:
            mine = mirror.get(rid)
            if mine is None:
                continue
            for _ in range(r.num_output_tokens - mine.generated):
                mine.deliver(now)
            if rid in requests:
                mine.computed = r.num_computed_tokens
            else:  # finished: vLLM has freed it
                del mirror[rid]
                mine.status = Status.FINISHED
        return result

    def _token_interval(self, now: float) -> float:
        """Seconds per decode step over recent steps, as kairos's scheduler measures it."""
        decodes = sum(1 for _, d in self._recent if d)
        return (now - self._recent[0][0]) / decodes if decodes else 0.0


def _refill(queue: RequestQueue, requests: Iterable[VllmRequest]) -> None:
    """Make the (FCFS) queue hold `requests` in this order, through vLLM's queue interface."""
    queue.remove_requests(list(queue))
    for r in list(requests):
        queue.add_request(r)


def _same_order(admit: list[RequestView], queued: list[VllmRequest]) -> bool:
    return len(admit) == len(queued) and all(
        a.request_id == q.request_id for a, q in zip(admit, queued, strict=True)
    )


def _waits(r: VllmRequest) -> bool:
    return r.status != RequestStatus.RUNNING and not r.is_finished()


def _admitted(m: Request) -> int:
    return m.admitted_seq


class QoEArgsValidator(LogitsProcessor):
    """Checks a request's QoE `vllm_xargs` in the API server (vLLM runs every logits
    processor's `validate_params` there and answers a `ValueError` with 400). It never
    changes logits: `apply` returns them as they are and it is argmax-invariant."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        try:
            # the prompt length only fills a default TTFT, which is not validated
            parse_qoe(sampling_params.extra_args, 1, IntegrationSettings().qoe)
        except QoEArgError as exc:
            raise ValueError(str(exc)) from None

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        pass

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        return logits

    def is_argmax_invariant(self) -> bool:
        return True

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        pass
