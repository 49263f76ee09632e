"""Salus runtime benchmark: the service's per-iteration overhead (the paper's Fig. 2.12).

The same small CNN training step (about 20 ms or more here) runs four ways, interleaved round by
round so that the machine's drift hits all of them alike:
1. plain: a Python loop calling the step;
2. accounted: the same loop under the job's `StorageTracker` on every iteration (the CPU memory
   accounting of spec 6.7, a dispatch mode on every operator): what the accounting costs;
3. service: the job submitted over HTTP to a real `kairos salus serve` service (FIFO, one job,
   default settings: sampled accounting), timed from its first iteration after profiling to
   its last (the service's own clock);
4. the same with strict accounting (`account_every=1`).
The services run in this process, so the plain loops run under the same host allocator setting
(`host_cache`) as the service. The overhead is reported as the ratio to the plain loop of the
medians (goal: under 10%), in microseconds per iteration, and as the per-round ratio (geometric
mean, 95% CI over the rounds, range): the goal is "met" when the CI lies under 1.10. E6: one row
per zoo model (Fig. 2.12) at a size whose step takes tens of milliseconds here. Also the switch
gap between two resident jobs on one lane versus suspend/resume.
"""

from __future__ import annotations

import statistics
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import torch

from kairos.report import print_table, write_result
from kairos.report.stats import PairedRatio, paired_ratio
from kairos.runtime.http import BackgroundServer
from kairos.salus.runtime import zoo
from kairos.salus.runtime.client import SalusClient
from kairos.salus.runtime.memory import StorageTracker
from kairos.salus.runtime.server import create_app
from kairos.salus.runtime.service import SalusService
from kairos.salus.runtime.settings import ServiceSettings

CNN = {"batch": 32, "width": 16, "image": 32}  # >= ~20 ms per training step on one core
# E6: every zoo model at a size whose training step takes tens of milliseconds on one core
MODELS: dict[str, dict[str, Any]] = {
    "cnn": CNN,
    "lstm": {"batch": 32, "seq": 32, "vocab": 2000, "hidden": 128},
    "vae": {"batch": 256, "features": 784, "hidden": 400, "latent": 20},
    "superres": {"batch": 8, "image": 64},
}


def plain_loop(n: int, accounted: bool, model: str = "cnn") -> float:
    """Seconds per iteration of the model's step in a plain loop (after 3 warm-up steps)."""
    tracker = StorageTracker()
    with tracker:
        parts = getattr(zoo, model)("train", **MODELS[model])
    for _ in range(3):
        parts.run_iteration()
    t0 = time.perf_counter()
    for _ in range(n):
        if accounted:
            with tracker:
                parts.run_iteration()
        else:
            parts.run_iteration()
    return (time.perf_counter() - t0) / n


def service_run(client: SalusClient, n: int, model: str = "cnn") -> float:
    """Seconds per iteration of the same job run by the service (after its profiling)."""
    job = client.submit("bench", f"kairos.salus.runtime.zoo:{model}", n + 8,
                        options=MODELS[model])  # fmt: skip
    done = client.wait(job["id"], timeout_s=600)
    if done["state"] != "done":
        raise RuntimeError(f"the benchmark job ended {done['state']}: {done['error']}")
    return float(done["finished_s"] - done["started_s"]) / n


def switch_gaps(switch: str, n: int) -> float:
    """Median switch gap (s) between two LSTM jobs (~18 MB state each) alternating under FAIR."""
    opts = {"hidden": 256, "vocab": 2000, "seq": 4, "batch": 2}
    settings = ServiceSettings(policy="fair", switch=switch, capacity_bytes=2**30, torch_threads=1)
    service = SalusService(settings)
    with BackgroundServer(create_app(service)) as srv, SalusClient(srv.url) as client:
        ids = [client.submit(f"j{k}", "kairos.salus.runtime.zoo:lstm", n, options=opts)["id"]
               for k in range(2)]  # fmt: skip
        for i in ids:
            client.wait(i, timeout_s=600)
        gaps = [g for r in service.jobs.values() for g in r.switches]
    return statistics.median(gaps)


def _row(case: str, t: float, plain: float, ratio: PairedRatio | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "case": case,
        "ms_per_iter": round(t * 1e3, 3),
        "overhead_pct": round((t / plain - 1) * 100, 2),
        "overhead_us_per_iter": round((t - plain) * 1e6, 1),
    }
    if ratio is not None:  # per-round service / plain: geometric mean [95% CI], spread
        row["ratio_ci"] = f"{ratio.geo_mean:.3f} [{ratio.lo:.3f}, {ratio.hi:.3f}]"
        row["ratio_range"] = f"{min(ratio.ratios):.3f}-{max(ratio.ratios):.3f}"
    return row


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    torch.set_num_threads(1)
    n, rounds = (20, 3) if quick else (100, 7)
    # default: sampled accounting (`account_every`); strict: every iteration accounted
    services = {
        "service": ServiceSettings(policy="fifo", torch_threads=1, capacity_bytes=2**30),
        "service, strict accounting": ServiceSettings(
            policy="fifo", torch_threads=1, capacity_bytes=2**30, account_every=1
        ),
    }
    times: dict[str, list[float]] = {"plain": [], "accounted": [], **{k: [] for k in services}}
    with ExitStack() as stack:
        clients = {}
        for name, settings in services.items():
            srv = stack.enter_context(BackgroundServer(create_app(SalusService(settings))))
            clients[name] = stack.enter_context(SalusClient(srv.url))
        for _ in range(rounds):  # interleaved: the machine's drift hits every mode alike
            times["plain"].append(plain_loop(n, accounted=False))
            times["accounted"].append(plain_loop(n, accounted=True))
            for name, client in clients.items():
                times[name].append(service_run(client, n))
        plain = statistics.median(times["plain"])
        rows = [
            _row(
                f"cnn step, {mode}",
                statistics.median(ts),
                plain,
                None if mode == "plain" else paired_ratio(ts, times["plain"]),
            )
            for mode, ts in times.items()
        ]
        served = paired_ratio(times["service"], times["plain"])
        met = "met" if served.hi < 1.10 else "not met" if served.lo > 1.10 else "undecided"
        rows[2]["goal_10pct"] = met  # on the CI of the per-round ratio
        for model in MODELS:  # E6: one row per model, plain loop vs service, interleaved
            if model == "cnn":
                continue
            plain_m, served_m = [], []
            for _ in range(rounds):
                plain_m.append(plain_loop(n // 2, accounted=False, model=model))
                served_m.append(service_run(clients["service"], n // 2, model))
            p, t = statistics.median(plain_m), statistics.median(served_m)
            ratio = paired_ratio(served_m, plain_m)
            rows.append(_row(f"E6 {model} step, service", t, p, ratio))
    for switch in ("resident", "suspend"):
        gap = switch_gaps(switch, 30 if quick else 100)
        rows.append({"case": f"switch gap, {switch}", "gap_us": round(gap * 1e6, 1)})
    print_table(rows, title=f"Salus runtime overhead (medians of {rounds} interleaved rounds)")
    config = {"models": MODELS, "n": n, "rounds": rounds, "times_s": times}
    write_result(out_dir, "bench_salus_runtime", config=config, rows=rows)
    return rows


if __name__ == "__main__":
    run(Path("results/bench"), quick=False)
