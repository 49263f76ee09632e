"""A client that no cohort rewards picks by its own loss (an option, not in the source).

Why: in E1 a few clients end up with rewards <= 0 in every leaf they explored,
their own group's included (they are outliers, D > mean + std, there too), and sit in a wrong
cohort; scoring the same cohort models with those clients on their lowest-loss leaf brings the
variance of per-client accuracy below the single model's (docs/auxo.md, E1). With
`loss_fallback=True` such a client, at check-in, downloads every leaf's model, measures its
loss on its own training data (on the device: no training, nothing sent but the choice) and
gives that leaf a small positive reward (`split_bonus`), so it asks for it and counts as its
member. This is IFCA's choice rule, used only for the clients Auxo's rewards cannot place;
its cost (M model downloads) is charged to the run's model bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kairos.auxo.rewards import AffinityEntry
from kairos.fl.learning import ClientData, Model


def unplaced(record: Mapping[str, AffinityEntry], leaves: Sequence[str]) -> bool:
    """Explored every leaf, and no leaf rewards it: Auxo's rewards cannot place this client."""
    return len(leaves) > 1 and all(
        c in record and record[c].explored and record[c].reward <= 0 for c in leaves
    )


def lowest_loss_leaf(
    model: Model, weights: Mapping[str, np.ndarray], data: ClientData, leaves: Sequence[str]
) -> str:
    """The leaf whose model has the lowest loss on the client's training data (client side)."""
    losses = [model.loss(weights[c], data.x_train, data.y_train) for c in leaves]
    return leaves[int(np.argmin(losses))]


def place_by_loss(
    record: dict[str, AffinityEntry],
    model: Model,
    weights: Mapping[str, np.ndarray],
    data: ClientData,
    leaves: Sequence[str],
    bonus: float,
) -> str | None:
    """If the client is unplaced, reward its lowest-loss leaf with `bonus`; the leaf or None."""
    if data.n_train == 0 or not unplaced(record, leaves):
        return None
    best = lowest_loss_leaf(model, weights, data, leaves)
    record[best] = AffinityEntry(bonus, record[best].label, True, record[best].votes)
    return best
