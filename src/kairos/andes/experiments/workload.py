"""One simulation point: a workload (profile, lengths, arrival pattern) and a policy.

`run_point` is the module-level function every Andes sweep runs; its config carries the seed,
so a point is deterministic and its cached result can be reused by any experiment that asks
for the same point (E2, the capacity table and E11 share many). The workload half
(`SimPoint`, `build_trace`) lives in `kairos.andes.workload`, shared with the bench client.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kairos.andes.latency import load_profile
from kairos.andes.loss_split import loss_split
from kairos.andes.metrics import silence_ratio
from kairos.andes.policies.registry import make_policy
from kairos.andes.simulator import SimulationResult, simulate
from kairos.andes.workload import SimPoint, average_rate, base_rate, build_trace

__all__ = ["SimPoint", "base_rate", "build_trace", "run_point"]


def run_point(p: SimPoint) -> dict[str, Any]:
    trace, speeds = build_trace(p)
    policy = (
        make_policy(p.policy, **p.andes)
        if p.policy in ("andes", "lqsf", "andes-dp")
        else make_policy(p.policy)
    )
    res = simulate(policy, load_profile(p.profile), trace, speeds)
    out: dict[str, Any] = res.summary()
    out["rate"] = average_rate(p)
    out["solves"] = len(res.solve_s)
    out["mean_solve_ms"] = 1e3 * float(np.mean(res.solve_s)) if res.solve_s else 0.0
    if p.speeds == "listener":
        out["silence_ratio"] = _silence(res)
    if p.collect:
        split = loss_split(res.requests)  # where the QoE went: first-token wait or stalls
        out["qoe_ttft_only"], out["qoe_stall_only"] = split.ttft_only, split.stall_only
        out["per_request"] = {
            "qoe": res.qoe().tolist(),
            "ttft": np.nan_to_num(res.ttft(), nan=-1.0).tolist(),
            "tds": np.nan_to_num(res.tds(), nan=-1.0).tolist(),
        }
        out["series"] = res.stats
    return out


def _silence(res: SimulationResult) -> float:
    return float(
        np.mean(
            [
                silence_ratio(r.token_times, r.arrival, r.ttft_s, r.tokens_per_s)
                for r in res.requests
            ]
        )
    )
