"""Emulated devices (and a job driver) for the Venn service: asyncio + aiohttp, time compressed.

Each device has eligibility attributes drawn from a `kairos.fl` population, which it keeps to
itself: it checks in with its opaque id only, tests the offered requirements locally, accepts
the first one it meets, "trains" for a scaled-down compute time (its slowness times
`compute_s`) and reports the result. Check-ins follow a compressed day: a device checks in
about every `mean_gap_s` at the daily peak and a quarter as often at the trough.
Connection failures (a restarting service) are retried with a short back-off.

The client is aiohttp's: ten thousand devices against a few front-ends make the emulator the
busiest process on a small machine, and aiohttp spends far less CPU per request than httpx,
so the service, not the emulator, sets the rate a benchmark reports
(`benchmarks/bench_venn_store.py` gives the emulator's CPU per check-in beside the
front-ends').

Given several front-end URLs (stateless front-ends on one database), a device sends each
request to the next front-end in turn, and a retry goes to the one after: a check-in, its
accept and its result usually land on three different front-ends, and a dead one costs a
retry. What the service accepted (assignments and counted results) is kept in the stats, so a
test can look for each in the database afterwards.
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import numpy as np

from kairos.fl.devices import (
    DevicePopulation,
    aibenchmark_specs,
    population_from_specs,
    synthetic_population,
)
from kairos.fl.requirements import requirement_from

# A spread of requirements from "any device" to "high-end only", for demo workloads.
DEMO_REQUIREMENTS: tuple[dict[str, float], ...] = (
    {},
    {"min_ram_gb": 4.0},
    {"min_cpu_ghz": 5.0},
    {"min_ram_gb": 6.0, "min_android_os": 9.0},
    {"min_cpu_ghz": 7.0, "min_ram_gb": 8.0},
)


@dataclass(frozen=True)
class EmulatorConfig:
    n: int = 1000
    seed: int = 0
    population: str = "synthetic"  # or "aibenchmark" (needs the shared data folder)
    day_s: float = 30.0  # one compressed day
    mean_gap_s: float = 3.0  # between a device's check-ins at the daily peak
    compute_s: float = 0.3  # a typical device's task time, scaled down
    api_key: str | None = None
    # Device requests in flight at once to each front-end, and the connections kept to it
    # (per front-end: with one pool-wide limit, requests turning from front-end to front-end
    # would close a kept connection to one to open another).
    max_connections: int = 8


def daily_activity(t: Any, phase: Any, day_s: float) -> Any:
    """A device's check-in rate relative to its peak at time `t` (s) of a day of `day_s`: 1 at
    its daily peak, 0.25 at its trough, shifted by its time zone `phase` (floats or arrays)."""
    return 0.25 + 0.75 * (1 + np.sin(2 * math.pi * t / day_s + phase)) / 2


@dataclass
class EmulatorStats:
    checkins: int = 0
    offers_seen: int = 0
    accepted: int = 0
    assigned: int = 0
    results: int = 0
    errors: int = 0
    elapsed_s: float = 0.0
    jobs: list[dict[str, Any]] = field(default_factory=list)
    # (device, job, round) the service answered `assigned: true` / `accepted: true` for
    assignments: list[tuple[str, str, int]] = field(default_factory=list)
    counted: list[tuple[str, str, int]] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)  # check-in + accept, per device visit


def make_population(cfg: EmulatorConfig) -> DevicePopulation:
    rng = np.random.default_rng(cfg.seed)
    if cfg.population == "aibenchmark":
        return population_from_specs(aibenchmark_specs(), cfg.n, rng)
    if cfg.population == "synthetic":
        return synthetic_population(cfg.n, rng)
    raise ValueError(f"unknown population {cfg.population!r}; use synthetic or aibenchmark")


def demo_jobs(n: int, demand: int = 10, rounds: int = 3) -> list[dict[str, Any]]:
    """`n` job registrations cycling through `DEMO_REQUIREMENTS`."""
    reqs = DEMO_REQUIREMENTS
    return [
        {
            "name": f"job{i}",
            "requirement": reqs[i % len(reqs)],
            "demand": demand,
            "rounds": rounds,
            "deadline_s": 10.0,
        }
        for i in range(n)
    ]


def auth_headers(cfg: EmulatorConfig) -> dict[str, str]:
    """The service's API key as a bearer token, if the configuration has one."""
    return {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}


def make_client(cfg: EmulatorConfig, front_ends: int = 1, **kw: Any) -> aiohttp.ClientSession:
    """A session keeping up to `cfg.max_connections` connections to each of `front_ends`;
    requests beyond that wait in the connector's queue (first come, first served). The 10 s
    timeouts start once a request has its connection: a device queued behind the emulator's
    own crowd has not been failed by the service."""
    headers = auth_headers(cfg)
    per_host = cfg.max_connections
    connector = aiohttp.TCPConnector(limit=per_host * front_ends, limit_per_host=per_host)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=10.0)
    return aiohttp.ClientSession(connector=connector, headers=headers, timeout=timeout, **kw)


Urls = str | Sequence[str]


def _bases(url: Urls) -> list[str]:
    return [u.rstrip("/") for u in ([url] if isinstance(url, str) else url)]


Clients = aiohttp.ClientSession | Mapping[str, aiohttp.ClientSession]


async def _post(
    client: Clients,
    url: Urls,
    path: str,
    body: Mapping[str, Any],
    tries: int = 50,
    stats: EmulatorStats | None = None,
    headers: Mapping[str, str] | None = None,
    first: int = 0,
) -> dict[str, Any] | None:
    """POST `path` with retries on connection errors and 5xx, attempt k to front-end
    `first + k` (of `url`'s) through `client` (or its session for that front-end); None if it
    kept failing or got 4xx."""
    bases = _bases(url)
    for attempt in range(tries):
        base = bases[(first + attempt) % len(bases)]
        session = client if isinstance(client, aiohttp.ClientSession) else client[base]
        try:
            async with session.post(base + path, json=dict(body), headers=headers) as resp:
                if resp.status < 500:
                    got: dict[str, Any] | None = await resp.json() if resp.status < 400 else None
                    return got
        except (aiohttp.ClientError, TimeoutError):
            pass
        if stats is not None:
            stats.errors += 1
        if attempt + 1 < tries:
            await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
    return None


async def _device(
    i: int,
    pop: DevicePopulation,
    base: Urls,
    client: Clients,
    cfg: EmulatorConfig,
    stop: asyncio.Event,
    stats: EmulatorStats,
    t0: float,
) -> None:
    rng = np.random.default_rng([cfg.seed, i])
    attrs = pop.attributes(i)  # private: never sent
    slowness = float(pop.slowness[i])
    device_id = f"dev-{cfg.seed}-{i}"
    phase = rng.uniform(0, 2 * math.pi)  # devices live in different time zones
    turn = i  # the front-end its next request goes to
    while not stop.is_set():
        t = time.monotonic() - t0
        activity = float(daily_activity(t, phase, cfg.day_s))
        try:
            await asyncio.wait_for(stop.wait(), rng.exponential(cfg.mean_gap_s / activity))
            return
        except TimeoutError:
            pass
        start = time.perf_counter()
        turn += 1
        got = await _post(client, base, "/v1/checkin", {"device_id": device_id}, 3, stats,
                          first=turn)  # fmt: skip
        if got is None:
            continue
        stats.checkins += 1
        offers = got.get("offers", [])
        stats.offers_seen += len(offers)
        mine = [o for o in offers if requirement_from("o", o["requirement"]).admits(attrs)]
        if not mine:
            stats.latencies_s.append(time.perf_counter() - start)
            continue
        body = {"device_id": device_id, "capability": 1.0 / slowness}
        turn += 1
        path = f"/v1/offers/{mine[0]['offer_id']}/accept"
        ans = await _post(client, base, path, body, 3, stats, first=turn)
        stats.latencies_s.append(time.perf_counter() - start)
        stats.accepted += 1
        if not ans or not ans.get("assigned"):
            continue
        stats.assigned += 1
        stats.assignments.append((device_id, ans["job_id"], ans["round"]))
        await asyncio.sleep(cfg.compute_s * slowness * rng.uniform(0.8, 1.2))
        res = {"device_id": device_id, "job_id": ans["job_id"], "round": ans["round"]}
        turn += 1
        done = await _post(client, base, "/v1/results", res, 20, stats, first=turn)
        if done is not None:
            stats.results += 1
            if done.get("accepted"):
                stats.counted.append((device_id, ans["job_id"], ans["round"]))


def summary_line(stats: EmulatorStats, elapsed_s: float) -> str:
    """What the devices have done so far, in one line (the `devices` command's heartbeat)."""
    return (
        f"{elapsed_s:.0f} s: {stats.checkins} check-ins, {stats.assigned} assigned, "
        f"{stats.results} results counted, {stats.errors} errors"
    )


async def run_devices(
    url: Urls,
    cfg: EmulatorConfig,
    stop: asyncio.Event,
    client: aiohttp.ClientSession | None = None,
    stats: EmulatorStats | None = None,
) -> EmulatorStats:
    """Run `cfg.n` devices against `url` (one front-end or several) until `stop` is set;
    `stats`: counters the caller reads while they run."""
    pop = make_population(cfg)
    stats = stats if stats is not None else EmulatorStats()
    base = _bases(url)
    # A session per front-end unless the caller gives one: a session's connector keeps one
    # queue for all its hosts under a per-host limit, and with thousands of devices waiting it
    # wakes waiters for a host at its limit, who queue again (CPU spent, and waits that
    # outlast the request timeout); a session per host keeps each front-end's queue its own.
    own = {b: make_client(cfg) for b in base} if client is None else {}
    clients: Clients = client or own
    t0 = time.monotonic()
    try:
        await asyncio.gather(
            *(_device(i, pop, base, clients, cfg, stop, stats, t0) for i in range(cfg.n))
        )
    finally:
        await asyncio.gather(*(c.close() for c in own.values()))
    stats.elapsed_s = time.monotonic() - t0
    return stats


async def register_jobs(
    url: Urls, jobs: Sequence[Mapping[str, Any]], client: aiohttp.ClientSession
) -> list[str]:
    """Register each job once: every retry of one registration carries the same
    Idempotency-Key, so a retry after a lost answer cannot make a twin job."""
    ids = []
    for spec in jobs:
        key = {"Idempotency-Key": f"register-{uuid.uuid4()}"}
        got = await _post(client, url, "/v1/jobs", spec, headers=key)
        if got is None:
            raise RuntimeError(f"could not register job {spec!r}")
        ids.append(got["id"])
    return ids


async def drive_jobs(
    url: Urls,
    ids: Sequence[str],
    client: aiohttp.ClientSession,
    poll_s: float = 0.25,
    timeout_s: float = 600.0,
) -> list[dict[str, Any]]:
    """Open each job's next round when the last completed, until all finished (polling the
    front-ends in turn: one that is down is passed over)."""
    bases = _bases(url)
    wanted = set(ids)
    deadline = time.monotonic() + timeout_s
    turn = 0
    while time.monotonic() < deadline:
        await asyncio.sleep(poll_s)
        turn += 1
        base = bases[turn % len(bases)]
        try:
            async with client.get(f"{base}/v1/jobs") as resp:
                if resp.status != 200:
                    continue
                listed = (await resp.json())["jobs"]
        except (aiohttp.ClientError, TimeoutError):
            continue
        states = [j for j in listed if j["id"] in wanted]
        for job in states:
            if job["state"] == "waiting":
                nxt = {"round": job["rounds_done"]}
                await _post(client, bases, f"/v1/jobs/{job['id']}/rounds", nxt, first=turn)
        if len(states) == len(wanted) and all(s["state"] == "finished" for s in states):
            return states
    raise TimeoutError(f"the jobs did not finish within {timeout_s} s")


async def run_workload(
    url: Urls,
    cfg: EmulatorConfig,
    jobs: Sequence[Mapping[str, Any]],
    client: aiohttp.ClientSession | None = None,
    timeout_s: float = 600.0,
) -> EmulatorStats:
    """Devices plus a job driver: returns once every job finished (or raises on timeout)."""
    stop = asyncio.Event()
    async with make_client(cfg, len(_bases(url))) as driver:  # devices never starve the jobs
        ids = await register_jobs(url, jobs, driver)
        devices = asyncio.create_task(run_devices(url, cfg, stop, client))
        try:
            states = await drive_jobs(url, ids, driver, timeout_s=timeout_s)
        finally:
            stop.set()
            stats = await devices
    stats.jobs = states
    return stats
