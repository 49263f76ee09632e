"""Where iterations run: the CPU as a virtual device, or a CUDA GPU (spec 6.1, 6.3 Tier A).

A lane is where one iteration at a time runs. On CPU a lane is only a byte budget (enforced by
the job's `StorageTracker`) and an iteration is timed with `perf_counter`. On CUDA each lane also
gets its own `torch.cuda.Stream` and `torch.cuda.MemPool`, the iteration is run with both
current, and it is timed with CUDA events on the lane's stream; each job's persistent state is
built in a pool of its own. Dropping a lane drops its pool, which returns its cached blocks.

CI has no GPU: the CUDA path's tests skip only when CUDA is absent, and
`KAIROS_SALUS_TEST_DEVICE=cuda` runs the runtime tests on a GPU (run on an H200, docs/salus.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Annotated, Any, Literal

import torch
from pydantic import AfterValidator


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

    def profile_context(self) -> Any:
        """Entered around the profiler's iterations, before the job has a lane."""
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
    """One GPU: a stream and a memory pool per lane, a pool per job's persistent state.

    A pool is destroyed only while no thread allocates into any pool: PyTorch's caching
    allocator treats allocation into a pool like a graph capture, and destroying a pool (or
    `empty_cache`) while another thread is inside one aborts the process (seen on an H200 with
    torch 2.11: `captures_underway.empty()` in `~MemPool`). A dropped lane's or job's pool is
    parked and destroyed, its cached blocks returned to the device, as soon as no thread is
    inside a pool (at once when the device is otherwise idle). Pools are not recycled: the
    allocator ties cached blocks to the stream that allocated them, so a dead lane's blocks
    would serve no later lane."""

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
        self._lock = threading.Lock()
        self._inside = 0  # threads now allocating into one of the pools
        self._parked: list[Any] = []  # dropped pools, destroyed once `_inside` is 0

    def _lane(self, lane: int) -> tuple[torch.cuda.Stream, Any]:
        with self._lock:
            if lane not in self._streams:
                self._streams[lane] = torch.cuda.Stream(self.torch_device)
                self._pools[lane] = torch.cuda.MemPool()
            return self._streams[lane], self._pools[lane]

    @contextmanager
    def _in_pool(self, pool: Any) -> Iterator[None]:
        with self._lock:
            self._inside += 1
        try:
            with torch.cuda.use_mem_pool(pool, self.torch_device):
                yield
        finally:
            del pool  # only the device's own lists may keep a pool alive
            with self._lock:
                self._inside -= 1
                self._destroy_parked()

    def _destroy_parked(self) -> None:
        """Under the lock: destroy the parked pools if no thread is inside a pool."""
        if self._inside == 0 and self._parked:
            self._parked.clear()  # the pools' destructors run here
            torch.cuda.empty_cache()  # their cached blocks go back to the device

    def _park(self, pool: Any) -> None:
        with self._lock:
            self._parked.append(pool)
            self._destroy_parked()

    @contextmanager
    def job_context(self, job: int) -> Iterator[None]:
        """The factory runs with the GPU as default device (its tensors are made there) and
        the job's own pool current."""
        with self._lock:
            if job not in self._job_pools:
                self._job_pools[job] = torch.cuda.MemPool()
            pool = self._job_pools[job]
        with self.torch_device, self._in_pool(pool):
            yield

    def profile_context(self) -> Any:
        """The profiler's iterations allocate from the shared default pool, not the job's:
        blocks cached in the job's pool would stay reserved for the job's whole life, on top
        of the lane that later holds its ephemeral memory (on an H200, six such jobs under
        PACK ran the device out of memory)."""
        return self.torch_device

    @contextmanager
    def lane_context(self, lane: int) -> Iterator[None]:
        stream, pool = self._lane(lane)
        in_pool = self._in_pool(pool)
        del pool
        with self.torch_device, torch.cuda.stream(stream), in_pool:
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
        with self._lock:
            self._streams.pop(lane, None)
            pool = self._pools.pop(lane, None)
        if pool is not None:
            self._park(pool)

    def drop_job(self, job: int) -> None:
        with self._lock:
            pool = self._job_pools.pop(job, None)
        if pool is not None:
            self._park(pool)


def _present(kind: str) -> str:
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA is not available on this machine; use cpu")
    return kind


# a device a config names: checked when the config is read, so `--set device=cuda` on a machine
# without a GPU is one line naming the setting, not a traceback from inside the run
DeviceKind = Annotated[Literal["cpu", "cuda"], AfterValidator(_present)]


def make_device(kind: str, capacity: int | None) -> Device:
    """`cpu` (capacity required) or `cuda` (capacity defaults to the free memory)."""
    if kind == "cuda":
        return CudaDevice(capacity)
    if kind != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda', not {kind!r}")
    if capacity is None:
        raise ValueError("the CPU device needs a capacity in bytes (the virtual GPU's memory)")
    return Device(capacity)
