"""`kairos fluid run | replay`: one tuning job on real trials on this machine, and the replay
of its decision log through the simulator's driver.

    kairos fluid run --tuner random --configs 4 --max-t 6 --decision-log decisions.jsonl
    kairos fluid replay decisions.jsonl

Trials are a real PyTorch model (an MLP on the digits data set) trained in worker processes,
`--slots` to a virtual device and up to `--gang` devices a trial. CPU cores are not GPUs, so by
default each iteration lasts as long as the device model says for `--emulate-t1` seconds alone
(0: real timing). `--baseline` runs one trial per device, never resized. `--decision-log`
writes every launch, resize and stop, with each iteration's measured outcome, as JSON lines;
`replay` rebuilds the run's tuner and configuration from the log's header, runs the simulator's
driver over the measured outcomes (`kairos.fluid.replay`) and reports the first decision that
differs (exit status 1), or that there is none.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kairos.cli_utils import make_console

if TYPE_CHECKING:
    from kairos.fluid.driver import DriverConfig
    from kairos.fluid.tuner import Tuner

console = make_console()
OPTIONS = (
    "tuner",
    "configs",
    "max_t",
    "devices",
    "slots",
    "gang",
    "baseline",
    "emulate_t1",
    "seed",
)


def tuning(meta: dict[str, Any]) -> tuple[Tuner, DriverConfig]:
    """The tuner and driver configuration that a run's options (a log's header) name."""
    from kairos.fluid.core.model import Limits
    from kairos.fluid.driver import DriverConfig
    from kairos.fluid.tuners import NAMES, make_tuner

    name = meta["tuner"]
    if name not in NAMES:
        raise typer.BadParameter(f"no tuner {name!r}; known: {', '.join(NAMES)}")
    t1 = meta["emulate_t1"] or 1.0
    if meta["baseline"]:
        config = DriverConfig.baseline()
    else:
        config = DriverConfig(Limits(c=meta["slots"], d=meta["gang"]), eps=t1, t1_prior=t1)
    concurrency = meta["devices"] * meta["slots"]
    tuner = make_tuner(name, 2, meta["seed"], meta["max_t"], concurrency, n=meta["configs"])
    return tuner, config


def register(group: typer.Typer) -> None:
    @group.command("run")
    def run_cmd(
        tuner: Annotated[str, typer.Option(help="grid, random, sha, hyperband, asha, ...")] = (
            "random"
        ),
        configs: Annotated[int, typer.Option(min=1, help="configurations (random, sha)")] = 4,
        max_t: Annotated[int, typer.Option(min=1, help="iterations of a full trial")] = 6,
        devices: Annotated[int, typer.Option(min=1, max=8, help="virtual devices")] = 2,
        slots: Annotated[int, typer.Option(min=1, max=4, help="trials a device can share")] = 2,
        gang: Annotated[int, typer.Option(min=1, help="devices one trial can span")] = 2,
        baseline: Annotated[bool, typer.Option(help="one trial per device, FIFO")] = False,
        emulate_t1: Annotated[
            float, typer.Option(min=0, help="emulated seconds per iteration alone (0: real)")
        ] = 0.5,
        seed: int = 0,
        decision_log: Annotated[
            Path | None,
            typer.Option(help="write every decision and measured iteration here (JSON lines)"),
        ] = None,
    ) -> None:
        """Tune on real trials (worker processes on virtual devices) and report the best."""
        from kairos.decisions import DecisionLog, DecisionLogError
        from kairos.fluid.decisions import CODEC
        from kairos.fluid.device_model import DeviceModel
        from kairos.fluid.runtime.local import DIGITS, Emulation, WorkerPool, tune_local

        values = (tuner, configs, max_t, devices, slots, gang, baseline, emulate_t1, seed)
        meta: dict[str, Any] = dict(zip(OPTIONS, values, strict=True))
        try:
            search, config = tuning(meta)
        except typer.BadParameter as exc:
            exc.param_hint = "--tuner"
            raise
        log = None
        if decision_log is not None:
            try:
                log = DecisionLog(decision_log, CODEC, "fluid", meta)
            except DecisionLogError as exc:
                raise typer.BadParameter(
                    str(exc),
                    param_hint="--decision-log",
                ) from None
        emulate = Emulation(DeviceModel(), emulate_t1, util=0.45) if emulate_t1 > 0 else None
        try:
            with WorkerPool(devices, slots, DIGITS) as pool, tempfile.TemporaryDirectory() as tmp:
                run = tune_local(search, pool, config, Path(tmp), emulate=emulate, recorder=log)
        finally:
            if log is not None:
                log.close()
        stats, best = run.stats, run.stats.best_trial
        found = run.driver.trials[best].spec.config if best else None
        console.print(
            f"[bold]Fluid[/] {'baseline' if baseline else 'fluid'} {tuner}: best {best} "
            f"(accuracy {stats.best:.4f}, config {found}) after {stats.end:.2f} s, "
            f"{stats.iterations} iterations, {stats.resizes} resizes, "
            f"{len(stats.failures)} failures" + (" (emulated timing)" if emulate else "")
        )
        if log is not None:
            console.print(f"{log.count} decisions and measurements written to {decision_log}")

    @group.command("replay")
    def replay_cmd(
        log: Annotated[Path, typer.Argument(help="a decision log written by `kairos fluid run`")],
        baseline: Annotated[
            bool, typer.Option(help="replay under one trial per device instead (must differ)")
        ] = False,
        time_tol: Annotated[
            float, typer.Option(min=0, help="seconds a replayed decision may be off the real one")
        ] = 0.05,
    ) -> None:
        """Replay a real run's decision log through the simulator's driver and compare."""
        from kairos.decisions import DecisionLogError, first_divergence, read_log
        from kairos.fluid.decisions import CODEC
        from kairos.fluid.replay import replay

        try:
            loaded = read_log(log, CODEC, system="fluid")
        except DecisionLogError as exc:
            raise typer.BadParameter(str(exc), param_hint="LOG") from None
        missing = set(OPTIONS) - loaded.meta.keys()
        if missing:
            raise typer.BadParameter(
                f"{log}: its header lacks {', '.join(sorted(missing))} (not written by "
                "`kairos fluid run`)",
                param_hint="LOG",
            )
        tuner, config = tuning({**loaded.meta, "baseline": baseline or loaded.meta["baseline"]})
        replayed = replay(loaded.entries, tuner, loaded.meta["devices"], config)
        found = first_divergence(loaded.entries, replayed, time_tol=time_tol)
        if found is None:
            console.print(
                f"the simulator's driver made the same {len(replayed)} decisions and "
                f"measurements as the run in {log}"
            )
            return
        console.print(str(found))
        raise typer.Exit(1)
