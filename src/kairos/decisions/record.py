"""Decision records: frozen dataclasses of ids and numbers, and their JSON codec.

A record may hold None, bools, ints, floats, strings, tuples of these, string-keyed dicts of
these and other records: nothing that refers to a live request, job or device. `is_plain`
checks that, so a property test can hold every system to it. Tuples rather than lists keep
records hashable and equal after a JSON round trip (pydantic validates the JSON arrays back into
the tuples the fields declare).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Protocol

from pydantic import TypeAdapter, ValidationError

_SCALARS = (type(None), bool, int, float, str)


class Entry(NamedTuple):
    """One decision and the time (seconds on the driver's clock) it was made."""

    t: float
    record: Any


class Recorder(Protocol):
    """Where a driver puts its decisions: a list in memory or a `DecisionLog` file."""

    def record(self, t: float, decision: object) -> None: ...


class Entries(list[Entry]):
    """An in-memory recorder: the entries in the order they were decided."""

    def record(self, t: float, decision: object) -> None:
        self.append(Entry(t, decision))


def is_plain(value: object) -> bool:
    """Whether `value` is plain data: scalars, tuples, lists, str-keyed dicts and frozen
    dataclasses built only of those (a record may nest records, never hold a live object)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, _SCALARS):
        return True
    if isinstance(value, tuple | list):
        return all(is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_plain(v) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        frozen = type(value).__dataclass_params__.frozen  # type: ignore[attr-defined]
        return frozen and all(is_plain(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


class Codec:
    """Encodes records of the given types as JSON objects and back, by type name."""

    def __init__(self, types: Iterable[type]) -> None:
        self.types: dict[str, type] = {}
        for cls in types:
            if not dataclasses.is_dataclass(cls):
                raise TypeError(f"{cls.__name__} is not a dataclass")
            if cls.__name__ in self.types:
                raise ValueError(f"two record types named {cls.__name__}")
            self.types[cls.__name__] = cls
        self._adapters: dict[str, TypeAdapter[Any]] = {
            name: TypeAdapter(cls) for name, cls in self.types.items()
        }

    def encode(self, entry: Entry) -> dict[str, Any]:
        name = type(entry.record).__name__
        if name not in self.types:
            raise TypeError(f"{name} is not one of this log's record types ({self.known})")
        fields = self._adapters[name].dump_python(entry.record, mode="json")
        return {"t": entry.t, "kind": name, "record": fields}

    def decode(self, obj: Mapping[str, Any]) -> Entry:
        """An entry from its JSON object; a `ValueError` that names what is wrong."""
        if not isinstance(obj, Mapping) or not {"t", "kind", "record"} <= obj.keys():
            raise ValueError('an entry is an object with "t", "kind" and "record"')
        kind, t = obj["kind"], obj["t"]
        if kind not in self.types:
            raise ValueError(f"unknown record kind {kind!r} (this log holds {self.known})")
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
            raise ValueError(f"the time {t!r} is not a finite number")
        try:
            record = self._adapters[kind].validate_python(obj["record"])
        except ValidationError as e:
            raise ValueError(f"a malformed {kind}: {e}") from None
        return Entry(float(t), record)

    def dumps(self, entry: Entry) -> str:
        return json.dumps(self.encode(entry), separators=(",", ":"), allow_nan=False)

    def loads(self, line: str) -> Entry:
        return self.decode(json.loads(line))

    @property
    def known(self) -> str:
        return ", ".join(sorted(self.types))
