"""Auxo as a Flower strategy: cohorts over any Flower base strategy (spec 2-3, 3.10).

`AuxoStrategy` wraps a Flower Message-API strategy (FedAvg by default; FedProx, FedAdam,
FedYogi, ... unchanged). Every leaf cohort gets its own instance of it, which sees only the
nodes matched to that cohort (`CohortGrid`) and only that cohort's model. Each round:

1. check-in: a `checkin_fraction` sample of nodes is asked for its affinity request; every
   client learns the current tree, catches up on reward inheritance and picks a leaf by
   decaying epsilon-greedy from the record in its own Flower state; MATCH (spec 3.7) maps the
   request to a leaf;
2. per leaf, SELECT up to the leaf's budget P_total/M of its requesters; the cohort's base
   strategy configures training on that view, from the cohort's parameters;
3. per leaf, the base strategy aggregates its own replies; Auxo then clusters the updates
   (w_sent - w_local, which the server already has), computes rewards and decides a split,
   all in `AuxoPolicy` fed with the round's *claimed* L and R only: the policy's record
   table is emptied after each cohort-round, so the server keeps no per-client state
   (spec 3.10). A split gives every child the parent's exact parameters and a deep copy of
   the parent's strategy (server-optimizer state included);
4. feedback: every participant receives dR, its new L and the tree, and updates its own
   record (exploit, explore by tree distance, inheritance).
Evaluation sends every leaf model to a node; the node scores the cohort it belongs to (its
highest reward) on its own test split and says which that was, so membership is read from the
clients, never kept on the server.

A Flower user's change is small: wrap the strategy and add the Auxo handlers to the client.

    strategy = AuxoStrategy(FedAdam(fraction_evaluate=0.0), AuxoParams(p_total=40, ...))
    strategy.start(grid, initial_arrays, num_rounds=strategy.params.total_rounds)
    add_auxo_handlers(client_app, strategy.params)  # and `cohort_to_evaluate` in evaluate

Where Flower's model departs from the paper's (spec 2.3, 3.8): cohorts advance in lockstep,
one Flower round for all of them, not on their own virtual clocks; the server samples which
clients check in (Flower pushes messages to nodes) rather than clients arriving with
affinity requests when they come online; no over-commitment (the simulation has no
stragglers); and feedback reaches only this round's participants, the others learn about a
split at their next check-in (rewards then inherit the same way, as their parent entry has
not changed in between).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable, Iterable
from logging import INFO

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, MetricRecordValues
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAvg, Result, Strategy
from flwr.serverapp.strategy.strategy_utils import aggregate_metricrecords
from flwr.supercore import log

from kairos.auxo.decisions import Claim
from kairos.auxo.features import compress_rows
from kairos.auxo.integrations.flower_cohort import CohortGrid, CohortSlot, RoundLog, min_nodes
from kairos.auxo.integrations.flower_exchange import (
    Feedback,
    ask_for_requests,
    check_replies,
    evaluation_messages,
    read_choice,
    sample,
    send_feedback,
    wait_for_nodes,
)
from kairos.auxo.integrations.flower_records import COHORT, encode_splits, flatten
from kairos.auxo.matching import AffinityRequest, match
from kairos.auxo.params import AuxoParams
from kairos.auxo.policy import AuxoPolicy, RoundReport
from kairos.auxo.tree import ROOT
from kairos.decisions import Recorder


class AuxoStrategy(Strategy):
    """Auxo's cohort coordinator and cohort processes as one Flower strategy."""

    def __init__(
        self,
        base: Strategy | None = None,
        params: AuxoParams | None = None,
        *,
        checkin_fraction: float = 1.0,
        eval_every: int = 0,
        seed: int = 0,
        recorder: Recorder | None = None,
    ) -> None:
        if not 0.0 < checkin_fraction <= 1.0:
            raise ValueError("checkin_fraction must be in (0, 1]")
        self.base = base if base is not None else FedAvg(fraction_evaluate=0.0)
        self.params = params if params is not None else AuxoParams()
        self.checkin_fraction = checkin_fraction
        self.eval_every = eval_every  # 0: evaluate after the last round only
        self.seed = seed
        self.policy = AuxoPolicy(self.params, seed=seed, recorder=recorder)
        self.cohorts: dict[str, CohortSlot] = {}
        self.history: list[RoundLog] = []
        self.membership: dict[int, str] = {}  # client -> its cohort, from the last evaluation
        self.evaluations: dict[int, dict[str, MetricRecord]] = {}
        self._num_rounds = self.params.total_rounds
        self._timeout: float | None = None
        self._grid: Grid | None = None
        self._requests: dict[int, AffinityRequest] = {}  # node -> this round's request
        self._assigned: dict[int, str] = {}
        self._sent: dict[str, ArrayRecord] = {}

    # ------------------------------------------------------------------------ Flower API
    def summary(self) -> None:
        log(INFO, "\t├──> Auxo cohorts over %s", type(self.base).__name__)
        log(INFO, "\t└──> %s", self.params.model_dump(exclude_defaults=True))

    def start(
        self,
        grid: Grid,
        initial_arrays: ArrayRecord,
        num_rounds: int = 3,
        timeout: float = 3600,
        train_config: ConfigRecord | None = None,
        evaluate_config: ConfigRecord | None = None,
        evaluate_fn: Callable[[int, ArrayRecord], MetricRecord | None] | None = None,
    ) -> Result:
        """Flower's round loop; Auxo's round fractions need `num_rounds == total_rounds`."""
        if num_rounds != self.params.total_rounds:
            raise ValueError(
                f"num_rounds={num_rounds} but params.total_rounds={self.params.total_rounds}; "
                "Auxo's timing rules are fractions of the total"
            )
        self._num_rounds, self._timeout = num_rounds, timeout
        return super().start(
            grid, initial_arrays, num_rounds, timeout, train_config, evaluate_config, evaluate_fn
        )

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        if not self.cohorts:
            self.cohorts[ROOT] = CohortSlot(copy.deepcopy(self.base), arrays)  # base: a template
        self._grid = grid
        self._requests, self._assigned, self._sent = self._checkin(server_round, grid), {}, {}
        tree = self.policy.tree
        record = RoundLog(server_round, tree.leaves(), self.policy.budgets())
        self.history.append(record)
        rng = np.random.default_rng([self.seed, 5, server_round])
        for node in sorted(self._requests, key=self._client_of):  # client order, not node ids
            leaf = match(self._requests[node], tree, rng)
            if leaf is not None:
                record.requests.setdefault(leaf, []).append(node)
        messages: list[Message] = []
        for leaf in record.leaves:
            slot = self.cohorts[leaf]
            asked = record.requests.get(leaf, [])
            take = min(record.budgets[leaf], len(asked))
            chosen = sample(asked, take, rng)
            if len(chosen) < min_nodes(slot.strategy):
                continue  # too few requesters this round: the cohort sits it out
            cohort_config = ConfigRecord(dict(config))
            cohort_config[COHORT] = leaf
            view = CohortGrid(grid, chosen)
            record.views[leaf] = sorted(chosen)
            out = list(
                slot.strategy.configure_train(server_round, slot.arrays, cohort_config, view)
            )
            for msg in out:
                self._assigned[msg.metadata.dst_node_id] = leaf
            self._sent[leaf] = slot.arrays
            messages.extend(out)
        return messages

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        replies = list(replies)
        check_replies(server_round, "training", replies)
        groups: dict[str, list[Message]] = defaultdict(list)
        # replies in client order: Ray returns them as actors finish, and k-means++ seeding
        # and the base's summation depend on the order, so a run would depend on scheduling
        for msg in sorted(replies, key=lambda m: self._client_of(m.metadata.src_node_id)):
            leaf = self._assigned.get(msg.metadata.src_node_id)
            if leaf is not None:
                groups[leaf].append(msg)
        record = self.history[-1]
        metrics: dict[str, MetricRecordValues] = {}
        feedback: list[Feedback] = []
        for leaf in sorted(groups):
            slot = self.cohorts[leaf]
            record.replies[leaf] = sorted(m.metadata.src_node_id for m in groups[leaf])
            new_arrays, cohort_metrics = slot.strategy.aggregate_train(server_round, groups[leaf])
            slot.round_local += 1
            if new_arrays is not None:
                slot.arrays = new_arrays
            for key, value in (cohort_metrics or {}).items():
                if isinstance(value, int | float):
                    metrics[f"{key}/{leaf}"] = value
            valid = [m for m in groups[leaf] if not m.has_error()]
            if not valid:
                continue
            before = self._splits()
            report = self._observe(server_round, leaf, slot, valid)
            record.reports[leaf] = report
            deltas = report.deltas or (float("nan"),) * len(valid)
            for msg, label, delta in zip(valid, report.labels, deltas, strict=True):
                feedback.append(Feedback(msg.metadata.src_node_id, leaf, label, delta, before))
            if report.split is not None:
                record.splits.append(report.split)
                for child in report.split.children:
                    self.cohorts[child] = slot.child()
        if self._grid is not None:
            record.feedback_acks = send_feedback(
                self._grid, feedback, self._splits(), self._timeout
            )
        metrics["auxo-leaves"] = self.policy.tree.m
        return self._merged_arrays(), MetricRecord(metrics)

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        last = server_round == self._num_rounds
        if not (last or (self.eval_every and server_round % self.eval_every == 0)):
            return []
        models = {leaf: self.cohorts[leaf].arrays for leaf in self.policy.tree.leaves()}
        return evaluation_messages(models, self._splits(), sorted(grid.get_node_ids()))

    def aggregate_evaluate(
        self, server_round: int, replies: Iterable[Message]
    ) -> MetricRecord | None:
        replies = list(replies)
        check_replies(server_round, "evaluation", replies)
        valid = [m for m in replies if not m.has_error()]
        if not valid:
            return None
        groups: dict[str, list[Message]] = defaultdict(list)
        membership: dict[int, str] = {}
        for msg in valid:
            client, leaf = read_choice(msg)
            groups[leaf].append(msg)
            membership[client] = leaf
        self.membership = membership
        per_cohort: dict[str, MetricRecord] = {}
        for leaf, group in sorted(groups.items()):
            result = self.cohorts[leaf].strategy.aggregate_evaluate(server_round, group)
            if result is not None:
                per_cohort[leaf] = result
        overall = aggregate_metricrecords([m.content for m in valid], "num-examples")
        self.evaluations[server_round] = {"all": overall, **per_cohort}
        return overall

    # -------------------------------------------------------------------------- helpers
    def _splits(self) -> str:
        return encode_splits(s.parent for s in self.policy.tree.splits)

    def _checkin(self, server_round: int, grid: Grid) -> dict[int, AffinityRequest]:
        """Ask a sample of nodes for their affinity requests (stage 0, MATCH's input).

        It waits for the population, `params.n_clients` when given, else the base's minimum.
        """
        nodes = wait_for_nodes(grid, self.params.n_clients or min_nodes(self.base))
        size = max(1, round(self.checkin_fraction * len(nodes)))
        online = sample(nodes, size, np.random.default_rng([self.seed, 4, server_round]))
        return ask_for_requests(grid, online, server_round, self._splits(), self._timeout)

    def _client_of(self, node: int) -> int:
        """The client id a node claimed at check-in (Flower's node ids are random per run)."""
        request = self._requests.get(node)
        return -1 if request is None else request.client_id

    def _observe(
        self, server_round: int, leaf: str, slot: CohortSlot, replies: list[Message]
    ) -> RoundReport:
        """Stage 4 through `AuxoPolicy`, fed only this round's claimed L and R (a claim is
        about the cohort the client asked for; a client matched elsewhere claims nothing)."""
        sent = flatten(self._sent[leaf])
        claims, updates = [], []
        for msg in replies:
            request = self._requests[msg.metadata.src_node_id]
            (arrays,) = msg.content.array_records.values()
            updates.append(sent - flatten(arrays))
            if request.cohort_id == leaf:
                claims.append(Claim(request.client_id, request.label, request.reward or 0.0))
            else:
                claims.append(Claim(request.client_id, None, None))
        p = self.params
        rows = compress_rows(np.stack(updates), p.grad_fraction, p.feature_dtype)
        return self.policy.observe_claims(leaf, slot.round_local, claims, rows, t=server_round)

    def _merged_arrays(self) -> ArrayRecord:
        """Every leaf's parameters in one record, keys `<cohort>/<key>` (Flower's Result)."""
        merged = {}
        for leaf in self.policy.tree.leaves():
            for key, array in self.cohorts[leaf].arrays.items():
                merged[f"{leaf}/{key}"] = array
        return ArrayRecord(array_dict=merged)
