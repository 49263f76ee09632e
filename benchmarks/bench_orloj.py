"""Orloj benchmarks: relaxed SLOs under Poisson arrivals, the priority index
(Fig 4.12) and one whole scheduling decision.

0. Relaxed SLOs (`kairos.orloj.experiments.fairness`): three-modal and std-0.5/2 at 4x and
   5x P99 under Poisson arrivals, 5 seeds x 10,000 requests (2,000 with --quick): each
   system's finish rate with its 95% CI, its lowest application, the clairvoyant bound, and
   the per-seed paired difference Orloj minus each other system with its 95% CI; then Table
   C.1's tight-SLO gain (Orloj / Clockwork at 1.5x P99, bursty) for the default, the old
   default (S, mean estimate) and b = 1e-4; then why finer sizes cost at 1.5x (granularity).

1. Index micro-benchmark, as in §4.5.5: fill an empty index with n requests (average insertion
   time per request), then query it. Points are real score coordinates: requests of a
   three-modal workload (mean ≈ 100 ms, P99 ≈ 200 ms, SLO 3x P99) at uniformly spread slacks.
   "query" is the scheduler's pattern (x = e^{bt'} grows a little between queries); "query
   random x" is the paper's random slope, which makes the kinetic hull rebuild (O(n)).
   The hull's insertion times are fitted with a + c·log² n (the paper's theory curve) and R².
2. One whole `next_batch` (Algorithm 4.1: milestones, drops, candidate, PopBatch) with n
   pending requests, for the hull index and the brute-force scan; the queue is topped up
   between decisions and time moves 2 ms per decision. Also the per-request `on_arrival`
   time (insertion into every viable queue).
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from kairos.orloj.batchdist import BatchLatencyModel, batch_dists
from kairos.orloj.config import OrlojConfig
from kairos.orloj.dist import Histogram
from kairos.orloj.experiments.fairness import (
    EVERY_SIZE,
    SPEC_SIZES,
    relaxed_slo_rows,
    tight_slo_gain,
)
from kairos.orloj.experiments.granularity import granularity_rows
from kairos.orloj.hull import BruteForceIndex, HullIndex
from kairos.orloj.policies.orloj import OrlojPolicy
from kairos.orloj.policy import Request
from kairos.orloj.score import ScoreTable
from kairos.report import print_table, save_line_plot, write_result

KINDS = ("hull", "bruteforce")
B = 1e-4


def three_modal(rng: np.random.Generator, n: int) -> np.ndarray:
    """Spec 4: modes at 2, 10, 18 units of 10 ms, σ = 1 unit, truncated at 0.1 unit."""
    mode = rng.integers(0, 3, n)
    out = rng.normal(20.0 + 80.0 * mode, 10.0)
    return np.where(out < 1.0, 1.0, out)


def profile(seed: int = 0) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    return {f"app{m}": three_modal(rng, 1000).tolist() for m in range(3)}


SLO = 3 * float(np.percentile(three_modal(np.random.default_rng(99), 100_000), 99))


def coordinates(n: int, rng: np.random.Generator) -> list[tuple[float, float, float]]:
    """(α, β, deadline) of n requests in the batch-of-4 queue, slacks uniform over the SLO."""
    prof = profile()
    hists = {a: Histogram.on_grid(v) for a, v in prof.items()}
    edges = hists["app0"].edges
    hists = {a: Histogram.from_samples(v, edges) for a, v in prof.items()}
    dists = batch_dists(hists, dict.fromkeys(hists, 1 / 3), BatchLatencyModel(), [4])
    tables = [ScoreTable.build(row[0].hist, row[0].mean, B) for row in dists.values()]
    out = []
    for _ in range(n):
        table = tables[int(rng.integers(len(tables)))]
        d = float(rng.uniform(0.0, SLO))
        alpha, beta = table.coords(d, table.state_at(d, 0.0))
        out.append((alpha, beta, d))
    return out


def index_times(n: int, samples: int, seed: int = 0) -> dict[str, dict[str, float]]:
    """Mean insertion time per request while filling to n, and query times, per index."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, list[float]]] = {k: {"ins": [], "q": [], "qr": []} for k in KINDS}
    for _ in range(samples):
        pts = coordinates(n, rng)
        for kind in KINDS:
            index = HullIndex() if kind == "hull" else BruteForceIndex()
            start = time.perf_counter()
            for i, (a, b, d) in enumerate(pts):
                index.insert(i, a, b, d)
            out[kind]["ins"].append((time.perf_counter() - start) / n)
            x = 1.0
            index.argmax(x)
            for _ in range(5):
                x *= math.exp(B * 2.0)  # 2 ms later
                start = time.perf_counter()
                index.argmax(x)
                out[kind]["q"].append(time.perf_counter() - start)
            start = time.perf_counter()
            index.argmax(float(rng.uniform(0.5, 2.0)))
            out[kind]["qr"].append(time.perf_counter() - start)
    return {
        kind: {
            "insert_us": 1e6 * statistics.mean(v["ins"]),
            "query_us": 1e6 * statistics.median(v["q"]),
            "query_random_x_us": 1e6 * statistics.median(v["qr"]),
        }
        for kind, v in out.items()
    }


def fit_log2(ns: list[int], ys: list[float]) -> dict[str, float]:
    """Least squares y = a + c·(ln n)², with R²."""
    x = np.log(np.asarray(ns, dtype=float)) ** 2
    y = np.asarray(ys)
    design = np.column_stack([np.ones_like(x), x])
    (a, c), *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - (a + c * x)
    r2 = 1.0 - float(resid @ resid) / float(((y - y.mean()) ** 2).sum())
    return {"a_us": float(a), "c_us": float(c), "r2": r2}


def decision_times(n: int, kind: str, iterations: int, seed: int = 1) -> dict[str, float | str]:
    rng = np.random.default_rng(seed)
    pol = OrlojPolicy(OrlojConfig(index=kind), profile=profile())
    apps = sorted(profile())
    t, rid = 0.0, 0
    inserted, insert_s = 0, 0.0

    def arrive(count: int, now: float, spread: float) -> None:
        nonlocal rid, inserted, insert_s
        for _ in range(count):
            release = now - float(rng.uniform(0.0, spread))
            r = Request(rid, apps[int(rng.integers(3))], release, SLO)
            rid += 1
            start = time.perf_counter()
            pol.on_arrival(r, now)
            insert_s += time.perf_counter() - start
            inserted += 1

    arrive(int(n * 1.3), t, 0.7 * SLO)  # some are rejected: slack below E[L_B] for bs = 1
    times = []
    for _ in range(iterations):
        arrive(max(0, n - pol.pending()), t, 0.0)
        t += 2.0
        start = time.perf_counter()
        batch, _ = pol.next_batch(t)
        times.append(time.perf_counter() - start)
        if batch is not None:
            pol.on_batch_done(batch, t, 0.0)
    return {
        "pending": n,
        "index": kind,
        "on_arrival_us": 1e6 * insert_s / inserted,
        "next_batch_ms_median": 1e3 * statistics.median(times),
        "next_batch_ms_mean": 1e3 * statistics.mean(times),
    }


# Relaxed SLOs under Poisson arrivals, 5 seeds each, in three batch-size
# settings. "default": each system at its own sizes (Orloj any size 1-16 with the quantile:0.9
# drop estimate; Clockwork its compiled S = {1, 2, 4, 8, 16}; Nexus plans its b in S and runs up
# to b queued requests, Clipper any size up to 16), beside Orloj's old default (S, mean
# estimate), the paper's b = 1e-4 and the shared-cost variant; "S for all": every system only
# sizes in S; "1-16 for all": every system any size up to 16 (the simulated g_k runs any k).
OLD_DEFAULT: tuple[str, dict[str, Any]] = (
    "orloj",
    {"batch_sizes": SPEC_SIZES, "drop_estimator": "mean"},
)
RELAXED_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "orloj": ("orloj", {}),
    "orloj old (S, mean)": OLD_DEFAULT,
    "orloj b=1e-4": ("orloj", {"b": 1e-4}),
    "orloj cost=mixture": ("orloj", {"cost_mean": "mixture"}),
    "clipper": ("clipper", {}),
    "nexus": ("nexus", {}),
    "clockwork": ("clockwork", {}),
}
PARITY_VARIANTS = {
    k: v for k, v in RELAXED_VARIANTS.items() if k in ("orloj", "clipper", "nexus", "clockwork")
}
# setting -> (S for every system, or None: each its own; the variants)
Setting = tuple[tuple[int, ...] | None, dict[str, tuple[str, dict[str, Any]]]]
SETTINGS: dict[str, Setting] = {
    "default": (None, RELAXED_VARIANTS),
    "S for all": (
        SPEC_SIZES,
        {
            **PARITY_VARIANTS,
            "nexus": ("nexus", {"fixed_sizes": True}),
            "clipper": ("clipper", {"fixed_sizes": True}),
        },
    ),
    "1-16 for all": (EVERY_SIZE, PARITY_VARIANTS),
}
# (label, Orloj variant, Orloj's sizes, Clockwork's sizes; None: its own) for C.1's 1.5x gain
GAINS = (
    ("orloj", RELAXED_VARIANTS["orloj"], None, None),
    ("orloj old (S, mean)", OLD_DEFAULT, None, None),
    ("orloj b=1e-4", RELAXED_VARIANTS["orloj b=1e-4"], None, None),
    ("orloj", RELAXED_VARIANTS["orloj"], EVERY_SIZE, EVERY_SIZE),
)


def relaxed_slo(quick: bool, n: int | None = None) -> list[dict[str, Any]]:
    """Poisson arrivals at 4x and 5x P99 (paired differences over 5 seeds, the lowest app,
    the bound) in each batch-size setting, and Table C.1's tight-SLO gain over Clockwork at
    1.5x for each (Orloj variant, Orloj's sizes, Clockwork's sizes) in `GAINS`."""
    n = n or (2000 if quick else 10_000)
    rows = []
    for setting, (sizes, variants) in SETTINGS.items():
        found = relaxed_slo_rows(variants, n_requests=n, batch_sizes=sizes)
        rows += [{"case": "relaxed_slo", "setting": setting, **r} for r in found]
    for label, variant, sizes, clockwork in GAINS:
        gain = tight_slo_gain(variant, n_requests=n, batch_sizes=sizes, clockwork_sizes=clockwork)
        rows.append({"case": "tight_slo_gain", "system": label, **gain})
    return rows


# Orloj at 1.5x P99 on Table C.1's workloads: why every size 1-16 finishes fewer than S
MEAN, Q90 = {"drop_estimator": "mean"}, {"drop_estimator": "quantile:0.9"}
GRANULARITY: dict[str, tuple[dict[str, Any], tuple[int, ...]]] = {
    "S, mean (old default)": (MEAN, SPEC_SIZES),
    "1-16, mean": (MEAN, EVERY_SIZE),
    "S, quantile:0.9": (Q90, SPEC_SIZES),
    "1-16, quantile:0.9 (default)": (Q90, EVERY_SIZE),
}


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    rows = relaxed_slo(quick)
    print_table(
        [r for r in rows if r["case"] == "relaxed_slo"], title="orloj: relaxed SLOs, Poisson"
    )
    print_table([r for r in rows if r["case"] == "tight_slo_gain"], title="orloj: 1.5x P99 gain")
    mix = granularity_rows(GRANULARITY, n_requests=2000 if quick else 5000)
    rows += [{"case": "granularity", **r} for r in mix]
    print_table(mix, title="orloj: batch composition at 1.5x P99 (C.1, bursty)")
    return rows + index_and_decision(out_dir, quick)


def index_and_decision(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    ns = [10, 30, 100, 300, 1000, 3000, 10000]
    rows: list[dict[str, Any]] = []
    per_n = {}
    for n in ns:
        samples = max(2, min(100 if not quick else 10, (30_000 if not quick else 5_000) // n))
        per_n[n] = index_times(n, samples)
        for kind in KINDS:
            row = {"case": "index", "index": kind, "n": n, "samples": samples}
            rows.append(row | per_n[n][kind])
    fit = fit_log2(ns, [per_n[n]["hull"]["insert_us"] for n in ns])
    rows.append({"case": "fit a + c ln(n)^2", "index": "hull", **fit})
    iterations = 15 if quick else 60
    for n in (100, 1000, 10000):
        for kind in KINDS:
            rows.append({"case": "next_batch", **decision_times(n, kind, iterations)})
    save_line_plot(
        Path(out_dir) / "orloj_index.png",
        ns,
        {
            "hull insert": [per_n[n]["hull"]["insert_us"] for n in ns],
            "hull query": [per_n[n]["hull"]["query_us"] for n in ns],
            "scan insert": [per_n[n]["bruteforce"]["insert_us"] for n in ns],
            "scan query": [per_n[n]["bruteforce"]["query_us"] for n in ns],
            "fit a + c ln²n": [fit["a_us"] + fit["c_us"] * math.log(n) ** 2 for n in ns],
        },
        xlabel="requests in the index n",
        ylabel="µs per operation",
        title="Orloj priority index (Fig 4.12)",
    )
    return rows


if __name__ == "__main__":
    out = Path("results/bench")
    result = run(out, quick=False)
    print_table(result, title="orloj")
    write_result(out, "bench_orloj", config={"quick": False}, rows=result)
