"""Event-loop throughput: kairos.sim.EventLoop vs a bare heapq loop (the floor for any kernel)."""

from __future__ import annotations

import heapq
import time
from pathlib import Path
from typing import Any

from kairos.sim import EventLoop


def _kernel(n: int) -> float:
    loop = EventLoop()
    count = [0]

    def tick() -> None:
        count[0] += 1
        if count[0] < n:
            loop.call_after(0.001, tick)

    for _ in range(100):
        loop.call_after(0.0, tick)
    start = time.perf_counter()
    loop.run()
    return time.perf_counter() - start


def _bare(n: int) -> float:
    heap: list[tuple[float, int]] = []
    seq = 0
    count = 0
    for _ in range(100):
        heapq.heappush(heap, (0.0, seq))
        seq += 1
    start = time.perf_counter()
    while heap:
        t, _ = heapq.heappop(heap)
        count += 1
        if count < n:
            heapq.heappush(heap, (t + 0.001, seq))
            seq += 1
    return time.perf_counter() - start


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    n = 50_000 if quick else 500_000
    ours, bare = _kernel(n), _bare(n)
    return [
        {
            "case": f"{n} events",
            "ours_events_per_s": n / ours,
            "bare_heapq_events_per_s": n / bare,
            "ratio_ours_over_bare": bare / ours,
        }
    ]
