"""`kairos orloj ...`: ad-hoc simulations and the workload catalogue (experiments come from the
shared `experiment` command), and `SYSTEM`, what Orloj adds to `kairos` (its `kairos.systems`
entry point): this group with the real runtime's commands, and the experiments."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kairos.cli_utils import make_console, parse_assignments
from kairos.orloj.runtime.cli import register as register_runtime
from kairos.systems import System

console = make_console()


def register(group: typer.Typer) -> None:
    @group.command("workloads")
    def workloads_cmd() -> None:
        """The named workloads (the paper's case IDs): apps, mean and P99 solo latency."""
        from kairos.orloj.batchdist import BatchLatencyModel
        from kairos.orloj.workloads import capacity_per_ms, get_workload, workload_names
        from kairos.report import print_table

        rows = []
        for name in workload_names():
            w = get_workload(name)
            rows.append(
                {
                    "workload": name,
                    "apps": len(w.apps),
                    "mean_ms": round(w.mean_ms, 2),
                    "p99_ms": round(w.p99_ms, 2),
                    "capacity_rps": round(1e3 * capacity_per_ms(w, BatchLatencyModel()), 1),
                }
            )
        print_table(rows, title="orloj workloads (capacity: 16 / E[g_16(max of 16)])")

    @group.command("simulate")
    def simulate_cmd(
        system: Annotated[
            str, typer.Option(help="orloj, clockwork, nexus, clipper, clipper-drop, edf, timeout")
        ] = "orloj",
        workload: Annotated[str, typer.Option(help="See `kairos orloj workloads`")] = (
            "three-modal"
        ),
        slo: Annotated[float, typer.Option(help="SLO as a multiple of the P99 solo latency")] = 3.0,
        requests: Annotated[int, typer.Option(help="How many requests")] = 10_000,
        rho: Annotated[float, typer.Option(help="Offered load / capacity")] = 0.8,
        arrival: Annotated[
            str, typer.Option(help="bursty, poisson, azure_functions or azure_llm")
        ] = "bursty",
        trace: Annotated[
            Path | None, typer.Option(help="Trace for azure_functions / azure_llm arrivals")
        ] = None,
        recording: Annotated[
            Path | None, typer.Option(help="Replay this arrival_ms,app,solo_ms CSV instead")
        ] = None,
        save_recording: Annotated[
            Path | None, typer.Option(help="Write the request sequence used to this CSV")
        ] = None,
        option: Annotated[
            list[str] | None, typer.Option(help="A system option KEY=VALUE (e.g. b=1e-5)")
        ] = None,
        noise: Annotated[float, typer.Option(help="Lognormal sigma of batch-time noise")] = 0.0,
        charge_overhead: Annotated[
            bool, typer.Option(help="Delay batches by the measured decision time")
        ] = False,
        seed: int = 0,
        decision_log: Annotated[
            Path | None, typer.Option(help="Write every batch and drop to this file (JSON lines)")
        ] = None,
    ) -> None:
        """Simulate one system on one workload and print its finish rate and other metrics."""
        import numpy as np

        from kairos.orloj.decisions import open_log
        from kairos.orloj.experiments.point import SimPoint, point_recording
        from kairos.orloj.recording import Recording
        from kairos.orloj.simulator import SimConfig, simulate
        from kairos.orloj.systems import make_system
        from kairos.orloj.workloads import get_workload
        from kairos.report import print_table
        from kairos.workloads import TraceFormatError

        try:
            point = SimPoint.model_validate(
                dict(
                    workload=workload,
                    system=system,
                    slo_mult=slo,
                    n_requests=requests,
                    rho=rho,
                    arrival=arrival,
                    trace_path=str(trace) if trace else None,
                    seed=seed,
                    noise_sigma=noise,
                    charge_overhead=charge_overhead,
                    options=parse_assignments(option, "--option"),
                )
            )
            w = get_workload(point.workload)
            rec = Recording.load_csv(recording) if recording else point_recording(point)
            p99 = float(np.percentile(rec.solo_ms, 99)) if recording else w.p99_ms
            policy = make_system(
                system,
                model=point.batch_model,
                slo_ms=slo * p99,
                rate_per_ms=rec.rate_per_ms,
                options=point.options,
            )
        except (ValueError, KeyError, FileNotFoundError, TraceFormatError) as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
        if save_recording:
            console.print(f"recording: {rec.save_csv(save_recording)}")
        offline_rng = np.random.default_rng(seed)
        offline = (
            {a: rec.solo_ms[rec.app == i].tolist()[:1000] for i, a in enumerate(rec.app_names)}
            if recording
            else w.offline_profile(1000, offline_rng)
        )
        config = SimConfig(noise_sigma=noise, charge_overhead=charge_overhead, seed=seed)
        log = None
        if decision_log is not None:
            try:
                log = open_log(decision_log, {"run": "simulate", **point.model_dump(mode="json")})
            except ValueError as exc:
                raise typer.BadParameter(str(exc), param_hint="--decision-log") from None
        try:
            summary = simulate(policy, rec.requests(slo * p99), config, offline, log).summary()
        finally:
            if log is not None:
                log.close()
                console.print(f"{log.count} decisions in {decision_log}")
        by_app = summary.pop("finish_rate_by_app")
        print_table(
            [{"metric": k, "value": v} for k, v in summary.items()],
            title=f"{system} on {rec.meta.get('workload', recording)}, SLO {slo:g} x P99",
        )
        print_table(
            [{"app": a, "finish_rate": v} for a, v in by_app.items()], title="by application"
        )


SYSTEM = System(
    name="orloj",
    help="Serving dynamic DNNs by latency distributions under SLOs.",
    register=(register, register_runtime),
    experiments="kairos.orloj.experiments",
)
