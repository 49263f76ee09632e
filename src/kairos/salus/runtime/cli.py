"""`kairos salus serve | submit`: the real execution service from the command line.

    kairos salus serve --policy srtf --capacity-mb 256 --decision-log decisions.jsonl
    kairos salus submit --name a --factory kairos.salus.runtime.zoo:cnn --iterations 200 \\
        --expected-s 3 --option batch=16 --wait

`serve` runs one long-lived process that owns the device; `submit` sends a job and (with
`--wait`) follows it until it ends. `--allow-module PREFIX` widens the modules factories may be
imported from: only do that for code you trust, since importing runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kairos.cli_utils import config_error, make_console, parse_assignments

console = make_console()


def register(group: typer.Typer) -> None:
    @group.command("serve")
    def serve_cmd(
        policy: Annotated[str, typer.Option(help="fifo, pack, srtf or fair")] = "srtf",
        device: Annotated[str, typer.Option(help="cpu or cuda")] = "cpu",
        capacity_mb: Annotated[
            float | None, typer.Option(help="C in MiB (CPU: the virtual device's memory)")
        ] = 256.0,
        allow_module: Annotated[
            list[str] | None, typer.Option(help="extra module prefix factories may come from")
        ] = None,
        switch: Annotated[str, typer.Option(help="resident (Salus) or suspend (baseline)")] = (
            "resident"
        ),
        threads: Annotated[int | None, typer.Option(help="torch threads")] = None,
        account_every: Annotated[
            int, typer.Option(help="memory accounting on >= 1 iteration in N (1: every one)")
        ] = 8,
        host: str = "127.0.0.1",
        port: int = 8000,
        api_key: Annotated[str | None, typer.Option(envvar="KAIROS_API_KEY")] = None,
        max_jobs: int = 256,
        log_level: str = "info",
        decision_log: Annotated[
            Path | None,
            typer.Option(help="write every scheduling decision to this file (JSON lines)"),
        ] = None,
    ) -> None:
        """Serve jobs: POST /v1/jobs, GET /v1/jobs(/{id}), POST /v1/jobs/{id}/cancel, /metrics."""
        from pydantic import ValidationError

        from kairos.decisions import DecisionLog, DecisionLogError
        from kairos.runtime.http import serve
        from kairos.salus.decisions import CODEC
        from kairos.salus.runtime.job import DEFAULT_ALLOWED
        from kairos.salus.runtime.server import create_app
        from kairos.salus.runtime.service import SalusService
        from kairos.salus.runtime.settings import ServiceSettings

        try:
            settings = ServiceSettings.model_validate(
                {
                    "policy": policy,
                    "device": device,
                    "capacity_bytes": None if capacity_mb is None else int(capacity_mb * 2**20),
                    "allow_modules": (*DEFAULT_ALLOWED, *(allow_module or [])),
                    "switch": switch,
                    "torch_threads": threads,
                    "account_every": account_every,
                    "host": host,
                    "port": port,
                    "api_key": api_key,
                    "max_jobs": max_jobs,
                    "log_level": log_level,
                }
            )
        except ValidationError as exc:
            raise typer.BadParameter(config_error(exc)) from None
        log = None
        if decision_log is not None:
            meta = {
                "policy": settings.policy,
                "device": settings.device,
                "capacity_bytes": settings.capacity_bytes,
                "switch": settings.switch,
            }
            try:
                log = DecisionLog(decision_log, CODEC, "salus", meta)
            except DecisionLogError as exc:
                raise typer.BadParameter(
                    str(exc),
                    param_hint="--decision-log",
                ) from None
        service = SalusService(settings, recorder=log)
        console.print(
            f"[bold]Salus[/] {settings.policy} on {settings.device} at "
            f"http://{settings.host}:{settings.port}"
            + (f", decisions to {decision_log}" if log is not None else "")
        )
        try:
            serve(create_app(service), settings)
        finally:
            if log is not None:
                log.close()

    @group.command("submit")
    def submit_cmd(
        name: Annotated[str, typer.Option(help="the job's name")],
        factory: Annotated[str, typer.Option(help="package.module:function")],
        iterations: Annotated[int, typer.Option(help="iterations to run")],
        kind: Annotated[str, typer.Option(help="train or infer")] = "train",
        expected_s: Annotated[float | None, typer.Option(help="T for SRTF")] = None,
        priority: int = 0,
        option: Annotated[
            list[str] | None, typer.Option(help="KEY=VALUE factory option (JSON value)")
        ] = None,
        url: str = "http://127.0.0.1:8000",
        api_key: Annotated[str | None, typer.Option(envvar="KAIROS_API_KEY")] = None,
        wait: Annotated[bool, typer.Option(help="follow the job until it ends")] = False,
    ) -> None:
        """Submit one job to a running service (and follow it with --wait)."""
        from kairos.salus.runtime.client import SalusClient, SalusError

        options = parse_assignments(option, "--option")
        with SalusClient(url, api_key) as client:
            try:
                job = client.submit(name, factory, iterations, kind, expected_s, priority, options)
                console.print_json(data=job)
                if wait:
                    for snap in client.watch(job["id"], poll_s=0.5):
                        console.print(
                            f"job {snap['id']} {snap['state']}: "
                            f"{snap['iterations_done']}/{snap['iterations']} iterations"
                            + (f" - {snap['error']}" if snap["error"] else "")
                        )
                    if snap["state"] != "done":
                        raise typer.Exit(1)
            except SalusError as exc:
                console.print(f"[red]{exc}")
                raise typer.Exit(2) from None

    @group.command("checkpoint")
    def checkpoint_cmd(
        job: Annotated[int, typer.Argument(help="the job's id")],
        out: Annotated[Path, typer.Option(help="where to write the .safetensors file")],
        url: str = "http://127.0.0.1:8000",
        api_key: Annotated[str | None, typer.Option(envvar="KAIROS_API_KEY")] = None,
        wait_s: float = 30.0,
    ) -> None:
        """Save a running job's weights (taken at its next iteration boundary)."""
        from kairos.salus.runtime.client import SalusClient, SalusError

        with SalusClient(url, api_key) as client:
            try:
                data = client.checkpoint(job, wait_s)
            except SalusError as exc:
                console.print(f"[red]{exc}")
                raise typer.Exit(2) from None
        out.write_bytes(data)
        console.print(f"job {job}: {len(data)} bytes of weights written to {out}")
