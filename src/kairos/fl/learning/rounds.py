"""Synchronous federated rounds on the FedScale-like clock: select, train, aggregate, advance.

One round of one model (a plain FL job, or one Auxo cohort, each with its own `TrainingState`
and so its own clock): pick `ceil(overcommit x P)` clients that are online now among the
candidates (all clients, or a cohort's requesters), time their tasks on their devices, keep the
first P that finish before the deadline and before their device goes offline, aggregate those,
and move the state's clock to the P-th completion (or to the deadline when fewer finish).
Stragglers' and failed clients' results are discarded by the rule, so their training is not
computed; their tasks still count as dispatched work. The runner reads only clients' training
data and counts, never their true group.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.fl.learning.aggregators import Aggregator, Algorithm
from kairos.fl.learning.clock import AlwaysOnline, Availability, ClientClock
from kairos.fl.learning.dataset import FederatedDataset
from kairos.fl.learning.local import (
    LocalConfig,
    LocalUpdate,
    evaluate_clients,
    local_train_many,
)
from kairos.fl.learning.metrics import AccuracyStats, EvalPoint, History
from kairos.fl.learning.models import Model
from kairos.fl.timing import completes

Selector = Callable[[np.ndarray, int, np.random.Generator], np.ndarray]


def uniform_selector(pool: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """FedScale's default: k clients uniformly at random among those online."""
    return np.sort(rng.choice(pool, size=min(k, len(pool)), replace=False))


class RoundConfig(BaseModel):
    """Per-round participation: P, over-commitment, deadline, and the wait when none is online."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    participants: int = Field(40, ge=1)  # P: updates aggregated per round
    overcommit: float = Field(1.3, ge=1)  # FedScale's default: ask for 30% more
    deadline_s: float | None = Field(None, gt=0)  # later completions are stragglers
    min_updates: int = Field(1, ge=1)  # fewer completions: the round is wasted
    idle_s: float = Field(60.0, gt=0)  # clock advance when no candidate is online

    def request_size(self, participants: int) -> int:
        return math.ceil(participants * self.overcommit - 1e-9)


@dataclass
class TrainingState:
    """Everything that evolves while one model trains: weights, server-optimizer state, its
    own virtual clock and round counter, and resources spent so far."""

    weights: np.ndarray
    aggregator: Aggregator
    now: float = 0.0
    round: int = 0
    participant_rounds: int = 0
    dispatched: int = 0

    def clone(self) -> TrainingState:
        """An independent copy (weights, optimizer state, clock): what a cohort's child gets."""
        return TrainingState(
            self.weights.copy(),
            self.aggregator.clone(),
            self.now,
            self.round,
            self.participant_rounds,
            self.dispatched,
        )


@dataclass(frozen=True)
class RoundResult:
    """What happened in one round; `updates` rows follow `participants` (completion order)."""

    round: int
    start: float
    end: float
    selected: np.ndarray  # clients dispatched
    participants: np.ndarray  # clients whose updates were aggregated
    updates: np.ndarray  # (len(participants), n_params) pseudo-gradients
    counts: np.ndarray
    # loss of the global model on each participant's data before training; NaN when the
    # aggregator does not use it (`Aggregator.uses_losses`), as computing it is a full pass
    losses: np.ndarray
    train_losses: np.ndarray
    stragglers: np.ndarray  # finished, but after the P-th or after the deadline
    failed: np.ndarray  # went offline before finishing
    aggregated: bool = field(default=False)


@dataclass
class RoundRunner:
    """Runs rounds of `algorithm` on `dataset` with `model`; shared by every state it drives."""

    model: Model
    dataset: FederatedDataset
    algorithm: Algorithm
    local: LocalConfig = field(default_factory=LocalConfig)
    config: RoundConfig = field(default_factory=RoundConfig)
    clock: ClientClock | None = None  # None: every task takes 1 s
    availability: Availability | None = None  # None: always online
    selector: Selector = uniform_selector

    def __post_init__(self) -> None:
        if self.availability is None:
            self.availability = AlwaysOnline(len(self.dataset))
        if self.availability.n_clients < len(self.dataset):
            raise ValueError("availability covers fewer clients than the dataset has")
        self._local = self.algorithm.local(self.local)
        self._counts = self.dataset.train_counts

    def new_state(self, rng: np.random.Generator) -> TrainingState:
        """A fresh model (initialised from `rng`) with a fresh server optimizer at time 0."""
        return TrainingState(self.model.init(rng), self.algorithm.fresh())

    def run_round(
        self,
        state: TrainingState,
        rng: np.random.Generator,
        candidates: np.ndarray | None = None,
        participants: int | None = None,
    ) -> RoundResult:
        """One round for `state` (updated in place) among `candidates` with budget
        `participants` (default: the config's P)."""
        assert self.availability is not None
        p = self.config.participants if participants is None else participants
        online = self.availability.online(state.now) & (self._counts > 0)
        if candidates is None:
            pool = np.flatnonzero(online)
        else:
            cand = np.asarray(candidates, dtype=np.int64)
            pool = np.unique(cand[online[cand]])
        start = state.now
        empty = np.zeros(0, dtype=np.int64)
        if len(pool) == 0 or p < 1:
            state.now += self.config.idle_s
            return self._result(state, start, empty, empty, [], empty, empty)
        selected = self.selector(pool, self.config.request_size(p), rng)
        work = np.array([self._local.work(int(self._counts[c])) for c in selected])
        if self.clock is None:
            dur = np.ones(len(selected))
        else:
            dur = self.clock.durations(selected, work, rng)
        offline = self.availability.offline_at(selected, start)
        ok = completes(np.full(len(selected), start), dur, offline)
        deadline = self.config.deadline_s
        in_time = ok & (dur <= deadline) if deadline is not None else ok
        order = [int(i) for i in np.argsort(dur, kind="stable") if in_time[i]]
        kept = order[:p]
        if len(kept) == p:
            length = float(dur[kept[-1]])
        elif deadline is not None:
            length = deadline
        else:
            length = float(dur.max())
        keep_mask = np.zeros(len(selected), dtype=bool)
        keep_mask[kept] = True
        stragglers = selected[ok & ~keep_mask]
        failed = selected[~ok]
        chosen = selected[kept]
        updates = []
        if len(chosen) >= self.config.min_updates:
            data = [self.dataset.clients[c] for c in chosen]
            updates = local_train_many(
                self.model,
                state.weights,
                data,
                self._local,
                rng,
                loss_before=state.aggregator.uses_losses,
            )
        state.now = start + length
        state.dispatched += len(selected)
        return self._result(state, start, selected, chosen, updates, stragglers, failed)

    def _result(
        self,
        state: TrainingState,
        start: float,
        selected: np.ndarray,
        chosen: np.ndarray,
        updates: list[LocalUpdate],
        stragglers: np.ndarray,
        failed: np.ndarray,
    ) -> RoundResult:
        """Aggregate (when there are updates), count the round, and record it."""
        n = self.model.n_params
        u = np.array([x.update for x in updates]).reshape(len(updates), n)
        counts = np.array([x.n_samples for x in updates], dtype=np.int64)
        losses = np.array([x.loss_before for x in updates])
        if updates:
            state.weights = state.aggregator.aggregate(state.weights, u, counts, losses)
            state.participant_rounds += len(updates)
        if len(selected):
            state.round += 1
        return RoundResult(
            round=state.round,
            start=start,
            end=state.now,
            selected=selected,
            participants=chosen if updates else np.zeros(0, dtype=np.int64),
            updates=u,
            counts=counts,
            losses=losses,
            train_losses=np.array([x.train_loss for x in updates]),
            stragglers=stragglers,
            failed=failed,
            aggregated=bool(updates),
        )

    def evaluate(self, state: TrainingState, clients: np.ndarray | None = None) -> EvalPoint:
        """Per-client test accuracy of `state`'s model on `clients` (all by default)."""
        scores = evaluate_clients(self.model, self.dataset, state.weights, clients=clients)
        return EvalPoint(
            round=state.round,
            time=state.now,
            participant_rounds=state.participant_rounds,
            dispatched=state.dispatched,
            stats=AccuracyStats.of(scores.accuracy),
            loss=float(np.nanmean(scores.loss)) if len(scores.loss) else float("nan"),
        )


def train(
    runner: RoundRunner,
    rounds: int,
    rng: np.random.Generator,
    state: TrainingState | None = None,
    eval_every: int = 10,
    target: float | None = None,
) -> tuple[TrainingState, History]:
    """Plain FL: `rounds` rounds of one model over all clients, evaluated every `eval_every`
    rounds (and at the start and end). Stops early once the mean accuracy reaches `target`."""
    state = runner.new_state(rng) if state is None else state
    history = History()
    history.append(runner.evaluate(state))
    first, last_eval = state.round, state.round
    for _ in range(rounds * 100):  # idle waits (nobody online) do not count as rounds
        if state.round >= first + rounds:
            break
        runner.run_round(state, rng)
        done = state.round >= first + rounds
        if state.round - last_eval >= eval_every or (done and state.round > last_eval):
            last_eval = state.round
            point = runner.evaluate(state)
            history.append(point)
            if target is not None and point.stats.mean >= target:
                break
    return state, history
