"""Server-side aggregation: how a round's client updates become the next global model.

One small interface, `aggregate(weights, updates, counts, losses) -> new weights`, covers the
algorithms Auxo is combined with in the paper. Updates are pseudo-gradients (`w_global -
w_local`, one row per participant), `counts` are training-sample counts and `losses` the
clients' losses at the global model before training. An aggregator may keep state (YoGi's
moments); `clone()` copies it, which is what a cohort split needs (children inherit the
parent's optimizer state). FedProx is FedAvg on the server plus a proximal term on the
client, so it is an `Algorithm` (the pairing of a client rule and a server rule), not a
separate aggregator.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from kairos.fl.learning.local import LocalConfig


def _as_matrix(updates: np.ndarray | list[np.ndarray], n_params: int) -> np.ndarray:
    u = np.asarray(updates, dtype=np.float64)
    if u.ndim != 2 or u.shape[1] != n_params:
        raise ValueError(f"updates must be (participants, {n_params}), got {u.shape}")
    if len(u) == 0:
        raise ValueError("cannot aggregate a round with no updates")
    return u


def weighted_mean(updates: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The sample-weighted mean of the rows of `updates` (FedAvg's average)."""
    c = np.asarray(counts, dtype=np.float64)
    if c.shape != (len(updates),) or np.any(c < 0) or c.sum() <= 0:
        raise ValueError("counts must be one non-negative number per update, not all zero")
    return np.asarray((c / c.sum()) @ updates)


class Aggregator(ABC):
    """Turns one round's updates into the next global weights (may keep state)."""

    name: str = "aggregator"
    # Whether `aggregate` reads `losses`; when it does not, a round skips the extra pass over
    # each participant's data that computing them costs (the losses are then NaN).
    uses_losses: ClassVar[bool] = False

    @abstractmethod
    def aggregate(
        self,
        weights: np.ndarray,
        updates: np.ndarray | list[np.ndarray],
        counts: np.ndarray,
        losses: np.ndarray,
    ) -> np.ndarray:
        """The new global weights (a new array; `weights` is not modified)."""

    def clone(self) -> Aggregator:
        """An independent copy, state included (for a cohort's children)."""
        return copy.deepcopy(self)


@dataclass
class FedAvg(Aggregator):
    """McMahan et al.: w <- w - server_lr * sum_i n_i u_i / sum_i n_i."""

    server_lr: float = 1.0
    name: str = "fedavg"

    def aggregate(
        self,
        weights: np.ndarray,
        updates: np.ndarray | list[np.ndarray],
        counts: np.ndarray,
        losses: np.ndarray,
    ) -> np.ndarray:
        u = _as_matrix(updates, len(weights))
        return weights - self.server_lr * weighted_mean(u, counts)


@dataclass
class QFedAvg(Aggregator):
    """q-FFL's aggregation (Li et al. 2020): fairer models by weighting high-loss clients.

    With L the Lipschitz constant of the gradient (the reference code uses L = 1/lr):
    Delta_k = F_k^q * L * u_k, h_k = q F_k^(q-1) ||L u_k||^2 + L F_k^q, and
    w <- w - sum_k Delta_k / sum_k h_k. At q = 0 this is the unweighted mean of the updates,
    i.e. FedAvg with equal weights (q-FFL samples clients in proportion to their data instead
    of weighting them).
    """

    q: float = 1.0
    lipschitz: float = 20.0
    name: str = "qfedavg"
    uses_losses: ClassVar[bool] = True

    def aggregate(
        self,
        weights: np.ndarray,
        updates: np.ndarray | list[np.ndarray],
        counts: np.ndarray,
        losses: np.ndarray,
    ) -> np.ndarray:
        u = _as_matrix(updates, len(weights))
        f = np.maximum(np.asarray(losses, dtype=np.float64), 1e-10)
        if f.shape != (len(u),):
            raise ValueError("q-FedAvg needs one loss per update")
        scaled = self.lipschitz * u
        fq = f**self.q
        delta = fq[:, None] * scaled
        h = self.q * f ** (self.q - 1) * np.einsum("ij,ij->i", scaled, scaled) + self.lipschitz * fq
        return np.asarray(weights - delta.sum(axis=0) / h.sum())


@dataclass
class FedYoGi(Aggregator):
    """Reddi et al. 2021's adaptive server optimizer, with Yogi's additive second moment.

    The pseudo-gradient is the weighted mean update g; m <- b1 m + (1-b1) g;
    v <- v - (1-b2) g^2 sign(v - g^2); w <- w - eta m / (sqrt(v) + tau). `init="reddi"`
    starts m = 0, v = tau^2 (the paper); `init="fedscale"` starts m = g, v = g^2 on the first
    round, as the Auxo authors' FedScale code does.
    """

    eta: float = 1e-2
    beta1: float = 0.9
    beta2: float = 0.99
    tau: float = 1e-3
    init: Literal["reddi", "fedscale"] = "reddi"
    name: str = "yogi"
    m: np.ndarray | None = None
    v: np.ndarray | None = None

    def aggregate(
        self,
        weights: np.ndarray,
        updates: np.ndarray | list[np.ndarray],
        counts: np.ndarray,
        losses: np.ndarray,
    ) -> np.ndarray:
        g = weighted_mean(_as_matrix(updates, len(weights)), counts)
        g2 = g * g
        if (self.m is None or self.v is None) and self.init == "fedscale":
            self.m, self.v = g.copy(), g2
        else:
            if self.m is None or self.v is None:
                self.m, self.v = np.zeros_like(g), np.full_like(g, self.tau**2)
            self.m = self.beta1 * self.m + (1 - self.beta1) * g
            self.v = self.v - (1 - self.beta2) * g2 * np.sign(self.v - g2)
        step = self.eta * self.m / (np.sqrt(np.maximum(self.v, 0.0)) + self.tau)
        return np.asarray(weights - step)


@dataclass(frozen=True)
class Algorithm:
    """An FL algorithm: the server's aggregator and the client's local rule (FedProx's mu).

    `aggregator` is a prototype: each model being trained (each cohort) takes its own
    `fresh()` copy so optimizer state is never shared by accident.
    """

    name: str
    aggregator: Aggregator
    mu: float = 0.0

    def fresh(self) -> Aggregator:
        return self.aggregator.clone()

    def local(self, base: LocalConfig) -> LocalConfig:
        """The client's settings under this algorithm (FedProx sets the proximal mu)."""
        return base.model_copy(update={"mu": self.mu}) if self.mu else base


AlgorithmName = Literal["fedavg", "fedprox", "qfedavg", "yogi"]


def make_algorithm(
    name: AlgorithmName,
    lr: float = 0.05,
    mu: float = 0.1,
    q: float = 1.0,
    lipschitz: float | None = None,
    eta: float = 1e-2,
    beta1: float = 0.9,
    beta2: float = 0.99,
    tau: float = 1e-3,
) -> Algorithm:
    """The spec's algorithms by name with its defaults (FedProx mu=0.1, q-FedAvg q=1 with
    L = 1/lr, YoGi eta=1e-2, beta1=0.9, beta2=0.99, tau=1e-3)."""
    if name == "fedavg":
        return Algorithm("fedavg", FedAvg())
    if name == "fedprox":
        return Algorithm("fedprox", FedAvg(), mu=mu)
    if name == "qfedavg":
        return Algorithm("qfedavg", QFedAvg(q=q, lipschitz=lipschitz or 1.0 / lr))
    if name == "yogi":
        return Algorithm("yogi", FedYoGi(eta=eta, beta1=beta1, beta2=beta2, tau=tau))
    raise ValueError(f"unknown algorithm {name!r}; use fedavg, fedprox, qfedavg or yogi")
