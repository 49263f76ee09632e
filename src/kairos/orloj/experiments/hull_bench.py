"""E7, the priority-index micro-benchmark (Fig 4.12): insertion and query time vs queue size.

Insertion is the average time per request while filling an empty index to n; query is the
time to find the best line on a full index. The paper queries a line of random slope; our
kinetic index (`orloj.hull`) is built for query points that only grow (x = e^{b t'} between
time-base resets), so each query here is at a later x, as a scheduler iteration a random
0-`step_ms` after the previous one would ask. The brute-force numpy scan is measured beside
it. A fit of a + c log^2 n gives the paper's theory curve and its R^2.
Timings are wall-clock on this machine, so this experiment is never cached.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.orloj.hull import make_index
from kairos.report import print_table, save_line_plot


class HullBenchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sizes: list[int] = [10, 30, 100, 300, 1000, 3000, 10_000]
    samples: int = Field(20, ge=1)  # fills (and queries) per size; the paper used 100
    indexes: list[str] = ["hull", "bruteforce"]
    b: float = Field(1e-4, gt=0)  # per ms, as in the scheduler
    step_ms: float = Field(100.0, gt=0)  # time between two queries: up to one batch
    seed: int = 0


def time_index(
    kind: str, n: int, samples: int, rng: np.random.Generator, b: float = 1e-4, step: float = 100.0
) -> tuple[float, float]:
    """(mean insertion s per request, mean query s) over `samples` fills of `n` points."""
    insert_s, query_s = [], []
    for _ in range(samples):
        alpha = rng.uniform(0.0, 1.0, n)
        beta = rng.uniform(0.0, 1.0, n)
        ties = rng.uniform(0.0, 1.0, n)
        index = make_index(kind)
        t0 = time.perf_counter()
        for i in range(n):
            index.insert(i, float(alpha[i]), float(beta[i]), float(ties[i]))
        insert_s.append((time.perf_counter() - t0) / n)
        x = 1.0
        for _ in range(10):
            x *= math.exp(b * rng.uniform(0.0, step))  # the next iteration's query point
            t0 = time.perf_counter()
            index.argmax(x)
            query_s.append(time.perf_counter() - t0)
    return float(np.mean(insert_s)), float(np.median(query_s))


def log2_fit(sizes: list[int], values: list[float]) -> tuple[float, float, float]:
    """Least squares value = a + c log^2 n; returns (a, c, R^2)."""
    x = np.log(np.asarray(sizes, dtype=float)) ** 2
    y = np.asarray(values)
    c, a = np.polyfit(x, y, 1)
    pred = a + c * x
    ss = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum((y - pred) ** 2)) / ss if ss > 0 else 1.0
    return float(a), float(c), r2


@experiment(
    "orloj",
    "hull",
    "Priority-index insertion and query time vs queue size (Fig 4.12)",
    HullBenchConfig,
    quick={"sizes": [10, 100, 1000, 3000], "samples": 3},
)
def hull(cfg: HullBenchConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    rng = np.random.default_rng(cfg.seed)
    rows: list[dict[str, Any]] = []
    for kind in cfg.indexes:
        for n in cfg.sizes:
            ins, query = time_index(kind, n, cfg.samples, rng, cfg.b, cfg.step_ms)
            rows.append({"index": kind, "n": n, "insert_us": 1e6 * ins, "query_us": 1e6 * query})
    summary: dict[str, Any] = {}
    for kind in cfg.indexes:
        mine = [r for r in rows if r["index"] == kind]
        a, c, r2 = log2_fit(cfg.sizes, [r["insert_us"] for r in mine])
        growth = mine[-1]["insert_us"] / mine[0]["insert_us"]
        summary[kind] = {"fit_a_us": a, "fit_c_us": c, "r2": r2, "insert_growth": growth}
    summary["n_growth"] = cfg.sizes[-1] / cfg.sizes[0]
    title = "E7: per-request insertion and query time (us)"
    publish(ctx, "hull", cfg, rows, title, summary, show_summary=False, seed=cfg.seed)
    print_table(
        [{"index": k, **v} for k, v in summary.items() if isinstance(v, dict)],
        title="E7: insertion fit a + c log^2 n (the paper's curve fits with R^2 >= 0.9)",
    )
    for metric in ("insert_us", "query_us"):
        save_line_plot(
            ctx.out_dir / f"hull_{metric}.png",
            [math.log10(n) for n in cfg.sizes],
            {k: [r[metric] for r in rows if r["index"] == k] for k in cfg.indexes},
            xlabel="log10 n (requests in queue)",
            ylabel=metric.replace("_us", " time (us)"),
            title="Fig 4.12",
        )
    return rows
