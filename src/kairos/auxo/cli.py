"""`kairos auxo ...`: a Flower run of Auxo and the replay of its decision log, and `SYSTEM`,
what Auxo adds to `kairos` (its `kairos.systems` entry point): this group, the shared
`experiment` and `experiments` commands, and the Auxo chapter's experiments."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kairos.cli_utils import make_console
from kairos.systems import System

console = make_console()


def register(group: typer.Typer) -> None:
    @group.command("run")
    def run_cmd(
        clients: Annotated[int, typer.Option(help="Flower clients (synthetic data)")] = 40,
        groups: Annotated[int, typer.Option(help="Latent client groups in the data")] = 2,
        rounds: Annotated[int, typer.Option(help="Flower rounds")] = 20,
        k: Annotated[int, typer.Option(help="Children per split")] = 2,
        p_total: Annotated[int, typer.Option(help="Participants per round, all cohorts")] = 16,
        seed: int = 0,
        num_cpus: Annotated[int, typer.Option(help="Ray CPUs for the client actors")] = 2,
        decision_log: Annotated[
            Path | None,
            typer.Option(help="Write every cohort-round and cohort change (JSON lines)"),
        ] = None,
    ) -> None:
        """Train synthetic clients with Auxo over FedAvg under Flower's simulation engine."""
        from kairos.auxo.decisions import open_log
        from kairos.auxo.integrations.flower_exchange import ClientFailure
        from kairos.auxo.integrations.flower_simulation import run_auxo_simulation, small_run
        from kairos.auxo.replay import log_meta
        from kairos.report import print_table

        try:
            strategy, recipe, model, local = small_run(clients, groups, rounds, k, p_total, seed)
        except ValueError as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
        log = None
        if decision_log is not None:
            try:
                log = open_log(decision_log, log_meta(strategy.params, seed))
            except ValueError as exc:
                raise typer.BadParameter(str(exc), param_hint="--decision-log") from None
            strategy.policy.recorder = log
        try:
            run_auxo_simulation(strategy, recipe, model, local, seed=seed, num_cpus=num_cpus)
        except ClientFailure as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from None
        finally:
            if log is not None:
                log.close()
                console.print(f"{log.count} decisions in {decision_log}")
        splits = [f"{s.parent} at round {s.round}" for s in strategy.policy.tree.splits]
        console.print(f"splits: {', '.join(splits) or 'none'}")
        members = list(strategy.membership.values())
        rows = [{"cohort": c, "clients": members.count(c)} for c in strategy.policy.tree.leaves()]
        print_table(rows, title=f"Auxo on Flower: {clients} clients, {rounds} rounds")

    @group.command("replay")
    def replay_cmd(
        log: Annotated[Path, typer.Argument(help="A decision log of `kairos auxo run`")],
    ) -> None:
        """Replay a log's cohort-rounds through Auxo's policy; exit 1 where it differs."""
        from kairos.auxo.decisions import CODEC
        from kairos.auxo.replay import SYSTEM as NAME
        from kairos.auxo.replay import replay_log
        from kairos.decisions import DecisionLogError, first_divergence, read_log

        try:
            loaded = read_log(log, CODEC, system=NAME)
            replayed = replay_log(loaded)
        except DecisionLogError as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
        divergence = first_divergence(loaded.entries, replayed)
        if divergence is not None:
            console.print(str(divergence), markup=False, highlight=False)
            raise typer.Exit(1)
        console.print(f"{len(replayed)} decisions replayed: the same as the log's")


SYSTEM = System(
    name="auxo",
    help="Federated learning that clusters clients into cohorts.",
    register=(register,),
    experiments="kairos.auxo.experiments",
)
