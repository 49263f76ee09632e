"""Three `kairos venn serve --store postgresql://...` processes on one database, emulated
devices sending each request to the next front-end in turn (a check-in, its accept and its
result land on different front-ends): afterwards the database shows no device twice in a
round, no round past its demand and every counted response once, every answer the devices got
is in it, and a check-in cost at most two round trips. Then the same with one front-end killed
(-9) mid-round: the other two finish every job and nothing the dead one accepted is lost; and
with PostgreSQL itself restarted mid-round: the front-ends reconnect and nothing is lost.

Sized for CI's two loaded cores (240 devices; `benchmarks/bench_venn_store.py` runs 10,000)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import psycopg

from kairos.venn.service.emulator import EmulatorConfig, EmulatorStats, demo_jobs, run_workload
from tests.scrape import Scrape, scrape
from tests.venn.service.frontends import frontends
from tests.venn.service.invariants import clean, violations
from tests.venn.service.postgres_server import start

CFG = EmulatorConfig(n=240, seed=3, day_s=30.0, mean_gap_s=1.0, compute_s=0.2)
JOBS = demo_jobs(3, demand=10, rounds=2)


def _metrics(url: str) -> Scrape:
    return scrape(httpx.get(url + "/metrics", timeout=10).text)


def _check_database(url: str, stats: EmulatorStats) -> None:
    """The invariants, and every answer the devices were given, read from the database."""
    with psycopg.connect(url) as conn:
        assert violations(conn) == clean()
        rows = conn.execute("SELECT device_id, job_id, round_idx, responded FROM assignments")
        assigned = {(d, j, r): t for d, j, r, t in rows.fetchall()}
        unfinished = conn.execute("SELECT COUNT(*) FROM jobs WHERE finished IS NULL").fetchone()
    assert unfinished == (0,)
    # each assignment a device was told of is there, once
    assert len(stats.assignments) == len(set(stats.assignments)) > 0
    assert set(stats.assignments) <= set(assigned)
    # each result the service accepted is recorded, and none was accepted twice
    responded = {k for k, t in assigned.items() if t is not None}
    assert len(stats.counted) == len(set(stats.counted)) > 0
    assert set(stats.counted) <= responded


def test_three_front_ends_on_one_database(pg_url: str, tmp_path: Path) -> None:
    with frontends(pg_url, 3, tmp_path) as procs:
        urls = [url for _, url in procs]
        stats = asyncio.run(run_workload(urls, CFG, JOBS, timeout_s=240))
        scraped = [_metrics(url) for url in urls]
    assert {j["state"] for j in stats.jobs} == {"finished"}
    _check_database(pg_url, stats)
    with psycopg.connect(pg_url) as conn:
        responded = conn.execute("SELECT COUNT(*) FROM assignments WHERE responded IS NOT NULL")
        assert responded.fetchone() == (len(stats.counted),)  # nothing lost, nothing extra
    for m in scraped:
        accepts = m.value("kairos_venn_accepts_total")
        assert m.value("kairos_venn_assignments_total") > 0  # every front-end took a share
        # a check-in: offers from the snapshot (no round trip), the accept at most two writes
        trips = {dict(labels)["op"]: v for (n, labels), v in m.samples.items()
                 if n == "kairos_venn_db_round_trips_total"}  # fmt: skip
        assert 0 < trips["assign"] <= 2 * accepts
        assert set(trips) <= {"migrate", "snapshot", "deadlines", "assign", "respond", "read",
                              "open", "register"}  # fmt: skip


def test_a_front_end_killed_mid_round_loses_nothing_accepted(pg_url: str, tmp_path: Path) -> None:
    with frontends(pg_url, 3, tmp_path) as procs:
        urls = [url for _, url in procs]
        victim, victim_url = procs[2]

        async def run() -> EmulatorStats:
            work = asyncio.create_task(run_workload(urls, CFG, JOBS, timeout_s=240))
            while True:  # until the victim has assigned devices to a round still open
                await asyncio.sleep(0.05)
                if _metrics(victim_url).value("kairos_venn_assignments_total") < 3:
                    continue
                with psycopg.connect(pg_url) as conn:
                    mid = conn.execute(
                        "SELECT COUNT(*) FROM rounds WHERE closed IS NULL AND dispatched > 0"
                    ).fetchone()
                if mid is not None and mid[0] > 0:
                    victim.send_signal(signal.SIGKILL)
                    break
            return await work

        stats = asyncio.run(run())
        assert victim.wait(30) == -signal.SIGKILL
        survivors = [_metrics(url) for url in urls[:2]]
    assert {j["state"] for j in stats.jobs} == {"finished"}
    _check_database(pg_url, stats)
    assert stats.errors > 0  # the devices did meet the dead front-end
    assert all(m.value("kairos_venn_assignments_total") > 0 for m in survivors)


def test_a_database_restart_mid_run_loses_nothing_accepted(tmp_path: Path) -> None:
    """PostgreSQL shut down for 3 s and started again while rounds are open and devices keep
    checking in: the requests meanwhile wait for a pooled connection (up to 10 s, then 503 and
    the device retries), the pools reconnect, every job finishes and the database holds every
    answer the devices were given, each once."""
    server = start()
    try:
        url = server.database("venn_restart")
        with frontends(url, 3, tmp_path) as procs:
            urls = [u for _, u in procs]

            async def run() -> tuple[EmulatorStats, bool]:
                work = asyncio.create_task(run_workload(urls, CFG, JOBS, timeout_s=240))
                while not _mid_round(url):
                    await asyncio.sleep(0.05)
                await asyncio.to_thread(server.restart, 3.0)
                overlapped = not work.done()
                return await work, overlapped

            stats, overlapped = asyncio.run(run())
            alive = [proc.poll() is None for proc, _ in procs]
        assert overlapped  # the run was still going when the database came back
        assert alive == [True, True, True]  # no front-end died with its database
        assert {j["state"] for j in stats.jobs} == {"finished"}
        _check_database(url, stats)
    finally:
        server.stop()


def _mid_round(url: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM rounds WHERE closed IS NULL AND dispatched > 0"
        ).fetchone()
    return row is not None and row[0] > 0
