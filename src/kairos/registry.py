"""Policies by (system, name): the built-ins, and plug-ins found through entry points.

Each system registers its built-in policies here when its policy module is imported, and keeps
its own `make_policy` (or `make_system`) as a thin wrapper that says what a factory is called
with. A user brings a policy by name without touching kairos: a distribution declares

    [project.entry-points."kairos.policies"]
    "andes.my-policy" = "my_package.policies:make_my_policy"

and `kairos andes simulate --policy my-policy` (or anything else that asks for a policy by name)
finds it. The entry point's value is a factory called like the system's built-ins. Built-ins win
over a plug-in of the same name, so installing a package cannot change what `fcfs` means.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

GROUP = "kairos.policies"

Factory = Callable[..., Any]
F = TypeVar("F", bound=Factory)


class UnknownName(ValueError):
    """A name that is neither built in nor plugged in; the message lists the known ones."""

    def __init__(self, what: str, system: str, name: str, known: tuple[str, ...]) -> None:
        self.system, self.name, self.known = system, name, known
        listed = ", ".join(known) or "none"
        super().__init__(f"unknown {what} {name!r} for {system}; known: {listed}")


class PluginError(RuntimeError):
    """A plug-in entry point that names something that cannot be loaded."""


class Registry:
    """Factories by (system, name): built-ins registered in code, plug-ins from `group`."""

    def __init__(self, group: str, what: str = "policy") -> None:
        self.group, self.what = group, what
        self._builtins: dict[tuple[str, str], Factory] = {}

    def register(self, system: str, name: str) -> Callable[[F], F]:
        """Decorator: `@POLICIES.register("andes", "fcfs")` over a factory."""

        def add(factory: F) -> F:
            self.add(system, name, factory)
            return factory

        return add

    def add(self, system: str, name: str, factory: Factory) -> None:
        key = (system, name)
        if key in self._builtins and self._builtins[key] is not factory:
            raise ValueError(f"{system} already has a {self.what} named {name!r}")
        self._builtins[key] = factory

    def _plugins(self, system: str) -> dict[str, EntryPoint]:
        out: dict[str, EntryPoint] = {}
        for entry in entry_points(group=self.group):
            owner, dot, name = entry.name.partition(".")
            if not dot or not owner or not name:
                warnings.warn(
                    f"entry point {entry.name} = {entry.value} in {self.group} is not named "
                    "SYSTEM.NAME; skipped",
                    stacklevel=3,
                )
            elif owner == system:
                out.setdefault(name, entry)
        return out

    def names(self, system: str, plugins: bool = True) -> tuple[str, ...]:
        """The system's built-ins in registration order, then (unless `plugins` is false) its
        plug-ins by name."""
        builtin = tuple(n for s, n in self._builtins if s == system)
        if not plugins:
            return builtin
        return builtin + tuple(sorted(set(self._plugins(system)) - set(builtin)))

    def get(self, system: str, name: str) -> Factory:
        """The factory registered or plugged in under (system, name)."""
        if (system, name) in self._builtins:
            return self._builtins[(system, name)]
        entry = self._plugins(system).get(name)
        if entry is None:
            raise UnknownName(self.what, system, name, self.names(system))
        try:
            factory = entry.load()
        except Exception as exc:
            raise PluginError(
                f"cannot load the {self.what} {entry.name} = {entry.value}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not callable(factory):
            raise PluginError(f"{entry.name} = {entry.value} is not callable")
        return factory

    def create(self, system: str, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """A fresh object from the named factory."""
        return self.get(system, name)(*args, **kwargs)


# The one policy registry of kairos.
POLICIES = Registry(GROUP)
