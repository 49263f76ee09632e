"""Orloj against Clockwork on the real server, run after run, each run freshly calibrated.

The real-server test (tests/orloj/runtime/test_must_show.py) fits in a few minutes on a
shared machine, so it can only show that Orloj is not behind. Whether Orloj is *ahead* depends
on more than one calibration: its advantage is knowing the latency distributions, and one run
whose start-up profile erred by 23% lost the lead (docs/orloj.md, "Online correction"). This
runner measures it over many runs: each run starts a worker, calibrates it (its errors, fit
and held-out, are reported beside the run's result), replays one trace per load under both
policies in alternating order (A B, then B A on the next run), and on every
`neighbour_every`-th run starts CPU-bound neighbours on the worker's cores partway into each
replay, so the machine slows under the policies' feet. The verdict per load is the mean of
the per-run paired differences (Orloj - Clockwork) with its 95% CI.

    python -m kairos.orloj.runtime.duel --out duel.json            # 10 runs, ~30-40 min
    python -m kairos.orloj.runtime.duel --runs 2 --requests 80 --out small.json

It needs a quiet machine: other work on it is noise that the alternation only halves.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.orloj.profiler import Profiler
from kairos.orloj.runtime.calibrate import Calibration, CalibrationConfig
from kairos.orloj.runtime.dispatcher import Dispatcher
from kairos.orloj.runtime.loadgen import TraceItem, make_trace, run_load
from kairos.orloj.runtime.models import ServedModel, build_model
from kairos.orloj.runtime.process import ProcessExecutor
from kairos.orloj.runtime.server import create_app
from kairos.orloj.speed import served_options
from kairos.orloj.systems import make_system
from kairos.report.results import provenance
from kairos.report.stats import mean_ci
from kairos.runtime.http import BackgroundServer

POLICIES = ("orloj", "clockwork")
SPIN = "while True: pass"  # a neighbour inherits this process's (raised) priority


class DuelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = "decoder"
    model_options: dict[str, Any] = Field(default_factory=dict)
    loads: tuple[float, ...] = (0.6, 0.9)  # offered load / capacity at batch 16
    runs: int = Field(10, ge=2)  # each a fresh worker and calibration
    requests: int = Field(400, ge=10)  # per run, load and policy
    warm_up: int = Field(40, ge=0)  # replayed and discarded under each policy first
    slo_mult: float = Field(2.0, gt=0)  # SLO = this x P99 of solo latency
    neighbour_every: int = Field(2, ge=0)  # runs 1, 1 + n, ... get neighbours; 0: none
    neighbour_after_s: float = Field(1.0, ge=0)  # into each replay
    # a test setting: the policies are told g_k and the solo latencies times this
    miscalibrate: float = Field(1.0, gt=0)
    batch_reps: int = Field(5, ge=1)
    nice: int = -10  # the worker's and this process's priority, where allowed
    seed: int = 0


@contextlib.contextmanager
def neighbours(pid: int | None, after_s: float, on: bool) -> Iterator[None]:
    """CPU-bound processes on `pid`'s cores, one per core, at this process's priority,
    started `after_s` into the block and stopped at its end."""
    procs: list[subprocess.Popen[bytes]] = []
    cores = sorted(os.sched_getaffinity(pid or 0))

    def start() -> None:
        for core in cores:
            p = subprocess.Popen([sys.executable, "-c", SPIN], stderr=subprocess.DEVNULL)
            with contextlib.suppress(OSError):
                os.sched_setaffinity(p.pid, {core})
            procs.append(p)

    timer = threading.Timer(after_s, start) if on else None
    if timer is not None:
        timer.start()
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()
            timer.join()
        for p in procs:
            p.kill()
            p.wait()


def _replay(
    model: ServedModel,
    worker: ProcessExecutor,
    policy: Any,
    profiler: Profiler,
    offline: Mapping[str, Sequence[float]] | None,
    trace: list[TraceItem],
    slo: float,
    cal: Calibration,
) -> dict[str, Any]:
    """One replay over HTTP on a fresh server around the kept policy and profiler; `drift` is
    measured over predicted batch time (the calibration's g_k): how much slower the worker ran."""
    d = Dispatcher(
        policy, model, worker, profiler=profiler, offline=offline, predict=cal.predict(model)
    )
    with BackgroundServer(create_app(d, model.default_apps())) as srv:
        report = run_load(srv.url, trace, slo)
        stats = httpx.get(srv.url + "/v1/stats").json()
    s = report.summary()
    if s["requests"] != len(trace):
        raise RuntimeError(f"{s['requests']} of {len(trace)} requests answered")
    return {"finish_rate": s["finish_rate"], "batches": stats["batches"], "drift": stats["drift"]}


def _one_run(
    cfg: DuelConfig, model: ServedModel, run: int, say: Callable[[str], None]
) -> list[dict[str, Any]]:
    worker = ProcessExecutor(model, nice=cfg.nice)
    worker.start()
    try:
        cal = worker.calibrate(CalibrationConfig(solo_runs=10, batch_reps=cfg.batch_reps))
        apps = model.default_apps()
        pooled = np.concatenate([np.asarray(v) for v in cal.app_profile(apps, 4000).values()])
        slo = cfg.slo_mult * float(np.percentile(pooled, 99))
        capacity = cal.capacity_per_s(apps, 16)
        told = cal.batch_model.scaled(cfg.miscalibrate)
        offline = {
            a: [v * cfg.miscalibrate for v in vs]
            for a, vs in cal.app_profile(apps, 1000, seed=run).items()
        }
        slowed = cfg.neighbour_every > 0 and run % cfg.neighbour_every == 1
        say(
            f"run {run}: calibration error {cal.median_error():.1%} (held-out "
            f"{cal.holdout_error():.1%}), SLO {slo:.0f} ms, neighbours {slowed}"
        )
        kept = {
            n: (make_system(n, model=told, slo_ms=slo, options=served_options(n, {})), Profiler())
            for n in POLICIES
        }
        first: dict[str, Mapping[str, Sequence[float]] | None] = dict.fromkeys(POLICIES, offline)
        rows = []
        for i, rho in enumerate(cfg.loads):
            trace = make_trace(
                model, apps, rho * capacity, cfg.requests, seed=cfg.seed + 97 * run + i
            )
            order = POLICIES if (run + i) % 2 == 0 else POLICIES[::-1]
            for name in order:
                policy, profiler = kept[name]
                if i == 0 and cfg.warm_up:
                    _replay(
                        model, worker, policy, profiler, first[name], trace[: cfg.warm_up], slo, cal
                    )
                    first[name] = None
                with neighbours(worker.pid, cfg.neighbour_after_s, slowed):
                    out = _replay(model, worker, policy, profiler, first[name], trace, slo, cal)
                first[name] = None
                rows.append(
                    {"run": run, "load": rho, "policy": name, "neighbours": slowed, **out}
                    | _calibration(cal)
                )
        return rows
    finally:
        worker.stop()


def _calibration(cal: Calibration) -> dict[str, float]:
    return {"calibration_error": cal.median_error(), "holdout_error": cal.holdout_error()}


def summarise(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per load: Orloj - Clockwork per run, its mean and 95% CI half-width, over every run and
    (`quiet`, `neighbours`) over the runs without and with CPU-bound neighbours."""
    out: dict[str, Any] = {}
    for rho in sorted({r["load"] for r in rows}):
        fr = {(r["run"], r["policy"]): r["finish_rate"] for r in rows if r["load"] == rho}
        crowded = {r["run"]: bool(r.get("neighbours")) for r in rows if r["load"] == rho}
        runs = sorted({run for run, _ in fr})
        diff = {run: fr[(run, "orloj")] - fr[(run, "clockwork")] for run in runs}
        out[str(rho)] = _paired(list(diff.values()))
        for name, wanted in (("quiet", False), ("neighbours", True)):
            part = [d for run, d in diff.items() if crowded[run] == wanted]
            if len(part) >= 2:
                out[str(rho)][name] = _paired(part)
    return out


def _paired(diffs: list[float]) -> dict[str, Any]:
    mean, half = mean_ci(diffs)
    return {"diffs": diffs, "mean": mean, "half": half, "runs": len(diffs)}


def run_duel(cfg: DuelConfig, say: Callable[[str], None] = print) -> dict[str, Any]:
    model = build_model(cfg.model, **cfg.model_options)
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, cfg.nice)
    rows = [row for run in range(cfg.runs) for row in _one_run(cfg, model, run, say)]
    return {"config": cfg.model_dump(), "provenance": provenance().model_dump(), "rows": rows,
            "summary": summarise(rows)}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="result file (JSON)")
    parser.add_argument("--set", default="{}", help="DuelConfig fields as JSON")
    for name in ("runs", "requests"):
        parser.add_argument(f"--{name}", type=int)
    args = parser.parse_args(argv)
    fields = json.loads(args.set) | {
        k: v for k, v in (("runs", args.runs), ("requests", args.requests)) if v is not None
    }
    result = run_duel(DuelConfig.model_validate(fields))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    for rho, s in result["summary"].items():
        print(
            f"load {rho}: Orloj - Clockwork {s['mean']:+.3f} +- {s['half']:.3f} ({s['runs']} runs)"
        )


if __name__ == "__main__":
    main()
