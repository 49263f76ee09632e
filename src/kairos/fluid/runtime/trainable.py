"""The trainable contract (spec 6.2) and the built-in trainables.

A trainable is built by a factory named by import path ("pkg.module:Class"), so a worker
process can build it without receiving code. `step()` runs one iteration (an epoch here) and
returns the metric to maximise; under data parallelism every rank runs `step()` on its share of
each global batch, so the global batch, and with it the training, is the same at any width.
"""

from __future__ import annotations

import functools
import importlib
import math
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn


class Trainable(Protocol):
    def step(self) -> float: ...

    def save(self, path: Path) -> None: ...

    def restore(self, path: Path) -> None: ...


def load_factory(path: str) -> Any:
    """`pkg.module:name`, with errors that name what is wrong."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"trainable {path!r}: expected 'package.module:Name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"trainable {path!r}: cannot import {module_name}: {exc}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"trainable {path!r}: {module_name} has no {attr}") from None


@functools.cache
def _digits() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    xt = torch.tensor(x / 16.0, dtype=torch.float32)
    yt = torch.tensor(y, dtype=torch.long)
    split = 1437
    return xt[:split], yt[:split], xt[split:], yt[split:]


class DigitsMLP:
    """A one-hidden-layer MLP on scikit-learn's digits, SGD with momentum. Config in the unit
    cube: `x0` sets the learning rate (1e-3..1, log scale), `x1` the width (16..128).
    `explode_at` (an int) makes `step()` raise at that iteration, for failure tests."""

    batch = 64

    @staticmethod
    def warm() -> None:
        """Load the data and run torch's first-use set-up before any trial is timed."""
        DigitsMLP({}).step()

    def __init__(
        self, config: dict[str, Any], rank: int = 0, world: int = 1, seed: int = 0
    ) -> None:
        torch.manual_seed(seed)
        self.config = config
        self.rank, self.world = rank, world
        if self.batch % world:
            raise ValueError(f"global batch {self.batch} does not split over {world} ranks")
        self.lr = 10 ** (-3 + 3 * float(config.get("x0", 0.5)))
        hidden = int(16 + 112 * float(config.get("x1", 0.5)))
        self.model: nn.Module = nn.Sequential(
            nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10)
        )
        self.opt = torch.optim.SGD(self.model.parameters(), lr=self.lr, momentum=0.9)
        self.x, self.y, self.vx, self.vy = _digits()
        self.epoch = 0
        self.explode_at = config.get("explode_at")
        self.losses: list[float] = []
        if world > 1:
            self.model = nn.parallel.DistributedDataParallel(self.model)

    def step(self) -> float:
        self.epoch += 1
        if self.explode_at is not None and self.epoch == int(self.explode_at):
            raise RuntimeError(f"trial exploded at iteration {self.epoch} (explode_at)")
        order = torch.randperm(len(self.x), generator=torch.Generator().manual_seed(self.epoch))
        share = self.batch // self.world
        total = 0.0
        self.model.train()
        for start in range(0, len(order) - self.batch + 1, self.batch):
            rows = order[start + self.rank * share : start + (self.rank + 1) * share]
            loss = nn.functional.cross_entropy(self.model(self.x[rows]), self.y[rows])
            self.opt.zero_grad()
            loss.backward()  # DDP averages the gradients over ranks: the global batch's mean
            self.opt.step()
            total += loss.item()
        self.losses.append(total)
        return self.accuracy()

    def accuracy(self) -> float:
        self.model.eval()
        with torch.no_grad():
            pred = self.model(self.vx).argmax(dim=1)
        acc = float((pred == self.vy).float().mean())
        return acc if math.isfinite(acc) else 0.0

    def _module(self) -> nn.Module:
        inner = getattr(self.model, "module", self.model)
        assert isinstance(inner, nn.Module)
        return inner

    def save(self, path: Path) -> None:
        torch.save(
            {
                "model": self._module().state_dict(),
                "opt": self.opt.state_dict(),
                "epoch": self.epoch,
                "losses": self.losses,
            },
            path,
        )

    def restore(self, path: Path) -> None:
        state = torch.load(path, weights_only=True)
        self._module().load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.epoch = int(state["epoch"])
        self.losses = list(state["losses"])
