"""Simulator trends in quick mode (spec 5; full mode runs in `make bench`): E1's ordering and
ratios over 10 paired seeds, E2's SRTF snapshot, E3's fair shares, the E4/E5 demonstrations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kairos.experiments import ExperimentContext
from kairos.salus.experiments import demos, e1, snapshots
from kairos.salus.experiments.snapshots import E2_ORDER, busy_share
from kairos.salus.workloads import E1Trace

# the quick configs, built here so the tests do not load every installed system
QUICK: dict[str, Any] = {
    "table2_1": (e1.table2_1, e1.E1Config(point=e1.E1Point(trace=E1Trace(time_scale=0.05)))),
    "fig2_8a": (snapshots.fig2_8a, snapshots.SnapshotConfig()),
    "fig2_9": (snapshots.fig2_9, snapshots.FairConfig()),
    "fig2_10": (demos.fig2_10, demos.HyperConfig(jobs=30, job_s=10.0)),
    "fig2_11": (demos.fig2_11, demos.InferenceConfig()),
}


def run(name: str, tmp_path: Path) -> Any:
    fn, cfg = QUICK[name]
    return fn(cfg, ExperimentContext(tmp_path, progress=False, cache=False))


@pytest.fixture(scope="module")
def e1_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = run("table2_1", tmp_path_factory.mktemp("e1"))
    return {r["policy"]: r for r in out["rows"]}


def test_e1_srtf_has_the_lowest_average_jct_at_least_2_5x_fifo(e1_rows: dict[str, Any]) -> None:
    assert e1_rows["srtf"]["seeds"] == 10
    assert min(e1_rows, key=lambda p: e1_rows[p]["avg_jct_min"]) == "srtf"
    assert e1_rows["srtf"]["jct_vs_fifo"] >= 2.5  # paper 3.19
    assert e1_rows["srtf"]["jct_lo"] > 1.0 and e1_rows["srtf"]["jct_wins"] == 10


def test_e1_fair_and_pack_lie_between_in_the_paper_order(e1_rows: dict[str, Any]) -> None:
    # SRTF < FAIR < PACK < FIFO in average JCT (Table 2.1)
    jct = [e1_rows[p]["avg_jct_min"] for p in ("srtf", "fair", "pack", "fifo")]
    assert jct == sorted(jct)
    for p in ("fair", "pack"):
        assert (
            e1_rows[p]["jct_lo"] > 1.0
            and e1_rows[p]["jct_vs_fifo"] < e1_rows["srtf"]["jct_vs_fifo"]
        )
    assert e1_rows["fifo"]["avg_queuing_min"] > max(
        e1_rows[p]["avg_queuing_min"] for p in e1_rows if p != "fifo"
    )


def test_e1_makespans_within_a_few_percent(e1_rows: dict[str, Any]) -> None:
    for p in ("srtf", "pack", "fair"):
        assert abs(e1_rows[p]["makespan_vs_fifo"] - 1.0) < 0.03


def test_e2_srtf_snapshot(tmp_path: Path) -> None:
    out = run("fig2_8a", tmp_path)
    assert tuple(s["job"] for s in out["segments"]) == E2_ORDER
    jobs = out["jobs"]
    # #1 and #5 preempt at the running iteration's end: a wait of at most one iteration of
    # the job they preempt (#0 and #4), plus the switch
    assert jobs[1].first_start - jobs[1].arrival <= jobs[0].profile.t_iter + 0.002
    assert jobs[5].first_start - jobs[5].arrival <= jobs[4].profile.t_iter + 0.002


def test_e3_fair_shares_one_half_third_and_back(tmp_path: Path) -> None:
    out = run("fig2_9", tmp_path)
    result = out["result"]
    tl = result.timeline
    finish = [j.finish for j in result.jobs]
    assert finish == sorted(finish)  # they end in arrival order
    assert finish == pytest.approx([142.5, 172.5, 180.0], rel=0.01)

    def shares(t0: float, t1: float) -> list[float]:
        return [busy_share(tl, j, t0, t1) for j in range(3)]

    assert shares(2, 14) == pytest.approx([1, 0, 0], abs=0.02)
    assert shares(16, 29) == pytest.approx([0.5, 0.5, 0], abs=0.05)
    assert shares(32, 140) == pytest.approx([1 / 3] * 3, abs=0.03)
    assert shares(146, 170) == pytest.approx([0, 0.5, 0.5], abs=0.05)
    assert shares(175, 180) == pytest.approx([0, 0, 1], abs=0.05)
    aggregate = [r["aggregate_img_s"] for r in out["rows"][:-1]]
    solo = out["summary"]["solo_img_s"]
    assert min(aggregate) >= 0.99 * solo  # constant aggregate (a switch costs 1 ms)


def test_e4_and_e5_model_demonstrations(tmp_path: Path) -> None:
    e4 = {r["workload"]: r["speedup"] for r in run("fig2_10", tmp_path)}
    assert e4["resnet50_50"] == pytest.approx(1.0, abs=0.05)  # saturating: about 1x
    assert e4["superres_128"] > 1.5  # small u: a large gain
    e5 = run("fig2_11", tmp_path)
    salus = next(r["gpus"] for r in e5 if r["scheme"].startswith("salus"))
    mps = [r["gpus"] for r in e5 if r["scheme"] == "mps-like"]
    assert salus == 1 and all(m > salus for m in mps)
