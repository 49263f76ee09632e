"""Cohort training (spec 2.3, 3.8): Auxo's algorithms driving real federated rounds.

The coordinator's whole state lives in `CohortTraining`'s fields, nothing in closures: the
policy (cohort tree, affinity records, partition monitors), one `TrainingState` per leaf (its
model, server optimizer, *own* virtual clock and round counter), one random stream per leaf,
each client's pending request and when it is next free, and the usage counters. A later
checkpoint, or a distributed mode that moves the records onto clients, reads and replaces these
fields.

One step is one round of one leaf, and the leaf that runs next is the one whose clock is
earliest (cohorts advance asynchronously, spec 3.8):

1. MATCH: every online, free client without a current request checks in, learns the current
   tree, picks a leaf by decaying epsilon-greedy (`policy.request`) and sends its affinity
   request, which `matching.match` resolves to a leaf. A request stays until the client has
   trained (it then re-chooses, spec 2.3 stage 4) or the tree changes (a split);
2. SELECT/EXECUTE/AGGREGATE: the leaf's round on the shared `RoundRunner`: ceil(1.3 P_m) of its
   online requesters are dispatched and the first P_m kept, P_m = P_total / M (`budgets`);
3. FEEDBACK: `policy.observe` clusters the participants' updates, rewards them and may split
   the leaf; the children then start from `state.clone()` of the parent: exactly its weights,
   optimizer state, clock and round counter.

Splitting disabled (`max_leaves=1`) gives the single-model baseline through this same loop,
so a comparison is paired on identical data, devices, availability and random streams: before
the first split both runs are the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from kairos.auxo.evaluation import (
    FLOAT_BYTES,
    CohortEval,
    Usage,
    evaluate_cohorts,
    membership_index,
    message_bytes,
)
from kairos.auxo.loss_fallback import place_by_loss
from kairos.auxo.matching import match
from kairos.auxo.params import AuxoParams
from kairos.auxo.policy import AuxoPolicy, RoundReport
from kairos.auxo.rewards import AffinityEntry
from kairos.auxo.robustness import Faults, loss_schedule, lost_records, privatize
from kairos.auxo.split_probe import probe_unlabelled
from kairos.auxo.straggler_feedback import give_late_feedback
from kairos.decisions import Recorder
from kairos.fl.learning import (
    FederatedDataset,
    History,
    Model,
    RoundResult,
    RoundRunner,
    TrainingState,
)


@dataclass(frozen=True)
class LeafRound:
    """One step of the run: which leaf trained, when, with how many, and what Auxo decided."""

    cohort: str
    round: int
    start: float
    end: float
    budget: int
    requesters: int
    participants: int
    split: tuple[str, ...] | None


@dataclass
class CohortTraining:
    """Auxo's coordinator over real training: leaves as `TrainingState`s on one runner."""

    runner: RoundRunner
    params: AuxoParams
    seed: int = 0
    on_step: Callable[[CohortTraining, LeafRound], None] | None = None  # e.g. a checkpointer
    faults: Faults = field(default_factory=Faults)  # E6: LDP on features, record loss
    recorder: Recorder | None = None  # the policy's decisions (`kairos.auxo.decisions`)
    policy: AuxoPolicy = field(init=False)
    states: dict[str, TrainingState] = field(init=False, default_factory=dict)
    rngs: dict[str, np.random.Generator] = field(init=False, default_factory=dict)
    requests: dict[int, tuple[str, int]] = field(init=False, default_factory=dict)
    free_at: np.ndarray = field(init=False)
    idle_streak: dict[str, int] = field(init=False, default_factory=dict)
    usage: Usage = field(init=False, default_factory=Usage)
    log: list[LeafRound] = field(init=False, default_factory=list)
    reports: list[RoundReport] = field(init=False, default_factory=list)
    loss_at: dict[int, float] = field(init=False, default_factory=dict)  # faults, mode "once"
    wiped: set[int] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        if self.params.p_total < 1:
            raise ValueError("p_total must be >= 1")
        root = self.runner.new_state(np.random.default_rng([self.seed, 0]))
        self.policy = AuxoPolicy(
            self.params, seed=self.seed, weights=root.weights, recorder=self.recorder
        )
        self.states["0"] = root
        self.rngs["0"] = self._leaf_rng("0")
        self.free_at = np.zeros(len(self.runner.dataset))
        self.idle_streak["0"] = 0
        self.loss_at = loss_schedule(
            len(self.runner.dataset), self.params.total_rounds, self.faults, self.seed
        )

    def _leaf_rng(self, cohort: str) -> np.random.Generator:
        path = [int(p) for p in cohort.split(".")]
        return np.random.default_rng([self.seed, 2, len(path), *path])

    # ------------------------------------------------------------------ queries
    def leaves(self) -> list[str]:
        return self.policy.tree.leaves()

    @property
    def model(self) -> Model:
        return self.runner.model

    @property
    def dataset(self) -> FederatedDataset:
        return self.runner.dataset

    def memberships(self) -> np.ndarray:
        """Each client's membership leaf S_i (highest reward), as an index into `leaves()`."""
        n = len(self.dataset)
        return membership_index(self.policy.membership(range(n)), self.leaves(), n)

    @property
    def progress(self) -> int:
        """Rounds every leaf has completed (children inherit the parent's counter)."""
        return min(self.states[c].round for c in self.leaves())

    @property
    def now(self) -> float:
        """Simulated time by which every leaf has reached `progress`."""
        return max(self.states[c].now for c in self.leaves())

    def next_leaf(self, done: set[str] | None = None) -> str | None:
        """The leaf whose clock is earliest (ties by id), among those not `done`."""
        live = [c for c in self.leaves() if not done or c not in done]
        if not live:
            return None
        return min(live, key=lambda c: (self.states[c].now, c))

    # ------------------------------------------------------------------ one step
    def check_in(self, t: float, round: int) -> None:
        """Online, free clients without a current request choose a leaf and send it (MATCH)."""
        assert self.runner.availability is not None
        online = self.runner.availability.online(t)
        online &= self.free_at <= t
        version = self.policy.tree.version
        for c in np.flatnonzero(online).tolist():
            req = self.requests.get(c)
            if req is not None and req[1] == version:
                continue
            if self.params.loss_fallback:
                self._place_by_loss(c)
            if self.params.unlabelled_at_split == "probe" and probe_unlabelled(self, c, t):
                continue  # busy with its probe (kairos.auxo.split_probe): asks after it
            request = self.policy.request(c, round)
            leaf = match(request, self.policy.tree, self.policy.client_rng(c))
            if leaf is None:
                continue
            self.requests[c] = (leaf, version)
            self.usage.affinity_bytes += message_bytes(leaf)

    def _place_by_loss(self, client: int) -> None:
        """Option `loss_fallback` (centralized mode): see `kairos.auxo.loss_fallback`."""
        leaves = self.leaves()
        weights = {c: self.states[c].weights for c in leaves}
        data = self.dataset.clients[client]
        record = self.policy.record(client)
        if place_by_loss(record, self.model, weights, data, leaves, self.params.split_bonus):
            self.usage.model_bytes += len(leaves) * self.model.n_params * FLOAT_BYTES

    def requesters(self, cohort: str) -> np.ndarray:
        version = self.policy.tree.version
        ids = [c for c, (leaf, v) in self.requests.items() if leaf == cohort and v == version]
        return np.array(sorted(ids), dtype=np.int64)

    def step(self, cohort: str | None = None) -> LeafRound:
        """Run one round of `cohort` (default: the leaf with the earliest clock)."""
        m = self.next_leaf() if cohort is None else cohort
        if m is None or not self.policy.tree.is_leaf(m):
            raise ValueError(f"cohort {m!r} is not a leaf")
        state = self.states[m]
        self.check_in(state.now, state.round)
        cand = self.requesters(m)
        budget = self.policy.budgets()[m]
        before = state.weights.copy() if self.params.straggler_feedback else None
        res = self.runner.run_round(state, self.rngs[m], candidates=cand, participants=budget)
        split = self._after_round(m, state, res, before)
        entry = LeafRound(
            m,
            state.round,
            res.start,
            res.end,
            budget,
            len(cand),
            len(res.participants),
            split,
        )
        self.log.append(entry)
        self._lose_scheduled_records()
        if self.on_step is not None:
            self.on_step(self, entry)
        return entry

    def _after_round(
        self, m: str, state: TrainingState, res: RoundResult, before: np.ndarray | None = None
    ) -> tuple[str, ...] | None:
        """Account the round, give feedback (clustering, rewards) and apply a split."""
        n_params = self.runner.model.n_params
        self.idle_streak[m] = 0 if len(res.selected) else self.idle_streak.get(m, 0) + 1
        if len(res.selected):
            self.usage.cohort_rounds += 1
            self.usage.dispatched += len(res.selected)
            self.usage.model_bytes += len(res.selected) * n_params * FLOAT_BYTES
            self.free_at[res.selected] = res.end
        if not res.aggregated:
            return None
        parts = res.participants
        self.usage.participant_rounds += len(parts)
        self.usage.model_bytes += len(parts) * n_params * FLOAT_BYTES
        self.usage.affinity_bytes += len(parts) * message_bytes(m)
        for c in parts.tolist():
            self.requests.pop(int(c), None)  # trained: it chooses again at its next check-in
        self.policy.tree.set_weights(m, state.weights)
        ids = parts.tolist()
        view = privatize(res.updates, ids, m, state.round, self.faults, self.seed)
        report = self.policy.observe(m, state.round, ids, view, t=res.end)
        self.reports.append(report)
        for c in lost_records(ids, m, state.round, self.faults, self.seed):
            self.policy.forget(c)  # the client restarts as new (spec 3.11)
        if before is not None and report.split is None and report.deltas is not None:
            give_late_feedback(self, m, state.round, before, res.stragglers, res.end)
        if report.split is None:
            return None
        return self._spawn(m, report.split.children)

    def _lose_scheduled_records(self) -> None:
        """Faults, mode "once": clients whose loss time the run has reached restart as new."""
        if not self.loss_at:
            return
        progress = self.progress
        for c, at in self.loss_at.items():
            if at <= progress and c not in self.wiped:
                self.wiped.add(c)
                self.policy.forget(c)
                self.requests.pop(c, None)

    def _spawn(self, parent: str, children: tuple[str, ...]) -> tuple[str, ...]:
        """The children of a split start from clones of the parent's training state."""
        state = self.states.pop(parent)
        for child in children:
            self.states[child] = state.clone()
            self.rngs[child] = self._leaf_rng(child)
            self.idle_streak[child] = 0
        del self.rngs[parent]
        self.idle_streak.pop(parent, None)
        return children

    def partition(self, cohort: str, assignment: Mapping[int, int]) -> tuple[str, ...]:
        """Split `cohort` now into K children with a given composition (spec E5: the same
        cohorts at different partition times): client i's record gets reward 1 for child
        `assignment[i]` and -1 for the others, all explored, so no prediction moves it."""
        self.policy.tree.set_weights(cohort, self.states[cohort].weights)
        rec = self.policy.split(cohort, self.states[cohort].round, t=self.states[cohort].now)
        for client, j in assignment.items():
            record = self.policy.record(client)
            for k, child in enumerate(rec.children):
                record[child] = AffinityEntry(1.0 if k == j else -1.0, None, True)
        self.requests.clear()
        return self._spawn(cohort, rec.children)

    # ------------------------------------------------------------------ the run
    def evaluate(self) -> CohortEval:
        """Every client on its membership leaf's model (spec 3.8)."""
        return evaluate_cohorts(self, self.progress, self.now)

    def run(
        self,
        rounds: int,
        eval_every: int = 10,
        max_idle: int = 500,
        history: History | None = None,
    ) -> History:
        """Train until every leaf has done `rounds` rounds (a leaf idle for `max_idle` steps in
        a row, nobody online asking for it, stops counting); evaluate every `eval_every`.
        Pass the `history` of an earlier call to continue it."""
        if history is None:
            history = History()
            history.append(self.evaluate().point)
        last_eval = self.progress
        done: set[str] = set()
        while True:
            for c in self.leaves():
                if self.states[c].round >= rounds or self.idle_streak.get(c, 0) >= max_idle:
                    done.add(c)
            m = self.next_leaf(done)
            if m is None:
                break
            self.step(m)
            live = [c for c in self.leaves() if c not in done] or self.leaves()
            reached = min(self.states[c].round for c in live)
            if reached - last_eval >= eval_every:
                last_eval = reached
                history.append(self.evaluate().point)
        if self.progress > last_eval or len(history.points) == 1:
            history.append(self.evaluate().point)
        return history
