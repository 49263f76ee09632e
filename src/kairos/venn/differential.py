"""Differential runs: kairos (artifact-compatible mode) and the authors' artifact on identical
inputs, compared per policy and seed.

For each seed, `prepare` writes the kairos workload and device trace of that seed in the
artifact's formats (`kairos.venn.artifact`); `run_artifact` runs the artifact's scheduler on
them in a fresh interpreter (`kairos.venn.artifact_driver`); `run_kairos` runs the kairos policy
on the very same files under the artifact's device and round rules. `compare` pairs the two
seed by seed: each policy's mean JCT (kairos / artifact) and both sides' SRSF/IRS ratio.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from kairos.report.stats import paired_ratio
from kairos.sim import RngStreams
from kairos.venn.artifact import (
    artifact_sim_config,
    load_artifact_inputs,
    read_artifact_output,
    write_artifact_inputs,
)
from kairos.venn.experiments.point import VennPoint
from kairos.venn.policies import make_policy
from kairos.venn.simulator import simulate
from kairos.venn.workloads import make_fleet, make_jobs

# kairos policy -> the artifact's scheduler class that implements the same policy
ARTIFACT_SCHEDULERS = {
    "fifo": "FIFOScheduler",
    "srsf": "SmallReqScheduler",
    "venn-nomatch": "VennReqScheduler",  # Table 1's "Venn": IRS without matching
    "venn": "VennMatchScheduler",
}


def prepare(workload: str, seed: int, out: Path, weeks: int = 4, **point: Any) -> Path:
    """Write seed `seed`'s jobs and fleet (exactly what `run_point` would simulate) in the
    artifact's formats under `out`; reuse them if already written."""
    if (out / "kairos_inputs.json").exists():
        return out
    p = VennPoint(seed=seed, workload={"workload": workload, **point.get("workload", {})})
    jobs = make_jobs(p.workload, RngStreams(seed).stream("jobs"))
    return write_artifact_inputs(out, jobs, make_fleet(p.fleet, seed), seed, weeks)


def run_kairos(
    inputs: Path,
    policy: str,
    venn: Mapping[str, Any] | None = None,
    sim: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The kairos policy on the artifact inputs under the artifact's rules."""
    inp = load_artifact_inputs(inputs)
    pol = make_policy(policy, RngStreams(inp.seed).stream(f"policy:{policy}"), **(venn or {}))
    res = simulate(pol, inp.jobs, inp.fleet(), artifact_sim_config(inp.weeks, **(sim or {})))
    jct = [r["jct"] for r in res.job_rows()]
    return {
        "avg_jct": float(res.summary()["avg_jct"]),
        "jct": jct,
        "aborts": [r.aborts for r in res.jobs],
        "finished": sum(x is not None for x in jct),
    }


def run_artifact(artifact: Path, inputs: Path, sched: str, out: Path) -> dict[str, Any]:
    """The artifact's `sched` on the inputs (cached in `out`); raises if the run fails."""
    if not out.exists():
        cmd = [sys.executable, "-m", "kairos.venn.artifact_driver", str(artifact)]
        cmd += [str(inputs), sched, str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"artifact run {sched} on {inputs} failed:\n{proc.stderr[-2000:]}")
    return read_artifact_output(out)


class ArtifactMissing(ValueError):
    """The `--artifact` path is not a checkout of the authors' artifact."""


def check_artifact(artifact: Path) -> Path:
    """`artifact` resolved, if it holds the artifact's simulator (`src/venn_event.py`); else an
    error that says what was expected and how to get it, before any input is written."""
    entry = artifact / "src" / "venn_event.py"
    if not entry.is_file():
        raise ArtifactMissing(
            f"{artifact} is not a checkout of the Venn artifact: {entry} not found. Fetch "
            "https://github.com/SymbioticLab/Venn and extract commit f8ada37's src/ and config/ "
            "there (git archive f8ada37 src config | tar -x -C DIR), then pass --artifact DIR"
        )
    return artifact.resolve()


def differential(
    artifact: Path,
    work: Path,
    workload: str,
    seeds: Sequence[int],
    policies: Sequence[str],
    workers: int = 1,
    venn: Mapping[str, Any] | None = None,
    weeks: int = 4,
) -> list[dict[str, Any]]:
    """One row per (policy, seed): both sides' mean JCT, aborts and finished jobs."""
    artifact = check_artifact(artifact)
    dirs = {s: prepare(workload, s, work / f"{workload}_{s}", weeks) for s in seeds}
    tasks = [(p, s) for p in policies for s in seeds]
    with ThreadPoolExecutor(max(1, workers)) as ex:
        art = list(
            ex.map(
                lambda t: run_artifact(
                    artifact,
                    dirs[t[1]],
                    ARTIFACT_SCHEDULERS[t[0]],
                    dirs[t[1]] / f"artifact_{ARTIFACT_SCHEDULERS[t[0]]}.json",
                ),
                tasks,
            )
        )
    rows = []
    for (p, s), a in zip(tasks, art, strict=True):
        k = run_kairos(dirs[s], p, venn if p.startswith("venn") else None)
        rows.append(
            {
                "workload": workload,
                "policy": p,
                "seed": s,
                "kairos_jct": k["avg_jct"],
                "artifact_jct": a["avg_jct"],
                "kairos_over_artifact": k["avg_jct"] / a["avg_jct"],
                "kairos_aborts": sum(k["aborts"]),
                "artifact_aborts": sum(a["aborts"]),
                "kairos_finished": k["finished"],
                "artifact_finished": a["finished"],
            }
        )
    return rows


def compare(rows: Sequence[Mapping[str, Any]], num: str, den: str) -> dict[str, Any]:
    """Per policy: the paired kairos/artifact mean-JCT ratio; and `num`/`den` (e.g. SRSF over
    IRS) on each side, with its geometric mean, 95% CI and seeds."""
    out: dict[str, Any] = {}
    by = {(r["policy"], r["seed"]): r for r in rows}
    for p in sorted({r["policy"] for r in rows}):
        mine = [r for r in rows if r["policy"] == p and math.isfinite(r["artifact_jct"])]
        pr = paired_ratio([r["kairos_jct"] for r in mine], [r["artifact_jct"] for r in mine])
        out[p] = {
            **pr.columns("kairos_over_artifact"),
            "max_abs_diff": float(np.max(np.abs(np.log(pr.ratios)))) if mine else math.nan,
        }
    seeds = sorted({r["seed"] for r in rows if (num, r["seed"]) in by and (den, r["seed"]) in by})
    for side in ("kairos", "artifact"):
        pr = paired_ratio(
            [by[(num, s)][f"{side}_jct"] for s in seeds],
            [by[(den, s)][f"{side}_jct"] for s in seeds],
        )
        out[f"{side}_{num}_over_{den}"] = pr.columns("ratio")
    return out
