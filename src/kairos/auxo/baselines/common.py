"""What every clustered-FL baseline shares: several cluster models trained in lockstep rounds.

Each cluster model is a `TrainingState` driven by the one `RoundRunner` (so local training,
aggregation, over-commitment and the clock are exactly plain FL's). The cluster models of a
baseline train in parallel inside one synchronous round: every cluster's round starts at the
same simulated time and the round ends when the slowest cluster's round ends. That is the
natural reading of the papers (one server, one round loop, K models) and is conservative for
time-to-accuracy. Resources are counted once for the whole set (participant-rounds and
dispatched tasks), scaled by `cost_factor` where a client does more than one training's work
per task (IFCA's K-fold download and evaluation).

Evaluation puts every client on its assigned model and reads its own test split, so the
result has the same shape as Auxo's: per-client accuracy, a `History` of `EvalPoint`s, and
the assignment (for ARI against the hidden groups, which no baseline reads).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kairos.fl.learning import (
    AccuracyStats,
    EvalPoint,
    History,
    RoundResult,
    RoundRunner,
    TrainingState,
    evaluate_clients,
)


@dataclass(frozen=True)
class BaselineResult:
    """One baseline run: the models' trajectory and where every client ended up."""

    name: str
    history: History
    assignment: np.ndarray  # index of each client's model
    accuracy: np.ndarray  # each client's final test accuracy on its model
    n_models: int
    weights: list[np.ndarray] = field(default_factory=list)  # each model's final weights
    events: dict[str, object] = field(default_factory=dict)


def proportional_budgets(sizes: np.ndarray | list[int], total: int) -> np.ndarray:
    """Split `total` participants over clusters in proportion to `sizes` (largest remainder),
    at least one for every non-empty cluster and none for an empty one.

    Uniform sampling of `total` clients from the whole population gives each cluster this
    share in expectation, so a clustered method spends the same per-round budget as plain FL.
    """
    s = np.asarray(sizes, dtype=np.float64)
    if s.ndim != 1 or np.any(s < 0):
        raise ValueError("sizes must be a 1-D array of non-negative numbers")
    live = s > 0
    if not live.any() or total < 1:
        return np.zeros(len(s), dtype=np.int64)
    total = max(total, int(live.sum()))
    exact = s / s.sum() * total
    out = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - out), kind="stable")
    out[order[: total - int(out.sum())]] += 1
    short = live & (out == 0)
    while short.any():  # give a starved cluster one, taken from the largest
        j = int(np.flatnonzero(short)[0])
        out[int(np.argmax(out))] -= 1
        out[j] = 1
        short = live & (out == 0)
    return out


def client_losses(
    runner: RoundRunner, weights: list[np.ndarray], clients: np.ndarray
) -> np.ndarray:
    """Training loss of each model on each client's own training data: (len(clients), K).

    This is client-side work (IFCA's "evaluate every model", FlexCFL's cold start): the
    client runs the models it downloaded on its data and reports only the index it picks.
    """
    out = np.empty((len(clients), len(weights)))
    stacked = np.stack(weights)
    for row, c in enumerate(np.asarray(clients, dtype=np.int64)):
        data = runner.dataset.clients[int(c)]
        out[row] = runner.model.loss_stack(stacked, data.x_train, data.y_train)
    return out


@dataclass
class ClusterSet:
    """K cluster models on one runner, their shared round clock and resource counters."""

    runner: RoundRunner
    states: list[TrainingState]
    assignment: np.ndarray  # model index of every client (what evaluation uses)
    cost_factor: float = 1.0  # client work per task, in trainings (IFCA: K)
    now: float = 0.0
    round: int = 0
    participant_rounds: float = 0.0
    dispatched: float = 0.0
    history: History = field(default_factory=History)

    @classmethod
    def single(cls, runner: RoundRunner, rng: np.random.Generator) -> ClusterSet:
        """One global model for every client (plain FL; the warm-up of CL+HC and CCL)."""
        n = len(runner.dataset)
        return cls(runner, [runner.new_state(rng)], np.zeros(n, dtype=np.int64))

    @property
    def n_models(self) -> int:
        return len(self.states)

    def members(self, k: int) -> np.ndarray:
        return np.flatnonzero(self.assignment == k)

    def run(
        self,
        rng: np.random.Generator,
        candidates: list[np.ndarray],
        budgets: list[int] | np.ndarray,
    ) -> list[RoundResult | None]:
        """One synchronous round: cluster k trains among `candidates[k]` with `budgets[k]`
        participants (skipped when either is empty); the round ends with the slowest."""
        if len(candidates) != self.n_models or len(budgets) != self.n_models:
            raise ValueError("one candidate set and one budget per cluster model")
        results: list[RoundResult | None] = []
        end = self.now
        for state, cand, p in zip(self.states, candidates, budgets, strict=True):
            if len(cand) == 0 or int(p) < 1:
                results.append(None)
                continue
            state.now = self.now
            res = self.runner.run_round(state, rng, candidates=cand, participants=int(p))
            end = max(end, res.end)
            self.participant_rounds += self.cost_factor * len(res.participants)
            self.dispatched += self.cost_factor * len(res.selected)
            results.append(res)
        self.now = end if end > self.now else self.now + self.runner.config.idle_s
        for state in self.states:
            state.now = self.now
        self.round += 1
        return results

    def train_until(
        self, rounds: int, participants: int, rng: np.random.Generator, eval_every: int
    ) -> None:
        """The fixed-partition phase every one-shot method ends with: each cluster trains among
        its members with a share of `participants` proportional to its size, evaluated every
        `eval_every` rounds."""
        while self.round < rounds:
            sizes = np.bincount(self.assignment, minlength=self.n_models)
            budgets = proportional_budgets(sizes, participants)
            self.run(rng, [self.members(k) for k in range(self.n_models)], budgets)
            if self.round % eval_every == 0:
                self.evaluate()

    def collect_updates(
        self, k: int, clients: np.ndarray, rng: np.random.Generator, max_tries: int = 100
    ) -> np.ndarray:
        """Every one of `clients` trains once from model k's current weights; their updates
        (rows in the order of `clients`) without moving model k.

        This is the round "every client must take part in" of CL+HC, FlexCFL and CCL: it is
        repeated for the clients that were offline or failed until all have reported, and all
        of it is counted (time, participant-rounds, dispatched tasks).
        """
        want = np.asarray(clients, dtype=np.int64)
        base = self.states[k]
        updates = np.zeros((len(want), self.runner.model.n_params))
        missing = np.ones(len(want), dtype=bool)
        position = {int(c): i for i, c in enumerate(want)}
        for _ in range(max_tries):
            if not missing.any():
                break
            probe = base.clone()
            probe.now = self.now
            left = want[missing]
            res = self.runner.run_round(probe, rng, candidates=left, participants=len(left))
            self.now = res.end
            self.participant_rounds += self.cost_factor * len(res.participants)
            self.dispatched += self.cost_factor * len(res.selected)
            for row, c in enumerate(res.participants):
                i = position[int(c)]
                updates[i] = res.updates[row]
                missing[i] = False
        if missing.any():
            raise RuntimeError(f"{int(missing.sum())} clients never completed a task")
        for state in self.states:
            state.now = self.now
        self.round += 1
        return updates

    def split(self, k: int, labels: np.ndarray, members: np.ndarray) -> list[int]:
        """Replace model k by one copy per label value of `members` (weights and optimizer
        state cloned); returns the model indices of the parts, the first being k itself."""
        values = np.unique(labels)
        idx = [k]
        for _ in values[1:]:
            self.states.append(self.states[k].clone())
            idx.append(len(self.states) - 1)
        for v, j in zip(values, idx, strict=True):
            self.assignment[members[labels == v]] = j
        return idx

    def accuracy(self) -> np.ndarray:
        """Each client's test accuracy on its assigned model."""
        weights = [s.weights for s in self.states]
        scores = evaluate_clients(self.runner.model, self.runner.dataset, weights, self.assignment)
        return scores.accuracy

    def evaluate(self) -> EvalPoint:
        weights = [s.weights for s in self.states]
        scores = evaluate_clients(self.runner.model, self.runner.dataset, weights, self.assignment)
        point = EvalPoint(
            round=self.round,
            time=self.now,
            participant_rounds=round(self.participant_rounds),
            dispatched=round(self.dispatched),
            stats=AccuracyStats.of(scores.accuracy),
            loss=float(np.nanmean(scores.loss)) if len(scores.loss) else float("nan"),
        )
        self.history.append(point)
        return point

    def result(self, name: str, events: dict[str, object] | None = None) -> BaselineResult:
        if not self.history.points or self.history.final.round != self.round:
            self.evaluate()
        return BaselineResult(
            name=name,
            history=self.history,
            assignment=self.assignment.copy(),
            accuracy=self.accuracy(),
            n_models=self.n_models,
            weights=[s.weights.copy() for s in self.states],
            events=dict(events or {}),
        )
