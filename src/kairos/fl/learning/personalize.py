"""FTFA personalisation (spec 3.8, E3): each client fine-tunes the model it is served, locally.

"Fine-tune FedAvg" (FTFA) ends federated training with a few local SGD steps per client on its
own training data, starting from the model the client would otherwise use: the global model for
plain FL, its cohort's model under Auxo (the source: "each client fine-tunes its cohort model
locally, not the global model"). Each client is then scored on its own test split under its
own fine-tuned model. Fine-tuning uses each client's own random stream, so the same client
takes the same minibatches whichever model it starts from, and a comparison is paired.
"""

from __future__ import annotations

import numpy as np

from kairos.fl.learning.dataset import FederatedDataset
from kairos.fl.learning.local import ClientScores, LocalConfig, evaluate_clients, local_train
from kairos.fl.learning.models import Model


def fine_tuned_scores(
    model: Model,
    dataset: FederatedDataset,
    weights: list[np.ndarray],
    assignment: np.ndarray,
    config: LocalConfig,
    seed: int,
) -> ClientScores:
    """Per-client accuracy after fine-tuning model `assignment[i]` on client i's training
    data with `config` (clients without training data keep the model as it is)."""
    tuned: list[np.ndarray] = []
    for i, data in enumerate(dataset.clients):
        w = np.asarray(weights[int(assignment[i])])
        if data.n_train == 0:
            tuned.append(w.copy())
            continue
        rng = np.random.default_rng([seed, 14, i])
        tuned.append(w - local_train(model, w, data, config, rng).update)
    return evaluate_clients(model, dataset, tuned, assignment=np.arange(len(dataset)))
