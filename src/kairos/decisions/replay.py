"""Comparing a recorded run's decisions with a replay's, and altering one for a mutation check.

A system proves that simulation and reality decide alike by recording a real run, replaying its
inputs (arrivals, measured durations) through the simulator's driver and asking for the first
divergence: it must be None. The same comparison must find a decision that was altered in the
log, at the index where it was altered: `altered` makes such a log.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kairos.decisions.record import Entry


@dataclass(frozen=True)
class Divergence:
    """The first place two decision sequences differ (an entry is None past a sequence's end)."""

    index: int
    recorded: Entry | None
    replayed: Entry | None

    def __str__(self) -> str:
        return (
            f"decision {self.index} differs:\n  recorded: {_show(self.recorded)}\n"
            f"  replayed: {_show(self.replayed)}"
        )


def _show(entry: Entry | None) -> str:
    return "(none: the run ended)" if entry is None else f"t={entry.t:.9g} {entry.record!r}"


def first_divergence(
    recorded: Sequence[Entry], replayed: Sequence[Entry], *, time_tol: float | None = 1e-9
) -> Divergence | None:
    """The first index where the records differ, or their times by more than `time_tol`
    seconds (None: times are not compared); None when the sequences agree throughout."""
    for i in range(max(len(recorded), len(replayed))):
        a = recorded[i] if i < len(recorded) else None
        b = replayed[i] if i < len(replayed) else None
        if a is None or b is None or a.record != b.record:
            return Divergence(i, a, b)
        if time_tol is not None and abs(a.t - b.t) > time_tol:
            return Divergence(i, a, b)
    return None


def altered(entries: Sequence[Entry], index: int, **changes: Any) -> list[Entry]:
    """A copy of `entries` whose `index`-th record has `changes` applied (its other fields and
    every other entry untouched). A change that leaves the record as it was is refused: it
    could not show that a comparison notices an alteration."""
    entry = entries[index]
    record = dataclasses.replace(entry.record, **changes)
    if record == entry.record:
        raise ValueError(f"the changes {changes} leave decision {index} as it was")
    out = list(entries)
    out[index] = Entry(entry.t, record)
    return out
