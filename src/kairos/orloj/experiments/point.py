"""One simulation point: a workload, a system, an SLO multiple and a seed.

`run_point` is the module-level function every Orloj sweep runs. Its config carries the seed,
so a point is deterministic (unless it charges measured overhead) and the sweep cache can reuse
it across experiments. The request sequence depends only on the workload fields and the seed,
never on the system or the SLO: every system replays the same recorded sequence, as in the
paper. SLO = `slo_mult` x the workload's P99 solo latency.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kairos.orloj.arrivals import ArrivalKind
from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.bound import relaxation_bound
from kairos.orloj.policy import BatchPolicy
from kairos.orloj.recording import Recording, record
from kairos.orloj.simulator import SimConfig, simulate
from kairos.orloj.systems import NATIVE_SIZES, make_system
from kairos.orloj.workloads import get_workload
from kairos.sim import RngStreams


class SimPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    workload: str = "three-modal"  # a paper case ID (see `orloj.workloads.workload_names`)
    scale: float = Field(1.0, gt=0)  # multiply every solo latency (Fig 4.14)
    # the machine runs every batch this many times slower than the g_k the systems were given
    # (a shared server under load); the recording's rate stays sized to the profiled speed
    slowdown: float = Field(1.0, gt=0)
    # the slowdown starts when this share of the requests has been released (0: from the
    # start): a machine that slows mid-run, after the systems have settled on its old speed
    slowdown_from: float = Field(0.0, ge=0, lt=1)
    system: str = "orloj"
    options: dict[str, Any] = Field(default_factory=dict)  # the system's own keyword options
    slo_mult: float = Field(3.0, gt=0)
    seed: int = Field(0, ge=0)
    n_requests: int = Field(10_000, ge=1)
    rho: float = Field(0.8, gt=0)  # mean offered load / capacity at batch size 16
    arrival: ArrivalKind = "bursty"
    trace_path: str | None = None  # Azure Functions CSV or the Azure LLM trace, when used
    burst_sigma: float = Field(0.5, ge=0)
    # None: each system its own sizes (`systems.NATIVE_SIZES`: Orloj 1-16, Clockwork
    # {1, 2, 4, 8, 16}, Clipper and Nexus up to 16); a tuple: that S for every system
    batch_sizes: tuple[int, ...] | None = None
    batch_model: BatchLatencyModel = BatchLatencyModel()
    noise_sigma: float = Field(0.0, ge=0)
    profile_sample_rate: float = Field(0.1, ge=0, le=1)
    offline_samples: int = Field(1000, ge=1)
    charge_overhead: bool = False
    overhead_factor: float = Field(1.0, ge=0)


@lru_cache(maxsize=16)
def recording_for(
    workload: str,
    scale: float,
    n: int,
    seed: int,
    rho: float,
    arrival: ArrivalKind,
    trace_path: str | None,
    burst_sigma: float,
    batch_model: BatchLatencyModel,
) -> Recording:
    return record(
        get_workload(workload, scale),
        n,
        seed,
        batch_model,
        rho=rho,
        arrival=arrival,
        burst_sigma=burst_sigma,
        trace_path=trace_path,
    )


def point_recording(p: SimPoint) -> Recording:
    return recording_for(
        p.workload,
        p.scale,
        p.n_requests,
        p.seed,
        p.rho,
        p.arrival,
        p.trace_path,
        p.burst_sigma,
        p.batch_model,
    )


def point_policy(p: SimPoint, slo_ms: float, rate_per_ms: float) -> BatchPolicy:
    """The scheduler `p.system` as every experiment builds it for one point."""
    return make_system(
        p.system,
        model=p.batch_model,
        slo_ms=slo_ms,
        rate_per_ms=rate_per_ms,
        sizes=p.batch_sizes,
        options=dict(p.options),
    )


def max_batch_size(p: SimPoint) -> int:
    """The largest batch any system of the point may run: what the bound may batch too."""
    if p.batch_sizes is not None:
        return max(p.batch_sizes)
    return max(max(sizes) for sizes in NATIVE_SIZES.values())


BOUND = "bound"  # the pseudo-system whose finish rate is the clairvoyant bound


def run_point(p: SimPoint) -> dict[str, Any]:
    workload = get_workload(p.workload, p.scale)
    rec = point_recording(p)
    slo = p.slo_mult * workload.p99_ms
    rate = float(rec.meta["rate_per_ms"])
    if p.system == BOUND:  # what any scheduler could finish on this recording (bound.py)
        model = p.batch_model.scaled(p.slowdown)
        served = relaxation_bound(
            rec.arrival_ms, rec.arrival_ms + slo, rec.solo_ms, model, max_batch_size(p)
        )
        n = len(rec.solo_ms)
        unknown = ("goodput_rps", "mean_batch_size", "timed_out", "late", "rejected")
        return {
            "finish_rate": served / n,
            **dict.fromkeys((*unknown, "utilisation", "sched_us_mean"), math.nan),
            "slo_ms": slo,
            "p99_ms": workload.p99_ms,
            "rate_rps": rate * 1e3,
        }
    policy = point_policy(p, slo, rate)
    offline = workload.offline_profile(p.offline_samples, RngStreams(p.seed).stream("offline"))
    requests = rec.requests(slo)
    speed: tuple[tuple[float, float], ...] = ()
    if p.slowdown_from > 0:  # the profiled speed until then, `slowdown` after
        at = sorted(r.release for r in requests)[int(p.slowdown_from * len(requests))]
        model, speed = p.batch_model, ((at, p.slowdown),)
    else:
        model = p.batch_model.scaled(p.slowdown)
    config = SimConfig(
        batch_model=model,
        speed=speed,
        noise_sigma=p.noise_sigma,
        profile_sample_rate=p.profile_sample_rate,
        charge_overhead=p.charge_overhead,
        overhead_factor=p.overhead_factor,
        seed=p.seed,
    )
    out = simulate(policy, requests, config, offline).summary()
    out.update(slo_ms=slo, p99_ms=workload.p99_ms, rate_rps=rate * 1e3)
    return out
