"""Salus core benchmarks: the scheduler's decision time with 100 resident jobs (one SCHEDULE:
the policy's pick over the lane, the launch bookkeeping), the simulator's speed on E1
(iterations simulated per second), and the full-mode E1 trends (Table 2.1, 10 paired seeds)
whose rows land in the results. Quick mode: E1 at time_scale 0.05."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kairos.experiments import ExperimentContext
from kairos.salus.catalog import load_workloads
from kairos.salus.driver import Driver, Launch
from kairos.salus.experiments import e1
from kairos.salus.policies import make_policy
from kairos.salus.policy import JobState
from kairos.salus.profile import GIB, MIB, Profile
from kairos.salus.simulator import SimConfig, simulate
from kairos.salus.workloads import E1Trace, e1_trace
from kairos.sim import EventLoop, SimClock


class _Idle:
    """A worker that never finishes: the lane stays as the benchmark leaves it."""

    def launch(self, run: Launch, on_done: Any) -> None:
        pass

    def release(self, job: JobState) -> None:
        pass

    def lane_gone(self, lane: int) -> None:
        pass


def decision_time(policy: str, jobs: int = 100, repeats: int = 2000) -> dict[str, Any]:
    loop = EventLoop()
    driver = Driver(SimClock(loop), _Idle(), make_policy(policy), 16 * GIB)
    prof = Profile("small", 10 * MIB, 100 * MIB, 0.05)
    for i in range(jobs):
        driver.arrive(f"j{i}", prof, expected=100.0 + i, iterations=10**9, ready=10**9)
    lanes = driver.manager.lanes
    resident = sum(len(lane.jobs) for lane in lanes)
    start = time.perf_counter()
    for k in range(repeats):
        lane = lanes[k % len(lanes)]
        lane.busy = None
        driver._schedule(lane)  # one SCHEDULE(lane): pick + launch bookkeeping
    us = (time.perf_counter() - start) / repeats * 1e6
    return {
        "case": f"decision {policy}",
        "resident_jobs": resident,
        "lanes": len(lanes),
        "us_per_decision": round(us, 2),
    }


def simulator_speed(scale: float, seeds: int) -> dict[str, Any]:
    profiles = load_workloads()
    iterations = 0
    start = time.perf_counter()
    for seed in range(seeds):
        trace = e1_trace(E1Trace(time_scale=scale), profiles, seed)
        for policy in e1.POLICIES:
            result = simulate(trace, make_policy(policy), profiles, SimConfig())
            iterations += sum(j.done for j in result.jobs)
    elapsed = time.perf_counter() - start
    return {
        "case": f"simulate E1 x{scale} ({seeds} seeds x 4 policies)",
        "iterations": iterations,
        "seconds": round(elapsed, 2),
        "iterations_per_s": round(iterations / elapsed),
    }


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    rows = [decision_time(p) for p in e1.POLICIES]
    rows.append(simulator_speed(0.05 if quick else 1.0, 1 if quick else 2))
    cfg = e1.E1Config()
    if quick:
        cfg = e1.E1Config(point=e1.E1Point(trace=E1Trace(time_scale=0.05)))
    ctx = ExperimentContext(out_dir / "salus", progress=False, cache=False)
    for r in e1.table2_1(cfg, ctx)["rows"]:
        rows.append(
            {
                "case": f"E1 {r['policy']}",
                **{
                    k: r[k]
                    for k in (
                        "avg_jct_min",
                        "makespan_min",
                        "jct_vs_fifo",
                        "jct_lo",
                        "jct_hi",
                        "makespan_vs_fifo",
                    )
                },
                "paper_jct_vs_fifo": r.get("paper_jct_vs_fifo"),
            }
        )
    return rows
