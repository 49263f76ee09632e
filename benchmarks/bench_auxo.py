"""Auxo benchmarks: one cohort round's wall time with 1,000 clients (check-in, selection, local
training of the participants, aggregation, clustering and rewards), a round's local training
stepped in lockstep (`local_train_many`) against one client at a time, the clustering cost of one
global round as the cohorts grow (M = 1, 2, 4, 8 leaves sharing P_total = 40), and the
experiments' trends in full mode (E1, E2, E3 with FTFA, E5, E6 and cohorts as Venn jobs: 5
paired seeds; quick mode: their quick configs), whose rows land in the results."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from kairos.auxo import AuxoParams, AuxoPolicy
from kairos.auxo.experiments import e1, e2, e3, e5, e6, venn_cohorts
from kairos.auxo.experiments.arms import QUICK_POINT
from kairos.auxo.experiments.runs import RunConfig, auxo_params, build_runner
from kairos.auxo.training import CohortTraining
from kairos.experiments import ExperimentContext
from kairos.experiments.sweep import usable_cores
from kairos.fl.learning import LocalConfig, local_train, local_train_many
from kairos.report.stats import paired_ratio


def round_time(n_clients: int, rounds: int) -> dict[str, Any]:
    """Mean wall time of one leaf-round of the driver on E1's setting with `n_clients`."""
    cfg = RunConfig.model_validate({"data": {"n_clients": n_clients}, "rounds": 300})
    runner = build_runner(cfg)
    run = CohortTraining(runner, auxo_params(cfg, n_clients), seed=0)
    for _ in range(3):  # warm caches
        run.step()
    start = time.perf_counter()
    for _ in range(rounds):
        run.step()
    per = (time.perf_counter() - start) / rounds
    return {
        "case": f"one cohort round, {n_clients} clients, P=40",
        "ms_per_round": round(per * 1e3, 2),
        "rounds": rounds,
    }


def lockstep_training(participants: int, reps: int) -> dict[str, Any]:
    """One round's local training of `participants` clients on E1's data and model, one by one
    (`local_train` per client) and in lockstep (`local_train_many`), interleaved per rep; the
    two give the same bits (tests/fl/learning/test_local.py), so only the time differs."""
    runner = build_runner(RunConfig.model_validate({"data": {"n_clients": 200}}))
    clients = [runner.dataset.clients[i] for i in range(participants)]
    local = LocalConfig(lr=0.05, batch_size=20, steps=10)
    w = runner.model.init(np.random.default_rng(0))
    one: list[float] = []
    many: list[float] = []
    for r in range(reps):
        start = time.perf_counter()
        rng = np.random.default_rng(r)
        for c in clients:
            local_train(runner.model, w, c, local, rng)
        one.append(time.perf_counter() - start)
        start = time.perf_counter()
        local_train_many(runner.model, w, clients, local, np.random.default_rng(r))
        many.append(time.perf_counter() - start)
    return {
        "case": f"a round's local training, {participants} clients: lockstep vs one by one",
        "ms_per_round": round(min(many) * 1e3, 2),
        "one_by_one_ms": round(min(one) * 1e3, 2),
        **paired_ratio(one, many).columns("lockstep_over"),
    }


def clustering_cost(leaves: int, n_params: int, rounds: int) -> dict[str, Any]:
    """Wall time of `observe` (features, clustering, rewards, criteria) summed over all leaves
    for one global round, with `leaves` cohorts sharing P_total = 40."""
    params = AuxoParams(
        p_total=40, total_rounds=1000, max_leaves=8, grad_fraction=1.0, n_clients=1000
    )
    policy = AuxoPolicy(params, seed=0)
    while policy.tree.m < leaves:
        policy.split(policy.tree.leaves()[0], 0)
    rng = np.random.default_rng(0)
    budgets = policy.budgets()
    start = time.perf_counter()
    for r in range(rounds):
        for leaf, p in budgets.items():
            ids = rng.choice(1000, p, replace=False).tolist()
            policy.observe(leaf, 30 + r, ids, rng.normal(size=(p, n_params)))
    per = (time.perf_counter() - start) / rounds
    return {
        "case": f"clustering per global round, M={leaves}, {n_params} params",
        "leaves": leaves,
        "ms_per_round": round(per * 1e3, 3),
    }


def trend_rows(out_dir: Path, quick: bool) -> list[dict[str, Any]]:
    # one point per core (a pool worker's BLAS gets its share of them: sweep._limit_threads)
    ctx = ExperimentContext(out_dir / "auxo", jobs=usable_cores(), progress=False, cache=True)
    point = RunConfig.model_validate(QUICK_POINT) if quick else RunConfig()
    seeds = 3 if quick else 5
    rows: list[dict[str, Any]] = []
    keep = ("final_mean", "d_final_mean", "d_final_mean_ci95", "speedup", "speedup_lo")
    for r in e1.e1(e1.E1Config(seeds=seeds, point=point), ctx)["rows"]:
        extra: tuple[str, ...] = (
            "final_p10",
            "base_final_p10",
            "base_final_p90",
            "base_final_variance",
        )
        extra += ("final_variance", "variance_change", "leaves", "ari")
        rows.append({"case": f"E1 {r['algorithm']}", **{k: r[k] for k in keep + extra}})
    for r in e2.e2(e2.E2Config(seeds=seeds, point=point), ctx)["rows"]:
        rows.append({"case": f"E2 {r['population']}", **{k: r[k] for k in (*keep, "leaves")}})
    for r in e3.e3(e3.E3Config(seeds=seeds, point=point), ctx)["rows"]:
        rows.append({"case": f"E3 {r['algorithm']}", **{k: r[k] for k in keep}})
    for r in e5.e5(e5.E5Config.quick() if quick else e5.E5Config(), ctx)["rows"]:
        rows.append(
            {
                "case": f"E5 {r['case']}",
                **{k: r[k] for k in ("final_mean", "d_final_mean_vs_ref", "d_curve_mean_vs_ref")},
            }
        )
    e6_cfg = e6.E6Config.model_validate(e6.QUICK) if quick else e6.E6Config()
    for r in e6.e6(e6_cfg, ctx)["rows"]:
        keys = ("auxo_final", "d_auxo_vs_single", "d_auxo_vs_single_ci95", "d_auxo_vs_clean")
        rows.append({"case": f"E6 {r['condition']}", **{k: r[k] for k in keys}})
    venn_cfg = venn_cohorts.VennCohortsConfig(seeds=2 if quick else 5)
    for r in venn_cohorts.venn_cohorts(venn_cfg, ctx)["rows"]:
        keys = ("one_job_auxo_hours", "cohort_jobs_auxo_hours", "auxo_speedup", "others_speedup")
        rows.append({"case": f"cohorts as Venn jobs, {r['policy']}", **{k: r[k] for k in keys}})
    return rows


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    rows = [round_time(1000, 10 if quick else 50)]
    rows += [lockstep_training(p, 5 if quick else 20) for p in (10, 40)]
    for m in (1, 2, 4, 8):
        rows.append(clustering_cost(m, 610, 5 if quick else 20))
    rows += trend_rows(out_dir, quick)
    return rows
