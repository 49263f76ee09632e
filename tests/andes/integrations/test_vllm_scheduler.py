"""The Andes policy inside vLLM's own scheduler, driven through `schedule()` and
`update_from_output()` without a model (tests/andes/integrations/harness.py).

One policy, two engines: kairos's `Scheduler` and vLLM's (`AndesScheduler`) fed the same
arrivals on the same clock schedule the same tokens for the same requests and preempt the
same ones at every step. vLLM's KV cache manager conserves blocks through the policy's
preemptions and the resumptions after them, and a resumed request's tokens are those of an
uninterrupted run.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm", reason="the vLLM integration runs in the vLLM environment")

from vllm.v1.core.sched.scheduler import Scheduler

from kairos.andes.integrations.qoe_args import parse_qoe
from kairos.andes.integrations.settings import IntegrationSettings
from kairos.andes.integrations.vllm import AndesScheduler
from kairos.andes.request import Request as KairosRequest
from kairos.andes.scheduler import Scheduler as KairosScheduler
from kairos.andes.scheduler import SchedulerConfig

from .harness import BLOCK, Trace, held_blocks, make_scheduler, request, step

SEQS = 6
DT = 0.05  # seconds per step on the shared clock
# decode predicted at 0.3 s a step, slower than any reader: the policy's compute-bound
# trigger fires, so it solves (and preempts buffered users) without the cache being full
PROFILE: dict[str, Any] = {
    "name": "slow-decode",
    "decode_coef": (0.3, 0.001, 1e-5),
    "prefill_coef": (0.01, 1e-3, 0.0),
    "swap_s_per_token": 1e-5,
    "swap_capacity": 0,
    "block_size": BLOCK,
}
OPTIONS = {"horizon_s": 1.0, "solve_every": 1}


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def tick(self) -> None:
        self.t += DT


def workload(n: int = 16, seed: int = 0) -> list[tuple[float, str, int, int]]:
    """(arrival, id, prompt tokens, max tokens), by arrival."""
    rng = random.Random(seed)
    return sorted(
        (rng.uniform(0, 3), f"r{i}", rng.randint(10, 90), rng.randint(20, 80)) for i in range(n)
    )


def andes_config(tmp_path: Path, blocks: int, **options: Any) -> dict[str, Any]:
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({**PROFILE, "kv_capacity": blocks * BLOCK}))
    return {"andes": {"policy": "andes", "profile": str(profile), "options": options}}


def lockstep(
    vllm_sched: Any, clock: Clock, blocks: int, andes: dict[str, Any], steps: int = 600
) -> tuple[Trace, Trace]:
    """Run kairos's scheduler and a vLLM scheduler side by side on the same arrivals and
    clock; returns both traces (kairos's from its `SchedulerOutput`)."""
    settings = IntegrationSettings.model_validate(andes["andes"])
    kairos = KairosScheduler(
        settings.make_policy(),
        settings.latency(),
        SchedulerConfig(
            max_num_seqs=SEQS, max_num_batched_tokens=2048, watermark=0.0, chunk_size=2048
        ),
        num_gpu_blocks=blocks,
        num_cpu_blocks=0,
    )
    arrivals = workload()
    k_trace, v_trace = Trace(), Trace()
    for _ in range(steps):
        while arrivals and arrivals[0][0] <= clock.t:
            arrival, rid, prompt, max_tokens = arrivals.pop(0)
            vllm_sched.add_request(request(rid, prompt, max_tokens, arrival))
            p = parse_qoe(None, prompt, settings.qoe)  # the server default, as in vLLM
            kairos.add_request(
                KairosRequest(rid, arrival, prompt, max_tokens, p.ttft_s, p.tokens_per_s)
            )
        out = kairos.schedule(clock.t)
        k_trace.steps.append({s.request.request_id: s.tokens for s in out.steps})
        k_trace.preempted.append(frozenset(r.request_id for r in out.recomputed))
        step(vllm_sched, v_trace, between=clock.tick)
        kairos.update_from_output(out, clock.t)
        if not (arrivals or vllm_sched.requests or kairos.num_unfinished):
            break
    return k_trace, v_trace


def first_difference(a: Trace, b: Trace) -> int | None:
    for i, (x, y) in enumerate(zip(a.steps, b.steps, strict=False)):
        if x != y or a.preempted[i] != b.preempted[i]:
            return i
    return None if len(a.steps) == len(b.steps) else min(len(a.steps), len(b.steps))


def andes_in_vllm(checkpoint: Path, tmp_path: Path, blocks: int, **options: Any) -> Any:
    cfg = andes_config(tmp_path, blocks, **(options or OPTIONS))
    sched = make_scheduler(
        AndesScheduler, checkpoint, blocks + 1, max_num_seqs=SEQS, additional_config=cfg
    )
    sched.clock = Clock()
    return sched, cfg


def test_vllm_runs_the_batch_kairos_policy_decides(checkpoint: Path, tmp_path: Path) -> None:
    blocks = 40  # the policy preempts; vLLM never has to evict for memory (see docs)
    sched, cfg = andes_in_vllm(checkpoint, tmp_path, blocks)
    k_trace, v_trace = lockstep(sched, sched.clock, blocks, cfg)
    assert first_difference(k_trace, v_trace) is None
    assert sum(len(p) for p in v_trace.preempted) >= 5  # the policy's preemptions, carried out
    assert len(v_trace.steps) > 100 and not sched.requests and not sched.mirror


def test_the_comparison_sees_a_scheduler_that_ignores_the_policy(
    checkpoint: Path, tmp_path: Path
) -> None:
    """The same lockstep run against vLLM's default scheduler, and against an Andes scheduler
    that drops the policy's preemptions, differs from kairos's."""
    blocks = 40
    cfg = andes_config(tmp_path, blocks, **OPTIONS)
    default = make_scheduler(Scheduler, checkpoint, blocks + 1, max_num_seqs=SEQS)
    k_trace, v_trace = lockstep(default, Clock(), blocks, cfg)
    assert first_difference(k_trace, v_trace) is not None

    sched, cfg = andes_in_vllm(checkpoint, tmp_path, blocks)
    decide = sched.andes_policy.decide

    def no_preemptions(view: Any) -> Any:
        d = decide(view)
        d.preempt = []
        return d

    sched.andes_policy.decide = no_preemptions
    k_trace, v_trace = lockstep(sched, sched.clock, blocks, cfg)
    assert first_difference(k_trace, v_trace) is not None


def run_checking_blocks(sched: Any, clock: Clock) -> Trace:
    """Drive the workload to the end, checking vLLM's KV block pool after every step."""
    total = sched.kv_cache_manager.block_pool.num_gpu_blocks - 1
    arrivals, trace = workload(), Trace()
    while arrivals or sched.requests:
        while arrivals and arrivals[0][0] <= clock.t:
            arrival, rid, prompt, max_tokens = arrivals.pop(0)
            sched.add_request(request(rid, prompt, max_tokens, arrival))
        step(sched, trace, between=clock.tick)
        held = held_blocks(sched)
        free = sched.kv_cache_manager.block_pool.get_num_free_blocks()
        assert free + sum(held.values()) == total, f"step {len(trace.steps)}: blocks leaked"
        for r in sched.running:  # a running request holds the blocks of its computed tokens
            assert held.get(r.request_id) == -(-r.num_computed_tokens // BLOCK), "wrong blocks"
        for r in sched.waiting:  # a preempted (recompute) request holds none
            assert r.request_id not in held, f"{r.request_id} holds blocks while waiting"
        assert len(trace.steps) < 2000
    assert sched.kv_cache_manager.block_pool.get_num_free_blocks() == total
    return trace


def test_blocks_are_conserved_through_preemption_and_resumption(
    checkpoint: Path, tmp_path: Path
) -> None:
    blocks = 24  # tight: the policy preempts and vLLM also evicts for memory
    sched, _ = andes_in_vllm(checkpoint, tmp_path, blocks)
    trace = run_checking_blocks(sched, sched.clock)
    preempted = set().union(*trace.preempted)
    assert len(preempted) >= 3
    # every request, preempted or not, produced what an uninterrupted run produces
    plain = make_scheduler(Scheduler, checkpoint, 200, max_num_seqs=16)
    reference = run_checking_blocks(plain, Clock())
    assert not set().union(*reference.preempted)
    assert trace.outputs == reference.outputs
    assert all(len(v) == m for _, rid, _, m in workload() for v in [trace.outputs[rid]])


def test_the_block_check_catches_a_preemption_that_leaks(checkpoint: Path, tmp_path: Path) -> None:
    """A mutant that takes preempted requests off the running list without vLLM's
    `_preempt_request` (so their blocks are never freed) fails the conservation check."""

    class Leaky(AndesScheduler):
        def _preempt_request(self, request: Any, timestamp: float, **kw: Any) -> None:
            request.status = type(request.status).PREEMPTED
            self.waiting.prepend_request(request)
            self.reset_preempted_req_ids.add(request.request_id)

    cfg = andes_config(tmp_path, 24, **OPTIONS)
    sched = make_scheduler(Leaky, checkpoint, 25, max_num_seqs=SEQS, additional_config=cfg)
    sched.clock = Clock()
    with pytest.raises(AssertionError, match="holds blocks while waiting"):
        run_checking_blocks(sched, sched.clock)
