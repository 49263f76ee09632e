"""The `kairos` command: one sub-command group per system, plus shared workload tools.

Systems are not imported here: each declares a `kairos.systems.System` under the
`kairos.systems` entry point group, and this module adds what they declare.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

import kairos
from kairos.cli_utils import (
    SettingError,
    make_console,
    parse_assignments,
    setting_error,
    wide_help,
)
from kairos.experiments import ExperimentContext, get_experiment, list_experiments
from kairos.report import print_table, write_result
from kairos.systems import System, installed

wide_help()
console = make_console()
app = typer.Typer(
    help="kairos: application-aware schedulers for machine-learning systems.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

# Each installed system's one-line description, by name.
SYSTEMS: dict[str, str] = {name: system.help for name, system in installed().items()}


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


def system_group(system: str, description: str | None = None) -> typer.Typer:
    """A system's command group with the shared `experiment` and `experiments` commands (the
    system's own commands are added by its `System.register` functions)."""
    group = typer.Typer(help=description or SYSTEMS.get(system, ""), no_args_is_help=True)

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
        try:
            cfg = exp.config(quick=quick, overrides=parse_assignments(set_, "--set"))
        except ValidationError as exc:  # every system's config: one line naming the key
            raise SettingError(setting_error(exc, exp.config_type)) from None
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


@app.command("report")
def report_cmd(
    quick: Annotated[bool, typer.Option("--quick", help="Each experiment's quick mode.")] = False,
    out: Annotated[Path, typer.Option(help="Where the site and the results go.")] = Path(
        "results/report"
    ),
    only: Annotated[
        str | None, typer.Option("--only", help="Comma-separated systems (default: all).")
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Parallel worker processes.")] = 1,
    publish: Annotated[
        bool,
        typer.Option(
            "--publish",
            help="Also write docs/results/headlines.json and the report blocks of README.md "
            "and docs/*.md (run from the repository's root).",
        ),
    ] = False,
) -> None:
    """Run every system's headline experiment and write a static site: OUT/index.html."""
    from kairos.report.quoted import publish as publish_docs
    from kairos.report.run_report import pick, run_report

    systems = [s.strip() for s in only.split(",") if s.strip()] if only else None
    try:
        pick(systems)
    except KeyError as exc:
        raise typer.BadParameter(str(exc.args[0]), param_hint="--only") from None
    if publish and systems:
        raise typer.BadParameter("the docs quote every system: --publish runs them all")
    index = run_report(out, quick=quick, only=systems, jobs=jobs, echo=console.print)
    console.print(f"site: {index}")
    if publish:
        for path in publish_docs(out, Path.cwd()):
            console.print(f"wrote {path}")


@app.command("cite")
def cite_cmd(
    files: Annotated[
        list[Path], typer.Argument(help="Result files under results/ that the docs quote.")
    ],
) -> None:
    """Copy result files to docs/results/ and render every numbers block of README.md and
    docs/*.md from them again (run from the repository's root)."""
    from kairos.report.cited import CitationError, cite

    try:
        changed = cite(files, Path.cwd())
    except (CitationError, OSError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="FILES") from None
    for path in changed:
        console.print(f"wrote {path}")


def add_systems(root: typer.Typer, systems: Mapping[str, System]) -> None:
    """Each system's group (`kairos <name>`) and its root commands (such as `kairos serve`)."""
    taken = {"trace": "the shared layer", "report": "the shared layer", "cite": "the shared layer"}
    for name, spec in systems.items():
        for command in [*spec.commands, name]:
            if command in taken:
                raise RuntimeError(
                    f"system {name!r} adds `kairos {command}`, which {taken[command]} adds too"
                )
            taken[command] = f"system {name!r}"
        for command, fn in spec.commands.items():
            root.command(command)(fn)
        group = system_group(name, spec.help)
        for register in spec.register:
            register(group)
        root.add_typer(group, name=name)


add_systems(app, installed())
