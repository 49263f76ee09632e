"""Small classifiers in numpy whose parameters are one flat float vector.

Server algorithms average, difference and rescale parameters, and Auxo clusters client updates
as vectors, so the natural currency is a single 1-D array. A model here is a stateless
description (shapes plus the maths): `init(rng)` returns a weight vector, and every other method
takes the vector explicitly. Nothing is hidden in the model, so copying a cohort's model is
copying an array. Parameters are laid out input layer first, output layer last, so "the last
fraction of the coordinates" (Auxo's update compression) means the layers nearest the output.

numpy is enough at this scale (a 64-32-10 MLP has 2,410 parameters) and is faster than torch
for the many tiny minibatches of a federated round on two CPU cores.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


def softmax_xent(logits: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy of integer labels and its gradient with respect to the logits."""
    z = logits - logits.max(axis=1, keepdims=True)
    ez = np.exp(z)
    total = ez.sum(axis=1, keepdims=True)
    n = len(y)
    rows = np.arange(n)
    loss = float(np.mean(np.log(total[:, 0]) - z[rows, y])) if n else 0.0
    grad = ez / total
    grad[rows, y] -= 1.0
    return loss, grad / max(n, 1)


def softmax_xent_stack(logits: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`softmax_xent` for P independent minibatches at once: logits (P, B, C), labels (P, B).

    Every reduction runs along the same axis, in the same order, as in the one-batch form, so
    each batch's loss and gradient are bit-identical to `softmax_xent` on it alone.
    """
    z = logits - logits.max(axis=2, keepdims=True)
    ez = np.exp(z)
    total = ez.sum(axis=2, keepdims=True)
    p, n = y.shape
    pick = (np.arange(p)[:, None], np.arange(n)[None, :], y)
    losses = np.mean(np.log(total[:, :, 0]) - z[pick], axis=1) if n else np.zeros(p)
    grad = ez / total
    grad[pick] -= 1.0
    return losses, grad / max(n, 1)


class Model(ABC):
    """A classifier over flat weights: (n_features) -> (n_classes) logits."""

    n_features: int
    n_classes: int

    @property
    @abstractmethod
    def n_params(self) -> int:
        """Length of the weight vector."""

    @abstractmethod
    def init(self, rng: np.random.Generator) -> np.ndarray:
        """A fresh weight vector (the same for the same generator state)."""

    @abstractmethod
    def logits(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Class scores (n, n_classes) for inputs (n, n_features)."""

    @abstractmethod
    def loss_grad(self, w: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean cross-entropy on (x, y) and its gradient (a vector like `w`)."""

    def loss_grad_stack(
        self, w: np.ndarray, x: np.ndarray, y: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """`loss_grad` for P models on P minibatches at once: weights (P, n_params), inputs
        (P, B, d), labels (P, B) -> losses (P,) and gradients (P, n_params).

        A federated round trains tens of clients on tiny batches, where numpy's per-call cost
        dominates; stacking them makes each step a handful of calls instead of one per client.
        This default loops; the models below override it with stacked matrix products that
        give the same bits as the loop (tested).
        """
        out = [self.loss_grad(w[i], x[i], y[i]) for i in range(len(w))]
        return np.array([o[0] for o in out]), np.array([o[1] for o in out]).reshape(w.shape)

    def logits_stack(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """`logits` for P models at once: weights (P, n_params), inputs (P, B, d) or one set
        (B, d) for all -> (P, B, n_classes). This default loops."""
        xs = np.broadcast_to(x, (len(w), *x.shape[-2:]))
        return np.stack([self.logits(w[i], xs[i]) for i in range(len(w))])

    def loss_stack(self, w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """`loss` of P models (P, n_params) on one set (x, y): what a client computes when it
        scores every model it downloaded (IFCA), bit-identical to P calls of `loss`."""
        if len(y) == 0:
            return np.zeros(len(w))
        return softmax_xent_stack(self.logits_stack(w, x), np.broadcast_to(y, (len(w), len(y))))[0]

    def loss(self, w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
        """Mean cross-entropy without the gradient (0 on an empty set)."""
        if len(y) == 0:
            return 0.0
        return softmax_xent(self.logits(w, x), y)[0]

    def predict(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.argmax(self.logits(w, x), axis=1)

    def accuracy(self, w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
        """Fraction correct (NaN on an empty set, so a missing test set is never "perfect")."""
        if len(y) == 0:
            return float("nan")
        return float(np.mean(self.predict(w, x) == y))

    def _check(self, w: np.ndarray) -> None:
        if w.shape != (self.n_params,):
            raise ValueError(f"expected a weight vector of shape ({self.n_params},), got {w.shape}")


@dataclass(frozen=True)
class LogisticRegression(Model):
    """Multinomial logistic regression: logits = x W + b; flat layout [W (d*C), b (C)].

    Starts at zero (the convex problem needs no symmetry breaking, and zero makes runs with
    different seeds share a starting point).
    """

    n_features: int
    n_classes: int

    @property
    def n_params(self) -> int:
        return (self.n_features + 1) * self.n_classes

    def _split(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self._check(w)
        d, c = self.n_features, self.n_classes
        return w[: d * c].reshape(d, c), w[d * c :]

    def init(self, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(self.n_params)

    def logits(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        weights, bias = self._split(w)
        return x @ weights + bias

    def loss_grad(self, w: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        weights, bias = self._split(w)
        loss, g = softmax_xent(x @ weights + bias, y)
        return loss, np.concatenate([(x.T @ g).ravel(), g.sum(axis=0)])

    def logits_stack(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        d, c = self.n_features, self.n_classes
        return x @ w[:, : d * c].reshape(len(w), d, c) + w[:, None, d * c :]

    def loss_grad_stack(
        self, w: np.ndarray, x: np.ndarray, y: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        losses, g = softmax_xent_stack(self.logits_stack(w, x), y)
        xt = x.transpose(0, 2, 1)
        return losses, np.concatenate([(xt @ g).reshape(len(w), -1), g.sum(axis=1)], axis=1)


@dataclass(frozen=True)
class MLP(Model):
    """One hidden ReLU layer: d -> hidden -> C. Flat layout [W1, b1, W2, b2].

    He-initialised hidden layer, small output layer: the spec's 64-32-10 network for digits.
    """

    n_features: int
    n_classes: int
    hidden: int = 32

    @property
    def n_params(self) -> int:
        return (self.n_features + 1) * self.hidden + (self.hidden + 1) * self.n_classes

    def _split(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        self._check(w)
        d, h, c = self.n_features, self.hidden, self.n_classes
        a = d * h
        w1, b1 = w[:a].reshape(d, h), w[a : a + h]
        a += h
        w2, b2 = w[a : a + h * c].reshape(h, c), w[a + h * c :]
        return w1, b1, w2, b2

    def init(self, rng: np.random.Generator) -> np.ndarray:
        d, h, c = self.n_features, self.hidden, self.n_classes
        w1 = rng.normal(0.0, np.sqrt(2.0 / d), size=d * h)
        w2 = rng.normal(0.0, np.sqrt(1.0 / h), size=h * c)
        return np.concatenate([w1, np.zeros(h), w2, np.zeros(c)])

    def logits(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        w1, b1, w2, b2 = self._split(w)
        return np.maximum(x @ w1 + b1, 0.0) @ w2 + b2

    def loss_grad(self, w: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        w1, b1, w2, b2 = self._split(w)
        pre = x @ w1 + b1
        hid = np.maximum(pre, 0.0)
        loss, g = softmax_xent(hid @ w2 + b2, y)
        g_hid = (g @ w2.T) * (pre > 0)
        return loss, np.concatenate(
            [(x.T @ g_hid).ravel(), g_hid.sum(axis=0), (hid.T @ g).ravel(), g.sum(axis=0)]
        )

    def _split_stack(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        d, h, c = self.n_features, self.hidden, self.n_classes
        p, a, b = len(w), d * h, d * h + h
        w1, b1 = w[:, :a].reshape(p, d, h), w[:, None, a:b]
        return w1, b1, w[:, b : b + h * c].reshape(p, h, c), w[:, None, b + h * c :]

    def logits_stack(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        w1, b1, w2, b2 = self._split_stack(w)
        return np.maximum(x @ w1 + b1, 0.0) @ w2 + b2

    def loss_grad_stack(
        self, w: np.ndarray, x: np.ndarray, y: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        w1, b1, w2, b2 = self._split_stack(w)
        pre = x @ w1 + b1
        hid = np.maximum(pre, 0.0)
        losses, g = softmax_xent_stack(hid @ w2 + b2, y)
        g_hid = (g @ w2.transpose(0, 2, 1)) * (pre > 0)
        p = len(w)
        parts = [
            (x.transpose(0, 2, 1) @ g_hid).reshape(p, -1),
            g_hid.sum(axis=1),
            (hid.transpose(0, 2, 1) @ g).reshape(p, -1),
            g.sum(axis=1),
        ]
        return losses, np.concatenate(parts, axis=1)


def make_model(kind: str, n_features: int, n_classes: int, hidden: int = 32) -> Model:
    """A model by name: 'lr' (logistic regression) or 'mlp' (one hidden layer)."""
    if kind == "lr":
        return LogisticRegression(n_features, n_classes)
    if kind == "mlp":
        return MLP(n_features, n_classes, hidden)
    raise ValueError(f"unknown model {kind!r}; use 'lr' or 'mlp'")
