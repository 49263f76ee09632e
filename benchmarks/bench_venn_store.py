"""The Venn service's stores under emulated devices: check-ins per second, p50/p99 latency of a
check-in (offers and accept) and database round trips per check-in, for one front-end on the
SQLite file, and one and three front-ends on PostgreSQL (a server this benchmark starts, as
the tests do). Three front-ends on SQLite are not a case: the file's lock admits one process.

Each case runs real `kairos venn serve` processes, long-running jobs whose rounds a job driver
keeps posting, and `devices` emulated devices (10,000; quick mode 300) checking in for
`seconds`, each request to the next front-end in turn. Two loads: the devices' own (each
checks in every `devices / 400` s at its daily peak, about 250 check-ins/s over the fleet),
which every case should carry, so that the rate says little and the latency the rest; and
`saturated` (five times as often), more than the machine serves, so that the rate is what the
deployment carries. At each load one and three front-ends on PostgreSQL run `rounds` times
each, alternating which goes first, and `x3_over_x1` is the per-round paired ratio of their
check-in rates (geometric mean, 95% CI, round count). After each run
the store's invariants are read from the database (`tests/venn/service/invariants.py`):
`violations` must be 0.
The last case repeats three front-ends on PostgreSQL with faults: one front-end is killed (-9)
a third of the way in and the database restarted (down 3 s) at two thirds; `lost` counts the
answers the devices were given (assignments, counted results) that the database lacks.
On a 2-core machine the emulator competes with the servers for the cores, so the ratios
between cases (measured in one run) say more than the absolute rates; each case reports the
CPU seconds per check-in of the emulating process (devices and job driver) and of the
front-ends (from /proc, over the run only), which says where the cores went.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable, Coroutine
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
from tests.scrape import scrape
from tests.venn.service.frontends import frontends
from tests.venn.service.invariants import violations
from tests.venn.service.postgres_server import PostgresServer, start

from kairos.report import print_table, write_result
from kairos.report.stats import paired_ratio
from kairos.venn.service.emulator import (
    EmulatorConfig,
    demo_jobs,
    drive_jobs,
    make_client,
    register_jobs,
    run_devices,
)

PEAK_RATE = 400.0  # the fleet's check-ins per second were every device at its daily peak
SATURATED = 5.0  # the saturated cases' devices check in this much more often
Faults = Callable[[float], Coroutine[Any, Any, None]]


def _cpu_s(pid: int) -> float:
    """A live process's user + system CPU seconds (Linux /proc; 0 once it has gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _drive(
    urls: list[str], cfg: EmulatorConfig, seconds: float, faults: Faults | None
) -> Any:
    stop = asyncio.Event()
    async with make_client(cfg, len(urls)) as driver:
        ids = await register_jobs(urls, demo_jobs(20, demand=50, rounds=10_000), driver)
        devices = asyncio.create_task(run_devices(urls, cfg, stop))
        injected = asyncio.create_task(faults(seconds)) if faults else None
        with suppress(TimeoutError):
            await drive_jobs(urls, ids, driver, timeout_s=seconds)
        stop.set()
        if injected is not None:
            await injected
        return await devices


def kill_then_restart(victim: subprocess.Popen[bytes], server: PostgresServer) -> Faults:
    async def faults(seconds: float) -> None:
        await asyncio.sleep(seconds / 3)
        victim.send_signal(signal.SIGKILL)
        await asyncio.sleep(seconds / 3)
        await asyncio.to_thread(server.restart, 3.0)

    return faults


def _lost(conn: psycopg.Connection[Any], stats: Any) -> int:
    """Answers the devices were given that the database does not hold."""
    rows = conn.execute("SELECT device_id, job_id, round_idx, responded FROM assignments")
    held = {(d, j, r): t for d, j, r, t in rows.fetchall()}
    responded = {k for k, t in held.items() if t is not None}
    return len(set(stats.assignments) - set(held)) + len(set(stats.counted) - responded)


def one_case(
    kind: str,
    store: str,
    n_front: int,
    devices: int,
    seconds: float,
    logs: Path,
    server: PostgresServer | None = None,
    saturated: bool = False,
) -> dict[str, Any]:
    peak = PEAK_RATE * (SATURATED if saturated else 1.0)
    cfg = EmulatorConfig(n=devices, seed=0, day_s=60.0, mean_gap_s=devices / peak, compute_s=0.2)
    with frontends(store, n_front, logs) as procs:
        urls = [url for _, url in procs]
        faults = kill_then_restart(procs[-1][0], server) if server is not None else None
        front0 = sum(_cpu_s(proc.pid) for proc, _ in procs)
        own0 = time.process_time()
        stats = asyncio.run(_drive(urls, cfg, seconds, faults))
        own_s = time.process_time() - own0
        front_s = sum(_cpu_s(proc.pid) for proc, _ in procs) - front0
        trips: dict[str, float] = {}
        served: dict[str, float] = {}  # the front-ends' counters, summed
        for proc, url in procs:
            if proc.poll() is not None:  # the killed front-end
                continue
            m = scrape(httpx.get(url + "/metrics", timeout=30).text)
            for (name, labels), v in m.samples.items():
                if name == "kairos_venn_db_round_trips_total":
                    op = dict(labels)["op"]
                    trips[op] = trips.get(op, 0.0) + v
                elif name == "kairos_venn_http_responses_total":
                    status = f"http_{dict(labels)['status']}"
                    served[status] = served.get(status, 0.0) + v
                elif name in ("kairos_venn_offers_total", "kairos_venn_rounds_completed_total"):
                    served[name] = served.get(name, 0.0) + v
    lost = float("nan")
    if kind == "postgresql":
        with psycopg.connect(store) as conn:
            broken = violations(conn)
            lost = _lost(conn, stats)
    else:
        with closing(sqlite3.connect(store)) as db:
            broken = violations(db)
    pg = kind == "postgresql"
    background = trips.get("snapshot", 0.0) + trips.get("deadlines", 0.0)
    lat = np.asarray(stats.latencies_s)
    checkins = max(stats.checkins, 1)
    return {
        "case": f"{kind} x{n_front}"
        + (" kill -9 + db restart" if server else "")
        + (" saturated" if saturated else ""),
        "front_ends": n_front,
        "peak_rate": peak,
        "devices": devices,
        "seconds": stats.elapsed_s,
        "checkins_per_s": stats.checkins / stats.elapsed_s,
        "assigned_per_s": stats.assigned / stats.elapsed_s,
        "p50_ms": 1e3 * float(np.percentile(lat, 50)) if lat.size else float("nan"),
        "p99_ms": 1e3 * float(np.percentile(lat, 99)) if lat.size else float("nan"),
        # the check-in path: offers come from the snapshot, an accept is one guarded write
        # (a SQLite file is in-process: its service's reads and writes are no round trips)
        "trips_per_checkin": trips.get("assign", 0.0) / checkins if pg else float("nan"),
        "background_trips_per_checkin": background / checkins if pg else float("nan"),
        # what a check-in cost besides itself: offers listed (from each front-end's snapshot),
        # and answers of 409 (an offer that the accepting front-end's snapshot no longer holds,
        # a round the driver posted twice)
        "offers_per_checkin": served.get("kairos_venn_offers_total", 0.0) / checkins,
        "conflicts_per_checkin": served.get("http_409", 0.0) / checkins,
        "rounds_per_s": served.get("kairos_venn_rounds_completed_total", 0.0) / stats.elapsed_s,
        "emulator_cpu_ms_per_checkin": 1e3 * own_s / checkins,
        # (a front-end killed mid-run takes its CPU time with it)
        "front_end_cpu_ms_per_checkin": 1e3 * front_s / checkins,
        "errors": stats.errors,
        "violations": sum(broken.values()),
        "lost": lost,
    }


Case = tuple[str, int, bool, bool]  # store kind, front-ends, faults, saturated


def _cases(rounds: int) -> list[Case]:
    """SQLite at both loads, then one and three front-ends on PostgreSQL `rounds` times at each
    load in alternating order, then three with faults."""
    cases: list[Case] = [("sqlite", 1, False, False), ("sqlite", 1, False, True)]
    for r in range(rounds):
        for saturated in (False, True):
            pair = [("postgresql", 1, False, saturated), ("postgresql", 3, False, saturated)]
            cases += pair[:: 1 if r % 2 == 0 else -1]
    return [*cases, ("postgresql", 3, True, False)]


def run(out_dir: Path, quick: bool = False, rounds: int | None = None) -> list[dict[str, Any]]:
    """Every case; writes `bench_venn_store.json` (the rows and `summarize`'s ratios)."""
    devices, seconds = (300, 8.0) if quick else (10_000, 30.0)
    rounds = rounds if rounds is not None else (2 if quick else 4)
    rows = []
    server = start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-venn-store-") as tmp:
            for i, (kind, n, faulty, saturated) in enumerate(_cases(rounds)):
                logs = Path(tmp) / f"case{i}"
                logs.mkdir()
                store = (
                    server.database(f"bench{i}")
                    if kind == "postgresql"
                    else str(logs / "venn.sqlite")
                )
                faults = server if faulty else None
                rows.append(one_case(kind, store, n, devices, seconds, logs, faults, saturated))
                print(rows[-1]["case"], f"{rows[-1]['checkins_per_s']:.1f} check-ins/s", flush=True)
    finally:
        server.stop()
    config = {"quick": quick, "devices": devices, "seconds": seconds, "rounds": rounds,
              "peak_rate": PEAK_RATE, "saturated_peak_rate": PEAK_RATE * SATURATED}  # fmt: skip
    write_result(out_dir, "bench_venn_store", config=config, rows=rows, summary=summarize(rows))
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Three front-ends over one at each load, paired round by round (each round ran both)."""
    summary: dict[str, Any] = {}
    for suffix in ("", " saturated"):
        one = [r["checkins_per_s"] for r in rows if r["case"] == "postgresql x1" + suffix]
        three = [r["checkins_per_s"] for r in rows if r["case"] == "postgresql x3" + suffix]
        if not one or len(one) != len(three):
            continue
        ratio = paired_ratio(three, one)  # per round: three's rate over one's
        key = "x3_over_x1" + suffix.replace(" ", "_")
        summary |= {
            key: ratio.geo_mean,
            f"{key}_lo": ratio.lo,
            f"{key}_hi": ratio.hi,
            f"{key}_rounds": ratio.n,
            f"{key}_per_round": ratio.ratios,
        }
    return summary


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    parser.add_argument("--full", action="store_true", help="10,000 devices for 30 s a case")
    parser.add_argument("--rounds", type=int, help="paired x1/x3 rounds a load (quick 2, full 4)")
    args = parser.parse_args()
    table = run(args.out, quick=not args.full, rounds=args.rounds)
    print_table(table, title="bench_venn_store")
    print(summarize(table))
