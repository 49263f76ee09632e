"""The decision log: one JSON object a line, a header first, then one entry per decision.

    {"kairos_decision_log": 1, "system": "salus", "meta": {...}}
    {"t": 0.25, "kind": "Grant", "record": {"job": 3, "lane": 0, ...}}

Lines are written as they are decided and flushed at each line, so a run that dies keeps every
decision it made up to its last complete line; `read_log` reads such a log and says which line
of a broken one is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kairos.decisions.record import Codec, Entry

FORMAT = 1


class DecisionLogError(ValueError):
    """A decision log that cannot be read: the message names the file, line and problem."""


class DecisionLog:
    """A recorder that appends every decision to a JSON-lines file. A path that cannot be
    written is a `DecisionLogError` naming it, so every command reports it the same way."""

    def __init__(
        self, path: str | Path, codec: Codec, system: str, meta: dict[str, Any] | None = None
    ) -> None:
        self.path, self.codec = Path(path), codec
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[str] | None = self.path.open("w", encoding="utf-8", buffering=1)
        except OSError as exc:
            raise DecisionLogError(
                f"cannot write the decision log {path}: {exc.strerror or exc}"
            ) from None
        header = {"kairos_decision_log": FORMAT, "system": system, "meta": meta or {}}
        self._file.write(json.dumps(header) + "\n")
        self.count = 0

    def record(self, t: float, decision: object) -> None:
        if self._file is None:
            raise ValueError(f"the decision log {self.path} is closed")
        self._file.write(self.codec.dumps(Entry(t, decision)) + "\n")
        self.count += 1

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> DecisionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class LoadedLog:
    system: str
    meta: dict[str, Any]
    entries: list[Entry] = field(default_factory=list)


def read_log(path: str | Path, codec: Codec, system: str | None = None) -> LoadedLog:
    """The log at `path`; with `system`, it must be that system's. A truncated last line (a
    run killed mid-write) is the only damage tolerated: everything before it is returned."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DecisionLogError(f"{path}: cannot read the decision log: {e}") from None
    if not lines:
        raise DecisionLogError(f"{path}: empty, not a decision log (no header line)")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("kairos_decision_log") != FORMAT:
        raise DecisionLogError(
            f"{path}:1: not a kairos decision log (the header must hold "
            f'"kairos_decision_log": {FORMAT})'
        )
    if system is not None and header.get("system") != system:
        raise DecisionLogError(
            f"{path}:1: a decision log of {header.get('system')!r}, not of {system!r}"
        )
    loaded = LoadedLog(str(header.get("system")), dict(header.get("meta") or {}))
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines):
                break  # the last line of a run killed while writing it
            raise DecisionLogError(f"{path}:{number}: not JSON: {e}") from None
        try:
            loaded.entries.append(codec.decode(obj))
        except ValueError as e:
            raise DecisionLogError(f"{path}:{number}: {e}") from None
    return loaded
