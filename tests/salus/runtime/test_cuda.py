"""The CUDA path: a stream and a memory pool per lane, CUDA-event timing, allocator statistics.
Skipped only when CUDA is absent (never verified on this repository's CPU-only machines)."""

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
    lanes = LaneThreads(sessions, lambda r: (runs.append(r), done.set()))
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated()
    for k in range(6):
        done.clear()
        lanes.launch(k % 2, 0, sessions[k % 2].budget_e).result()
        assert done.wait(10)
    lanes.stop()
    torch.cuda.synchronize()
    assert all(r.error is None and r.duration > 0 for r in runs)
    assert {j: s.state_pointers() for j, s in sessions.items()} == before
    # between iterations only the resident state is allocated: no bytes moved in or out
    assert torch.cuda.memory_allocated() == allocated


def test_an_over_profile_job_fails_on_the_gpu_too() -> None:
    s = Session(0, CudaDevice(2**30))
    s.setup(faulty.greedy, "train", {}, 3, 5, (0.1, 0.05))
    s.iterate(0, s.budget_e)
    with pytest.raises(JobFailed, match="exceeded its memory profile"):
        s.iterate(0, s.budget_e)
