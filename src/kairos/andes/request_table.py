"""Struct-of-arrays mirror of the scheduler's requests, for fast policy snapshots.

A request's state lives in its `Request` (and its `QoETracker`); `row` is the one place that
says what a policy reads of it, as numbers. Reading ten attributes from a thousand Python
objects costs milliseconds; gathering rows of numpy arrays costs microseconds. The scheduler
marks a request dirty whenever it changes one (a token, a status, its prefill progress) and
the table copies only the dirty ones when a policy asks for a snapshot, so the hot decode loop
pays a set insertion per request.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kairos.andes.request import Request, RequestView

COLUMNS = (
    "status", "context", "computed", "arrival", "ttft", "speed", "delivered", "lag", "lag_sum",
    "remaining_cap",
)  # fmt: skip


def row(r: RequestView) -> tuple[float, ...]:
    """What a policy reads of a request, in `COLUMNS` order."""
    q = r.qoe
    return (
        r.status, r.prompt_len + r.generated, r.computed, q.arrival, q.ttft, q.speed, q.k,
        q.lag, q.lag_sum, r.max_tokens - r.generated,
    )  # fmt: skip


def rows_of(requests: Sequence[RequestView]) -> np.ndarray:
    """`row` of each request, read from the objects (a view built without the table).
    Read-only, as `RequestTable.rows` gives them: the same array type either way, so the
    compiled kernels that take them have one version, not two."""
    data = np.array([row(r) for r in requests], dtype=np.float64)
    data = data.reshape(len(requests), len(COLUMNS))
    data.flags.writeable = False
    return data


class RequestTable:
    def __init__(self, capacity: int = 1024) -> None:
        self.data = np.zeros((capacity, len(COLUMNS)), dtype=np.float64)
        self.slot: dict[str, int] = {}
        self._free: list[int] = []
        self._dirty: dict[str, Request] = {}

    def add(self, r: Request) -> None:
        if self._free:
            i = self._free.pop()
        else:
            i = len(self.slot)
            if i >= len(self.data):
                self.data = np.concatenate([self.data, np.zeros_like(self.data)])
        self.slot[r.request_id] = i
        self._dirty[r.request_id] = r

    def remove(self, request_id: str) -> None:
        i = self.slot.pop(request_id, None)
        self._dirty.pop(request_id, None)
        if i is not None:
            self._free.append(i)

    def touch(self, r: Request) -> None:
        self._dirty[r.request_id] = r

    def _flush(self) -> None:
        data = self.data
        for rid, r in self._dirty.items():
            data[self.slot[rid]] = row(r)
        self._dirty.clear()

    def rows(self, requests: Sequence[RequestView]) -> np.ndarray:
        """(len(requests), len(COLUMNS)) current values, in the given order."""
        self._flush()
        idx = np.fromiter(
            (self.slot[r.request_id] for r in requests), dtype=np.int64, count=len(requests)
        )
        rows = self.data[idx]  # a copy: reading never changes the table
        rows.flags.writeable = False  # and a policy cannot mistake it for the live state
        return rows
