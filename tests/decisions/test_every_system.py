"""Every system's decision records, read from their type hints: each system has a
`decisions.CODEC`, and every field of every record it logs is declared as plain data (scalars,
tuples, str-keyed dicts, literals, other records), so no instance could hold a live object
without breaking its own declaration. Each system's property test checks real instances."""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from typing import Any, Literal, Union

import pytest

from kairos.decisions import Codec

SYSTEMS = ["andes", "orloj", "salus", "fluid", "auxo", "venn"]
SCALARS = {int, float, str, bool, type(None)}


def plain_type(hint: Any, seen: frozenset[type] = frozenset()) -> bool:
    """Whether a field's declared type admits only plain data."""
    if hint in SCALARS:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return all(type(a) in SCALARS for a in args)
    if origin in (Union, types.UnionType):
        return all(plain_type(a, seen) for a in args)
    if origin is tuple:
        return all(a is Ellipsis or plain_type(a, seen) for a in args)
    if origin is dict:
        return args[0] is str and plain_type(args[1], seen)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return plain_record(hint, seen)
    return False


def plain_record(cls: type, seen: frozenset[type] = frozenset()) -> bool:
    if cls in seen:
        return True
    if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        return False
    hints = typing.get_type_hints(cls)
    return all(plain_type(hints[f.name], seen | {cls}) for f in dataclasses.fields(cls))


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_logged_record_is_declared_plain(system: str) -> None:
    codec = importlib.import_module(f"kairos.{system}.decisions").CODEC
    assert isinstance(codec, Codec) and codec.types
    bad = [name for name, cls in codec.types.items() if not plain_record(cls)]
    assert not bad, f"{system}: records with a field that is not plain data: {bad}"


@dataclasses.dataclass(frozen=True)
class Good:
    ids: tuple[int, ...]
    when: float | None
    kind: Literal["a", "b"]
    by_name: dict[str, tuple[str, ...]]


@dataclasses.dataclass(frozen=True)
class HoldsAList:
    ids: list[int]


@dataclasses.dataclass(frozen=True)
class HoldsAnObject:
    thing: object


@dataclasses.dataclass
class Mutable:
    x: int


@dataclasses.dataclass(frozen=True)
class Nests:
    inner: Good
    bad: Mutable | None


def test_the_declaration_check_can_fail() -> None:
    assert plain_record(Good)
    assert not plain_record(HoldsAList)
    assert not plain_record(HoldsAnObject)
    assert not plain_record(Mutable)
    assert not plain_record(Nests)
