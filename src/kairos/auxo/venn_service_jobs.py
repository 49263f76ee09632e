"""Auxo's cohorts as jobs on the Venn HTTP service, with emulated devices over HTTP.

The deployment of `kairos.auxo.venn_jobs`'s `"cohort_jobs"` mode on the real service: the root
cohort registers as a job (`POST /v1/jobs`) and posts its rounds; when it has finished (its
rounds up to the split), its K children register as new jobs with the parent's demand divided
by K, the rounds up to their own split (or the end), and the membership requirement of their
cohort, and so on down the plan. The service expresses membership as `cohort_modulus` and
`cohort_residue` (`kairos.fl.requirements.MemberRequirement`): the members of cohort path
(d1, ..., dn) are the devices whose code's base-K digits start with it, i.e.
code = sum(d_i K^(i-1)) modulo K^n. The code is the one `cohort_digits` gives the simulator,
and it stays on the device.

The devices are a `DeviceTrace`: every device's check-in times and the task time each check-in
would run, drawn up front from the emulator's compressed day (`EmulatorConfig`: the same
population, time zones and check-in rate). An HTTP device follows its trace on the wall clock
(one still training at a check-in time checks in when done) and trains at most once, one task
a day as FL clients do; `simulate_cohort_jobs` gives the simulator the same trace with its
`one_task_per_day`. So a service run and a simulated run see the same devices arrive at the
same times and run as long, and what differs is the wall clock: HTTP round trips, the event
loop's lag, the job driver's polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

from kairos.auxo.venn_jobs import (
    JOB_PREFIX,
    AuxoApp,
    cohort_digits,
    membership,
    path_of,
    run_deployment,
)
from kairos.fl.availability import DAY_S, CheckIns, TraceAvailability
from kairos.fl.requirements import requirement_from
from kairos.venn.fleet import CheckInChunk, Fleet
from kairos.venn.policies import make_policy
from kairos.venn.results import JobRecord
from kairos.venn.service.emulator import (
    EmulatorConfig,
    auth_headers,
    daily_activity,
    make_population,
)
from kairos.venn.simulator import SimConfig

_TRACE_STREAM = 0x7ACE
_ONLINE_S = 1e9  # an emulated device never goes offline
_LEAD_S = 0.5  # the devices' tasks start and the jobs arriving at 0 register before t0
_WARM = 32  # connections the devices' client opens before t0
POLL_S = 0.1  # the job driver reads the jobs' states when it heard of no close that long
NEXT_S = 0.01  # a job's next round after a success: the round trips it takes to post it


@dataclass(frozen=True)
class DeviceTrace:
    """Check-ins in time order: device index, seconds from the start, and the task time a
    task given at that check-in takes (the emulator's compute_s * slowness * U(0.8, 1.2))."""

    device: np.ndarray
    start: np.ndarray
    response_s: np.ndarray
    horizon_s: float


def device_trace(cfg: EmulatorConfig, horizon_s: float) -> DeviceTrace:
    """`cfg.n` devices over `horizon_s`: a device checks in after an exponential gap whose mean
    is `mean_gap_s` over its activity (1 at its daily peak, 0.25 at its trough, the emulator's
    day of `day_s` in the device's own time zone)."""
    slowness = make_population(cfg).slowness
    rng = np.random.default_rng([cfg.seed, _TRACE_STREAM])
    phase = rng.uniform(0, 2 * math.pi, size=cfg.n)
    t = np.zeros(cfg.n)
    dev, start = [], []
    while True:
        activity = daily_activity(t, phase, cfg.day_s)
        t = t + rng.exponential(cfg.mean_gap_s / activity)
        live = np.flatnonzero(t < horizon_s)
        if not len(live):
            break
        dev.append(live)
        start.append(t[live])
    d, s = np.concatenate(dev), np.concatenate(start)
    order = np.argsort(s, kind="stable")
    d, s = d[order], s[order]
    work = cfg.compute_s * slowness[d] * rng.uniform(0.8, 1.2, size=len(d))
    return DeviceTrace(d, s, work, horizon_s)


@dataclass(frozen=True)
class _TraceFleet(Fleet):
    """A fleet whose check-ins carry the trace's task times and start at once."""

    response_s: tuple[float, ...] = ()

    def chunk(self, k: int) -> CheckInChunk:
        c = self.source.chunk(k)
        zero = [0.0] * len(c)
        return CheckInChunk(c.device.tolist(), c.start.tolist(), c.end.tolist(),
                            list(self.response_s), zero)  # fmt: skip


def trace_fleet(cfg: EmulatorConfig, trace: DeviceTrace, app: AuxoApp, salt: int = 0) -> Fleet:
    """The simulator's fleet of the emulated devices: their population, the trace's check-ins
    and task times, no dispatch delay, and every cohort's requirement."""
    windows = CheckIns(trace.device, trace.start, trace.start + _ONLINE_S)
    source = TraceAvailability(windows, trace.horizon_s, cfg.n)
    work = tuple(trace.response_s.tolist())
    return _TraceFleet(make_population(cfg), tuple(app.requirements(salt)), source,
                       dispatch_delay_s=0.0, response_s=work)  # fmt: skip


def simulate_cohort_jobs(
    app: AuxoApp, cfg: EmulatorConfig, trace: DeviceTrace, salt: int = 0, policy: str = "venn",
    next_s: float = NEXT_S,
) -> list[JobRecord]:  # fmt: skip
    """The simulator's `"cohort_jobs"` run of `app` on the same devices, under the service's
    driver settings (told each job's rounds; the next round `next_s` after a success, as the
    job driver posts it) and the devices' one task a day, until the trace ends (a cohort
    unfinished by then has a NaN finish: on the service, the run would fail)."""
    config = SimConfig(tell_rounds=True, resubmit_s=next_s, one_task_per_day=True,
                       max_days=trace.horizon_s / DAY_S)  # fmt: skip
    fleet = trace_fleet(cfg, trace, app, salt)
    res = run_deployment("cohort_jobs", app, (), fleet, make_policy(policy), config, salt)
    return res.jobs


def cohort_registration(app: AuxoApp, cohort: str, demand: int, first: int) -> dict[str, Any]:
    """The `POST /v1/jobs` body of one cohort's job: `demand` devices a round for the rounds
    from `first` to its split (or the end), its devices the cohort's members."""
    req: dict[str, Any] = app.requirement.model_dump(exclude={"name"})
    path = path_of(cohort)
    if path:
        req["cohort_modulus"], req["cohort_residue"] = membership(path, app.k)
    rounds = max(1, app.splits.get(cohort, app.rounds) - first)
    rule = app.rule
    return {"name": f"{JOB_PREFIX}{cohort}", "requirement": req, "demand": demand,
            "rounds": rounds, "deadline_s": rule.deadline_s,
            "min_resp_frac": rule.min_resp_frac}  # fmt: skip


def child_registrations(app: AuxoApp, parent: str, demand: int) -> list[dict[str, Any]]:
    """The jobs a finished cohort's children register: its demand split K ways (the budget is
    kept), from the round it split at."""
    first = app.splits[parent]
    return [cohort_registration(app, f"{parent}.{j}", max(1, demand // app.k), first)
            for j in range(app.k)]  # fmt: skip


# a device: id, private attributes, capability, membership code, (check-in, task time)s
Device = tuple[str, dict[str, float], float, int, list[tuple[float, float]]]
Heard = tuple[str, int, bool]  # a result closed this job's round; whether the job finished


def _admits(offer: dict[str, Any], attrs: dict[str, float], code: int) -> bool:
    return requirement_from("o", offer["requirement"]).admits(attrs | {"cohort_code": code})


async def _stopped(stop: asyncio.Event, wait_s: float) -> bool:
    """Wait `wait_s`; whether `stop` was set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), max(0.0, wait_s))
    return stop.is_set()


async def _device(device: Device, url: str, client: httpx.AsyncClient, t0: float,
                  heard: asyncio.Queue[Heard], stop: asyncio.Event) -> None:  # fmt: skip
    """One device following its trace: at each check-in (seconds from `t0`, task time) it
    takes the first offer it meets (thresholds and membership, tested on the device) and, if
    assigned, trains for the task time, reports, and trains no more that day. The result
    that closes a round goes to `heard` (the job hears its round is complete). Until its trace
    ends or `stop` is set (a request under way is finished)."""
    dev_id, attrs, cap, code, checkins = device
    for at, task_s in checkins:
        if await _stopped(stop, t0 + at - time.monotonic()):
            return
        got = await client.post(f"{url}/v1/checkin", json={"device_id": dev_id})
        mine = [o for o in got.json()["offers"] if _admits(o, attrs, code)]
        if not mine:
            continue
        body = {"device_id": dev_id, "capability": cap}
        ans = await client.post(f"{url}/v1/offers/{mine[0]['offer_id']}/accept", json=body)
        if ans.status_code != 200 or not ans.json().get("assigned"):
            continue
        if await _stopped(stop, task_s):
            return
        res = {"device_id": dev_id, "job_id": ans.json()["job_id"], "round": ans.json()["round"]}
        done = await client.post(f"{url}/v1/results", json=res)
        if done.status_code == 200 and done.json().get("round_complete"):
            heard.put_nowait((res["job_id"], res["round"], bool(done.json()["job_finished"])))
        return  # one task a day


def devices_of(cfg: EmulatorConfig, trace: DeviceTrace, salt: int) -> list[Device]:
    """Each device's id, private attributes and membership code, capability, and check-ins
    (device i's code is `cohort_digits(cfg.n, salt)[i]`)."""
    pop = make_population(cfg)
    codes = cohort_digits(cfg.n, salt)
    mine: list[list[tuple[float, float]]] = [[] for _ in range(cfg.n)]
    for d, at, task_s in zip(trace.device.tolist(), trace.start.tolist(),
                             trace.response_s.tolist(), strict=True):  # fmt: skip
        mine[d].append((at, task_s))
    return [(f"dev-{cfg.seed}-{i}", pop.attributes(i), float(pop.capability[i]),
             int(codes[i]), mine[i]) for i in range(cfg.n)]  # fmt: skip


def _client(cfg: EmulatorConfig) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=cfg.max_connections)
    return httpx.AsyncClient(headers=auth_headers(cfg), limits=limits, timeout=10.0)


async def _fleet(devices: list[Device], url: str, client: httpx.AsyncClient, t0: float,
                 heard: asyncio.Queue[Heard], stop: asyncio.Event) -> None:  # fmt: skip
    await asyncio.gather(*(_device(d, url, client, t0, heard, stop) for d in devices))


async def _register(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> str:
    resp = await client.post(f"{url}/v1/jobs", json=body)
    if resp.status_code != 201:
        raise RuntimeError(f"registering {body['name']}: {resp.status_code} {resp.text}")
    job_id: str = resp.json()["id"]
    await client.post(f"{url}/v1/jobs/{job_id}/rounds", json={"round": 0})
    return job_id


async def run_cohort_jobs(
    url: str,
    app: AuxoApp,
    cfg: EmulatorConfig,
    trace: DeviceTrace,
    salt: int = 0,
    poll_s: float = POLL_S,
    timeout_s: float = 300.0,
) -> list[JobRecord]:
    """Deploy `app` as cohort jobs on the service at `url`, with the trace's devices: each
    cohort job's record (seconds from the devices' start; `rounds`: the rounds it completed).
    A job posts its next round, and a finished cohort's children register, as soon as a
    device's result says a round closed (or the states, read when nothing was heard for
    `poll_s`, show it).
    The service has no over-commitment: the app's rule must have none."""
    if app.rule.overcommit != 1.0:
        raise ValueError("the service asks for a round's participants exactly: overcommit 1")
    fleet_of = devices_of(cfg, trace, salt)
    async with _client(cfg) as jobs, _client(cfg) as client:
        await asyncio.gather(*(client.get(f"{url}/health") for _ in range(_WARM)))
        t0 = time.monotonic() + _LEAD_S
        heard: asyncio.Queue[Heard] = asyncio.Queue()
        stop = asyncio.Event()
        fleet = asyncio.create_task(_fleet(fleet_of, url, client, t0, heard, stop))
        drive = asyncio.create_task(_drive(url, app, jobs, t0, heard, poll_s, timeout_s))
        try:
            await asyncio.wait([drive, fleet], return_when=asyncio.FIRST_COMPLETED)
            if fleet.done() and not drive.done():  # a device failed, or the trace ran out
                fleet.result()
                raise RuntimeError(f"the trace ended ({trace.horizon_s} s) before the jobs")
            return drive.result()
        finally:
            stop.set()
            drive.cancel()
            await asyncio.gather(drive, fleet, return_exceptions=True)


async def _drive(url: str, app: AuxoApp, client: httpx.AsyncClient, t0: float,
                 heard: asyncio.Queue[Heard], poll_s: float,
                 timeout_s: float) -> list[JobRecord]:  # fmt: skip
    """Register the root when it arrives, post each job's next round as soon as its last one
    closed, and register a finished cohort's children at once; the records, once every
    cohort has finished."""
    records: dict[str, JobRecord] = {}  # by service id
    posted: dict[str, int] = {}  # the latest round posted per job

    async def register(body: dict[str, Any]) -> None:
        now = max(time.monotonic() - t0, 0.0)  # arriving at 0: before the devices start
        job_id = await _register(client, url, body)
        name = json.dumps(body["requirement"], sort_keys=True)
        records[job_id] = JobRecord(body["name"], "auxo", name, now, body["demand"], 0)
        posted[job_id] = 0

    async def closed(job_id: str, done: int, finished: bool) -> None:
        rec = records.get(job_id)
        if rec is None or math.isfinite(rec.finish):
            return
        rec.rounds = max(rec.rounds, done)
        if finished:
            rec.finish = time.monotonic() - t0
            cohort = rec.job_id[len(JOB_PREFIX) :]
            if cohort in app.splits:
                kids = child_registrations(app, cohort, rec.participants)
                await asyncio.gather(*(register(b) for b in kids))
        elif posted[job_id] < done:
            posted[job_id] = done
            await client.post(f"{url}/v1/jobs/{job_id}/rounds", json={"round": done})

    await asyncio.sleep(max(0.0, t0 + app.arrival - time.monotonic() - _LEAD_S))
    await register(cohort_registration(app, "0", app.p_total, 0))
    while time.monotonic() - t0 < timeout_s:
        try:
            job_id, idx, finished = await asyncio.wait_for(heard.get(), poll_s)
            await closed(job_id, idx + 1, finished)
        except TimeoutError:  # a round closed at its deadline is not heard: read the states
            for job in (await client.get(f"{url}/v1/jobs")).json()["jobs"]:
                if job["state"] != "running":
                    await closed(job["id"], job["rounds_done"], job["state"] == "finished")
        if all(math.isfinite(r.finish) for r in records.values()):
            return list(records.values())
    raise TimeoutError(f"the cohort jobs did not finish within {timeout_s} s")
