"""The anti-starvation rule through vLLM's admission loop: a request Andes keeps passing over
is admitted once it is starved, and without the rule (the mutant) it is not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm", reason="the vLLM integration runs in the vLLM environment")

from kairos.andes.integrations.vllm import AndesScheduler

from .harness import BLOCK, make_scheduler, request, step
from .test_vllm_scheduler import DT, PROFILE, Clock

STARVE_PROFILE: dict[str, Any] = {
    **PROFILE,
    "decode_coef": (0.01, 0.001, 1e-5),
    "kv_capacity": 48 * BLOCK,
}


def starving_queue(checkpoint: Path, tmp_path: Path, after: float | None) -> Any:
    """One long prompt (500 tokens, arrived at 0, TTFT 1.1 s) and ten short ones (arrived at
    3.5-3.9 s), all waiting at t = 4 s with room for all (kairos's own test of the rule,
    tests/andes/test_anti_starvation.py, on vLLM's queue). QoE through `vllm_xargs`."""
    profile = tmp_path / "starve.json"
    profile.write_text(json.dumps(STARVE_PROFILE))
    options = {
        "selective_trigger": False,
        "solve_every": 1,
        "pacing": None,  # the knapsack's rule alone: pacing reorders admissions by itself
        "starvation_after": after,
    }
    cfg = {"andes": {"profile": str(profile), "options": options}}
    sched = make_scheduler(AndesScheduler, checkpoint, 49, max_num_seqs=16, additional_config=cfg)
    sched.clock = Clock()
    sched.clock.t = 4.0
    sched.add_request(request("long", 500, 100, 0.0, qoe_ttft_s=1.1, qoe_tokens_per_s=5.0))
    for i in range(10):
        sched.add_request(
            request(f"s{i}", 10, 100, 3.5 + 0.04 * i, qoe_ttft_s=1.0, qoe_tokens_per_s=5.0)
        )
    return sched


def test_a_starved_request_is_admitted_first_by_vllm(checkpoint: Path, tmp_path: Path) -> None:
    on = starving_queue(checkpoint, tmp_path, after=2.0)
    assert on.mirror["long"].ttft_s == 1.1 and on.mirror["s0"].tokens_per_s == 5.0
    admitted = [r.req_id for r in step(on).scheduled_new_reqs]
    assert admitted[0] == "long" and len(admitted) == 11
    # the mutant: without the rule Andes ranks the long prompt last (gain per block)
    off = starving_queue(checkpoint, tmp_path, after=None)
    admitted = [r.req_id for r in step(off).scheduled_new_reqs]
    assert admitted[-1] == "long" and len(admitted) == 11


AFTER = 2.0  # AndesConfig.starvation_after: TTFT targets past due before a user is starved
TTFT = 1.0


def long_prompt_wait(checkpoint: Path, tmp_path: Path, after: float | None) -> dict[str, float]:
    """Seconds from arrival to admission of every request: short prompts (12 tokens) arrive
    every 0.24 s for 30 s, about what eight slots serve, and a 300-token prompt arrives at
    10 s. Memory is ample; the predicted decode is slower than a reader, so the policy solves
    every step (compute-bound) and ranks the long prompt below the short ones."""
    profile = tmp_path / "compute-bound.json"
    profile.write_text(json.dumps({**PROFILE, "kv_capacity": 80 * BLOCK}))
    options = {"starvation_after": after, "solve_every": 1, "horizon_s": 2.0, "pacing": None}
    cfg = {"andes": {"profile": str(profile), "options": options}}
    sched = make_scheduler(AndesScheduler, checkpoint, 81, max_num_seqs=8, additional_config=cfg)
    sched.clock = clock = Clock()
    arrivals = sorted([(10.0, "long", 300, 30)] + [(0.24 * i, f"s{i}", 12, 40) for i in range(125)])
    arrived = {rid: a for a, rid, _, _ in arrivals}
    admitted: dict[str, float] = {}
    while arrivals or sched.requests:
        while arrivals and arrivals[0][0] <= clock.t:
            a, rid, prompt, max_tokens = arrivals.pop(0)
            xargs = {"qoe_ttft_s": TTFT, "qoe_tokens_per_s": 5.0}
            sched.add_request(request(rid, prompt, max_tokens, a, **xargs))
        out = step(sched, between=clock.tick)
        for r in out.scheduled_new_reqs:
            admitted.setdefault(r.req_id, clock.t)
        assert clock.t < 120, "the workload did not drain"
    return {rid: admitted[rid] - arrived[rid] for rid in arrived}


def test_no_request_waits_past_the_anti_starvation_bound(checkpoint: Path, tmp_path: Path) -> None:
    on = long_prompt_wait(checkpoint, tmp_path, AFTER)
    # starved once its user is AFTER TTFT targets past due, admitted at the next step
    assert on["long"] <= TTFT * (1 + AFTER) + 2 * DT
    # and admitting it first kept everyone else near it (the rule bounds waits relative to
    # the queue's: measured 3.41 s for the slowest short prompt)
    assert max(on.values()) < 4.0
    off = long_prompt_wait(checkpoint, tmp_path, None)  # the mutant: rule off
    assert off["long"] > 15.0
