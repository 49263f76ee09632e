"""One driver: the real Venn service decides what the simulator's driver decides.

The service runs over a real socket on the wall clock, writing its decision log
(`--decision-log`); emulated devices check in, accept offers and report results over HTTP,
and jobs post their rounds, one of them for devices no emulated device can serve, so its
rounds abort at their deadline and are resubmitted. The log's inputs (arrivals, round
submissions, check-ins, results, at their recorded times) are then fed to the driver on a
`SimClock` (`kairos.venn.rerun`): every decision must come out the same, at the same time. An
altered decision is found where it was altered, and another policy decides differently.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import httpx
import pytest

from kairos.decisions import DecisionLogError, LoadedLog, altered, first_divergence, read_log
from kairos.runtime.http import BackgroundServer
from kairos.venn import decisions as rec
from kairos.venn.decisions import CODEC, SYSTEM
from kairos.venn.rerun import rerun
from kairos.venn.service.app import ServiceSettings, create_app
from kairos.venn.service.emulator import (
    EmulatorConfig,
    demo_jobs,
    drive_jobs,
    make_client,
    register_jobs,
    run_devices,
)

CFG = EmulatorConfig(n=200, seed=4, day_s=10.0, mean_gap_s=2.0, compute_s=0.1)
JOBS = demo_jobs(4, demand=4, rounds=2)
STARVED = {"name": "starved", "requirement": {"min_cpu_ghz": 1000.0}, "demand": 2,
           "rounds": 1, "deadline_s": 0.5}  # fmt: skip
HANG_S = 300.0  # only against a hang: how fast the jobs finish is not asserted


async def _workload(url: str) -> None:
    stop = asyncio.Event()
    async with make_client(CFG) as jobs:
        ids = await register_jobs(url, [*JOBS, STARVED], jobs)
        devices = asyncio.create_task(run_devices(url, CFG, stop))
        try:
            async with jobs.post(f"{url}/v1/jobs/{ids[-1]}/rounds", json={"round": 0}) as r:
                assert r.status == 201, await r.text()
            await drive_jobs(url, ids[:-1], jobs, timeout_s=HANG_S)
        finally:
            stop.set()
            await devices


def _served(tmp: Path, policy: str) -> LoadedLog:
    path = tmp / "venn.decisions.jsonl"
    settings = ServiceSettings(policy=policy, decision_log=str(path))
    with BackgroundServer(create_app(settings, db=tmp / "venn.sqlite")) as srv:
        asyncio.run(_workload(srv.url))
        health = httpx.get(srv.url + "/health").json()
    assert health["status"] == "ok"
    return read_log(path, CODEC, system=SYSTEM)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> LoadedLog:
    return _served(tmp_path_factory.mktemp("venn"), "venn")


def test_the_service_decides_what_the_simulators_driver_decides(recorded: LoadedLog) -> None:
    kinds = Counter(type(e.record).__name__ for e in recorded.entries)
    # worth comparing: every path of the round rule was taken by the real run
    assert kinds["JobFinished"] == len(JOBS)
    assert kinds["Assigned"] >= len(JOBS) * 2 * 4
    closed = [e.record for e in recorded.entries if isinstance(e.record, rec.RoundClosed)]
    assert sum(c.success for c in closed) >= len(JOBS) * 2
    assert any(not c.success for c in closed) and kinds["Resubmitted"] >= 1
    assert kinds["Responded"] >= kinds["Assigned"] * 0.8 - 10  # devices answered
    replayed = rerun(recorded)
    divergence = first_divergence(recorded.entries, replayed)
    assert divergence is None, str(divergence)


def test_an_altered_decision_is_found_where_it_was_altered(recorded: LoadedLog) -> None:
    replayed = rerun(recorded)
    entries = recorded.entries
    jobs = sorted({e.record.job for e in entries if isinstance(e.record, rec.JobArrived)})
    at = [i for i, e in enumerate(entries) if isinstance(e.record, rec.Assigned)][len(jobs)]
    other = next(j for j in jobs if j != entries[at].record.job)
    found = first_divergence(altered(entries, at, job=other), replayed)
    assert found is not None and found.index == at
    closes = [i for i, e in enumerate(entries) if isinstance(e.record, rec.RoundClosed)]
    found = first_divergence(
        altered(entries, closes[0], success=not entries[closes[0]].record.success), replayed
    )
    assert found is not None and found.index == closes[0]


def test_another_policy_decides_differently(recorded: LoadedLog) -> None:
    found = first_divergence(recorded.entries, rerun(recorded, policy="random"))
    assert found is not None
    assert isinstance(found.recorded.record if found.recorded else None, rec.DECISIONS)


def test_a_log_no_driver_could_have_written_is_refused_naming_the_entry(
    recorded: LoadedLog,
) -> None:
    entries = recorded.entries
    first_round = next(i for i, e in enumerate(entries) if isinstance(e.record, rec.RoundOpened))
    orphan = altered(entries, first_round, job="nobody")
    with pytest.raises(DecisionLogError, match=f"entry {first_round} .*'nobody' submits a round"):
        rerun(LoadedLog(recorded.system, recorded.meta, orphan))
    swapped = [entries[1], entries[0], *entries[2:]] if entries[0].t < entries[1].t else None
    assert swapped is not None  # the second entry came later than the first
    with pytest.raises(DecisionLogError, match="entry 1 goes back in time"):
        rerun(LoadedLog(recorded.system, recorded.meta, swapped))


def test_a_log_that_began_after_a_restart_is_refused(recorded: LoadedLog) -> None:
    restarted = LoadedLog(recorded.system, {**recorded.meta, "restored_jobs": 3}, [])
    with pytest.raises(DecisionLogError, match="restart with 3 jobs"):
        rerun(restarted)
    with pytest.raises(DecisionLogError, match="header"):
        rerun(LoadedLog(recorded.system, {}, []))
