"""A population whose four latent groups are well separated in update space.

`beta=0` gives every client the same input distribution, so clients differ only through their
group's labeller: the clean case where every clustered-FL method should recover the groups.
"""

from __future__ import annotations

import numpy as np
import pytest

from kairos.fl.learning import (
    FederatedDataset,
    LocalConfig,
    RoundConfig,
    RoundRunner,
    federated_synthetic,
    make_algorithm,
    make_model,
)

N_CLIENTS = 48


@pytest.fixture(scope="session")
def separated() -> FederatedDataset:
    return federated_synthetic(
        N_CLIENTS, np.random.default_rng(7), n_groups=4, beta=0.0, min_count=40
    )


def make_runner(ds: FederatedDataset, participants: int = 16, **round_kw: object) -> RoundRunner:
    model = make_model("lr", ds.n_features, ds.n_classes)
    return RoundRunner(
        model,
        ds,
        make_algorithm("fedavg"),
        LocalConfig(lr=0.05, batch_size=20, steps=10),
        RoundConfig(participants=participants, **round_kw),
    )
