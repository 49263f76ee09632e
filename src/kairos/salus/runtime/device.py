"""Where iterations run: the CPU as a virtual device, or a CUDA GPU (spec 6.1, 6.3 Tier A).

A lane is where one iteration at a time runs. On CPU a lane is only a byte budget (enforced by
the job's `StorageTracker`) and an iteration is timed with `perf_counter`. On CUDA each lane also
gets its own `torch.cuda.Stream` and `torch.cuda.MemPool`, the iteration is run with both
current, and it is timed with CUDA events on the lane's stream; each job's persistent state is
built in a pool of its own. Dropping a lane drops its pool, which returns its cached blocks.

The CUDA path has not been run on a GPU in this repository's CI (no GPU here); its tests skip
only when CUDA is absent.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import torch


class Device:
    """The CPU, with `capacity` bytes of virtual memory shared by the lanes."""

    kind = "cpu"

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity must be a positive number of bytes, got {capacity}")
        self.capacity = capacity

    def job_context(self, job: int) -> Any:
        """Entered while job `job` builds its persistent state."""
        return nullcontext()

    def lane_context(self, lane: int) -> Any:
        """Entered around every iteration on `lane`."""
        return nullcontext()

    def timed(self, lane: int, fn: Callable[[], None]) -> float:
        """Run `fn` on `lane`; its duration in seconds."""
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def drop_lane(self, lane: int) -> None:
        """Forget a deleted lane (nothing to release on CPU)."""

    def drop_job(self, job: int) -> None:
        """Forget an ended job (nothing to release on CPU)."""


class CudaDevice(Device):
    """One GPU: a stream and a memory pool per lane, a pool per job's persistent state."""

    kind = "cuda"

    def __init__(self, capacity: int | None = None, index: int = 0) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("CUDA is not available; use the CPU device")
        self.torch_device = torch.device("cuda", index)
        _free, total = torch.cuda.mem_get_info(self.torch_device)
        reserve = 300 * 2**20  # spec 3.9: device total minus a 300 MiB reserve
        super().__init__(min(capacity or total - reserve, total - reserve))
        self._streams: dict[int, torch.cuda.Stream] = {}
        self._pools: dict[int, Any] = {}
        self._job_pools: dict[int, Any] = {}

    def _lane(self, lane: int) -> tuple[torch.cuda.Stream, Any]:
        if lane not in self._streams:
            self._streams[lane] = torch.cuda.Stream(self.torch_device)
            self._pools[lane] = torch.cuda.MemPool()
        return self._streams[lane], self._pools[lane]

    @contextmanager
    def job_context(self, job: int) -> Iterator[None]:
        """The factory runs with the GPU as default device (its tensors are made there) and
        the job's own pool current."""
        pool = self._job_pools.setdefault(job, torch.cuda.MemPool())
        with self.torch_device, torch.cuda.use_mem_pool(pool, self.torch_device):
            yield

    @contextmanager
    def lane_context(self, lane: int) -> Iterator[None]:
        stream, pool = self._lane(lane)
        with (
            self.torch_device,
            torch.cuda.stream(stream),
            torch.cuda.use_mem_pool(pool, self.torch_device),
        ):
            yield

    def timed(self, lane: int, fn: Callable[[], None]) -> float:
        """GPU time from the first to the last kernel of the iteration on the lane's stream;
        the stream is synchronized before the lane is declared idle (spec 6.5)."""
        stream, _ = self._lane(lane)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    def drop_lane(self, lane: int) -> None:
        self._streams.pop(lane, None)
        if self._pools.pop(lane, None) is not None:
            torch.cuda.empty_cache()  # the dropped pool's cached blocks go back to the device

    def drop_job(self, job: int) -> None:
        if self._job_pools.pop(job, None) is not None:
            torch.cuda.empty_cache()


def make_device(kind: str, capacity: int | None) -> Device:
    """`cpu` (capacity required) or `cuda` (capacity defaults to the free memory)."""
    if kind == "cuda":
        return CudaDevice(capacity)
    if kind != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda', not {kind!r}")
    if capacity is None:
        raise ValueError("the CPU device needs a capacity in bytes (the virtual GPU's memory)")
    return Device(capacity)
