"""`kairos orloj serve | loadgen | calibrate`: the real runtime from the command line.

    kairos orloj calibrate --model decoder --out results/orloj/decoder-cal.json
    kairos orloj serve --policy orloj --model decoder \\
        --calibration results/orloj/decoder-cal.json --decision-log results/orloj/decisions.jsonl
    kairos orloj loadgen --url http://127.0.0.1:8000 --model decoder \\
        --calibration results/orloj/decoder-cal.json --load 0.6 --slo-mult 2 --requests 600

`serve` measures (or loads) the calibration, warm-starts the policy with each application's
solo profile and serves until Ctrl-C. `loadgen` records a trace (or replays `--trace`) and
reports the finish rate; run it against servers with different `--policy` to compare them on
the very same requests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from kairos.cli_utils import make_console, parse_assignments

console = make_console()
err_console = make_console(stderr=True)
Opts = Annotated[list[str] | None, typer.Option(help="KEY=VALUE (JSON values), repeatable")]
ModelOpt = Annotated[str, typer.Option(help="early-exit, decoder or static")]
CalOpt = Annotated[
    Path | None, typer.Option(help="Calibration JSON: loaded if it exists, else measured + saved")
]
ReadCalOpt = Annotated[
    Path | None,
    typer.Option(help="Calibration JSON to read (must exist); none: measured here, not saved"),
]
AppsOpt = Annotated[
    Path | None, typer.Option(help='Apps JSON {"app": ["class", ...]}; default: the model\'s')
]


MEASURED_SIZES = (1, 2, 4, 8, 16)  # what calibration times; `complete_table` fills the rest


def _sizes(text: str) -> tuple[int, ...]:
    if not text.strip():
        return MEASURED_SIZES
    try:
        return tuple(int(s) for s in text.split(","))
    except ValueError:
        raise typer.BadParameter(f"--sizes takes comma-separated integers, got {text!r}") from None


def _setup(
    model: str,
    model_option: list[str] | None,
    device: str,
    calibration: Path | None,
    apps_path: Path | None,
    quick: bool,
    sizes: tuple[int, ...],
    worker: Any = None,
    must_exist: bool = False,
) -> tuple[Any, Any, dict[str, tuple[str, ...]]]:
    """(model, calibration, apps), measuring the calibration (in `worker`, a callable that
    makes a started executor from the model, if given) unless a file has it. With
    `must_exist` (loadgen) a `calibration` path that is not a readable calibration is an
    error: a mistyped path must not silently recalibrate inside the client, under load."""
    from kairos.orloj.runtime.calibrate import Calibration, CalibrationConfig, calibrate
    from kairos.orloj.runtime.models import MODEL_KINDS, ModelSpec

    if model not in MODEL_KINDS:
        raise typer.BadParameter(f"--model must be one of {', '.join(MODEL_KINDS)}")
    spec = ModelSpec.model_validate(
        {
            "kind": model,
            "options": parse_assignments(model_option, "--model-option"),
            "device": device,
        }
    )
    served = spec.build()
    if must_exist and calibration is not None and not calibration.is_file():
        raise typer.BadParameter(
            f"no calibration file at {calibration}", param_hint="--calibration"
        )
    if calibration is not None and calibration.is_file():
        try:
            cal = Calibration.load(calibration)
        except (OSError, ValueError) as exc:
            raise typer.BadParameter(
                f"cannot read the calibration {calibration}: {exc}", param_hint="--calibration"
            ) from None
        if cal.model != served.kind:
            raise typer.BadParameter(f"{calibration} calibrates {cal.model}, not {served.kind}")
    else:
        runs = {"solo_runs": 5, "batch_reps": 1} if quick else {}
        cfg = CalibrationConfig(batch_sizes=sizes, **runs)
        keep = f"saved to {calibration}" if calibration is not None else "not saved"
        console.print(f"[dim]calibrating {served.kind} ({keep}) ...")
        if worker is not None:
            cal = worker(served).calibrate(cfg)
        else:
            cal = calibrate(served, cfg, progress=lambda m: console.print(f"[dim]  {m}"))
        if calibration is not None:
            cal.save(calibration)
    apps = served.default_apps()
    if apps_path is not None:
        apps = {a: tuple(c) for a, c in json.loads(apps_path.read_text()).items()}
    unknown = {c for cs in apps.values() for c in cs} - set(served.classes())
    if unknown:
        raise typer.BadParameter(
            f"unknown input classes {sorted(unknown)}; {served.kind} has {sorted(served.classes())}"
        )
    return served, cal, apps


def _p99(cal: Any, apps: dict[str, tuple[str, ...]]) -> float:
    pooled = np.concatenate([np.asarray(v) for v in cal.app_profile(apps, 2000).values()])
    return float(np.percentile(pooled, 99))


def register(group: typer.Typer) -> None:
    @group.command("calibrate")
    def calibrate_cmd(
        model: ModelOpt = "early-exit",
        out: Annotated[Path, typer.Option(help="Where the calibration JSON goes")] = Path(
            "results/orloj/calibration.json"
        ),
        model_option: Opts = None,
        device: str = "cpu",
        sizes: Annotated[
            str, typer.Option(help="Batch sizes to time; g_k is interpolated up to the largest")
        ] = "1,2,4,8,16",
        quick: bool = False,
    ) -> None:
        """Measure solo latencies per input class and fit the batch-latency model g_k."""
        if out.exists():
            out.unlink()
        _, cal, _ = _setup(model, model_option, device, out, None, quick, _sizes(sizes))
        check = cal.check()
        solo = ", ".join(f"{c} {ms:g}" for c, ms in check["solo_median_ms"].items())
        console.print(
            f"calibrated {model}: {check['points']} batch points, "
            f"{check['within_tolerance']:.0%} within {check['tolerance']:.0%} of g_k "
            f"(median error {check['median_rel_error']:.1%}, max {check['max_rel_error']:.1%})\n"
            f"solo medians (ms): {solo}\n"
            f"saved {out} (the full fit and every point are in the file)",
            highlight=False,
        )

    @group.command("serve")
    def serve_cmd(
        policy: Annotated[str, typer.Option(help="orloj, clockwork, nexus, clipper, edf, ...")] = (
            "orloj"
        ),
        model: ModelOpt = "early-exit",
        model_option: Opts = None,
        policy_option: Opts = None,
        apps: AppsOpt = None,
        calibration: CalOpt = None,
        slo_ms: Annotated[
            float | None, typer.Option(help="Nominal SLO for Nexus/Clipper plans")
        ] = None,
        slo_mult: Annotated[float, typer.Option(help="Else: this x the apps' P99")] = 3.0,
        rate_rps: Annotated[float | None, typer.Option(help="Expected load (Nexus)")] = None,
        sizes: Annotated[
            str,
            typer.Option(
                help="Batch sizes for the policy (and the calibration grid), e.g. 1,2,4,8,16;"
                " default: each policy its own (Orloj 1-16, Clockwork 1,2,4,8,16), timed at"
                " 1,2,4,8,16 and linearly interpolated in between"
            ),
        ] = "",
        sample_rate: Annotated[float, typer.Option(help="Profiler re-run share")] = 0.1,
        worker: Annotated[str, typer.Option(help="process or thread")] = "process",
        threads: Annotated[int, typer.Option(help="torch threads in the worker")] = 1,
        nice: Annotated[
            int | None, typer.Option(help="CPU priority (e.g. -10) for the server and worker")
        ] = None,
        device: str = "cpu",
        host: str = "127.0.0.1",
        port: int = 8000,
        api_key: Annotated[str | None, typer.Option(envvar="KAIROS_API_KEY")] = None,
        max_open: int = 1024,
        max_restarts: Annotated[
            int, typer.Option(help="Worker restarts within --restart-window-s before giving up")
        ] = 3,
        restart_window_s: float = 300.0,
        log_level: str = "info",
        quick: Annotated[bool, typer.Option(help="Shorter calibration")] = False,
        decision_log: Annotated[
            Path | None, typer.Option(help="Write every batch and drop to this file (JSON lines)")
        ] = None,
    ) -> None:
        """Serve the model with one policy: POST /v1/infer, GET /v1/stats, /health, /metrics."""
        from kairos.orloj.decisions import open_log
        from kairos.orloj.profiler import Profiler
        from kairos.orloj.runtime.dispatcher import Dispatcher
        from kairos.orloj.runtime.executor import Executor, ThreadExecutor
        from kairos.orloj.runtime.process import ProcessExecutor
        from kairos.orloj.runtime.server import RuntimeSettings, create_app
        from kairos.orloj.speed import served_options
        from kairos.orloj.systems import make_system
        from kairos.runtime.http import serve

        size_list = _sizes(sizes)  # measured at calibration (and warmed up)
        policy_sizes = size_list if sizes.strip() else None  # None: the policy's own
        warm = tuple(range(1, max(size_list) + 1))  # any size up to the largest may run
        if worker not in ("process", "thread"):
            raise typer.BadParameter("--worker must be process or thread")
        if nice is not None:
            try:
                os.setpriority(os.PRIO_PROCESS, 0, nice)
            except OSError as exc:
                console.print(f"[yellow]cannot set the nice value to {nice}: {exc}")
        executors: list[Any] = []

        def started(served: Any) -> Any:  # the worker is started first, to calibrate in it
            if worker == "process":
                ex: Executor = ProcessExecutor(served, threads, warm, nice=nice)
            else:
                ex = ThreadExecutor(served, threads, warm)
            ex.start()
            executors.append(ex)
            return ex

        served, cal, app_map = _setup(
            model, model_option, device, calibration, apps, quick, size_list, started
        )
        executor = executors[0] if executors else started(served)
        slo = slo_ms or slo_mult * _p99(cal, app_map)
        try:
            settings = RuntimeSettings(
                host=host, port=port, api_key=api_key, max_open=max_open, log_level=log_level
            )
            pol = make_system(
                policy,
                model=cal.batch_model,
                slo_ms=slo,
                sizes=policy_sizes,
                rate_per_ms=rate_rps / 1e3 if rate_rps else None,
                options=served_options(policy, parse_assignments(policy_option, "--policy-option")),
            )
            profiler = Profiler(sample_rate=sample_rate)
        except ValueError as exc:
            executor.stop()
            raise typer.BadParameter(str(exc)) from None
        log = None
        if decision_log is not None:
            meta = {"run": "serve", "policy": policy, "model": served.kind, "slo_ms": slo}
            try:
                log = open_log(decision_log, meta)
            except ValueError as exc:
                executor.stop()
                raise typer.BadParameter(str(exc), param_hint="--decision-log") from None
        dispatcher = Dispatcher(
            pol,
            served,
            executor,
            profiler=profiler,
            offline=cal.app_profile(app_map, 1000),
            max_open=max_open,
            predict=cal.predict(served),
            max_restarts=max_restarts,
            restart_window_s=restart_window_s,
            recorder=log,
        )
        check = cal.check()
        ran = getattr(pol, "sizes", None)  # Clipper's AIMD has a cap, not a list
        info = {"calibration": check, "nominal_slo_ms": slo, "batch_sizes": ran}
        console.print(
            f"{policy} on {served.kind}: apps {dict(app_map)}; nominal SLO {slo:.1f} "
            f"ms; batch sizes {list(ran) if ran is not None else 'any up to its cap'}; "
            f"g_k within 10% on {check['within_tolerance']:.0%} of the grid"
        )
        try:
            serve(create_app(dispatcher, app_map, settings, info), settings)
        finally:
            executor.stop()
            if log is not None:
                log.close()

    @group.command("loadgen")
    def loadgen_cmd(
        url: Annotated[str, typer.Option(help="Server base URL")] = "http://127.0.0.1:8000",
        model: ModelOpt = "early-exit",
        model_option: Opts = None,
        apps: AppsOpt = None,
        calibration: ReadCalOpt = None,
        trace: Annotated[Path | None, typer.Option(help="Replay this JSONL trace")] = None,
        save_trace: Annotated[Path | None, typer.Option(help="Write the trace used")] = None,
        requests: int = 600,
        rate_rps: Annotated[float | None, typer.Option(help="Mean arrival rate")] = None,
        load: Annotated[float, typer.Option(help="Else: this x capacity at batch 16")] = 0.6,
        arrival: Annotated[str, typer.Option(help="bursty or poisson")] = "bursty",
        slo_ms: Annotated[float | None, typer.Option(help="SLO of every request")] = None,
        slo_mult: Annotated[float, typer.Option(help="Else: this x the apps' P99")] = 3.0,
        seed: int = 0,
        api_key: Annotated[str | None, typer.Option(envvar="KAIROS_API_KEY")] = None,
        out: Annotated[Path, typer.Option(help="Result folder")] = Path("results/orloj/loadgen"),
        stamp: Annotated[
            bool, typer.Option(help="Send each request's send time: the deadline starts there")
        ] = True,
    ) -> None:
        """Replay a recorded open-loop trace against a server and report its finish rate: the
        client's (answered ok within the SLO of sending), and the server's verdict beside it."""
        from kairos.orloj.runtime.loadgen import (
            ServerUnreachable,
            load_trace,
            make_trace,
            run_load,
            trace_rate_per_s,
        )
        from kairos.orloj.runtime.loadgen import save_trace as write_trace
        from kairos.report import print_table, write_result

        served, cal, app_map = _setup(
            model, model_option, "cpu", calibration, apps, False, MEASURED_SIZES, must_exist=True
        )
        slo = slo_ms or slo_mult * _p99(cal, app_map)
        rate = rate_rps or load * cal.capacity_per_s(app_map, 16)
        used_seed: int | None = seed
        if trace is not None:
            items = load_trace(trace)
            rate, used_seed = trace_rate_per_s(items), None  # what the trace holds, not defaults
        else:
            if arrival not in ("bursty", "poisson"):
                raise typer.BadParameter("--arrival must be bursty or poisson")
            items = make_trace(served, app_map, rate, requests, seed, arrival)  # type: ignore[arg-type]
        if save_trace is not None:
            write_trace(items, save_trace)
        console.print(f"{len(items)} requests at {rate:.1f}/s, SLO {slo:.1f} ms -> {url}")
        from rich.progress import Progress

        with Progress(console=console, transient=True) as bar:
            answered = bar.add_task(f"{len(items)} requests", total=len(items))
            try:
                report = run_load(
                    url,
                    items,
                    slo,
                    api_key,
                    progress=lambda n, _: bar.update(answered, completed=n),
                    stamp=stamp,
                )
            except ServerUnreachable as exc:
                err_console.print(f"loadgen: {exc}")
                raise typer.Exit(1) from None
        summary = report.summary()
        print_table([{k: v for k, v in summary.items() if not isinstance(v, dict)}], "loadgen")
        console.print_json(
            data={
                "finish_rate_by_app": summary["finish_rate_by_app"],
                "server_finish_rate_by_app": summary["server_finish_rate_by_app"],
                "outcomes": summary["outcomes"],
            }
        )
        config = {"url": url, "model": model, "slo_ms": slo, "rate_rps": rate, "seed": used_seed}
        config["trace"] = str(trace) if trace is not None else None
        config["stamp"] = stamp
        rows = [vars(r) for r in report.replies]
        write_result(out, "loadgen", config=config, rows=rows, summary=summary, seed=used_seed)
        console.print(f"results in {out}")
        if report.all_failed_in_transport:
            err_console.print(f"loadgen: every request failed to reach {url} (connection errors)")
            raise typer.Exit(1)
