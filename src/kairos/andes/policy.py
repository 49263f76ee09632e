"""The policy interface: a pure function from a snapshot of the engine to a decision.

The same policy object drives the simulator and the real engine (docs/architecture.md: one
driver per system). It reads the `SchedulerView` it is handed (requests, free KV blocks, the
latency model, `now`) and returns a `Decision`: which requests to preempt now and in which
order to try to admit requests. The requests are read-only to it (`RequestView`; the table's
rows are read-only arrays), and a decision names requests only for their ids: the mechanism
(`kairos.andes.scheduler`) looks each up, carries the decision out and enforces memory and
batch limits, so a policy can never corrupt engine state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

import numpy as np

from kairos.andes.latency import LatencyModel
from kairos.andes.request import RequestView


class PreemptMode(StrEnum):
    RECOMPUTE = "recompute"
    SWAP = "swap"


class TableRows(Protocol):
    """What a policy may read of the scheduler's struct-of-arrays mirror: read-only rows."""

    def rows(self, requests: Sequence[RequestView]) -> np.ndarray: ...


@dataclass(frozen=True)
class SchedulerView:
    now: float
    iteration: int
    running: Sequence[RequestView]  # admission order
    waiting: Sequence[RequestView]  # queue order (recompute-preempted first, then arrival order)
    swapped: Sequence[RequestView]  # swap order
    free_blocks: int
    total_blocks: int
    free_cpu_blocks: int
    block_size: int
    latency: LatencyModel
    max_num_seqs: int
    max_num_batched_tokens: int
    watermark_blocks: int
    token_interval_s: float = 0.0  # observed time per decode step for running streams, recently
    table: TableRows | None = None  # numpy mirror of the requests' state (fast snapshots)

    @property
    def used_fraction(self) -> float:
        return 1.0 - self.free_blocks / self.total_blocks if self.total_blocks else 1.0


@dataclass
class Decision:
    """What to do this iteration.

    `preempt`: running requests to evict now, each with a mechanism. `admit`: waiting or
    swapped requests to bring in, in priority order; the mechanism admits them while memory
    and batch limits allow and, if `stop_at_first_misfit`, stops at the first that does not
    fit (FCFS head-of-line semantics). `victims`: the order in which to evict running
    requests if a decode step runs out of blocks (default: newest admitted first).
    """

    admit: list[RequestView] = field(default_factory=list)
    preempt: list[tuple[RequestView, PreemptMode]] = field(default_factory=list)
    victims: list[RequestView] | None = None
    stop_at_first_misfit: bool = True
    victim_mode: PreemptMode = PreemptMode.RECOMPUTE  # swap falls back to recompute when full
    solved: bool = False  # the policy ran its optimiser for this decision (reported, not used)


class Policy(Protocol):
    """All a policy reads is the view it is handed; all the scheduler reads of a policy is
    declared here. Time comes only from `view.now`."""

    name: str
    chunked_prefill: bool  # Sarathi-style mixed iterations (decodes plus prefill chunks)
    chunk_size: int | None  # the per-iteration token budget then; None: the scheduler's

    def decide(self, view: SchedulerView) -> Decision: ...


def fcfs_order(view: SchedulerView) -> list[RequestView]:
    """vLLM 0.6's admission order: swapped requests first, then the waiting queue."""
    return [*view.swapped, *view.waiting]


def newest_first(view: SchedulerView) -> list[RequestView]:
    return sorted(view.running, key=lambda r: r.admitted_seq, reverse=True)
