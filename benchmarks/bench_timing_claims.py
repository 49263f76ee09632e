"""Wall-clock claims that tests no longer assert: measured and reported here, on this machine.

Tests check timing only as ratios measured within one run (a shared 2-core CI box slows every
absolute number); the absolute statements of the specs are reported by this benchmark, each
row with the claim, what was measured and whether it held:

- Venn (Figure 4.10): one IRS plan plus one dispatch stays in milliseconds for m <= 1k jobs
  and n <= 64 groups (the spec's bound: under 100 ms).
- Orloj: the served TinyDecoder's solo latencies sit in the ~10-100 ms
  regime on one CPU core (4 new tokens above 3 ms, 48 new tokens under 400 ms).
- Venn service: 1,000 emulated devices finish 10 two-round jobs over a real socket in under
  120 s (a compressed day of 20 s; the run is paced by the devices' check-in gaps).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def venn_plan_and_dispatch(reps: int = 15) -> dict[str, Any]:
    from kairos.venn.experiments.scale import synthetic_manager

    mgr, atoms = synthetic_manager(1000, 64, np.random.default_rng([0, 1000, 64]))
    samples = []
    for k in range(reps):
        start = time.perf_counter()
        mgr.replan(3600.0 + k)
        mgr.checkin(3600.0 + k, atoms[k % len(atoms)])
        samples.append(time.perf_counter() - start)
    ms = 1e3 * statistics.median(samples)
    return {
        "case": "venn plan + dispatch, 1000 jobs, 64 groups (median ms)",
        "claim": "< 100 ms",
        "measured": ms,
        "holds": ms < 100.0,
    }


def orloj_decoder_regime(runs: int = 10) -> list[dict[str, Any]]:
    from kairos.orloj.runtime.forward import configure_threads, perf_ms, timed_run
    from kairos.orloj.runtime.models import build_model

    configure_threads(1)
    model = build_model("decoder")
    classes = model.classes()
    times: dict[str, list[float]] = {c: [] for c in classes}
    for x in classes.values():
        model.run([x])  # warm-up
    for _ in range(runs):  # interleaved, as calibration does
        for name, x in classes.items():
            _, start, end = timed_run(model, [x], perf_ms)
            times[name].append(end - start)
    med = {c: statistics.median(t) for c, t in times.items()}
    short, long = min(med, key=med.__getitem__), max(med, key=med.__getitem__)
    return [
        {
            "case": f"orloj decoder solo {short} (median ms)",
            "claim": "> 3 ms",
            "measured": med[short],
            "holds": med[short] > 3.0,
        },
        {
            "case": f"orloj decoder solo {long} (median ms)",
            "claim": "< 400 ms",
            "measured": med[long],
            "holds": med[long] < 400.0,
        },
    ]


def venn_service_workload() -> dict[str, Any]:
    from kairos.runtime.http import BackgroundServer
    from kairos.venn.service.app import create_app
    from kairos.venn.service.emulator import EmulatorConfig, demo_jobs, run_workload

    cfg = EmulatorConfig(n=1000, seed=1, day_s=20.0, mean_gap_s=5.0, compute_s=0.1)
    jobs = demo_jobs(10, demand=5, rounds=2)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        with BackgroundServer(create_app(db=Path(tmp) / "venn.sqlite")) as srv:
            stats = asyncio.run(run_workload(srv.url, cfg, jobs, timeout_s=600))
        wall = time.monotonic() - start
    finished = sum(j["state"] == "finished" for j in stats.jobs)
    return {
        "case": f"venn service: 1000 devices finish 10 jobs ({finished} finished, s)",
        "claim": "< 120 s",
        "measured": wall,
        "holds": finished == 10 and wall < 120.0,
    }


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    rows = [venn_plan_and_dispatch(), *orloj_decoder_regime(5 if quick else 10)]
    if not quick:
        rows.append(venn_service_workload())
    return rows


if __name__ == "__main__":
    from kairos.report import print_table

    print_table(run(Path("results/bench"), quick=False), title="bench_timing_claims")
