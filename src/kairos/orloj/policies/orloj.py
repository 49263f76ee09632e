"""The Orloj policy: Algorithm 4.1 over per-batch-size queues ranked by the Orloj score.

Each iteration (spec 3.6): move the time base if b(t − t0) reached `reset_exponent`; drop
requests that can no longer make it at a batch size (per-app deadline heaps, largest size
first, so viable sets stay nested; a request leaving Q_1 is timed out); pick the candidate
batch size (`bs_order`); fire that queue's milestones and pop its top-bs requests by score.
The state the iteration works on lives in `queues.ScoredQueues`; the distributions, tables
and estimates in `store.DistributionStore`, rebuilt off the hot path by `on_profile`, and by
`on_batch_done` when speed feedback is on and the machine's speed moved (rare under a steady
slowdown, never at the profiled speed: only a move past `speed_tolerance` rebuilds).

Pure (docs/architecture.md, "A policy decides; it does not act"): time is the `now` it is
handed (kept monotone), no I/O, no randomness. The same object drives the simulator and the
real server.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from heapq import heappop
from typing import Any

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.config import OrlojConfig
from kairos.orloj.policy import Batch, ProfileSnapshot, Request
from kairos.orloj.queues import Pending, ScoredQueues
from kairos.orloj.score import cost_steps
from kairos.orloj.speed import SizeCorrection, SpeedTracker
from kairos.orloj.store import DistributionStore
from kairos.orloj.window import LatencyWindows

__all__ = ["OrlojConfig", "OrlojPolicy"]


class OrlojPolicy:
    """`BatchPolicy` for Orloj.

    Warm-start it with offline solo samples per app, here or through a first `on_profile`:
    `OrlojPolicy(OrlojConfig(...), profile={"app": [solo_ms, ...], ...})`. Keyword shortcuts
    override config fields: `OrlojPolicy(batch_model=m, sizes=(1, 2, 4), b=1e-5)`.
    """

    def __init__(
        self,
        config: OrlojConfig | None = None,
        *,
        profile: Mapping[str, Sequence[float]] | None = None,
        name: str = "orloj",
        batch_model: BatchLatencyModel | None = None,
        sizes: Sequence[int] | None = None,
        **options: Any,
    ) -> None:
        if batch_model is not None:
            options["batch_model"] = batch_model
        if sizes is not None:
            # both given and different: say so, rather than let `sizes=` (which `make_system`
            # passes) silently override an ablation's `batch_sizes`
            if "batch_sizes" in options and tuple(options["batch_sizes"]) != tuple(sizes):
                raise ValueError(
                    f"batch sizes given twice ({tuple(sizes)} and {options['batch_sizes']}):"
                    " set S once (SimPoint.batch_sizes, `--set batch_sizes=[...]`)"
                )
            options["batch_sizes"] = tuple(sizes)
        base = config or OrlojConfig()
        if options:
            base = OrlojConfig.model_validate({**dict(base), **options})
        cfg = self.config = base
        self.name = name
        self.sizes = list(cfg.batch_sizes)
        self.windows = LatencyWindows(
            cfg.n_bins, cfg.window_ms, cfg.min_window_samples, cfg.grid_headroom
        )
        self.store = DistributionStore(self.windows, cfg)
        self.queues = ScoredQueues(self.sizes, cfg.index, self.store, cfg.b)
        self.speed = (
            SpeedTracker(cfg.speed_window, cfg.speed_tolerance) if cfg.speed_window else None
        )
        self.sizing = (
            SizeCorrection(cfg.speed_window) if cfg.speed_window and cfg.size_correction else None
        )
        self._applied: dict[int, float] = {}  # per-size factors the store's model carries
        self._now = -math.inf
        self._outstanding = 0
        self._busy_until = -math.inf
        if profile:
            self.windows.warm_start(profile)
            self.store.rebuild()

    # -- BatchPolicy ----------------------------------------------------------------------
    def pending(self) -> int:
        return len(self.queues.entries)

    def on_arrival(self, request: Request, now: float) -> list[Request]:
        t = self._tick(now)
        if not self.store.ready:
            raise RuntimeError("Orloj has no latency profile: pass profile= or on_profile first")
        if request.request_id in self.queues.entries:
            raise ValueError(f"request {request.request_id} is already pending")
        self.windows.record_arrival(request.app, t)
        steps = cost_steps(request.deadline, request.cost_steps, self.config.cost)
        e = Pending(request, self.store.key(request.app), steps, len(self.sizes))
        m = self.queues.viable(e, t)
        if m == 0:
            return [request]
        self._maybe_reset(t)
        self.queues.grow(e, m, t)
        return []

    def next_batch(self, now: float) -> tuple[Batch | None, list[Request]]:
        t = self._tick(now)
        if self._outstanding:
            ahead = self.config.schedule_ahead_ms
            if ahead <= 0 or self._outstanding > 1 or self._busy_until - t > ahead:
                return None, []
            t = self._tick(max(t, self._busy_until))
        self._maybe_reset(t)  # Algorithm 4.1 lines 1-4
        dropped = self._drop(t)  # lines 10-14
        j = self._candidate()  # lines 15-21
        if j is None:
            return None, dropped
        depth = len(self.queues.queues[j].index)
        # lines 5-9 happen inside pop, for the one queue whose scores are read
        members = self.queues.pop(j, self.sizes[j], t)  # line 22: PopBatch
        est = self.store.batch_mean([e.key for e in members])
        self._outstanding += 1
        self._busy_until = t + est
        meta = {"queue_len": float(depth), "t_sched": t, "est_ms": est}
        if self.speed is not None:
            meta["speed"] = self.speed.factor  # est_ms / speed: what the unscaled g_k expects
            if self.sizing is not None:  # ... / size_factor too, with per-size correction
                meta["size_factor"] = self._applied.get(len(members), 1.0)
        return Batch([e.req for e in members], meta=meta), dropped

    def on_batch_done(self, batch: Batch, now: float, measured_ms: float) -> None:
        t = self._tick(now)
        self._outstanding = max(0, self._outstanding - 1)
        if not self._outstanding:
            self._busy_until = -math.inf
        if self.speed is not None and "speed" in batch.meta:
            expected = batch.meta["est_ms"] / batch.meta["speed"]
            expected /= batch.meta.get("size_factor", 1.0)
            moved = self.speed.observe(measured_ms, expected) is not None
            if self.sizing is not None:
                moved |= self._correct_size(batch.size, measured_ms, expected)
            if moved:  # the machine's speed moved: stretch every distribution
                if self.sizing is None:
                    self.store.model = self.config.batch_model.scaled(self.speed.factor)
                else:
                    self.store.model = self.config.batch_model.corrected(
                        self.sizes, self.speed.factor, self._applied
                    )
                self.store.rebuild()
                self.queues.refresh(t, structural=True)

    def _correct_size(self, k: int, measured_ms: float, expected_ms: float) -> bool:
        """Learn size k's own factor; True if it moved past the tolerance (a rebuild is due)."""
        assert self.sizing is not None and self.speed is not None
        self.sizing.observe(k, measured_ms, expected_ms * self.speed.factor)
        new, old = self.sizing.factor(k), self._applied.get(k, 1.0)
        if abs(new - old) <= self.config.speed_tolerance * old:
            return False
        self._applied[k] = new
        return True

    def next_wakeup(self, now: float) -> float | None:
        if self._outstanding == 1 and self.config.schedule_ahead_ms > 0 and self.pending():
            return max(now, self._busy_until - self.config.schedule_ahead_ms)
        return None

    def on_profile(self, snapshot: ProfileSnapshot) -> None:
        """Add solo samples; rebuild the tables (and rescore everyone) if anything moved."""
        t = max(self._now, 0.0)
        fresh = False
        for app, values in snapshot.samples.items():
            fresh |= len(values) > 0
            self.windows.add(app, values, t)
        rotated = self.windows.advance(t)
        if not self.store.ready and not self.windows.apps:
            return
        moved = self.store.ready and self.store.weights_moved(self.config.weight_tolerance)
        if fresh or rotated or moved or not self.store.ready:
            self.store.rebuild()
            self.queues.refresh(t, structural=True)

    # -- introspection (tests, reports) ---------------------------------------------------------
    def estimate(self, app: str, bs: int) -> float:
        """The drop estimate of L_B for a request of `app` in a batch of `bs`."""
        return self.store.estimates[self.store.key(app)][self.sizes.index(bs)]

    def queue_ids(self, bs: int) -> set[int]:
        j = self.sizes.index(bs)
        return {rid for rid, e in self.queues.entries.items() if e.m > j}

    def check_invariants(self) -> None:
        self.queues.check()

    @property
    def time_base(self) -> float:
        return self.queues.t0

    # -- Algorithm 4.1 --------------------------------------------------------------------------
    def _tick(self, now: float) -> float:
        if now > self._now:
            self._now = now
        return self._now

    def _maybe_reset(self, t: float) -> None:
        if self.config.b * (t - self.queues.t0) >= self.config.reset_exponent:
            self.queues.rebase(t)

    def _drop(self, t: float) -> list[Request]:
        """Lines 10-14: remove requests that cannot make it at a batch size, largest size first
        (keeps the viable sets nested); a request leaving Q_1 is timed out."""
        dropped = []
        entries = self.queues.entries
        for j in range(len(self.sizes) - 1, -1, -1):
            for key, heap in self.queues.queues[j].heaps.items():
                est = self.store.estimates[key][j]
                while heap and t + est > heap[0][0]:
                    _, rid = heappop(heap)
                    e = entries.get(rid)
                    if e is None or e.m <= j or e.key != key:
                        continue
                    self.queues.shrink(e, j)
                    if j == 0:
                        dropped.append(e.req)
        return dropped

    def _candidate(self) -> int | None:
        """Lines 15-21: the batch size to run (an index into S), or None if all are empty."""
        rows = []
        for j, bs in enumerate(self.sizes):
            front = self.queues.earliest(j) if len(self.queues.queues[j].index) else None
            if front is None:
                rows.append((-math.inf, bs, j, -math.inf))
                continue
            d, key = front
            rows.append((d, bs, j, d - self.store.estimates[key][j]))
        if self.config.bs_order == "paper":
            order = sorted(rows, key=lambda r: (r[0], r[1]), reverse=True)
        elif self.config.bs_order == "earliest_deadline":  # the prose: earliest D_Q, ties larger
            order = sorted((r for r in rows if r[0] > -math.inf), key=lambda r: (r[0], -r[1]))
        else:  # clockwork_priority: least laxity first, ties to the larger batch
            order = sorted((r for r in rows if r[0] > -math.inf), key=lambda r: (r[3], -r[1]))
        for d, bs, j, _ in order:
            if d > -math.inf and len(self.queues.queues[j].index) >= bs:
                return j
        return None
