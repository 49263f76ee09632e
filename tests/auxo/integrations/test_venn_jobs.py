"""Cohorts as Venn jobs: membership requirements, the phased registration, and the experiment."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.auxo.experiments.venn_cohorts import (
    VennCohortPoint,
    VennCohortsConfig,
    run_venn_point,
    venn_rows,
)
from kairos.auxo.venn_jobs import (
    AuxoApp,
    CohortRequirement,
    cohort_digits,
    in_cohort,
    run_deployment,
    with_cohorts,
)
from kairos.experiments import ExperimentContext
from kairos.fl.timing import RoundRule
from kairos.sim import RngStreams
from kairos.venn.policies import make_policy
from kairos.venn.workloads import GENERAL, FleetConfig, WorkloadConfig, make_fleet, make_jobs

PLAN = {"0": 4, "0.0": 8, "0.1": 8}


def _app(rounds: int = 20) -> AuxoApp:
    return AuxoApp(40, rounds, PLAN, GENERAL, RoundRule(overcommit=1.3), arrival=3600.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 4), st.integers(1, 3))
def test_the_children_of_a_cohort_partition_its_devices(salt: int, k: int, depth: int) -> None:
    code = cohort_digits(3000, salt)
    parent = [1 % k] * (depth - 1)
    inside = np.asarray(in_cohort(code, parent, k))
    kids = [np.asarray(in_cohort(code, [*parent, j], k)) for j in range(k)]
    assert np.array_equal(np.sum(kids, axis=0), inside.astype(int))
    assert abs(inside.mean() - k ** -(depth - 1)) < 0.05
    assert bool(in_cohort(int(code[0]), parent, k)) == bool(inside[0])


def test_a_cohort_requirement_is_the_base_and_membership() -> None:
    app = _app()
    fleet = with_cohorts(make_fleet(FleetConfig(devices=4000), 3), app, salt=3)
    pop = fleet.population
    reqs = {r.name: r for r in fleet.requirements}
    leaf = reqs["general|cohort 0.1.0"]
    assert isinstance(leaf, CohortRequirement) and leaf.path == (1, 0)
    members = np.asarray(in_cohort(cohort_digits(len(pop), 3), (1, 0), 2))
    assert np.array_equal(leaf.mask(pop), GENERAL.mask(pop) & members)
    assert abs(leaf.mask(pop).sum() / GENERAL.mask(pop).sum() - 0.25) < 0.05
    i = int(np.flatnonzero(leaf.mask(pop))[0])
    attrs = {"cpu_ghz": float(pop.cpu_ghz[i]), "cohort_code": float(cohort_digits(len(pop), 3)[i])}
    assert leaf.admits(attrs) and not leaf.admits({**attrs, "cohort_code": -1.0})
    assert len(fleet.requirements) == 4 + 6  # the four classes, then six cohorts


def test_cohort_jobs_register_when_their_parent_finishes_and_keep_the_budget() -> None:
    app = _app()
    fleet = with_cohorts(make_fleet(FleetConfig(), 2), app, salt=2)
    others = make_jobs(WorkloadConfig(jobs=5), RngStreams(2).stream("jobs"))
    policy = make_policy("venn", RngStreams(2).stream("policy:venn"))
    res = run_deployment("cohort_jobs", app, others, fleet, policy, salt=2)
    jobs = {r.job_id: r for r in res.jobs if r.job_id.startswith("auxo:")}
    assert sorted(jobs) == sorted(
        f"auxo:{c}" for c in ("0", "0.0", "0.1", "0.0.0", "0.0.1", "0.1.0", "0.1.1")
    )
    for parent in ("0", "0.0", "0.1"):
        kids = [jobs[f"auxo:{parent}.{j}"] for j in range(2)]
        assert all(abs(k.arrival - jobs[f"auxo:{parent}"].finish) < 1e-3 for k in kids)
        assert sum(k.participants for k in kids) == jobs[f"auxo:{parent}"].participants
    assert jobs["auxo:0"].rounds + jobs["auxo:0.1"].rounds + jobs["auxo:0.1.1"].rounds == 20
    # each phase replays the earlier one: the root finishes exactly as when it ran alone
    alone = AuxoApp(40, 4, {}, GENERAL, RoundRule(overcommit=1.3), arrival=3600.0)
    res0 = run_deployment("cohort_jobs", alone, others, fleet, policy, salt=2)
    root0 = next(r for r in res0.jobs if r.job_id == "auxo:0")
    assert root0.finish == jobs["auxo:0"].finish
    one = run_deployment("one_job", app, others, fleet, policy, salt=2)
    assert [r.rounds for r in one.jobs if r.job_id.startswith("auxo:")] == [20]


def test_the_venn_experiment_pairs_both_deployments(tmp_path: Path) -> None:
    point = VennCohortPoint(workload=WorkloadConfig(jobs=5), rounds=30)
    cfg = VennCohortsConfig(seeds=2, policies=("venn",), point=point)
    rows = venn_rows(cfg, ExperimentContext(tmp_path, jobs=2, progress=False, cache=False), [1, 2])
    (row,) = rows
    assert row["auxo_jobs"] == 7 and row["seeds"] == 2
    for key in ("auxo_speedup", "others_speedup"):
        assert row[f"{key}_lo"] <= row[key] <= row[f"{key}_hi"] and row[key] > 0
    single = run_venn_point(point.model_copy(update={"mode": "one_job", "seed": 1}))
    assert single["auxo_jobs"] == 1 and np.isfinite(single["auxo_hours"])
