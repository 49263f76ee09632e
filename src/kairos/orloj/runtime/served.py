"""`ServedModel`: what the executor runs, apart from the models themselves.

The interface lives in its own module so that each model (`models`, `decoder`) builds on it
without importing the module that builds models by name (`models.ModelSpec`), which would make
the two import each other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict
from torch import nn

ModelKind = Literal["early-exit", "decoder", "static"]
# Request inputs are validated strictly: an unknown field or a float for an int is an error.
STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


class ModelRecipe(Protocol):
    """How a model was built (`models.ModelSpec`): enough to build it again elsewhere."""

    def build(self) -> ServedModel: ...


class ServedModel(ABC):
    """What the executor runs: validation, input classes, and a batched forward pass."""

    kind: ModelKind
    input_schema: type[BaseModel]
    spec: ModelRecipe | None = None  # set by `ModelSpec.build`; a worker process needs it
    class_field: str | None = None  # the input field whose value sets its class (and cost)

    def __init__(self, module: nn.Module, device: str) -> None:
        self.device = torch.device(device)
        self.module = module.to(self.device).eval()

    def parse(self, raw: Mapping[str, Any]) -> BaseModel:
        """A validated input (raises pydantic's ValidationError naming the field)."""
        return self.input_schema.model_validate(raw)

    @abstractmethod
    def classes(self) -> dict[str, BaseModel]:
        """Input classes by key, cheapest first: inputs of a class cost the same (the
        calibration grid); the last one is the most expensive (used to warm up)."""

    def field_range(self, classes: Sequence[str]) -> tuple[str, Any, Any] | None:
        """(field, lowest, highest) over `classes`: the range of `class_field` an application
        declared with these classes accepts; None for a model whose inputs all cost alike."""
        field = self.class_field
        if field is None:
            return None
        known = self.classes()
        values = [getattr(known[c], field) for c in classes]
        return field, min(values), max(values)

    @abstractmethod
    def class_of(self, x: BaseModel) -> str:
        """The class key of an input (for the warm-start profile)."""

    @abstractmethod
    def default_apps(self) -> dict[str, tuple[str, ...]]:
        """Applications (name -> input classes, drawn uniformly): a multimodal mixture."""

    @abstractmethod
    def random_input(self, cls: str, rng: np.random.Generator) -> dict[str, Any]:
        """A JSON `input` of class `cls` (what a recorded trace holds)."""

    @abstractmethod
    def _forward(self, xs: Sequence[Any]) -> list[dict[str, Any]]: ...

    def run(self, xs: Sequence[BaseModel]) -> list[dict[str, Any]]:
        """One batch, under `inference_mode`; one JSON-able output per input, in order."""
        if not xs:
            raise ValueError("a batch needs at least one input")
        with torch.inference_mode():
            return self._forward(xs)

    def synchronize(self) -> None:
        """Wait for queued device work (so wall-clock timing covers it on a GPU)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
