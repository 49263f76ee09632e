"""The Gandiva-style baseline Salus is compared with: switch jobs by moving their state out.

Before another job runs, the current job's model state (parameters, buffers, optimizer state)
is copied to a host buffer and its device storage released (`resize_(0)`); before the job runs
again its storage is re-allocated and the bytes copied back. This is what a switch costs when
jobs cannot stay resident (spec 2.4, Observation 1). Salus's own switch moves no bytes at all.
"""

from __future__ import annotations

import torch

from kairos.salus.runtime.job import JobParts
from kairos.salus.runtime.memory import state_tensors


class Swapped:
    """A job's state while it is swapped out: the host copy of each distinct storage."""

    def __init__(self, parts: JobParts) -> None:
        storages: dict[int, torch.UntypedStorage] = {}
        for t in state_tensors(parts.model, parts.optimizer):
            s = t.untyped_storage()
            storages.setdefault(s.data_ptr(), s)
        self.storages = list(storages.values())
        self.host: list[torch.UntypedStorage] = []
        self.bytes = sum(s.nbytes() for s in self.storages)

    def suspend(self) -> None:
        """Copy every storage to the host, then free it on the device."""
        pin = any(s.device.type == "cuda" for s in self.storages)
        self.host = []
        for s in self.storages:
            host = torch.UntypedStorage(s.nbytes(), device="cpu")
            if pin:
                host = host.pin_memory()
            host.copy_(s)
            self.host.append(host)
            s.resize_(0)

    def resume(self) -> None:
        """Re-allocate every storage and copy its bytes back (new addresses: data moved)."""
        for s, host in zip(self.storages, self.host, strict=True):
            s.resize_(host.nbytes())
            s.copy_(host)
        if any(s.device.type == "cuda" for s in self.storages):
            torch.cuda.synchronize()
        self.host = []
