"""Named experiments: `kairos <system> experiment <name> [--quick]` looks them up here.

An experiment is a pydantic config (its fields are the knobs, `quick` among them) and a run
function that receives the config and an `ExperimentContext` (where to write, how to sweep).
Systems register theirs with the `@experiment` decorator when their module is imported; which
module that is, each system says in its `kairos.systems` entry point (`kairos.systems.System`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kairos.experiments.sweep import C, PointFn, Sweep
from kairos.systems import installed


@dataclass
class ExperimentContext:
    out_dir: Path
    jobs: int = 1
    ray_address: str | None = None
    progress: bool = True
    cache: bool = True

    def sweep(
        self, fn: PointFn[C], base: C, points: Sequence[Mapping[str, Any]], description: str = ""
    ) -> list[dict[str, Any]]:
        return Sweep(
            fn,
            base,
            points,
            cache_dir=self.out_dir.parent / "cache" if self.cache else None,
            jobs=self.jobs,
            ray_address=self.ray_address,
            progress=self.progress,
            description=description or fn.__name__,
        ).run()


@dataclass(frozen=True)
class Experiment:
    system: str
    name: str
    title: str
    config_type: type[BaseModel]
    run: Callable[[Any, ExperimentContext], Any]
    quick_overrides: dict[str, Any] = field(default_factory=dict)

    def config(self, quick: bool = False, overrides: Mapping[str, Any] | None = None) -> BaseModel:
        """The config with the quick settings and `overrides` applied. A key the config does
        not have is refused (pydantic's `extra_forbidden`, at any depth) whatever the model's
        own `extra` says: a misspelled `--set` key must not run the defaults silently."""
        data: dict[str, Any] = {}
        if quick:
            data.update(self.quick_overrides)
        data.update(overrides or {})
        return self.config_type.model_validate(data, extra="forbid")


_REGISTRY: dict[tuple[str, str], Experiment] = {}


def experiment(
    system: str,
    name: str,
    title: str,
    config: type[BaseModel],
    quick: Mapping[str, Any] | None = None,
) -> Callable[[Callable[[Any, ExperimentContext], Any]], Callable[[Any, ExperimentContext], Any]]:
    def register(
        fn: Callable[[Any, ExperimentContext], Any],
    ) -> Callable[[Any, ExperimentContext], Any]:
        _REGISTRY[(system, name)] = Experiment(system, name, title, config, fn, dict(quick or {}))
        return fn

    return register


def _load(system: str) -> None:
    """Import the module that registers the system's experiments, as its `kairos.systems` entry
    point names it; lazily, so `kairos --help` stays fast."""
    spec = installed().get(system)
    if spec is not None and spec.experiments:
        importlib.import_module(spec.experiments)


def list_experiments(system: str) -> list[Experiment]:
    _load(system)
    return sorted((e for (s, _), e in _REGISTRY.items() if s == system), key=lambda e: e.name)


def get_experiment(system: str, name: str) -> Experiment:
    _load(system)
    try:
        return _REGISTRY[(system, name)]
    except KeyError:
        known = ", ".join(e.name for e in list_experiments(system)) or "none yet"
        raise KeyError(f"no experiment {name!r} for {system}; known: {known}") from None
