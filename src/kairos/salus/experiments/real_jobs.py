"""Real PyTorch jobs through the real service, for the experiments run at reduced scale.

A trace here is a list of `RealJob`s: a zoo factory, its options, an iteration count, when it
is submitted and its T (SRTF's expected run time, from a solo calibration of the workload,
exactly what a user would give). `run_on_service` starts an in-process `SalusService` (the same
object `kairos salus serve` serves), submits each job at its time, waits for all of them, and
returns per-job times from the client's side (submission to end) and the driver's timeline.
Times are wall-clock seconds on this machine: shared CPUs make them noisy, which is why the
experiments report decisions (orders, shares) and paired ratios rather than absolute times.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from kairos.salus.driver import IterationRecord
from kairos.salus.runtime.device import make_device
from kairos.salus.runtime.job import build, load_factory
from kairos.salus.runtime.memory import StorageTracker
from kairos.salus.runtime.profiler import profile
from kairos.salus.runtime.service import SalusService
from kairos.salus.runtime.settings import ServiceSettings
from kairos.salus.runtime.spec import JobSpec

ZOO = "kairos.salus.runtime.zoo"
# the zoo's small CPU configurations: a few milliseconds a step with one torch thread
WORKLOADS: dict[str, dict[str, Any]] = {
    "cnn": {"batch": 4},
    "vae": {"batch": 4},
    "superres": {"batch": 4},
    "lstm": {},
}


@dataclass(frozen=True)
class RealJob:
    workload: str
    iterations: int
    submit_s: float
    expected_s: float | None = None
    options: dict[str, Any] | None = None  # the factory's options; None: `WORKLOADS`'


@dataclass
class ServiceRun:
    policy: str
    jct_s: list[float]  # per job, submission to end, in trace order
    makespan_s: float
    timeline: list[IterationRecord] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)  # service job id of each trace job
    states: list[str] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)  # when each reached the driver
    expected: list[float | None] = field(default_factory=list)  # T as the driver had it
    errors: list[str] = field(default_factory=list)  # why each failed job failed

    def summary(self) -> dict[str, Any]:
        n = len(self.jct_s)
        return {
            "policy": self.policy,
            "jobs": n,
            "avg_jct_s": sum(self.jct_s) / n if n else float("nan"),
            "max_jct_s": max(self.jct_s, default=float("nan")),
            "makespan_s": self.makespan_s,
        }


def calibrate(
    workloads: list[str],
    iterations: int = 20,
    threads: int = 1,
    device: str = "cpu",
    options: dict[str, dict[str, Any]] | None = None,
) -> dict[str, float]:
    """Solo seconds per iteration of each workload (median over `iterations`), measured on
    `device` the way the service's profiler measures it: what a user would base T on."""
    import torch

    torch.set_num_threads(threads)
    where = make_device(device, 2**30 if device == "cpu" else None)
    out: dict[str, float] = {}
    for k, name in enumerate(workloads):
        opts = dict((options or {}).get(name, WORKLOADS[name]))
        with where.job_context(-1 - k):
            parts = build(load_factory(f"{ZOO}:{name}"), "train", opts)
            out[name] = profile(parts, StorageTracker(), warmup=3, measured=iterations).t_iter
        del parts
        where.drop_job(-1 - k)
    return out


def run_on_service(
    policy: str, jobs: list[RealJob], timeout_s: float = 600.0, **settings: Any
) -> ServiceRun:
    """Run the trace on a fresh service under `policy`; every job must end within
    `timeout_s` of the last submission."""
    if any(b.submit_s < a.submit_s for a, b in itertools.pairwise(jobs)):
        raise ValueError("the trace's jobs must be in submission order")
    settings.setdefault("torch_threads", 1)
    if settings.get("device") == "cuda":
        settings.setdefault("capacity_bytes", None)  # the GPU's own memory
    settings.setdefault("warmup", 1)
    settings.setdefault("measured", 3)
    service_settings = ServiceSettings(policy=policy, **settings)
    device = make_device(service_settings.device, service_settings.capacity_bytes)
    service = SalusService(service_settings, device, record=True)

    async def main() -> ServiceRun:
        await service.start()
        t0 = time.monotonic()
        ids: list[int] = []
        submitted: list[float] = []
        try:
            for k, job in enumerate(jobs):
                await asyncio.sleep(max(0.0, t0 + job.submit_s - time.monotonic()))
                spec = JobSpec(
                    name=f"{job.workload}-{k}",
                    factory=f"{ZOO}:{job.workload}",
                    iterations=job.iterations,
                    expected_s=job.expected_s,
                    options=dict(WORKLOADS[job.workload] if job.options is None else job.options),
                )
                record = service.submit(spec)
                ids.append(record.id)
                submitted.append(record.submitted)
            for job_id in ids:
                await service.wait(job_id, timeout_s)
            records = [service.jobs[i] for i in ids]
            ends = [r.finished or float("nan") for r in records]
            assert service.driver is not None and service.driver.timeline is not None
            # a job that failed in set-up or profiling never reached the driver
            driven = [service.driver.jobs.get(i) for i in ids]
            return ServiceRun(
                policy,
                [e - s for e, s in zip(ends, submitted, strict=True)],
                max(ends) - min(submitted),
                list(service.driver.timeline),
                ids,
                [r.state.value for r in records],
                [j.arrival if j else float("nan") for j in driven],
                [j.expected if j else None for j in driven],
                [f"{r.id}: {r.error}" for r in records if r.error],
            )
        finally:
            await service.stop()

    return asyncio.run(main())
