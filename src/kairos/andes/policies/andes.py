"""The Andes policy: serve the requests whose users gain most QoE per unit of KV memory.

Every `solve_every` iterations, when the engine is memory- or compute-bound (selective
triggering), it estimates each ongoing request's QoE gain from being served over the next
`horizon_s` seconds at each candidate batch size B, packs requests by `gain / context length`
(Algorithm 1, or the exact DP), keeps the best B, and turns the selection into admissions
and preemptions. The overhead-aware refiner then drops admissions that cost the running
requests more than they gain. Otherwise it admits first-come first-served, like vLLM.

Section 10 of the spec explains why a literal solver thrashes; each guard below is a
parameter so the ablation can switch it off:
- `solve_every`: re-solve every k iterations, hold the batch in between;
- `preempt_only_buffered`: only preempt running requests with (about) zero gain, i.e. whose
  buffered text covers the horizon;
- `prefer_swap`: preempt by swap when copying the KV out and back is cheaper than a recompute;
- `slack_cap`: at most (10th-percentile buffered slack / mean admission stall) preemptions;
- `running_bonus`: hysteresis, running requests' priority is multiplied by (1 + bonus).

Admissions are then paced (`pacing`, policies/pacer.py): a prefill starts only when the
running users' buffered text covers it, shortest prompt first with bounded overtaking.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import ConfigDict, Field, PositiveFloat, PositiveInt

from kairos.andes.gain import serve_wait_gain
from kairos.andes.policies.dp_packing import dp_pack
from kairos.andes.policies.greedy import Packing, batch_bounds, candidate_batches, greedy_pack
from kairos.andes.policies.objectives import (
    Objective,
    admits_queue_between_solves,
    objective_value,
)
from kairos.andes.policies.pacer import Pacer, PacingConfig
from kairos.andes.policies.refiner import VictimCost, refine
from kairos.andes.policies.scratch import Scratch
from kairos.andes.policies.slack_cap import cap_by_slack
from kairos.andes.policies.snapshot import take_snapshot
from kairos.andes.policies.starvation import put_first, starved
from kairos.andes.policy import (
    Decision,
    PreemptMode,
    SchedulerView,
    fcfs_order,
    newest_first,
)
from kairos.andes.request import RequestView
from kairos.cli_utils import Settings


class AndesConfig(Settings):
    model_config = ConfigDict(frozen=True, extra="forbid")

    horizon_s: PositiveFloat = 10.0  # Δt
    objective: Objective = "average"
    solver: Literal["greedy", "dp"] = "greedy"
    divide_by_length: bool = True  # False: rank by gain alone (LQSF)
    on_misfit: Literal["stop", "skip"] = "stop"
    selective_trigger: bool = True
    kv_watermark: float = Field(0.9, gt=0, le=1)
    solve_every: PositiveInt = 3  # the reference code uses 10; E-ablation shows 3 is better here
    preempt_only_buffered: bool = True
    buffered_eps: float = Field(1e-3, ge=0)
    prefer_swap: bool = True
    slack_cap: bool = True
    running_bonus: float = Field(0.1, ge=0)
    refiner: bool = True
    # guard: a request (re)started is served for at least this long (None: Δt, the span its
    # admission was planned for) before it can be preempted again; stops swap ping-pong
    min_residency_s: float | None = Field(None, ge=0)
    growth_reserve: bool = False  # pack memory minus one block per request (room to grow)
    count_restore_cost: bool = True  # refiner charges victims' restore too (the paper: not)
    max_b_candidates: int = Field(48, ge=2)
    dp_memory_units: PositiveInt = 256  # the DP's memory axis, quantised (cost is O(N*B*units))
    predict_prefill_stall: bool = True  # compute-bound trigger also counts the next prefill
    chunked_prefill: bool = False  # run on Sarathi-style mixed iterations instead of vLLM 0.6's
    # anti-starvation (policies/starvation.py): a request not running whose user has waited
    # for text more than this many TTFT targets past due is admitted first; None: off
    starvation_after: float | None = Field(2.0, ge=0)
    starvation_per_solve: PositiveInt | None = 1  # how many starved go first per solve (None: all)
    starvation_vs_queue: float | None = Field(2.0, ge=0)  # ... and overdue > this x queue's mean
    starvation_boost: bool = False  # starved also rank first in the knapsack (makes room)
    # buffer-paced admission (policies/pacer.py, policies/pacing.py), by default shortest
    # prompt first with bounded overtaking (measured best at E4); None: off (the paper's)
    pacing: PacingConfig | None = Field(default_factory=PacingConfig)


class AndesPolicy:
    def __init__(self, config: AndesConfig | None = None, name: str = "andes") -> None:
        self.config = config or AndesConfig()
        self.chunked_prefill = self.config.chunked_prefill
        self.chunk_size: int | None = None  # the scheduler's, when chunked
        self.name = name
        self.solves = 0
        self._victims: list[str] = []
        self._chosen: list[str] = []  # the last solve's admissions, in its order
        self._scratch = Scratch()  # the solve's grids, reused (see scratch.py)
        pacing = self.config.pacing
        self._pacer = Pacer(pacing) if pacing is not None else None

    # -- when to solve -----------------------------------------------------------------
    def _triggered(self, view: SchedulerView) -> bool:
        if not self.config.selective_trigger:
            return True
        if view.used_fraction > self.config.kv_watermark:
            return True
        if not view.running:
            return False
        s_max = max(r.tokens_per_s for r in (*view.running, *view.waiting, *view.swapped))
        ctx = sum(r.context_len for r in view.running)
        predicted = float(view.latency.decode_time(len(view.running), ctx))
        if self.config.predict_prefill_stall and view.waiting:
            # admitting the head of the queue stalls every running stream for its prefill
            head = view.waiting[0]
            stall = float(view.latency.prefill_time(head.to_compute, head.computed))
            predicted = max(predicted, stall)
        return max(predicted, view.token_interval_s) > 1.0 / s_max

    def decide(self, view: SchedulerView) -> Decision:
        if self._pacer is not None:
            self._pacer.observe(view)
        decision = self._decide(view)
        if self._pacer is not None:
            decision.admit = self._pacer.admit(view, decision.admit)
        return decision

    def _decide(self, view: SchedulerView) -> Decision:
        if not (view.running or view.waiting or view.swapped):
            return Decision()
        if not self._triggered(view):
            return Decision(admit=fcfs_order(view), victims=newest_first(view))
        if view.iteration % self.config.solve_every != 0:
            victims = {r.request_id: r for r in view.running}
            order = [victims[i] for i in self._victims if i in victims]
            return Decision(admit=self._between_solves(view), victims=order or newest_first(view))
        self.solves += 1
        decision = self._solve(view)
        decision.solved = True  # the scheduler times it: a policy reads no clock
        return decision

    def _between_solves(self, view: SchedulerView) -> list[RequestView]:
        """Admissions between solves: none without pacing (the batch is held); paced, the
        queue as the buffers allow, or, where the objective decides who waits (`perfect`,
        `admits_queue_between_solves`), only what the last solve chose and pacing held."""
        pacing = self.config.pacing
        if pacing is None or not pacing.between_solves:
            return []
        if admits_queue_between_solves(self.config.objective):
            return fcfs_order(view)
        waiting = {r.request_id: r for r in fcfs_order(view)}
        return [waiting[i] for i in self._chosen if i in waiting]

    # -- the knapsack ------------------------------------------------------------------
    def _solve(self, view: SchedulerView) -> Decision:
        cfg = self.config
        snap = take_snapshot(view, cfg.prefer_swap)
        # leave every ongoing request one block to grow into before the next solve, or the
        # packed batch overflows at once and the mechanism evicts by force
        capacity = view.total_blocks - view.watermark_blocks
        if cfg.growth_reserve:
            capacity -= min(len(snap.requests), view.max_num_seqs)
        mean_ctx = float(snap.context.mean())

        def tau(sizes: np.ndarray) -> np.ndarray:
            return np.asarray(view.latency.decode_time(sizes, sizes * mean_ctx), dtype=np.float64)

        s_max = float(snap.state.speed.max())
        b_min, b_max = batch_bounds(snap.blocks, capacity, tau, s_max, view.max_num_seqs)
        batches = candidate_batches(b_min, b_max, cfg.max_b_candidates, keep=len(view.running))
        taus = tau(batches)
        grid = (len(snap.requests), len(batches))
        gain_grid, serve_grid = self._scratch.take("gain", grid), self._scratch.take("serve", grid)
        priority = self._scratch.take("priority", grid)
        gain, q_serve, q_wait = serve_wait_gain(
            snap.state,
            view.now,
            cfg.horizon_s,
            snap.start_delay,
            snap.needs_decode,
            taus,
            out=(gain_grid, serve_grid),
        )
        value = objective_value(cfg.objective, snap, view.now, gain, q_serve, q_wait)
        if cfg.divide_by_length:
            np.divide(value, snap.blocks[:, None], out=priority)
        else:
            np.copyto(priority, value)
        priority[snap.running] *= 1.0 + cfg.running_bonus
        first = starved(
            snap.state,
            view.now,
            snap.running,
            cfg.starvation_after,
            cfg.starvation_per_solve,
            cfg.starvation_vs_queue,
        )
        if first and cfg.starvation_boost:  # starved rank above all others, the oldest highest
            priority[first] = float(priority.max()) + 1.0 + np.arange(len(first), 0, -1)[:, None]
        packing = self._pack(value, priority, snap.blocks, capacity, batches)
        near = np.flatnonzero(batches >= packing.batch)
        j = int(near[0]) if packing.batch and near.size else len(batches) - 1
        chosen_gain = value[:, j]
        chosen_priority = priority[:, j]
        admit: list[int] = np.flatnonzero(packing.selected & ~snap.running).tolist()
        preempt: list[int] = np.flatnonzero(~packing.selected & snap.running).tolist()
        if cfg.preempt_only_buffered:
            preempt = [i for i in preempt if gain[i, j] <= cfg.buffered_eps]
        residency = cfg.horizon_s if cfg.min_residency_s is None else cfg.min_residency_s
        if residency > 0:
            reqs = snap.requests
            preempt = [i for i in preempt if view.now - reqs[i].admitted_at >= residency]
        if cfg.slack_cap and preempt and admit:
            preempt = cap_by_slack(snap, view.now, preempt, admit)
        if cfg.refiner:
            ref = refine(
                snap.state,
                view.now,
                float(taus[j]),
                chosen_gain,
                chosen_priority,
                snap.blocks,
                snap.start_delay,
                VictimCost(
                    snap.swap_cost,
                    snap.recompute_cost,
                    snap.restore_mode_swap,
                    snap.blocks,
                    snap.cpu_blocks_free,
                    cfg.count_restore_cost,
                ),
                snap.running,
                admit,
                preempt,
                view.free_blocks - view.watermark_blocks,
            )
            admit, preempt = ref.admit, ref.preempt
        admit = sorted(admit, key=lambda i: -chosen_priority[i])
        admit = put_first(admit, [i for i in first if packing.selected[i]])
        running_idx = np.flatnonzero(snap.running)
        victim_idx = sorted(running_idx.tolist(), key=lambda i: chosen_priority[i])
        self._victims = [snap.requests[i].request_id for i in victim_idx]
        self._chosen = [snap.requests[i].request_id for i in admit]
        return Decision(
            admit=[snap.requests[i] for i in admit],
            preempt=[
                (
                    snap.requests[i],
                    PreemptMode.SWAP if snap.restore_mode_swap[i] else PreemptMode.RECOMPUTE,
                )
                for i in preempt
            ],
            victims=[snap.requests[i] for i in victim_idx],
            stop_at_first_misfit=cfg.on_misfit == "stop",
            victim_mode=PreemptMode.SWAP if cfg.prefer_swap else PreemptMode.RECOMPUTE,
        )

    def _pack(
        self,
        value: np.ndarray,
        priority: np.ndarray,
        blocks: np.ndarray,
        capacity: int,
        batches: np.ndarray,
    ) -> Packing:
        if self.config.solver == "greedy":
            return greedy_pack(
                value,
                priority,
                blocks,
                capacity,
                batches,
                skip=self.config.on_misfit == "skip",
                scratch=self._scratch,
            )
        return dp_pack(value, blocks, capacity, batches, self.config.dp_memory_units)


def lqsf_policy(config: AndesConfig | None = None) -> AndesPolicy:
    """Least QoE Slack First: rank by gain alone (no division by context), no refiner."""
    base = config or AndesConfig()
    return AndesPolicy(
        base.model_copy(update={"divide_by_length": False, "refiner": False}), "lqsf"
    )


def andes_dp_policy(config: AndesConfig | None = None) -> AndesPolicy:
    """Andes with the exact DP (Algorithm 2) instead of the greedy packer."""
    base = config or AndesConfig()
    return AndesPolicy(base.model_copy(update={"solver": "dp"}), "andes-dp")
