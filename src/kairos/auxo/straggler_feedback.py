"""Rewards from stragglers' late updates (option `straggler_feedback`, off; not the source).

Why: under over-commitment a cohort dispatches ceil(1.3 P_m) clients and aggregates the first
P_m; the rest (stragglers) finish their local training but are dropped, and in the source
(spec 2.3 stage 4) only the aggregated participants get affinity feedback. A chronically slow
client is then almost never rewarded: when every client is always online (E4's setting), the
clients Auxo leaves in a wrong cohort are mostly such stragglers, rarely kept in their
dispatches (docs/auxo.md, E1). With this option the cohort still aggregates only the first P_m,
but scores each straggler's late update in the round's reward frame (its mean, centre and
tau, as a new client's probe is scored, spec 3.9) and sends it dR, so a slow client learns
where it belongs from work it has done anyway. The cost is the late update's upload, charged
to the run's model bytes, and one affinity message.

The simulated runner does not compute dropped clients' training (its result is discarded by
the rule), so here each straggler trains from the round's starting weights on a stream of its
own, seeded by (run seed, client, cohort, round): the option changes no other random stream,
and with it off a run is bit for bit the run without this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from kairos.auxo.evaluation import FLOAT_BYTES, Usage, message_bytes
from kairos.auxo.policy import AuxoPolicy
from kairos.auxo.robustness import Faults, privatize
from kairos.fl.learning import RoundRunner, local_train_many


class FeedbackRun(Protocol):
    """What the feedback touches of a run (`CohortTraining` satisfies it)."""

    runner: RoundRunner
    seed: int
    faults: Faults
    policy: AuxoPolicy
    usage: Usage
    requests: dict[int, tuple[str, int]]


def late_updates(
    runner: RoundRunner,
    weights: np.ndarray,
    clients: Sequence[int],
    seed: int,
    cohort: str,
    round: int,
) -> np.ndarray:
    """The pseudo-gradients the stragglers `clients` computed from `weights` (one row each)."""
    local = runner.algorithm.local(runner.local)
    path = [int(p) for p in cohort.split(".")]
    rows = []
    for c in clients:
        rng = np.random.default_rng([seed, 5, int(c), int(round), len(path), *path])
        data = runner.dataset.clients[int(c)]
        # only the update is read: skip the pass over the data that `loss_before` costs
        (upd,) = local_train_many(runner.model, weights, [data], local, rng, loss_before=False)
        rows.append(upd.update)
    return np.array(rows).reshape(len(rows), runner.model.n_params)


def give_late_feedback(
    run: FeedbackRun, cohort: str, round: int, before: np.ndarray, late: np.ndarray, t: float
) -> None:
    """The cohort's feedback to this round's stragglers `late` (their updates from `before`,
    the round's starting weights): scored, never aggregated; uploads and messages charged.
    A straggler that hears back chooses again at its next check-in, as a participant does."""
    ids = [int(c) for c in late]
    if not ids:
        return
    updates = late_updates(run.runner, before, ids, run.seed, cohort, round)
    view = privatize(updates, ids, cohort, round, run.faults, run.seed)
    run.policy.observe_late(cohort, ids, view, t=t)
    run.usage.model_bytes += len(ids) * run.runner.model.n_params * FLOAT_BYTES
    run.usage.affinity_bytes += len(ids) * message_bytes(cohort)
    for c in ids:
        run.requests.pop(c, None)
