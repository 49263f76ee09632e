"""`kairos andes ...`: ad-hoc simulations and capacity search (experiments come from the shared
`experiment` command), and `SYSTEM`, what Andes adds to `kairos` (its `kairos.systems` entry
point): this group, the experiments, and the serving stack's `kairos serve` and `kairos bench`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kairos.andes.client.bench_cli import bench_command
from kairos.andes.operating_point import PAPER_FCFS_QOE
from kairos.andes.serve_cli import serve_command, train_builtin_command
from kairos.cli_utils import config_error, make_console, parse_assignments
from kairos.systems import System

console = make_console()


def _andes_overrides(horizon: float | None, extra: list[str] | None) -> dict[str, Any]:
    out = parse_assignments(extra, "--andes")
    if horizon is not None:
        out["horizon_s"] = horizon
    return out


def register(group: typer.Typer) -> None:
    group.command("train-builtin")(train_builtin_command)

    @group.command("simulate")
    def simulate_cmd(
        policy: Annotated[
            str, typer.Option(help="fcfs, sarathi, lqsf, andes or andes-dp")
        ] = "andes",
        profile: Annotated[str, typer.Option(help="Built-in profile or a fitted profile JSON")] = (
            "llama-3.1-70b"
        ),
        trace: Annotated[
            Path | None,
            typer.Option(help="Replay an Azure/Splitwise or BurstGPT CSV (arrivals and lengths)"),
        ] = None,
        arrival: Annotated[
            str | None, typer.Option(help="cyclic_burst (default) or poisson; not with --trace")
        ] = None,
        rate: Annotated[
            float | None, typer.Option(help="Average req/s (default: the load factor's)")
        ] = None,
        load_factor: Annotated[
            float | None,
            typer.Option(
                help="Rate as a share of the profile's sustainable rate for the workload's "
                "lengths (default 0.6; with --trace: see --fcfs-qoe)"
            ),
        ] = None,
        intensity: Annotated[
            float | None, typer.Option(help="Burst rate / average rate (default 2)")
        ] = None,
        duration: Annotated[
            float | None, typer.Option(help="Share of each cycle in burst (default 0.35)")
        ] = None,
        cycle: Annotated[float | None, typer.Option(help="Cycle length, s (default 1200)")] = None,
        span: Annotated[
            float | None,
            typer.Option(
                help="Seconds of arrivals (default 1200; with --trace: the first SPAN s of it, "
                "default all of it)"
            ),
        ] = None,
        dataset: Annotated[
            str | None, typer.Option(help="Lengths: sharegpt (default), arxiv, coding")
        ] = None,
        speeds: Annotated[str, typer.Option(help="reader or listener")] = "reader",
        horizon: Annotated[float | None, typer.Option(help="Andes Δt (s)")] = None,
        andes: Annotated[list[str] | None, typer.Option(help="Andes option KEY=VALUE")] = None,
        seed: int = 0,
        out: Annotated[Path, typer.Option(help="Result folder")] = Path("results/andes/simulate"),
        fcfs_qoe: Annotated[
            float,
            typer.Option(
                help="With --trace and no --rate/--load-factor: run at the load where FCFS's "
                "average QoE is this (searched; the paper's E4 point)"
            ),
        ] = PAPER_FCFS_QOE,
        as_recorded: Annotated[
            bool, typer.Option(help="With --trace: replay it at its recorded rate")
        ] = False,
        decision_log: Annotated[
            Path | None,
            typer.Option(help="Write every scheduling decision here (JSON lines)"),
        ] = None,
    ) -> None:
        """Simulate one policy on one workload and print QoE, TTFT, TDS and queue statistics."""
        from kairos.andes.decisions import CODEC, SYSTEM
        from kairos.andes.latency import load_profile
        from kairos.andes.operating_point import find_load
        from kairos.andes.policies.registry import make_policy
        from kairos.andes.simulator import simulate
        from kairos.andes.workload import SimPoint, average_rate, build_trace
        from kairos.decisions import DecisionLog, DecisionLogError
        from kairos.experiments.sweep import file_digest
        from kairos.report import print_table, save_line_plot, write_result
        from kairos.workloads import TraceFormatError

        generated = {
            "--arrival": arrival,
            "--intensity": intensity,
            "--duration": duration,
            "--cycle": cycle,
            "--dataset": dataset,
        }
        settings: dict[str, Any] = {
            "policy": policy,
            "andes": _andes_overrides(horizon, andes),
            "profile": profile,
            "rate": rate,
            "speeds": speeds,
            "seed": seed,
        }
        try:
            if trace is not None:
                given = [k for k, v in generated.items() if v is not None]
                if given:
                    raise ValueError(
                        f"{', '.join(given)}: only for generated arrivals; --trace replays "
                        "the trace's own (set its rate with --rate or --load-factor)"
                    )
                settings |= {"arrival": "trace", "trace": str(trace)}
                settings |= {"load_factor": load_factor, "span_s": span}
            else:
                settings |= {k.removeprefix("--"): v for k, v in generated.items() if v is not None}
                settings["cycle_s"] = settings.pop("cycle", 1200.0)
                if load_factor is not None:
                    settings["load_factor"] = load_factor
                if span is not None:
                    settings["span_s"] = span
            point = SimPoint.model_validate(settings)
            lat = load_profile(profile)
            placed = trace is not None and not as_recorded and rate is None and load_factor is None
            if placed:

                def fcfs_qoe_at(load: float) -> float:
                    probe = point.model_copy(update={"policy": "fcfs", "load_factor": load})
                    tr, sp = build_trace(probe)
                    return float(simulate(make_policy("fcfs"), lat, tr, sp).summary()["avg_qoe"])

                console.print(f"finding the load where FCFS's average QoE is {fcfs_qoe} ...")
                search = find_load(fcfs_qoe_at, fcfs_qoe)
                point = point.model_copy(update={"load_factor": search.load})
            pol = make_policy(policy, **point.andes)
            tr, sp = build_trace(point)
        except (ValueError, FileNotFoundError, TraceFormatError) as exc:
            console.print(f"[red]error:[/red] {config_error(exc)}")
            raise typer.Exit(2) from None
        if decision_log is None:
            res = simulate(pol, lat, tr, sp)
        else:
            meta = {"mode": "simulate", "point": point.model_dump(mode="json")}
            try:
                log = DecisionLog(decision_log, CODEC, SYSTEM, meta)
            except DecisionLogError as exc:
                console.print(f"[red]error:[/red] --decision-log: {exc}")
                raise typer.Exit(2) from None
            with log:
                res = simulate(pol, lat, tr, sp, recorder=log)
            console.print(f"{log.count} decisions in {decision_log}")
        summary = res.summary() | {"rate": average_rate(point)}
        where = f", load {point.load_factor:.3g} x sustainable" if point.load_factor else ""
        print_table([summary], title=f"{policy} on {lat.name}: {len(tr)} requests{where}")
        config: dict[str, Any] = point.model_dump(mode="json")
        if placed:
            config["operating_point"] = {
                "target_fcfs_qoe": fcfs_qoe,
                "fcfs_qoe": search.value,
                "load_factor": search.load,
                "converged": search.converged,
            }
        if trace is not None:
            config["trace_sha256"] = file_digest(trace.resolve())
        write_result(
            out,
            f"simulate_{policy}",
            config=config,
            rows=[{"qoe": q} for q in res.qoe().tolist()],
            summary=summary,
            seed=seed,
        )
        save_line_plot(
            out / f"simulate_{policy}_queue.png",
            res.stats["time"],
            {k: res.stats[k] for k in ("running", "waiting", "preempted")},
            xlabel="time (s)",
            ylabel="requests",
            title="queue",
            kind="step",
        )
        console.print(f"results in {out}")

    @group.command("capacity")
    def capacity_cmd(
        target: Annotated[float, typer.Option(help="Average QoE to keep")] = 0.95,
        policies: Annotated[str, typer.Option(help="Comma-separated policies")] = "fcfs,andes",
        profile: str = "llama-3.1-70b",
        dataset: str = "sharegpt",
        arrival: Annotated[str, typer.Option(help="cyclic_burst or poisson")] = "cyclic_burst",
        factors: Annotated[str, typer.Option(help="Load factors to test")] = (
            "0.15,0.2,0.25,0.3,0.35,0.4,0.45,0.5,0.6,0.7,0.8"
        ),
        jobs: Annotated[int, typer.Option("--jobs", "-j")] = 1,
        out: Path = Path("results/andes/capacity-search"),
    ) -> None:
        """Highest load (burst req/s) that keeps average QoE at or above TARGET, per policy."""
        from kairos.andes.capacity import capacity
        from kairos.andes.experiments.common import policy_sweep
        from kairos.andes.workload import SimPoint, base_rate
        from kairos.experiments import ExperimentContext
        from kairos.report import print_table

        base = SimPoint.model_validate({"profile": profile, "dataset": dataset, "arrival": arrival})
        loads = [float(x) for x in factors.split(",")]
        names = [p.strip() for p in policies.split(",") if p.strip()]
        ctx = ExperimentContext(out_dir=out, jobs=jobs)
        rows = policy_sweep(ctx, base, "load_factor", loads, names)
        peak = (base.intensity if arrival == "cyclic_burst" else 1.0) * base_rate(profile, dataset)
        table = []
        for p in names:
            x = [peak * r["load_factor"] for r in rows if r["policy"] == p]
            y = [r["avg_qoe"] for r in rows if r["policy"] == p]
            table.append({"policy": p, "target": target, "capacity_req_s": capacity(x, y, target)})
        print_table(table, title=f"capacity on {profile} ({dataset}, {arrival})")

    @group.command("profile")
    def profile_cmd(
        model: Annotated[
            str | None,
            typer.Option(
                help="Hugging Face checkpoint dir, kairos-tiny-llama (the built-in model "
                "`kairos serve` serves by default) or kairos-tiny-llama-random"
            ),
        ] = None,
        out: Annotated[Path, typer.Option(help="Where to write the profile JSON")] = Path(
            "results/andes/profile.json"
        ),
        device: str = "auto",
        dtype: str = "auto",
        num_gpu_blocks: Annotated[int, typer.Option(help="KV cache blocks, as served")] = 1024,
        max_model_len: Annotated[int, typer.Option(help="Tokens per request, as served")] = 2048,
        max_num_seqs: Annotated[int, typer.Option(help="Largest decode batch, as served")] = 64,
        quick: Annotated[bool, typer.Option(help="A smaller grid (seconds, not a minute)")] = False,
    ) -> None:
        """Measure the engine on this machine and fit the latency profile its scheduler and
        the simulator use (`kairos serve --profile OUT`, `kairos andes simulate --profile OUT`).
        Give it the cache shape you serve with: the grid fills that cache, and a small cache
        decodes faster per token than a large one."""
        from kairos.andes.engine.builtin_training import cached_entry
        from kairos.andes.engine.config import BUILTIN_NAME, BUILTIN_RANDOM_NAME, EngineConfig
        from kairos.andes.engine.cpu import build_engine
        from kairos.andes.engine.engine import provisional_profile
        from kairos.andes.engine.profiler import fit, measure
        from kairos.andes.serve_cli import served_model
        from kairos.report import print_table

        trained = model in (None, BUILTIN_NAME)  # the model `kairos serve` would serve
        try:
            cfg = EngineConfig.model_validate(
                dict(
                    model=None if trained or model == BUILTIN_RANDOM_NAME else model,
                    model_name=BUILTIN_NAME if trained else None,
                    device=device,
                    dtype=dtype,
                    num_gpu_blocks=num_gpu_blocks,
                    max_model_len=max_model_len,
                    max_num_seqs=max_num_seqs,
                )
            )
        except ValueError as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
        weights = cached_entry() if trained else None
        engine = build_engine(cfg, latency=provisional_profile(cfg), **served_model(weights))
        measured = measure(engine, quick=quick)
        prof = fit(engine, *measured)
        dec = measured[0]
        out.parent.mkdir(parents=True, exist_ok=True)
        prof.save(out)
        fitted = prof.decode_time(dec[:, 0], dec[:, 1])
        rows = [
            {"batch": int(b), "context": int(c), "measured_ms": 1e3 * s, "fitted_ms": 1e3 * f}
            for (b, c, s), f in zip(dec, fitted, strict=True)
        ]
        print_table(rows, title=f"decode iterations, {engine.model_name} on {engine.device}")
        err = float(abs(fitted - dec[:, 2]).mean() / dec[:, 2].mean())
        console.print(f"mean relative fit error {err:.1%}; profile written to {out}")


SYSTEM = System(
    name="andes",
    help="QoE-aware LLM text-streaming serving (token-level preemptive scheduler + pacer).",
    register=(register,),
    commands={"serve": serve_command, "bench": bench_command},
    experiments="kairos.andes.experiments",
)
