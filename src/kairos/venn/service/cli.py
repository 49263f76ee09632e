"""`kairos venn serve | devices`: the resource-manager service and its device emulator.

    kairos venn serve --db venn.sqlite --policy venn [--decision-log venn.decisions.jsonl]
    kairos venn serve --store postgresql:///venn?host=/run/postgresql --port 8001   # x N
    kairos venn replay venn.decisions.jsonl [--policy random]
    kairos venn devices --n 1000 --url http://127.0.0.1:8000 --jobs 10

`serve` keeps its state in the SQLite file, so a restarted server continues every job; with
`--store postgresql://...` it is one stateless front-end of any number on that database.
`replay` feeds a decision log's inputs to the simulator's driver and reports the first
decision that differs (exit 1), or that none does.
`devices` emulates devices (attributes from a kairos.fl population, kept on the device) until
Ctrl-C, or, with `--jobs N`, registers N demo jobs, drives their rounds and exits when all
finished.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Annotated

import typer

from kairos.cli_utils import make_console

console = make_console()


def register(group: typer.Typer) -> None:
    @group.command("serve")
    def serve(
        db: Annotated[str, typer.Option(help="SQLite file holding jobs and rounds")] = (
            "venn.sqlite"
        ),
        policy: Annotated[str, typer.Option(help="venn, fifo, srsf, las, random, ...")] = "venn",
        host: Annotated[str, typer.Option(help="bind address (loopback by default)")] = (
            "127.0.0.1"
        ),
        port: Annotated[int, typer.Option(help="TCP port")] = 8000,
        api_key: Annotated[str | None, typer.Option(help="require 'Bearer <key>'")] = None,
        log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
        decision_log: Annotated[
            str | None, typer.Option(help="write every round event (JSON lines) to this file")
        ] = None,
        store: Annotated[
            str | None,
            typer.Option(help="postgresql://... : a front-end on that database (or a SQLite file)"),
        ] = None,
    ) -> None:
        """Serve the Venn resource manager over HTTP until Ctrl-C."""
        from kairos.runtime.http import serve
        from kairos.venn.policies.registry import policy_names
        from kairos.venn.service.app import ServiceSettings, create_app
        from kairos.venn.service.stores import is_postgres

        spec = store if store is not None else db
        known = policy_names()
        if policy not in known:
            raise typer.BadParameter(f"unknown policy {policy!r}; known: {', '.join(known)}")
        settings = ServiceSettings(
            host=host,
            port=port,
            db=spec,
            policy=policy,
            api_key=api_key,
            log_level=log_level,
            decision_log=decision_log,
        )
        if decision_log is not None and is_postgres(spec):
            console.print(
                "[red]error:[/red] --decision-log records one process's driver; "
                "it does not go with a PostgreSQL --store"
            )
            raise typer.Exit(1)
        if decision_log is not None:
            try:  # a path it cannot write: one line here, not a traceback at startup
                Path(decision_log).parent.mkdir(parents=True, exist_ok=True)
                Path(decision_log).open("a").close()
            except OSError as exc:
                console.print(f"[red]error:[/red] --decision-log {decision_log}: {exc}")
                raise typer.Exit(1) from None
        from kairos.runtime.file_lock import FileInUseError, FileLock

        try:  # refuse here, in one line, rather than in a traceback from the app's startup
            if not is_postgres(spec):
                FileLock(spec, "Venn store").release()
        except FileInUseError as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from None
        where = "a PostgreSQL database" if is_postgres(spec) else spec
        console.print(f"Venn service ({policy}) on http://{host}:{port}, state in {where}")
        serve(create_app(settings), settings)

    @group.command("replay")
    def replay(
        log: Annotated[str, typer.Argument(help="a decision log written by serve --decision-log")],
        policy: Annotated[
            str | None, typer.Option(help="replay under this policy (default: the recorded)")
        ] = None,
    ) -> None:
        """Replay a decision log through the simulator's driver; exit 1 at a divergence."""
        from kairos.decisions import DecisionLogError, first_divergence, read_log
        from kairos.venn.decisions import CODEC, SYSTEM
        from kairos.venn.rerun import rerun

        try:
            loaded = read_log(log, CODEC, system=SYSTEM)
            replayed = rerun(loaded, policy)
        except DecisionLogError as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
        found = first_divergence(loaded.entries, replayed)
        if found is not None:
            console.print(str(found), markup=False)
            raise typer.Exit(1)
        console.print(f"{len(loaded.entries)} entries: the simulator's driver decides alike")

    @group.command("devices")
    def devices(
        url: Annotated[str, typer.Option(help="the service's base URL")] = "http://127.0.0.1:8000",
        n: Annotated[int, typer.Option(help="number of devices")] = 1000,
        jobs: Annotated[int, typer.Option(help="also register and drive N demo jobs")] = 0,
        demand: Annotated[int, typer.Option(help="devices per round (demo jobs)")] = 10,
        rounds: Annotated[int, typer.Option(help="rounds per demo job")] = 3,
        population: Annotated[str, typer.Option(help="synthetic or aibenchmark")] = "synthetic",
        day_s: Annotated[float, typer.Option(help="seconds per compressed day")] = 30.0,
        mean_gap_s: Annotated[float, typer.Option(help="check-in gap at peak, s")] = 3.0,
        compute_s: Annotated[float, typer.Option(help="typical task time, s")] = 0.3,
        seed: Annotated[int, typer.Option(help="random seed")] = 0,
        api_key: Annotated[str | None, typer.Option(help="the service's API key")] = None,
        max_connections: Annotated[
            int, typer.Option(help="requests in flight at once to each front-end")
        ] = 8,
        every_s: Annotated[
            float, typer.Option("--every", help="seconds between summaries (devices only)")
        ] = 10.0,
    ) -> None:
        """Emulate devices checking in to a Venn service (and optionally demo jobs)."""
        from kairos.venn.service.emulator import (
            EmulatorConfig,
            EmulatorStats,
            demo_jobs,
            run_devices,
            run_workload,
            summary_line,
        )

        if n < 1:
            raise typer.BadParameter(f"--n must be >= 1, got {n}")
        if max_connections < 1:
            raise typer.BadParameter(f"--max-connections must be >= 1, got {max_connections}")
        cfg = EmulatorConfig(
            n=n,
            seed=seed,
            population=population,
            day_s=day_s,
            mean_gap_s=mean_gap_s,
            compute_s=compute_s,
            api_key=api_key,
            max_connections=max_connections,
        )

        live = EmulatorStats()
        start = time.monotonic()

        async def forever() -> None:
            async def heartbeat() -> None:
                while True:
                    await asyncio.sleep(every_s)
                    console.print(summary_line(live, time.monotonic() - start))

            beat = asyncio.create_task(heartbeat())
            try:
                await run_devices(url, cfg, asyncio.Event(), stats=live)
            finally:
                beat.cancel()

        if jobs <= 0:
            console.print(f"{n} devices checking in to {url}; Ctrl-C to stop")
            try:
                asyncio.run(forever())
            except KeyboardInterrupt:
                pass
            finally:
                console.print(summary_line(live, time.monotonic() - start))
            return
        stats = asyncio.run(run_workload(url, cfg, demo_jobs(jobs, demand, rounds)))
        console.print(f"{jobs} jobs finished in {stats.elapsed_s:.1f} s")
        summary = {k: v for k, v in vars(stats).items() if k != "jobs"}
        console.print_json(json.dumps(summary))
