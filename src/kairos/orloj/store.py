"""The distribution store: per-(app, batch size) L_B, point estimates and score tables.

Everything the scheduler's hot path reads is precomputed here, off the critical path, each
time a profile snapshot changes the picture (spec 2.1): m apps x |S| batch distributions, one
`ScoreTable` each, and the drop estimates. Requests are looked up by key: their app, or
`MIXTURE_KEY` for an app without a histogram yet, or `POOLED_KEY` for everyone when app tags
are ignored (the ablation).

The score's cost term (Eq 4.1's 1/E[L], the worker time a request's batch takes) is by default
each app's own E[L_B] (`cost_mean="app"`): a long request in a batch of k is priced above a
short one. With the paper's b = 1e-4 that difference outweighs the urgency term (e^{-b s}
varies by at most 10% over a 1-s SLO), so a long request always ranked below the short ones
and was picked only once its chance had faded: at relaxed SLOs under Poisson arrivals the
longest application of three-modal fell behind the others. The fix is b = 1e-3 (config.py);
`cost_mean="mixture"` (every member priced at the batch's E[L_B] under the mixture) also
removes the starvation but costs part of the tight-SLO gain. The measurements are in
docs/orloj.md ("Relaxed SLOs under Poisson arrivals"), made by `benchmarks/bench_orloj.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kairos.orloj.batchdist import (
    MIXTURE_KEY,
    BatchDist,
    BatchMode,
    batch_dists,
    expected_max,
)
from kairos.orloj.config import CostMean, OrlojConfig
from kairos.orloj.dist import Histogram
from kairos.orloj.score import ScoreTable
from kairos.orloj.window import LatencyWindows

POOLED_KEY = "__pooled__"


class DistributionStore:
    def __init__(self, windows: LatencyWindows, config: OrlojConfig) -> None:
        self.windows = windows
        self.sizes = list(config.batch_sizes)
        self.model = config.batch_model  # stretched by speed feedback, rebuilt from config's
        self.mode: BatchMode = config.batch_dist_mode
        self.b = config.b
        self.estimator = config.drop_estimator
        self.pooled = config.pooled
        self.cost_mean: CostMean = config.cost_mean
        self.hists: dict[str, Histogram] = {}  # member distributions (incl. the mixture)
        self.weights: dict[str, float] = {}
        self.dists: dict[str, list[BatchDist]] = {}
        self.tables: dict[str, list[ScoreTable]] = {}
        self.estimates: dict[str, list[float]] = {}
        self.version = 0
        self._batch_means: dict[tuple[tuple[str, int], ...], float] = {}

    @property
    def ready(self) -> bool:
        return bool(self.tables)

    def key(self, app: str) -> str:
        if self.pooled:
            return POOLED_KEY
        return app if app in self.hists and app != MIXTURE_KEY else MIXTURE_KEY

    def current_weights(self) -> dict[str, float]:
        if self.pooled:
            return {POOLED_KEY: 1.0}
        return self.windows.weights(self.windows.apps)

    def weights_moved(self, tolerance: float) -> bool:
        new = self.current_weights()
        if set(new) != set(self.weights):
            return True
        return any(abs(new[a] - self.weights[a]) > tolerance for a in new)

    def rebuild(self) -> None:
        """Recompute every table from the windows (O(m·|S|·bins), milliseconds)."""
        pooled = {POOLED_KEY: self.windows.pooled()} if self.pooled else None
        hists = pooled or self.windows.histograms()
        weights = self.current_weights()
        dists = batch_dists(hists, weights, self.model, self.sizes, self.mode)
        apps = sorted(hists)
        mix = Histogram.mixture([hists[a] for a in apps], [weights.get(a, 0.0) for a in apps])
        self.hists = {**hists, MIXTURE_KEY: mix}
        self.weights = weights
        self.dists = dists
        shared = dists.get(MIXTURE_KEY) if self.cost_mean == "mixture" else None
        self.tables = {
            key: [
                ScoreTable.build(d.hist, (shared[i] if shared else d).mean, self.b)
                for i, d in enumerate(row)
            ]
            for key, row in dists.items()
        }
        self.estimates = {key: self._monotone(key, row) for key, row in dists.items()}
        self._batch_means = {}
        self.version += 1

    def _monotone(self, key: str, row: list[BatchDist]) -> list[float]:
        """Drop estimates per batch size; they must not decrease (nested viable sets)."""
        est = np.array([d.estimate(self.estimator) for d in row])
        drops = est[:-1] - est[1:]
        if np.any(drops > 1e-9 * np.maximum(1.0, np.abs(est[:-1]))):
            raise ValueError(
                f"batch-latency estimates for {key!r} decrease with batch size ({est.tolist()}):"
                " the batch model g_k must be non-decreasing in k"
            )
        return [float(v) for v in np.maximum.accumulate(est)]

    def batch_mean(self, keys: Sequence[str]) -> float:
        """E[L_B] of one actual batch: the max over its members' own distributions."""
        counts: dict[str, int] = {}
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
        mix = tuple(sorted(counts.items()))
        if mix not in self._batch_means:  # compositions repeat: cache until the next rebuild
            size = len(keys)
            factors = [(self.hists[key], n) for key, n in mix]
            e_max = expected_max(factors)
            self._batch_means[mix] = self.model.shift(size) + self.model.scale(size) * e_max
        return self._batch_means[mix]
