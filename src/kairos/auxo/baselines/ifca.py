"""IFCA (Ghosh et al., "An Efficient Framework for Clustered Federated Learning", 2020).

The server keeps K models and broadcasts all of them every round. Each participant runs every
model on its own training data, picks the one with the lowest loss, trains that one and
returns the update with the index it picked; each model aggregates its pickers' updates. The
partition therefore exists from round 0 and follows the models as they drift.

Costs the paper's comparison charges (spec 4, Table 3.5: "IFCA <= 1x resource efficiency"):
every task downloads K models and evaluates K of them, so a task counts as `K` trainings in
participant-rounds and dispatched tasks (`cost_factor`), and the round's start waits for the
evaluation pass (K forward passes over the client's data, timed on its device by the runner's
clock at `forward_fraction` of a training sample each, plus the extra model transfers).

The K models start from independent random draws (`init_std` of Gaussian noise around the
model's own initialisation): with identical starts every client ties on model 0 forever.
Budgets: the round over-commits `ceil(overcommit x P)` clients as plain FL does; each model
keeps a share of P proportional to how many of them picked it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.auxo.baselines.common import (
    BaselineResult,
    ClusterSet,
    client_losses,
    proportional_budgets,
)
from kairos.fl.learning import RoundResult, RoundRunner


class IFCAConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    k: int = Field(4, ge=1)  # models broadcast every round
    rounds: int = Field(300, ge=1)
    eval_every: int = Field(10, ge=1)
    init_std: float = Field(0.1, ge=0)  # spread of the K random starting models
    forward_fraction: float = Field(1 / 3, ge=0)  # a forward pass, in training samples
    charge_time: bool = True  # wait for the K-model evaluation before the round's training


def pick_models(losses: np.ndarray) -> np.ndarray:
    """IFCA's rule: each client (row) takes the model (column) with the lowest loss."""
    return np.argmin(np.asarray(losses), axis=1).astype(np.int64)


def _evaluation_time(
    runner: RoundRunner,
    selected: np.ndarray,
    k: int,
    keep: int,
    cfg: IFCAConfig,
    rng: np.random.Generator,
) -> float:
    """Seconds until `keep` of the selected clients have evaluated the K models: K forward
    passes over their training data plus the transfers the clock charges per task."""
    if runner.clock is None or not cfg.charge_time or len(selected) == 0:
        return 0.0
    counts = runner.dataset.train_counts[selected]
    work = np.maximum(1, np.round(k * cfg.forward_fraction * counts)).astype(np.int64)
    dur = np.sort(runner.clock.durations(selected, work, rng))
    return float(dur[min(keep, len(dur)) - 1])


@dataclass(frozen=True)
class IFCARound:
    """One IFCA round: who was asked, which model each picked, and each model's round."""

    selected: np.ndarray
    picks: np.ndarray
    results: list[RoundResult | None]


def ifca_round(cs: ClusterSet, cfg: IFCAConfig, rng: np.random.Generator) -> IFCARound:
    """Broadcast the K models to ceil(overcommit x P) online clients; each trains the model of
    lowest loss on its data; each model aggregates its pickers' updates."""
    runner = cs.runner
    assert runner.availability is not None
    p = runner.config.participants
    pool = np.flatnonzero(runner.availability.online(cs.now) & (runner.dataset.train_counts > 0))
    empty = np.zeros(0, dtype=np.int64)
    if len(pool) == 0:
        return IFCARound(empty, empty, cs.run(rng, [empty] * cs.n_models, [0] * cs.n_models))
    selected = runner.selector(pool, runner.config.request_size(p), rng)
    picks = pick_models(client_losses(runner, [s.weights for s in cs.states], selected))
    keep = min(p, len(selected))
    cs.now += _evaluation_time(runner, selected, cs.n_models, keep, cfg, rng)
    cs.assignment[selected] = picks
    budgets = proportional_budgets(np.bincount(picks, minlength=cs.n_models), keep)
    results = cs.run(rng, [selected[picks == j] for j in range(cs.n_models)], budgets)
    return IFCARound(selected, picks, results)


def reassign(cs: ClusterSet) -> None:
    """Every client on its lowest-loss model (IFCA's rule, used for evaluation)."""
    everyone = np.arange(len(cs.runner.dataset))
    weights = [s.weights for s in cs.states]
    cs.assignment = pick_models(client_losses(cs.runner, weights, everyone))


def start_models(runner: RoundRunner, cfg: IFCAConfig, rng: np.random.Generator) -> ClusterSet:
    """K models, each the model's initialisation plus N(0, init_std) noise."""
    base = runner.new_state(rng)
    cs = ClusterSet(runner, [], np.zeros(len(runner.dataset), dtype=np.int64), cost_factor=cfg.k)
    for _ in range(cfg.k):
        state = base.clone()
        state.weights = state.weights + rng.normal(0.0, cfg.init_std, size=state.weights.shape)
        cs.states.append(state)
    reassign(cs)
    return cs


def run_ifca(runner: RoundRunner, cfg: IFCAConfig, rng: np.random.Generator) -> BaselineResult:
    """IFCA for `cfg.rounds` rounds with the runner's per-round budget P."""
    cs = start_models(runner, cfg, rng)
    cs.evaluate()
    for _ in range(cfg.rounds):
        ifca_round(cs, cfg, rng)
        if cs.round % cfg.eval_every == 0 or cs.round == cfg.rounds:
            reassign(cs)
            cs.evaluate()
    used = np.bincount(cs.assignment, minlength=cfg.k)
    return cs.result("ifca", {"models_used": int((used > 0).sum())})
