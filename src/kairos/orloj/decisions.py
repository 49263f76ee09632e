"""What an Orloj policy hands the worker, as plain records (docs/architecture.md, "One driver
per system"): a batch to run, and the requests the policy gave up on.

The driver builds these from the live `Batch` and `Request` objects only when a recorder is
listening, and records each with the time it decided (seconds on its clock, as every kairos
decision log does). Inside a record, times are milliseconds, Orloj's unit. A batch names its
members by request id, in the order the worker runs them, with each member's application, and
carries what the worker acts on besides: when it may start (`ready_ms`, later than the
decision only when the simulator charges decision time) and the latest start it accepts
(Clockwork's action window; None: no limit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kairos.decisions import Codec, DecisionLog
from kairos.orloj.policy import Batch, Request


@dataclass(frozen=True, slots=True)
class BatchDecision:
    """A batch handed to the worker."""

    ids: tuple[int, ...]  # request ids, in batch order
    apps: tuple[str, ...]  # each member's application, in the same order
    size: int
    ready_ms: float
    latest_start_ms: float | None = None

    def __post_init__(self) -> None:
        if not self.size == len(self.ids) == len(self.apps) > 0:
            raise ValueError(
                f"a batch of size {self.size} must name as many requests and apps, "
                f"not {len(self.ids)} and {len(self.apps)}"
            )

    @classmethod
    def of(cls, batch: Batch, ready_ms: float) -> BatchDecision:
        members = batch.requests
        return cls(
            tuple(r.request_id for r in members),
            tuple(r.app for r in members),
            len(members),
            ready_ms,
            batch.latest_start,
        )


@dataclass(frozen=True, slots=True)
class Drop:
    """Requests the policy timed out without running them: rejected as they arrived (they
    could not make their deadline at any batch size), or dropped while choosing a batch."""

    ids: tuple[int, ...]
    on_arrival: bool

    @classmethod
    def of(cls, requests: Iterable[Request], on_arrival: bool) -> Drop:
        return cls(tuple(r.request_id for r in requests), on_arrival)


CODEC = Codec([BatchDecision, Drop])


def open_log(path: str | Path, meta: Mapping[str, Any]) -> DecisionLog:
    """A decision log of Orloj's records at `path`; a `ValueError` naming the path when it
    cannot be written (`DecisionLogError`, a ValueError)."""
    return DecisionLog(path, CODEC, "orloj", dict(meta))
