"""Random-weight PyTorch models whose latency depends on the input, as in the paper (§4.5.1).

Trained weights are not needed to reproduce latency behaviour, so everything is built in code
from a seed and nothing is downloaded (spec 6.2):

* `EarlyExitCNN` (SkipNet / RDI-Nets stand-in): four residual stages with an exit head after
  each; the request's `exit` field picks its stage. A batch is padded (Eq 4.4): it runs to the
  deepest member's exit and each member's output is read at its own exit, so a batch costs
  g_k(solo latency of its deepest member).
* `TinyDecoder` (GPT / BART stand-in): a small transformer with a KV cache that greedily
  decodes exactly `n_new` tokens per request; a batch decodes max(n_new) steps (prompts are
  left-padded and masked, so batched outputs equal solo ones).
* `StaticCNN` (ResNet-like): constant work per input, for the static workload.

Each model validates its own `input` object (pydantic, strict), names its input classes (the
calibration grid and the building blocks of applications) and runs a batch of inputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn
from torch.nn import functional as F

from kairos.orloj.runtime.served import STRICT, ModelKind, ServedModel

MODEL_KINDS: tuple[ModelKind, ...] = ("early-exit", "decoder", "static")


def _image(seed: int, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _classify(logits: torch.Tensor) -> list[dict[str, Any]]:
    probs = logits.float().softmax(dim=-1)
    conf, label = probs.max(dim=-1)
    return [
        {"label": int(lb), "confidence": round(float(c), 6)}
        for lb, c in zip(label.tolist(), conf.tolist(), strict=True)
    ]


class _Block(nn.Module):
    """conv-ReLU-conv plus skip, scaled by 1/sqrt(2) so random activations stay O(1) however
    deep the stack (no overflow, no slow denormals)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.conv2(F.relu(self.conv1(x)))) * math.sqrt(0.5)


# -- early-exit CNN ----------------------------------------------------------------------------
class EarlyExitInput(BaseModel):
    model_config = STRICT
    exit: int = Field(ge=1, le=4, description="exit stage, 1 (shallowest) to 4 (deepest)")
    seed: int = Field(0, ge=0, lt=2**31, description="seed of the random input image")


class _EarlyExitNet(nn.Module):
    def __init__(self, width: int, stage_blocks: Sequence[int], n_classes: int) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.stages = nn.ModuleList(
            nn.Sequential(*(_Block(width) for _ in range(n))) for n in stage_blocks
        )
        self.heads = nn.ModuleList(nn.Linear(width, n_classes) for _ in stage_blocks)


class EarlyExitCNN(ServedModel):
    """Four residual stages of `stage_blocks` blocks; exit head s reads stage s's features."""

    kind: ModelKind = "early-exit"
    class_field = "exit"
    input_schema = EarlyExitInput

    def __init__(
        self,
        width: int = 64,
        size: int = 8,
        stage_blocks: Sequence[int] = (16, 48, 48, 48),
        n_classes: int = 10,
        seed: int = 0,
        device: str = "cpu",
    ) -> None:
        if len(stage_blocks) != 4 or min(stage_blocks) < 1:
            raise ValueError("stage_blocks needs four positive block counts")
        torch.manual_seed(seed)
        super().__init__(_EarlyExitNet(width, stage_blocks, n_classes), device)
        self.net: _EarlyExitNet = self.module  # type: ignore[assignment]
        self.size = size

    def classes(self) -> dict[str, BaseModel]:
        return {f"exit{e}": EarlyExitInput(exit=e) for e in range(1, 5)}

    def class_of(self, x: BaseModel) -> str:
        assert isinstance(x, EarlyExitInput)
        return f"exit{x.exit}"

    def default_apps(self) -> dict[str, tuple[str, ...]]:
        return {"easy": ("exit1",), "medium": ("exit2", "exit3"), "hard": ("exit4",)}

    def random_input(self, cls: str, rng: np.random.Generator) -> dict[str, Any]:
        x = self.classes()[cls]
        assert isinstance(x, EarlyExitInput)
        return {"exit": x.exit, "seed": int(rng.integers(0, 2**31))}

    def _forward(self, xs: Sequence[Any]) -> list[dict[str, Any]]:
        images = torch.stack([_image(x.seed, (3, self.size, self.size)) for x in xs])
        exits = torch.tensor([x.exit for x in xs])
        h = self.net.stem(images.to(self.device))
        out: list[dict[str, Any]] = [{} for _ in xs]
        for s in range(int(exits.max())):  # padding: everyone runs to the deepest exit
            h = self.net.stages[s](h)
            rows = torch.nonzero(exits == s + 1).flatten()
            if rows.numel():
                pooled = h.index_select(0, rows.to(self.device)).mean(dim=(2, 3))
                for i, res in zip(rows.tolist(), _classify(self.net.heads[s](pooled)), strict=True):
                    out[i] = {"exit": s + 1, **res}
        return out


# -- static CNN --------------------------------------------------------------------------------
class StaticInput(BaseModel):
    model_config = STRICT
    seed: int = Field(0, ge=0, lt=2**31, description="seed of the random input image")


class StaticCNN(ServedModel):
    """A ResNet-like stack with the same work for every input (the static workload)."""

    kind: ModelKind = "static"
    input_schema = StaticInput

    def __init__(
        self, width: int = 64, size: int = 8, blocks: int = 24, seed: int = 0, device: str = "cpu"
    ) -> None:
        torch.manual_seed(seed)
        net = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1),
            *(_Block(width) for _ in range(blocks)),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(width, 10),
        )
        super().__init__(net, device)
        self.size = size

    def classes(self) -> dict[str, BaseModel]:
        return {"static": StaticInput()}

    def class_of(self, x: BaseModel) -> str:
        return "static"

    def default_apps(self) -> dict[str, tuple[str, ...]]:
        return {"a": ("static",), "b": ("static",)}

    def random_input(self, cls: str, rng: np.random.Generator) -> dict[str, Any]:
        return {"seed": int(rng.integers(0, 2**31))}

    def _forward(self, xs: Sequence[Any]) -> list[dict[str, Any]]:
        images = torch.stack([_image(x.seed, (3, self.size, self.size)) for x in xs])
        return _classify(self.module(images.to(self.device)))


class ModelSpec(BaseModel):
    """How to build a model: enough to rebuild the same weights in a worker process."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ModelKind
    options: dict[str, Any] = Field(default_factory=dict)  # constructor keywords
    device: str = "cpu"

    def build(self) -> ServedModel:
        if self.kind == "early-exit":
            model: ServedModel = EarlyExitCNN(device=self.device, **self.options)
        elif self.kind == "static":
            model = StaticCNN(device=self.device, **self.options)
        else:
            from kairos.orloj.runtime.decoder import TinyDecoder

            model = TinyDecoder(device=self.device, **self.options)
        model.spec = self
        return model


def build_model(kind: str, device: str = "cpu", **options: Any) -> ServedModel:
    """A model by CLI name (`early-exit`, `decoder`, `static`) with its constructor options."""
    if kind not in MODEL_KINDS:
        raise ValueError(f"unknown model {kind!r}; choose from {', '.join(MODEL_KINDS)}")
    return ModelSpec(kind=kind, options=options, device=device).build()
