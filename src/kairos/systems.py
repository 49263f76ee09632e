"""The installed systems, found through the `kairos.systems` entry point group.

The shared layer never imports a system (docs/architecture.md, "Dependencies point inward").
Instead each system declares a `System` in its own `cli` module and names it in pyproject.toml:

    [project.entry-points."kairos.systems"]
    andes = "kairos.andes.cli:SYSTEM"

The root command (`kairos.cli`) and the experiment registry (`kairos.experiments`) read this
group, so adding a system, here or in another distribution, touches no shared file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

GROUP = "kairos.systems"


@dataclass(frozen=True)
class System:
    """What a system adds to `kairos`.

    `register` functions add commands to the system's group (`kairos <name> ...`), next to the
    shared `experiment` and `experiments` commands; `commands` go on the root (`kairos serve`);
    importing the `experiments` module registers the system's named experiments.
    """

    name: str
    help: str
    register: Sequence[Callable[[typer.Typer], None]] = ()
    commands: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    experiments: str | None = None


class SystemLoadError(RuntimeError):
    """An entry point of `kairos.systems` that does not give a usable `System`."""


def _load(entry: EntryPoint) -> System:
    try:
        system = entry.load()
    except Exception as exc:
        raise SystemLoadError(
            f"cannot load system {entry.name!r} ({entry.value}): {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(system, System):
        raise SystemLoadError(
            f"entry point {entry.name} = {entry.value} gives a {type(system).__name__}, "
            "not a kairos.systems.System"
        )
    if system.name != entry.name:
        raise SystemLoadError(
            f"entry point {entry.name} = {entry.value} gives the system {system.name!r}; "
            "the entry point's name must be the system's"
        )
    return system


def discover() -> dict[str, System]:
    """Every installed system by name, in name order (loads each entry point)."""
    out: dict[str, System] = {}
    for entry in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        if entry.name in out:
            raise SystemLoadError(f"two entry points name the system {entry.name!r}")
        out[entry.name] = _load(entry)
    return out


@lru_cache(maxsize=1)
def installed() -> Mapping[str, System]:
    """`discover()`, once per process (read-only: it is shared)."""
    return MappingProxyType(discover())
