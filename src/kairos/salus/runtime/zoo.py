"""The built-in jobs: small versions of the paper's workload families, built in code.

Each factory is `name(kind, **options) -> JobParts` with `kind` "train" or "infer" and data drawn
from a seeded generator (no downloads): a CNN classifier (the CNN rows of Table A.1), an LSTM
word-level language model (seq2seq / PTB), a VAE and a sub-pixel super-resolution network, the
same four families as spec 4.2. Sizes are options so the same job is a 2 ms test step or a
20 ms benchmark step. Submit one as `kairos.salus.runtime.zoo:cnn`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from kairos.salus.runtime.job import JobParts, Kind

Batch = tuple[torch.Tensor, ...]


def _batches(make: Callable[[torch.Generator], Batch], seed: int) -> Iterator[Batch]:
    """An endless stream of fresh random batches (each one ephemeral to its iteration), made on
    the default device: the service makes that the GPU while a job runs on one."""
    gen = torch.Generator(torch.get_default_device()).manual_seed(seed)
    while True:
        yield make(gen)


def _parts(
    kind: Kind,
    model: nn.Module,
    loss: Callable[[nn.Module, Batch], torch.Tensor],
    data: Iterator[Batch],
    lr: float,
) -> JobParts:
    """Training: forward, backward, optimizer step, gradients dropped (spec 6.5); inference:
    the forward pass alone without autograd. Adam's moments are created here, eagerly, so the
    first iteration allocates no persistent state."""
    if kind == "infer":
        model.eval()

        def infer(batch: Batch) -> None:
            with torch.no_grad():
                model(batch[0])

        return JobParts(model, None, data, infer)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for p in model.parameters():  # materialize the optimizer state before the first step
        p.grad = torch.zeros_like(p)
    opt.step()
    opt.zero_grad(set_to_none=True)

    def train(batch: Batch) -> None:
        loss(model, batch).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return JobParts(model, opt, data, train)


def cnn(
    kind: Kind = "train", batch: int = 8, width: int = 8, image: int = 16, seed: int = 0
) -> JobParts:
    """A small conv net classifying random `image`x`image` RGB images into 10 classes."""
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(2 * width, 2 * width, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(2 * width, 10),
    )

    def make(g: torch.Generator) -> Batch:
        x = torch.randn(batch, 3, image, image, generator=g)
        return x, torch.randint(0, 10, (batch,), generator=g)

    def loss(m: nn.Module, b: Batch) -> torch.Tensor:
        return F.cross_entropy(m(b[0]), b[1])

    return _parts(kind, model, loss, _batches(make, seed), 1e-3)


class _LanguageModel(nn.Module):
    def __init__(self, vocab: int, hidden: int, layers: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out)


def lstm(
    kind: Kind = "train",
    batch: int = 8,
    seq: int = 16,
    vocab: int = 200,
    hidden: int = 32,
    layers: int = 1,
    seed: int = 0,
) -> JobParts:
    """A word-level LSTM language model (the PTB `seq2seq` rows) on random token streams."""
    torch.manual_seed(seed)
    model = _LanguageModel(vocab, hidden, layers)

    def make(g: torch.Generator) -> Batch:
        tokens = torch.randint(0, vocab, (batch, seq + 1), generator=g)
        return tokens[:, :-1], tokens[:, 1:]

    def loss(m: nn.Module, b: Batch) -> torch.Tensor:
        return F.cross_entropy(m(b[0]).reshape(-1, vocab), b[1].reshape(-1))

    return _parts(kind, model, loss, _batches(make, seed), 1e-3)


class _VAE(nn.Module):
    def __init__(self, features: int, hidden: int, latent: int) -> None:
        super().__init__()
        self.enc = nn.Linear(features, hidden)
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, features))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = F.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return torch.sigmoid(self.dec(z)), mu, logvar


def vae(
    kind: Kind = "train",
    batch: int = 16,
    features: int = 64,
    hidden: int = 32,
    latent: int = 8,
    seed: int = 0,
) -> JobParts:
    """A variational auto-encoder (the paper's `vae`) on random data in [0, 1]."""
    torch.manual_seed(seed)
    model = _VAE(features, hidden, latent)

    def make(g: torch.Generator) -> Batch:
        return (torch.rand(batch, features, generator=g),)

    def loss(m: nn.Module, b: Batch) -> torch.Tensor:
        recon, mu, logvar = m(b[0])
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return F.binary_cross_entropy(recon, b[0], reduction="sum") + kl

    return _parts(kind, model, loss, _batches(make, seed), 1e-3)


def superres(
    kind: Kind = "train", batch: int = 4, image: int = 16, factor: int = 2, seed: int = 0
) -> JobParts:
    """A sub-pixel convolution super-resolution net (the paper's `superres`): upscale a random
    low-resolution image by `factor` and regress the high-resolution target."""
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 5, padding=2),
        nn.ReLU(),
        nn.Conv2d(16, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, factor**2, 3, padding=1),
        nn.PixelShuffle(factor),
    )

    def make(g: torch.Generator) -> Batch:
        low = torch.rand(batch, 1, image, image, generator=g)
        return low, torch.rand(batch, 1, image * factor, image * factor, generator=g)

    def loss(m: nn.Module, b: Batch) -> torch.Tensor:
        return F.mse_loss(m(b[0]), b[1])

    return _parts(kind, model, loss, _batches(make, seed), 1e-3)


FACTORIES: dict[str, Callable[..., Any]] = {
    "cnn": cnn,
    "lstm": lstm,
    "vae": vae,
    "superres": superres,
}
