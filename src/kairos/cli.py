"""The `kairos` command: one sub-command group per system, plus shared workload tools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

import kairos
from kairos.cli_utils import parse_assignments
from kairos.experiments import ExperimentContext, get_experiment, list_experiments
from kairos.report import print_table, write_result

console = Console()
app = typer.Typer(
    help="kairos: application-aware schedulers for machine-learning systems.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

SYSTEMS: dict[str, str] = {
    "andes": "QoE-aware LLM text-streaming serving (token-level preemptive scheduler + pacer).",
    "orloj": "Serving dynamic DNNs by latency distributions under SLOs.",
    "salus": "Many DL jobs sharing one GPU: iteration-granularity switching, memory lanes.",
    "fluid": "Hyperparameter-tuning execution engine that packs and scales trials over GPUs.",
    "auxo": "Federated learning that clusters clients into cohorts.",
    "venn": "A resource manager sharing edge devices among many federated-learning jobs.",
}


def _version(value: bool) -> None:
    if value:
        console.print(f"kairos {kairos.__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """kairos: application-aware schedulers for machine-learning systems."""


def system_group(system: str) -> typer.Typer:
    """A system's command group with the shared `experiment` and `experiments` commands."""
    group = typer.Typer(help=SYSTEMS[system], no_args_is_help=True)

    @group.command("experiments")
    def experiments_cmd() -> None:
        """List this system's named experiments."""
        rows = [{"name": e.name, "title": e.title} for e in list_experiments(system)]
        if not rows:
            console.print(f"{system}: no experiments yet (see the open issues).")
            return
        print_table(rows, title=f"{system} experiments")

    @group.command("experiment")
    def experiment_cmd(
        name: Annotated[str, typer.Argument(help="Experiment name (see `experiments`).")],
        quick: Annotated[bool, typer.Option("--quick", help="Small, fast version.")] = False,
        out: Annotated[Path, typer.Option(help="Where results, plots and the cache go.")] = Path(
            "results"
        ),
        jobs: Annotated[int, typer.Option("--jobs", "-j", help="Parallel worker processes.")] = 1,
        ray: Annotated[
            str | None, typer.Option("--ray", help="Run the sweep on this Ray cluster address.")
        ] = None,
        set_: Annotated[
            list[str] | None, typer.Option("--set", help="Override a config field: KEY=VALUE.")
        ] = None,
        no_cache: Annotated[
            bool, typer.Option("--no-cache", help="Recompute every point.")
        ] = False,
    ) -> None:
        """Run a named experiment; writes JSON, CSV and PNG under OUT/<system>/<name>."""
        try:
            exp = get_experiment(system, name)
        except KeyError as exc:
            raise typer.BadParameter(str(exc.args[0])) from None
        cfg = exp.config(quick=quick, overrides=parse_assignments(set_, "--set"))
        ctx = ExperimentContext(
            out_dir=out / system / name, jobs=jobs, ray_address=ray, cache=not no_cache
        )
        exp.run(cfg, ctx)
        console.print(f"results in {ctx.out_dir}")

    return group


trace_app = typer.Typer(help="Inspect workload traces (Azure/Splitwise and BurstGPT CSV).")


@trace_app.command("describe")
def trace_describe(
    path: Annotated[Path, typer.Argument(help="Trace CSV (Azure/Splitwise or BurstGPT).")],
    out: Annotated[Path, typer.Option(help="Directory for the plot and result files.")] = Path(
        "results/trace"
    ),
) -> None:
    """Arrival rate per minute and length statistics of a trace, with a plot."""
    from kairos.workloads import TraceFormatError, read_trace
    from kairos.workloads.describe import describe

    try:
        trace = read_trace(path)
    except (FileNotFoundError, TraceFormatError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    plot = out / f"{path.stem}_rate.png"
    info = describe(trace, plot)
    rates = info["rates"]
    print_table(
        [
            {
                "minutes": f"{start}-{start + 9}",
                **{
                    f"+{k}": round(rates[start + k], 2) for k in range(10) if start + k < len(rates)
                },
            }
            for start in range(0, len(rates), 10)
        ],
        title=f"{path.name}: arrival rate per minute (req/s)",
    )
    print_table(info["lengths"], title="request lengths (tokens)")
    print_table(
        [
            {
                "requests": info["requests"],
                "duration (s)": info["duration_s"],
                "mean req/s": info["mean_rate"],
                "peak minute req/s": info["peak_minute_rate"],
            }
        ],
        title="summary",
    )
    write_result(
        out,
        path.stem,
        config={"path": str(path)},
        rows=info["lengths"],
        summary={k: v for k, v in info.items() if k != "lengths"},
    )
    console.print(f"plot: {plot}")


app.add_typer(trace_app, name="trace")


def _register_andes_runtime() -> None:
    """`kairos serve` and `kairos bench`: the Andes serving stack's top-level commands."""
    from kairos.andes.client.bench_cli import bench_command
    from kairos.andes.serve_cli import serve_command

    app.command("serve")(serve_command)
    app.command("bench")(bench_command)


_register_andes_runtime()


def _register_systems() -> None:
    from kairos.andes.cli import register as register_andes
    from kairos.orloj.cli import register as register_orloj
    from kairos.orloj.runtime.cli import register as register_orloj_runtime
    from kairos.venn.service.cli import register as register_venn_service

    groups = {s: system_group(s) for s in SYSTEMS}
    register_andes(groups["andes"])
    register_orloj(groups["orloj"])
    register_orloj_runtime(groups["orloj"])
    register_venn_service(groups["venn"])
    for system, group in groups.items():
        app.add_typer(group, name=system)


_register_systems()
