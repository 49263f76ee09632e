"""E1, E2 and E3 on the real service in quick mode: real PyTorch jobs, the policies'
rules checked from what the service recorded. Wall-clock times on a shared machine move the
exact timeline, so the assertions are about decisions (the SRTF rule at every iteration, FIFO's
order, FAIR's equal shares), not about seconds."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tests.salus.runtime.stack import DEVICE

from kairos.experiments import ExperimentContext
from kairos.salus.experiments import on_service, on_service_e4
from kairos.salus.policies import make_policy
from kairos.salus.profile import Profile
from kairos.salus.simulator import SimConfig, simulate
from kairos.salus.workloads import TraceJob


def ctx(tmp_path: Path) -> ExperimentContext:
    return ExperimentContext(tmp_path, progress=False, cache=False)


def test_e2_real_jobs_follow_srtf_at_every_boundary(tmp_path: Path) -> None:
    out = on_service.service_e2(
        on_service.ServiceE2Config(scale=0.004, device=DEVICE), ctx(tmp_path)
    )
    s: dict[str, Any] = out["summary"]
    assert s["states"] == " ".join(["done"] * 6)
    assert s["srtf_violations"] == 0
    order = s["order"].split()
    # Fig. 2.8a's opening: #1 preempts #0, #3 (shorter) runs before #2 (earlier), the long #0
    # ends last. Whether #1 is done when #3 arrives depends on timing (0.12 s apart at this
    # scale; on a loaded machine #3 preempted #1, which then resumed: 0 1 3 1 2), so only the
    # timing-free facts are asserted here; srtf_violations checks every boundary by the rule
    assert order[:3] == ["0", "1", "3"] and order.index("3") < order.index("2")
    # In Fig. 2.8a #4 preempts the long #0, #5 preempts #4, and #0 ends last. Whether #0 still
    # has more left than #4 when #4 arrives is timing too: one CI run's iterations outran the
    # calibrated t_iter, #0 ended before #4 arrived and the order was 0 1 3 2 0 4 5 4, with no
    # SRTF violation. So: #0 ends last, or #4 does (preempted by #5 and resumed), and besides
    # #1's, at least one of those two preemptions happens (the exact segment order,
    # s["matches"], is reported, not asserted; the rule is what srtf_violations checks)
    assert order[-1] in ("0", "4"), order
    assert s["preemptions"] >= 2, order
    tl = out["run"].timeline
    ordered = sorted(tl, key=lambda r: r.start)
    assert all(a.end <= b.start for a, b in itertools.pairwise(ordered))  # one lane


def test_the_srtf_check_can_fail(tmp_path: Path) -> None:
    out = on_service.service_e2(
        on_service.ServiceE2Config(scale=0.002, device=DEVICE), ctx(tmp_path)
    )
    run = out["run"]
    run.expected = list(reversed(run.expected))  # the same timeline judged with other T's
    assert on_service.srtf_violations(run)


def test_e3_real_jobs_get_equal_fair_shares(tmp_path: Path) -> None:
    cfg = on_service.ServiceE3Config(solo_s=2.0, windows=16, device=DEVICE)
    out = on_service.service_e3(cfg, ctx(tmp_path))
    s = out["summary"]
    assert s["states"] == "done done done" and s["finishing_order"] == "0 1 2"
    assert s["max_concurrent"] == 3
    three = [r for r in out["rows"] if all(r[f"job{k}_share"] > 0.05 for k in range(3))]
    assert len(three) >= 4
    # whole windows with all three present: a third each. On a loaded CI machine one window
    # was seen at 0.294/0.428/0.275, so each window gets a wide band (an unfair 1/2 still fails
    # it) and the mean over the windows a narrow one
    whole = three[1:-1]
    for row in whole:
        assert all(0.2 <= row[f"job{k}_share"] <= 0.47 for k in range(3)), row
    for k in range(3):
        assert 0.28 <= sum(r[f"job{k}_share"] for r in whole) / len(whole) <= 0.39
    assert all(r["busy"] > 0.8 for r in out["rows"])  # the lane never sat idle


def predicted_jct_ratio(cfg: on_service.ServiceE1Config, seed: int) -> float:
    """FIFO's average JCT over SRTF's that the simulator predicts for the seed's trace at its
    nominal durations (one lane, no switch cost)."""
    t_iter = {w: cfg.unit_s / 100 for w in cfg.workloads}  # 100 iterations a trace unit
    jobs = on_service.e1_real_trace(cfg, seed, t_iter)
    trace = [TraceJob(k, j.workload, j.iterations, j.submit_s, j.iterations * t_iter[j.workload])
             for k, j in enumerate(jobs)]  # fmt: skip
    profiles = {w: Profile(w, 0, 0, t) for w, t in t_iter.items()}
    jct = {
        p: simulate(trace, make_policy(p), profiles, SimConfig(switch_cost=0.0)).summary()[
            "avg_jct_min"
        ]
        for p in ("fifo", "srtf")
    }
    return jct["fifo"] / jct["srtf"]


def srtf_gain_failures(measured: float, predicted: float) -> list[str]:
    """SRTF must win at least a quarter of the gain over FIFO that the trace implies: the
    real service adds every job's start-up (its model built, its first iterations) and the
    switches, which the prediction leaves out and which weigh on the short jobs SRTF favours
    (measured 2.02 against 3.15 predicted beside a load average of 8 on two cores)."""
    floor = 1 + (predicted - 1) / 4
    return [] if measured >= floor else [f"FIFO/SRTF {measured:.3f} < {floor:.3f}"]


def test_e1_real_jobs_fifo_in_order_and_srtf_by_rule(tmp_path: Path) -> None:
    """Seeds 0 and 1 of the E1-shaped trace. The rules are checked on seed 0's (FIFO's order
    on both). Seed 1's has the effect to show: a 30-unit job arrives second with four short
    ones behind it; FIFO makes them wait, SRTF runs them first (predicted FIFO / SRTF 3.15,
    the paper's 3.19)."""
    cfg = on_service.ServiceE1Config(jobs=6, seeds=2, unit_s=0.15, policies=("fifo", "srtf"))
    out = on_service.service_e1(cfg, ctx(tmp_path))
    for policy, group in out["runs"].items():
        assert all(g["states"] == " ".join(["done"] * 6) for g in group), policy
        assert group[0]["rule_violations"] == 0, policy
    assert out["runs"]["fifo"][1]["rule_violations"] == 0
    fifo, srtf = (out["runs"][p][1]["avg_jct_s"] for p in ("fifo", "srtf"))
    rows = {r["policy"]: r for r in out["rows"]}
    per_seed = rows["srtf"]["jct_vs_fifo_per_seed"].split()
    assert per_seed[1] == f"{fifo / srtf:.3f}"  # the row is FIFO over SRTF, seed by seed
    predicted = predicted_jct_ratio(cfg, seed=1)
    print(f"seed 1: FIFO/SRTF measured {fifo / srtf:.3f}, predicted {predicted:.3f}")
    assert predicted > 2  # the trace has an effect to show
    assert srtf_gain_failures(fifo / srtf, predicted) == []
    # the mutants: an SRTF 3% slower than FIFO on the same trace, and one no faster
    assert srtf_gain_failures(fifo / (1.03 * fifo), predicted)
    assert srtf_gain_failures(1.0, predicted)


def test_e4_real_jobs_are_packed_under_pack_and_run_one_by_one_under_fifo(tmp_path: Path) -> None:
    """E4's mechanics on the real service (the speed-up itself is a GPU question: on CPU the
    lanes are threads sharing the cores): every job ends, FIFO keeps one lane, PACK opens
    several and the FIFO / PACK makespans are paired per repeat."""
    cfg = on_service_e4.ServiceE4Config(jobs=3, solo_s=0.3, repeats=2, device=DEVICE)
    rows = on_service_e4.service_e4(cfg, ctx(tmp_path))["rows"]
    assert [r["batch"] for r in rows] == ["low", "saturating"]
    for r in rows:
        assert r["states"] == "done"
        assert r["pack_lanes"] >= 2, r  # the batch shares the device at once
        assert r["lo"] <= r["fifo_over_pack"] <= r["hi"]
        per_repeat = [float(x) for x in r["fifo_over_pack_per_repeat"].split()]
        assert len(per_repeat) == 2 and all(x > 0 for x in per_repeat)
