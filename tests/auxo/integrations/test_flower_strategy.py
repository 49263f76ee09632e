"""AuxoStrategy's per-cohort bookkeeping, on an in-process transport (no Ray): each base
strategy sees only its cohort's nodes and replies, children start from the parent's exact
parameters and a copy of its strategy state, the budget is split and kept, and the affinity
records live only in the clients' Flower state."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAdam, FedAvg, FedProx

from kairos.auxo.integrations.flower import AuxoStrategy
from kairos.auxo.integrations.flower_client import (
    FederatedRecipe,
    auxo_client_app,
    initial_arrays,
)
from kairos.auxo.integrations.flower_records import (
    COHORT,
    STATE,
    decode_splits,
    flatten,
    leaves_of,
    load_record,
)
from kairos.auxo.params import AuxoParams
from kairos.auxo.policy import best_leaf
from kairos.fl.learning import LocalConfig, LogisticRegression

from .inprocess_grid import InProcessGrid

N = 40
RECIPE = FederatedRecipe.of(
    "synthetic", N, seed=3, n_groups=2, alpha=1.0, beta=0.0, min_count=40, count_median=50
)
MODEL = LogisticRegression(60, 10)
LOCAL = LocalConfig(lr=0.05, batch_size=20, steps=5)


class SpyFedAvg(FedAvg):
    """FedAvg that writes down which nodes it could see and which replies it aggregated.

    The log is a class attribute so that the copies made at a split share it; `id(self)`
    tells the copies apart.
    """

    calls: ClassVar[list[tuple[str, int, int, list[int]]]] = []

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        seen = sorted(grid.get_node_ids())
        SpyFedAvg.calls.append(("configure", id(self), server_round, seen))
        return super().configure_train(server_round, arrays, config, grid)

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        replies = list(replies)
        nodes = sorted(m.metadata.src_node_id for m in replies)
        SpyFedAvg.calls.append(("aggregate", id(self), server_round, nodes))
        return super().aggregate_train(server_round, replies)


def _params(rounds: int, split_at: int, **kw: Any) -> AuxoParams:
    """A split forced at cohort-local round `split_at` (the authors' fixed-schedule mode)."""
    base = {
        "p_total": 16,
        "total_rounds": rounds,
        "n_clients": N,
        "grad_fraction": 1.0,
        "feature_dtype": "float32",
        "partition_schedule": (split_at,),
    }
    return AuxoParams(**{**base, **kw})


def _run(strategy: AuxoStrategy, rounds: int) -> InProcessGrid:
    grid = InProcessGrid(auxo_client_app(RECIPE, MODEL, strategy.params, LOCAL, seed=3), N)
    strategy.start(grid, initial_arrays(MODEL, 3), num_rounds=rounds)
    return grid


def _train_messages(grid: InProcessGrid, server_round: int) -> list[Message]:
    out = []
    for m in grid.delivered:
        if m.metadata.message_type != MessageType.TRAIN:
            continue
        (cfg,) = m.content.config_records.values()
        if cfg["server-round"] == server_round:
            out.append(m)
    return out


def test_each_base_strategy_sees_only_its_cohorts_nodes_and_replies() -> None:
    SpyFedAvg.calls.clear()
    rounds = 8
    strategy = AuxoStrategy(SpyFedAvg(fraction_evaluate=0.0), _params(rounds, 3), seed=3)
    checkin = 0.75
    strategy.checkin_fraction = checkin
    grid = _run(strategy, rounds)
    owner = {id(slot.strategy): leaf for leaf, slot in strategy.cohorts.items()}
    assert len(owner) == len(strategy.cohorts)  # one distinct base instance per cohort
    assert [s.parent for s in strategy.policy.tree.splits] == ["0"]
    for record in strategy.history:
        views = record.views
        assert set(views) <= set(record.leaves)
        all_viewed = [n for nodes in views.values() for n in nodes]
        assert len(all_viewed) == len(set(all_viewed))  # no node in two cohorts in a round
        for leaf, nodes in views.items():
            assert set(nodes) <= set(record.requests[leaf])  # only nodes that asked for it
            assert set(record.replies[leaf]) <= set(nodes)
        for m in _train_messages(grid, record.round):  # each node got its cohort's config
            (cfg,) = m.content.config_records.values()
            assert m.metadata.dst_node_id in views[str(cfg[COHORT])]
    by_round = {r.round: r for r in strategy.history}
    for kind, who, server_round, nodes in SpyFedAvg.calls:
        leaf = owner[who]
        record = by_round[server_round]
        assert leaf in record.leaves  # a split parent's strategy never trains again
        expected = record.views[leaf] if kind == "configure" else record.replies[leaf]
        assert nodes == expected
    trained_after = {owner[w] for k, w, r, _ in SpyFedAvg.calls if k == "configure" and r > 3}
    assert trained_after == {"0.0", "0.1"}


def test_children_start_from_the_parents_exact_parameters_and_strategy_state() -> None:
    rounds = 5
    base = FedAdam(fraction_evaluate=0.0, eta=0.05)
    strategy = AuxoStrategy(base, _params(rounds, 3), seed=3)
    grid = _run(strategy, rounds)
    assert base.m_t is None  # the caller's object is a template, never trained
    parent, children = strategy.cohorts["0"], ("0.0", "0.1")
    for child in children:
        slot = strategy.cohorts[child]
        assert slot.strategy is not parent.strategy
        assert slot.round_local > parent.round_local  # inherited the counter, then trained
    first_child_round = [
        m for m in _train_messages(grid, 4) if m.content.config_records["config"][COHORT] != "0"
    ]
    assert {m.content.config_records["config"][COHORT] for m in first_child_round} == set(children)
    w_parent = flatten(parent.arrays)
    for m in first_child_round:
        (arrays,) = m.content.array_records.values()
        np.testing.assert_array_equal(flatten(arrays), w_parent)
    a, b = (flatten(strategy.cohorts[c].arrays) for c in children)
    assert not np.allclose(a, b)  # after the split they train apart
    # the optimizer state was copied, not shared: a split at the last round leaves it equal
    final = AuxoStrategy(FedAdam(fraction_evaluate=0.0, eta=0.05), _params(3, 3), seed=3)
    _run(final, 3)
    root = final.cohorts["0"].strategy
    assert isinstance(root, FedAdam) and root.m_t is not None
    for child in children:
        copy = final.cohorts[child].strategy
        assert isinstance(copy, FedAdam) and copy.m_t is not None and copy.m_t is not root.m_t
        for key, value in root.m_t.items():
            np.testing.assert_array_equal(copy.m_t[key], value)
        np.testing.assert_array_equal(
            flatten(final.cohorts[child].arrays), flatten(final.cohorts["0"].arrays)
        )


def test_budget_is_split_equally_and_kept() -> None:
    rounds = 6
    strategy = AuxoStrategy(FedAvg(fraction_evaluate=0.0), _params(rounds, 2), seed=3)
    _run(strategy, rounds)
    p = strategy.params.p_total
    for record in strategy.history:
        assert sum(record.budgets.values()) == p
        assert max(record.budgets.values()) - min(record.budgets.values()) <= 1
        for leaf, nodes in record.views.items():
            assert len(nodes) == min(record.budgets[leaf], len(record.requests[leaf]))
        assert sum(len(v) for v in record.requests.values()) == N  # everyone checked in
    assert {len(r.leaves) for r in strategy.history} == {1, 2}


def test_affinity_records_live_only_in_the_clients_state() -> None:
    rounds = 6
    strategy = AuxoStrategy(FedAvg(fraction_evaluate=0.0), _params(rounds, 2), seed=3)
    grid = _run(strategy, rounds)
    assert strategy.policy.records == {}  # soft state: nothing per client on the server
    leaves = strategy.policy.tree.leaves()
    heard = 0
    acks = sum(r.feedback_acks for r in strategy.history)
    assert acks == sum(len(n) for r in strategy.history for n in r.replies.values())
    for context in grid.contexts.values():
        assert STATE in context.state.config_records
        record = load_record(context.state)
        cid = int(context.node_config["partition-id"])
        assert strategy.membership[cid] == best_leaf(record, leaves)
        if "0" in record:  # a client that trained before the split has inherited it
            heard += 1
            assert set(leaves) <= set(record)
    assert heard >= strategy.params.p_total  # the two rounds before the split trained 16 each
    splits = [s.parent for s in strategy.policy.tree.splits]
    assert leaves_of(decode_splits(";".join(splits)), strategy.params.k) == leaves


def test_num_rounds_must_match_the_params_total() -> None:
    strategy = AuxoStrategy(params=_params(6, 2))
    with pytest.raises(ValueError, match="total_rounds"):
        _run(strategy, 5)


def test_a_fedprox_base_reaches_the_clients_local_training() -> None:
    """FedProx's proximal term pulls local models back: its updates are smaller than FedAvg's
    from the same start, so its `proximal-mu` arrived in each cohort's train messages."""
    norms = {}
    for name, base in (
        ("avg", FedAvg(fraction_evaluate=0.0)),
        ("prox", FedProx(proximal_mu=5.0, fraction_evaluate=0.0)),
    ):
        strategy = AuxoStrategy(base, _params(1, 5), seed=3)
        grid = _run(strategy, 1)
        (sent,) = {
            tuple(flatten(a))
            for m in _train_messages(grid, 1)
            for a in m.content.array_records.values()
        }
        root = flatten(strategy.cohorts["0"].arrays)
        norms[name] = float(np.linalg.norm(root - np.array(sent)))
    assert norms["prox"] < 0.8 * norms["avg"], norms
