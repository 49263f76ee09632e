"""The CUDA path: a stream and a memory pool per lane, CUDA-event timing, allocator statistics.
Skipped only when CUDA is absent (CI has no GPU); run on an H200 once (docs/salus.md, "On a
GPU"), together with the other runtime tests under `KAIROS_SALUS_TEST_DEVICE=cuda`."""

from __future__ import annotations

import threading

import pytest
import torch
from tests.salus.runtime import faulty

from kairos.salus.runtime import zoo
from kairos.salus.runtime.device import CudaDevice
from kairos.salus.runtime.lanes import IterationRun, LaneThreads
from kairos.salus.runtime.session import JobFailed, Session

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _sessions(device: CudaDevice, n: int) -> dict[int, Session]:
    out = {}
    for i in range(n):
        s = Session(i, device)
        s.setup(zoo.cnn, "train", {"seed": i}, 2, 3, (0.1, 0.05))
        out[i] = s
    return out


def test_jobs_are_built_on_the_gpu_and_switches_move_no_bytes() -> None:
    device = CudaDevice(2**30)
    sessions = _sessions(device, 2)
    for s in sessions.values():
        assert s.parts is not None
        assert all(p.is_cuda for p in s.parts.model.parameters())
    before = {j: s.state_pointers() for j, s in sessions.items()}
    runs: list[IterationRun] = []
    done = threading.Event()

    def deliver(r: IterationRun) -> None:
        runs.append(r)
        done.set()

    lanes = LaneThreads(sessions, deliver)

    def iterate(k: int) -> None:
        done.clear()
        lanes.launch(k % 2, 0, sessions[k % 2].budget_e).result()
        assert done.wait(10)

    for k in range(2):  # one iteration of each on the lane: the lane's stream gets its lazy
        iterate(k)  # per-stream state (cuBLAS's workspace, ~64 MiB on an H200) here
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated()
    for k in range(6):
        iterate(k)
    lanes.stop()
    torch.cuda.synchronize()
    assert all(r.error is None and r.duration > 0 for r in runs)
    assert {j: s.state_pointers() for j, s in sessions.items()} == before
    # between iterations only the resident state is allocated: switches move no bytes in or out
    assert torch.cuda.memory_allocated() == allocated


def test_an_over_profile_job_fails_on_the_gpu_too() -> None:
    s = Session(0, CudaDevice(2**30))
    s.setup(faulty.greedy, "train", {}, 3, 5, (0.1, 0.05))
    s.iterate(0, s.budget_e)
    with pytest.raises(JobFailed, match="exceeded its memory profile"):
        s.iterate(0, s.budget_e)


def test_each_lane_runs_on_its_own_stream_and_pool() -> None:
    device = CudaDevice(2**30)
    seen = {}
    for lane in (0, 1):
        with device.lane_context(lane):
            seen[lane] = torch.cuda.current_stream()
            x = torch.empty(1 << 22, device="cuda")  # 16 MiB, allocated in the lane's pool
            assert x.is_cuda
            del x
    assert seen[0] != seen[1]
    assert all(s != torch.cuda.default_stream() for s in seen.values())
    device.drop_lane(0)
    device.drop_lane(1)
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_reserved()
    for lane in range(2, 22):  # lanes made and deleted: their pools' memory goes back
        with device.lane_context(lane):
            x = torch.empty(1 << 22, device="cuda")
            del x
        device.drop_lane(lane)
    assert torch.cuda.memory_reserved() <= reserved + 3 * 2**22  # not 20 x 16 MiB


def test_pools_are_dropped_while_other_lanes_allocate() -> None:
    """Dropping a lane while another lane's thread allocates into its pool must not abort
    the process (a destroyed pool did, on torch 2.11)."""
    device = CudaDevice(2**30)
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            with device.lane_context(0):
                torch.randn(1 << 16, device="cuda").sum().item()

    t = threading.Thread(target=busy)
    t.start()
    try:
        for lane in range(1, 30):
            with device.lane_context(lane):
                torch.randn(1 << 16, device="cuda").sum().item()
            device.drop_lane(lane)
            with device.job_context(lane):
                torch.zeros(1 << 10, device="cuda")
            device.drop_job(lane)
    finally:
        stop.set()
        t.join()
