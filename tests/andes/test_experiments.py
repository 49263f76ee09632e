"""The paper's trends, reproduced in quick mode (full mode runs in `make bench`).

Each experiment runs once per session into a shared folder, so experiments that share
simulation points reuse them from the sweep cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kairos.experiments import ExperimentContext, get_experiment

AT_OR_ABOVE_DEFAULT = 2.0


@pytest.fixture(scope="session")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("andes-experiments")


def run_quick(name: str, out: Path) -> list[dict[str, Any]]:
    exp = get_experiment("andes", name)
    ctx = ExperimentContext(out_dir=out / "andes" / name, jobs=2, progress=False)
    rows: list[dict[str, Any]] = exp.run(exp.config(quick=True), ctx)
    assert (ctx.out_dir / f"{name}.json").is_file() and (ctx.out_dir / f"{name}.csv").is_file()
    assert list(ctx.out_dir.glob("*.png")), f"{name} wrote no plot"
    return rows


def _by(rows: list[dict[str, Any]], axis: str) -> dict[tuple[Any, str], dict[str, Any]]:
    return {(r[axis], r["policy"]): r for r in rows}


def test_e1_qoe_cases_order_as_in_figure_5(results_dir: Path) -> None:
    rows = {r["case"][:3]: r["qoe"] for r in run_quick("e1", results_dir)}
    assert rows["(a)"] == 1.0 > rows["(d)"] > max(rows["(b)"], rows["(c)"])


def test_e2_andes_beats_every_baseline_under_bursts(results_dir: Path) -> None:
    rows = run_quick("e2", results_dir)
    by = _by(rows, "intensity")
    intensities = sorted({r["intensity"] for r in rows})
    for h in intensities:
        if h < AT_OR_ABOVE_DEFAULT:
            continue
        andes = by[(h, "andes")]["avg_qoe"]
        for base in ("fcfs", "sarathi", "lqsf"):
            assert andes > by[(h, base)]["avg_qoe"], (h, base, andes, by[(h, base)]["avg_qoe"])
    top = intensities[-1]
    ratio = by[(top, "andes")]["avg_qoe"] / by[(top, "fcfs")]["avg_qoe"]
    assert ratio >= 2.0, f"andes/fcfs at intensity {top} is {ratio:.2f}"


def test_e3_andes_beats_every_baseline_at_default_duration_and_above(results_dir: Path) -> None:
    rows = run_quick("e3", results_dir)
    by = _by(rows, "duration")
    for w in sorted({r["duration"] for r in rows}):
        if w < 0.35:
            continue
        for base in ("fcfs", "sarathi", "lqsf"):
            assert by[(w, "andes")]["avg_qoe"] > by[(w, base)]["avg_qoe"], (w, base)


def test_capacity_andes_at_or_above_fcfs_in_every_cell(results_dir: Path) -> None:
    rows = run_quick("capacity", results_dir)
    assert {r["target"] for r in rows} == {0.95, 0.96, 0.97, 0.98, 0.99}
    for r in rows:
        assert r["fcfs_req_s"] == r["fcfs_req_s"], f"fcfs never reached {r['target']}"
        assert r["andes_req_s"] >= r["fcfs_req_s"], r
    gain_095 = next(r["gain"] for r in rows if r["target"] == 0.95)
    assert gain_095 >= 1.1, f"capacity gain at QoE 0.95 is {gain_095:.3f}"


def test_e4_real_trace_at_the_papers_operating_point(results_dir: Path) -> None:
    """E4 places the conversation trace where FCFS's average QoE is the paper's 0.88; there
    Andes is ahead on average QoE and on the share at 0.95 with the same TDS, and its
    anti-starvation rule bounds the tail (max TTFT at most twice FCFS's, the longest prompts
    at least 0.9x FCFS's QoE) for at most 0.02 of average QoE. What the paper reports and we
    do not reproduce here (Andes >= 0.95, +15 points at 0.95, lower mean TTFT) is measured
    and explained in docs/andes.md."""
    rows = {r["policy"]: r for r in run_quick("e4", results_dir)}
    fcfs, andes, off = rows["fcfs"], rows["andes"], rows["andes (no anti-starvation)"]
    assert abs(fcfs["avg_qoe"] - 0.88) <= 0.05
    assert andes["avg_qoe"] > fcfs["avg_qoe"]
    assert andes["share_qoe_095"] > fcfs["share_qoe_095"]
    assert abs(andes["avg_tds"] / fcfs["avg_tds"] - 1.0) <= 0.10
    assert andes["ttft_max"] <= 2.0 * fcfs["ttft_max"] < off["ttft_max"]
    assert andes["qoe_long_prompts"] >= 0.9 * fcfs["qoe_long_prompts"]
    assert abs(andes["avg_qoe"] - off["avg_qoe"]) <= 0.02
    # why not the paper's regime on this profile: prefills take most of the engine's time,
    # the KV cache never reaches Andes' 0.9 watermark, FCFS loses more QoE to streams
    # stalling after their first token than to waiting for it, and Andes never preempts
    assert fcfs["prefill_time_share"] > 0.5 and fcfs["kv_peak"] < 0.9
    assert 1 - fcfs["qoe_stall_only"] > 2 * (1 - fcfs["qoe_ttft_only"])
    assert andes["preemptions_per_request"] == 0


PHI3_OPERATING_LOAD = 0.9505  # E4's search on phi-3-mini, 1200 s, seed 0 (FCFS 0.887)


def test_e4_in_the_papers_memory_bound_regime(results_dir: Path) -> None:
    """E4 on Phi-3-mini (Table 1, 4 x A100), where this trace fills the KV cache as the
    paper's Fig. 3 shows (FCFS queues behind a full cache, losing QoE to the first-token
    wait): at FCFS's 0.88, Andes pauses buffered users and reaches the paper's regime of
    average QoE >= 0.95, +15 points at 0.95 and lower mean TTFT. TDS falls by more than the
    10% its target allows (measured in docs/andes.md), so it is not asserted. The first 1200 s
    of the trace, as docs/andes.md: over the quick mode's 600 s the search ends above the
    sustainable rate (FCFS 0.83) and Andes reaches 0.91, not 0.95.

    The load is where E4's own search puts FCFS at 0.88 on this profile and seed (0.9505,
    FCFS 0.887; `kairos andes experiment e4 --set profile=phi-3-mini --set span_s=1200`,
    docs/andes.md), given here so that the test runs two simulations instead of the search's
    ten (six minutes); the search itself is tested on the default profile (above,
    test_operating_point.py). A change that moves the operating point fails the 0.88 check."""
    exp = get_experiment("andes", "e4")
    cfg = exp.config(quick=True).model_validate(
        exp.config(quick=True).model_dump()
        | {
            "profile": "phi-3-mini",
            "span_s": 1200.0,
            "starvation_ablation": False,
            "load_factor": PHI3_OPERATING_LOAD,
        }
    )
    ctx = ExperimentContext(out_dir=results_dir / "andes" / "e4-phi", jobs=2, progress=False)
    rows = {r["policy"]: r for r in exp.run(cfg, ctx)}
    fcfs, andes = rows["fcfs"], rows["andes"]
    assert fcfs["kv_peak"] > 0.95
    assert 1 - fcfs["qoe_ttft_only"] > 2 * (1 - fcfs["qoe_stall_only"])
    assert abs(fcfs["avg_qoe"] - 0.88) <= 0.05
    assert andes["avg_qoe"] >= 0.95
    assert andes["share_qoe_095"] >= fcfs["share_qoe_095"] + 0.15
    assert andes["avg_ttft"] < fcfs["avg_ttft"]
    assert andes["preemptions_per_request"] > 0
    assert andes["qoe_long_prompts"] >= 0.9 * fcfs["qoe_long_prompts"]
    # where TDS goes (docs/andes.md: 12.95 -> 9.95 on seed 0): paused streams count their
    # pause, and the never-paused ones lose about 11% to Andes' larger running batch
    assert andes["tds_unpreempted"] > andes["avg_tds"]
    assert 0.85 * fcfs["avg_tds"] <= andes["tds_unpreempted"] < fcfs["avg_tds"]


def test_e5_refiner_ablation(results_dir: Path) -> None:
    """Without the refiner QoE falls as bursts grow longer, and at every duration the refiner
    gives fewer preemptions per request and a higher average QoE. (The paper also reports
    preemptions per request rising with duration without the refiner; our guards keep them
    flat, see docs/andes.md.)"""
    rows = run_quick("e5", results_dir)
    bare = sorted(
        (r for r in rows if r["policy"] == "andes-no-refiner"), key=lambda r: r["duration"]
    )
    full = {r["duration"]: r for r in rows if r["policy"] == "andes"}
    assert bare[-1]["avg_qoe"] < bare[0]["avg_qoe"]
    for r in bare:
        assert full[r["duration"]]["avg_qoe"] > r["avg_qoe"]
        assert full[r["duration"]]["preemptions_per_request"] < r["preemptions_per_request"]
