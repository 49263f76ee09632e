"""A federated dataset: each client's own train and test arrays, plus its hidden true group.

Every generator in this package returns a `FederatedDataset`, so training, evaluation and the
cohort schedulers see one shape whatever the source. The true group is kept beside the data
only to score clustering (ARI against it) and to build oracle baselines: a training algorithm
must never read it, exactly as a real server never sees a client's data distribution. That is
why it lives in a separate field (`groups`) rather than inside `ClientData`, which is what
local training receives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ClientData:
    """One client's private samples: float features (n, d) and int labels (n,)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    def __post_init__(self) -> None:
        if len(self.x_train) != len(self.y_train) or len(self.x_test) != len(self.y_test):
            raise ValueError("features and labels of a client must have equal length")
        if self.x_train.ndim != 2 or self.x_test.ndim != 2:
            raise ValueError("features must be 2-D arrays (samples, features)")

    @property
    def n_train(self) -> int:
        return len(self.y_train)

    @property
    def n_test(self) -> int:
        return len(self.y_test)


@dataclass(frozen=True)
class FederatedDataset:
    """N clients' data, the task's shape, and (for evaluation only) each client's true group.

    `groups[i]` is the latent group client i's data was drawn from (0 for every client of a
    population without groups). `name` and `params` record how it was built, so experiment
    results can name their data exactly.
    """

    clients: tuple[ClientData, ...]
    groups: np.ndarray
    n_features: int
    n_classes: int
    name: str = "custom"
    params: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.groups) != len(self.clients):
            raise ValueError("one true group per client is required")
        for i, c in enumerate(self.clients):
            for x in (c.x_train, c.x_test):
                if x.shape[1] != self.n_features:
                    raise ValueError(f"client {i} has {x.shape[1]} features, not {self.n_features}")

    def __len__(self) -> int:
        return len(self.clients)

    @property
    def n_groups(self) -> int:
        return int(np.unique(self.groups).size)

    @property
    def train_counts(self) -> np.ndarray:
        """Training samples per client (the FedAvg weights)."""
        return np.array([c.n_train for c in self.clients], dtype=np.int64)

    @property
    def test_counts(self) -> np.ndarray:
        return np.array([c.n_test for c in self.clients], dtype=np.int64)

    def pooled_test(
        self, clients: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The test sets of `clients` (all by default) stacked: (x, y, owner index per row).

        Evaluation runs one matrix product over the pooled rows and splits the results by
        owner, which is far faster than a Python loop over hundreds of tiny clients.
        """
        idx = np.arange(len(self.clients)) if clients is None else np.asarray(clients)
        xs = [self.clients[i].x_test for i in idx]
        ys = [self.clients[i].y_test for i in idx]
        owner = np.repeat(idx, [len(y) for y in ys]).astype(np.int64)
        if not xs:
            return np.zeros((0, self.n_features)), np.zeros(0, dtype=np.int64), owner
        return np.concatenate(xs), np.concatenate(ys), owner

    def pooled_train(self, clients: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The training sets of `clients` stacked (for centralised reference models)."""
        idx = np.arange(len(self.clients)) if clients is None else np.asarray(clients)
        if len(idx) == 0:
            return np.zeros((0, self.n_features)), np.zeros(0, dtype=np.int64)
        return (
            np.concatenate([self.clients[i].x_train for i in idx]),
            np.concatenate([self.clients[i].y_train for i in idx]),
        )
