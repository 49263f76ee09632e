"""What a participant does in a round: minibatch SGD from the global model, and evaluation.

A client trains for a fixed number of local steps (FedScale's `local_steps`, the spec's 10) or
epochs, optionally with FedProx's proximal term mu/2 ||w - w_global||^2, which pulls the local
model back towards the global one so heterogeneous clients drift less. It returns the update as
a pseudo-gradient, `u = w_global - w_local` (the spec's convention, also what Auxo clusters),
its training-sample count (FedAvg's weight), and its loss at the global model before training
(q-FedAvg's F_k(w^t)). Local training also reports the samples it processed, which the clock
turns into compute time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.fl.learning.dataset import ClientData, FederatedDataset
from kairos.fl.learning.models import Model


class LocalConfig(BaseModel):
    """Local training settings; `epochs`, when set, overrides `steps`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lr: float = Field(0.05, gt=0)
    batch_size: int = Field(20, ge=1)
    steps: int = Field(10, ge=1)
    epochs: int | None = Field(None, ge=1)
    mu: float = Field(0.0, ge=0)  # FedProx proximal coefficient; 0 is plain FedAvg
    weight_decay: float = Field(0.0, ge=0)
    clip: float | None = Field(None, gt=0)  # per-step gradient-norm clip (None: off)

    def steps_for(self, n_samples: int) -> int:
        """Local SGD steps for a client holding `n_samples` training samples."""
        if self.epochs is None:
            return self.steps
        return self.epochs * max(1, math.ceil(n_samples / self.batch_size))

    def work(self, n_samples: int) -> int:
        """Samples processed in one local round (what compute time is proportional to)."""
        return self.steps_for(n_samples) * min(self.batch_size, max(n_samples, 1))


@dataclass(frozen=True)
class LocalUpdate:
    """One participant's result: pseudo-gradient, weight, and losses."""

    update: np.ndarray  # w_global - w_local
    n_samples: int
    loss_before: float  # training loss of the global model on this client's data
    train_loss: float  # mean minibatch loss during local training
    work: int  # samples processed (steps x batch)


def _batches(n: int, batch: int, steps: int, rng: np.random.Generator) -> list[np.ndarray]:
    """`steps` minibatches sweeping the data in reshuffled epochs (a data loader with
    `shuffle=True, drop_last=True`); a client with at most `batch` samples uses all of them
    every step."""
    if batch >= n:
        every = np.arange(n)
        return [every] * steps
    out: list[np.ndarray] = []
    order = rng.permutation(n)
    pos = 0
    for _ in range(steps):
        if pos + batch > n:
            order = rng.permutation(n)
            pos = 0
        out.append(order[pos : pos + batch])
        pos += batch
    return out


def local_train(
    model: Model,
    w_global: np.ndarray,
    data: ClientData,
    config: LocalConfig,
    rng: np.random.Generator,
) -> LocalUpdate:
    """Run local SGD from `w_global` on one client's training data (never its test data)."""
    return local_train_many(model, w_global, [data], config, rng)[0]


def local_train_many(
    model: Model,
    w_global: np.ndarray,
    clients: Sequence[ClientData],
    config: LocalConfig,
    rng: np.random.Generator,
    loss_before: bool = True,
) -> list[LocalUpdate]:
    """Local SGD for a round's participants, all from `w_global`, stepped together.

    Each client's minibatches are drawn first, client after client, so the generator is
    consumed exactly as by training them one by one; clients with the same batch length and
    step count then advance in lockstep through `Model.loss_grad_stack`. The results are the
    bits one-by-one training gives (tested), at a fraction of the numpy calls. With
    `loss_before=False` the updates' `loss_before` is NaN (it costs a pass over the data and
    only q-FedAvg reads it).
    """
    plans = []
    for data in clients:
        n = data.n_train
        if n == 0:
            raise ValueError("a client with no training samples cannot train")
        plans.append(np.stack(_batches(n, config.batch_size, config.steps_for(n), rng)))
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, plan in enumerate(plans):
        groups.setdefault(plan.shape, []).append(i)
    out: dict[int, LocalUpdate] = {}
    for members in groups.values():
        trained = _train_lockstep(
            model,
            w_global,
            [clients[i] for i in members],
            [plans[i] for i in members],
            config,
            loss_before,
        )
        out.update(zip(members, trained, strict=True))
    return [out[i] for i in range(len(clients))]


def _train_lockstep(
    model: Model,
    w_global: np.ndarray,
    clients: list[ClientData],
    plans: list[np.ndarray],
    config: LocalConfig,
    loss_before: bool,
) -> list[LocalUpdate]:
    """Clients whose plans (steps, batch) share a shape, trained as one stack."""
    steps, batch = plans[0].shape
    first = clients[0]
    x = np.empty((len(clients), steps, batch, first.x_train.shape[1]), first.x_train.dtype)
    y = np.empty((len(clients), steps, batch), first.y_train.dtype)
    for i, (c, plan) in enumerate(zip(clients, plans, strict=True)):
        np.take(c.x_train, plan, axis=0, out=x[i])  # gathered in place: no second copy
        np.take(c.y_train, plan, out=y[i])
    w = np.tile(w_global, (len(clients), 1))
    losses = np.empty((len(clients), steps))
    for s in range(steps):
        losses[:, s], g = model.loss_grad_stack(w, x[:, s], y[:, s])
        if config.mu:
            g = g + config.mu * (w - w_global)
        if config.weight_decay:
            g = g + config.weight_decay * w
        if config.clip is not None:
            for row in g:
                norm = float(np.linalg.norm(row))
                if norm > config.clip:
                    row *= config.clip / norm
        w -= config.lr * g
    return [
        LocalUpdate(
            update=w_global - w[i],
            n_samples=c.n_train,
            loss_before=model.loss(w_global, c.x_train, c.y_train) if loss_before else math.nan,
            train_loss=float(losses[i].mean()),
            work=config.work(c.n_train),
        )
        for i, c in enumerate(clients)
    ]


@dataclass(frozen=True)
class ClientScores:
    """Per-client test accuracy and loss (NaN accuracy for a client with no test data)."""

    accuracy: np.ndarray
    loss: np.ndarray
    n_test: np.ndarray


def evaluate_clients(
    model: Model,
    dataset: FederatedDataset,
    weights: np.ndarray | list[np.ndarray],
    assignment: np.ndarray | None = None,
    clients: np.ndarray | None = None,
) -> ClientScores:
    """Each client's accuracy and loss on its own test split, under the model it is assigned.

    `weights` is one vector (a single global model) or a list of vectors (one per cohort)
    with `assignment[i]` the index of client i's model. Results cover `clients` (all by
    default), in that order. Rows are pooled per model, so this is one matrix product per
    model rather than a Python loop over clients.
    """
    models = [weights] if isinstance(weights, np.ndarray) and weights.ndim == 1 else list(weights)
    idx = np.arange(len(dataset)) if clients is None else np.asarray(clients, dtype=np.int64)
    which = np.zeros(len(dataset), dtype=np.int64) if assignment is None else np.asarray(assignment)
    correct = np.zeros(len(dataset))
    loss_sum = np.zeros(len(dataset))
    for m, w in enumerate(models):
        members = idx[which[idx] == m]
        x, y, owner = dataset.pooled_test(members)
        if len(y) == 0:
            continue
        logits = model.logits(w, x)
        z = logits - logits.max(axis=1, keepdims=True)
        nll = np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y)), y]
        correct += np.bincount(owner, weights=(np.argmax(logits, 1) == y), minlength=len(dataset))
        loss_sum += np.bincount(owner, weights=nll, minlength=len(dataset))
    n_test = dataset.test_counts[idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = np.where(n_test > 0, correct[idx] / n_test, np.nan)
        loss = np.where(n_test > 0, loss_sum[idx] / n_test, np.nan)
    return ClientScores(accuracy=acc, loss=loss, n_test=n_test)
