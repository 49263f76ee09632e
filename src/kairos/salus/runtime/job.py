"""What a Salus job is to the service: the four parts its factory returns, and how a factory
named by an import path is found.

A job is submitted as `"pkg.module:factory"` (spec 6.1: the PyTorch analogue of shipping the
graph). The service imports the module and calls `factory(kind, **options)`, which returns
`JobParts`: the model, its optimizer (None for inference), an endless data iterator and the step
function that runs one iteration on one batch. Importing runs the module's code, so the service
only imports modules under allow-listed prefixes (default: the zoo); a path from the network
outside them is refused before anything is imported.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

Kind = Literal["train", "infer"]
DEFAULT_ALLOWED = ("kairos.salus.runtime.zoo",)
_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")


@dataclass
class JobParts:
    """One job's program. `step(batch)` runs one iteration; for training it must leave no
    gradients behind (`optimizer.zero_grad(set_to_none=True)` at its end, spec 6.5), or the
    gradients count as a leak across iterations."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer | None
    data: Iterator[Any]
    step: Callable[[Any], Any]

    def run_iteration(self) -> None:
        """Draw a batch and run one step; what the step returns is dropped at once, so a loss
        tensor kept by the caller cannot masquerade as the job's leak."""
        self.step(next(self.data))


class FactoryError(ValueError):
    """The import path does not name a usable factory; the message says what to fix."""


def check_path(path: str, allowed: Sequence[str] = DEFAULT_ALLOWED) -> tuple[str, str]:
    """(module, attribute) of `"pkg.module:factory"`, or `FactoryError` if the path is malformed
    or outside the allowed module prefixes. Imports nothing."""
    if not _PATH.match(path):
        raise FactoryError(
            f"factory {path!r} is not an import path; write it as 'package.module:function', "
            "e.g. 'kairos.salus.runtime.zoo:cnn'"
        )
    module, attr = path.split(":")
    if not any(module == p or module.startswith(p + ".") for p in allowed):
        raise FactoryError(
            f"factory module {module!r} is not allowed here; this service imports only modules "
            f"under {', '.join(allowed)} (the operator widens this with --allow-module)"
        )
    return module, attr


def load_factory(path: str, allowed: Sequence[str] = DEFAULT_ALLOWED) -> Callable[..., Any]:
    """The callable named by `path`, imported only if its module is allowed."""
    module_name, attr = check_path(path, allowed)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise FactoryError(f"cannot import module {module_name!r}: {exc}") from None
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise FactoryError(f"module {module_name!r} has no callable {attr!r}")
    return factory


def check_options(factory: Callable[..., Any], kind: Kind, options: dict[str, Any]) -> None:
    """`FactoryError` naming the option when `factory(kind, **options)` would not bind."""
    try:
        inspect.signature(factory).bind(kind, **options)
    except TypeError as exc:
        names = ", ".join(sorted(options)) or "none"
        raise FactoryError(f"options ({names}) do not fit the factory: {exc}") from None


def build(factory: Callable[..., Any], kind: Kind, options: dict[str, Any]) -> JobParts:
    """Call the factory and check what it returned."""
    parts = factory(kind, **options)
    if isinstance(parts, tuple) and len(parts) == 4:
        parts = JobParts(*parts)
    if not isinstance(parts, JobParts):
        raise FactoryError(
            "the factory must return JobParts or a (model, optimizer, data, step) tuple, "
            f"not {type(parts).__name__}"
        )
    if not isinstance(parts.model, torch.nn.Module):
        raise FactoryError(f"the model must be a torch.nn.Module, not {type(parts.model)}")
    if kind == "train" and parts.optimizer is None:
        raise FactoryError("a training job needs an optimizer; the factory returned None")
    if not callable(parts.step) or not hasattr(parts.data, "__next__"):
        raise FactoryError("the step must be callable and the data an iterator")
    return parts
