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

`python -m benchmarks.bench_salus_runtime --device cuda` runs the same on a GPU (lanes as CUDA
streams and memory pools, models at GPU sizes, the plain loop timed to its last kernel).
"""

from __future__ import annotations

import argparse
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
from kairos.salus.runtime.device import Device, make_device
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
# on a GPU: large batches (the paper's Fig. 2.12 uses each model's largest)
CUDA_MODELS: dict[str, dict[str, Any]] = {
    "cnn": {"batch": 256, "width": 64, "image": 64},
    "lstm": {"batch": 128, "seq": 64, "vocab": 10000, "hidden": 512},
    "vae": {"batch": 4096, "features": 784, "hidden": 400, "latent": 20},
    "superres": {"batch": 64, "image": 128},
}


def _sync(device: Device) -> None:
    if device.kind == "cuda":
        torch.cuda.synchronize()


def plain_loop(
    n: int, accounted: bool, model: str = "cnn", device: Device | None = None, synced: bool = False
) -> float:
    """Seconds per iteration of the model's step in a plain loop (after 3 warm-up steps);
    `synced`: waiting for the GPU after every step, as a boundary the scheduler can act on
    requires (the service does this at every iteration, spec 6.5)."""
    device = device or Device(2**30)
    sizes = CUDA_MODELS if device.kind == "cuda" else MODELS
    tracker = StorageTracker()
    with device.job_context(-1):  # on a GPU: built there, run on the default stream
        with tracker:
            parts = getattr(zoo, model)("train", **sizes[model])
        for _ in range(3):
            parts.run_iteration()
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(n):
            if accounted:
                with tracker:
                    parts.run_iteration()
            else:
                parts.run_iteration()
            if synced:
                _sync(device)
        _sync(device)
        took = (time.perf_counter() - t0) / n
    del parts
    device.drop_job(-1)
    return took


def service_run(client: SalusClient, n: int, model: str = "cnn", kind: str = "cpu") -> float:
    """Seconds per iteration of the same job run by the service (after its profiling)."""
    sizes = CUDA_MODELS if kind == "cuda" else MODELS
    job = client.submit("bench", f"kairos.salus.runtime.zoo:{model}", n + 8,
                        options=sizes[model])  # fmt: skip
    done = client.wait(job["id"], timeout_s=600)
    if done["state"] != "done":
        raise RuntimeError(f"the benchmark job ended {done['state']}: {done['error']}")
    return float(done["finished_s"] - done["started_s"]) / n


def switch_gaps(switch: str, n: int, kind: str = "cpu") -> float:
    """Median switch gap (s) between two LSTM jobs (~18 MB state each) alternating under FAIR."""
    opts = {"hidden": 256, "vocab": 2000, "seq": 4, "batch": 2}
    settings = ServiceSettings(
        policy="fair", switch=switch, capacity_bytes=2**30, torch_threads=1, device=kind
    )
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


def run(out_dir: Path, quick: bool = False, kind: str = "cpu") -> list[dict[str, Any]]:
    torch.set_num_threads(1)
    n, rounds = (20, 3) if quick else (100, 7)
    device = make_device(kind, 2**30 if kind == "cpu" else None)
    capacity = 2**30 if kind == "cpu" else None  # a GPU: its own memory
    # default: sampled accounting (`account_every`); strict: every iteration accounted
    services = {
        "service": ServiceSettings(
            policy="fifo", torch_threads=1, capacity_bytes=capacity, device=kind
        ),
        "service, strict accounting": ServiceSettings(
            policy="fifo", torch_threads=1, capacity_bytes=capacity, account_every=1, device=kind
        ),
    }
    times: dict[str, list[float]] = {"plain": [], "accounted": [], **{k: [] for k in services}}
    if kind == "cuda":
        times["plain, synchronized every step"] = []
    with ExitStack() as stack:
        clients = {}
        for name, settings in services.items():
            srv = stack.enter_context(BackgroundServer(create_app(SalusService(settings))))
            clients[name] = stack.enter_context(SalusClient(srv.url))
        for _ in range(rounds):  # interleaved: the machine's drift hits every mode alike
            times["plain"].append(plain_loop(n, accounted=False, device=device))
            times["accounted"].append(plain_loop(n, accounted=True, device=device))
            for name, client in clients.items():
                times[name].append(service_run(client, n, kind=kind))
            if kind == "cuda":
                synced = plain_loop(n, accounted=False, device=device, synced=True)
                times["plain, synchronized every step"].append(synced)
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
                plain_m.append(plain_loop(n // 2, accounted=False, model=model, device=device))
                served_m.append(service_run(clients["service"], n // 2, model, kind))
            p, t = statistics.median(plain_m), statistics.median(served_m)
            ratio = paired_ratio(served_m, plain_m)
            rows.append(_row(f"E6 {model} step, service", t, p, ratio))
    for switch in ("resident", "suspend"):
        gap = switch_gaps(switch, 30 if quick else 100, kind)
        rows.append({"case": f"switch gap, {switch}", "gap_us": round(gap * 1e6, 1)})
    print_table(rows, title=f"Salus runtime overhead on {kind} (medians of {rounds} rounds)")
    sizes = CUDA_MODELS if kind == "cuda" else MODELS
    config = {"device": kind, "models": sizes, "n": n, "rounds": rounds, "times_s": times}
    name = "bench_salus_runtime" if kind == "cpu" else f"bench_salus_runtime_{kind}"
    write_result(out_dir, name, config=config, rows=rows)
    return rows


if __name__ == "__main__":
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args.add_argument("--quick", action="store_true")
    args.add_argument("--out", type=Path, default=Path("results/bench"))
    a = args.parse_args()
    run(a.out, quick=a.quick, kind=a.device)
