"""Per-job memory accounting on CPU: the live tensor storages a job created (spec 6.7).

PyTorch keeps no per-thread allocator statistics on CPU, so each job's code runs under its own
`StorageTracker`, a `TorchDispatchMode`: every operator's output storage not seen before is
charged to the job, and released when the storage dies (a `weakref.finalize` on the storage's
Python object, which PyTorch keeps alive exactly as long as the storage itself). Dispatch modes
are thread-local, so jobs on different lane threads are charged separately, and the autograd
engine carries the mode into the backward pass.

The tracker gives the two numbers Salus needs: the bytes live at an iteration boundary (the
persistent part, P) and the peak of extra bytes during an iteration (the ephemeral part, E).
A budget makes the tracker raise `OverBudget` at the operator that first exceeds it, the CPU
analogue of a lane's out-of-memory, so a job that exceeds its profile fails at once.
"""

from __future__ import annotations

import threading
import weakref
from functools import partial
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class OverBudget(MemoryError):
    """A job allocated past the bytes its lane reserved for it."""


class StorageTracker(TorchDispatchMode):
    """Live bytes of the storages created by code run under this mode (`with tracker:`).

    `live` and `peak` are read from any thread; the counters move under a lock because a
    storage may die on another thread (e.g. a tensor dropped by the server).
    """

    def __init__(self) -> None:
        super().__init__()
        self._sizes: dict[int, int] = {}
        self._refs: dict[int, weakref.ref[Any]] = {}  # keep the death callbacks alive
        self._lock = threading.Lock()
        self.live = 0
        self.peak = 0
        self.limit: int | None = None  # bytes; None = unlimited

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self.live

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor):
            self._charge(out)
        elif isinstance(out, (tuple, list)):
            for t in out:
                if isinstance(t, torch.Tensor):
                    self._charge(t)
        return out

    def _charge(self, t: torch.Tensor) -> None:
        storage = t.untyped_storage()
        key = storage._cdata  # the StorageImpl: stable while it lives, even across resize_
        if key in self._sizes:  # a view of a storage already charged: most outputs
            return
        size = storage.nbytes()
        if size == 0:
            return
        with self._lock:
            self._sizes[key] = size
            self.live += size
            if self.live > self.peak:
                self.peak = self.live
            over = self.limit is not None and self.live > self.limit
            # a plain weak reference with a callback: a tenth of weakref.finalize's cost
            self._refs[key] = weakref.ref(storage, partial(self._died, key))
        if over:
            raise OverBudget(
                f"the job holds {self.live} bytes, past the {self.limit} its lane reserved for "
                "it (persistent + ephemeral from its profile)"
            )

    def _died(self, key: int, _ref: weakref.ref[Any]) -> None:
        self._release(key)

    def _release(self, key: int) -> None:
        with self._lock:
            self.live -= self._sizes.pop(key, 0)
            self._refs.pop(key, None)

    def owned(self, tensors: list[torch.Tensor]) -> int:
        """Bytes of the distinct storages of `tensors` that this tracker charged."""
        keys = {t.untyped_storage()._cdata for t in tensors}
        with self._lock:
            return sum(self._sizes.get(k, 0) for k in keys)


def state_tensors(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None) -> list[Any]:
    """The job's model state: parameters, buffers, gradients and optimizer state tensors."""
    out: list[torch.Tensor] = [*model.parameters(), *model.buffers()]
    out += [p.grad for p in model.parameters() if p.grad is not None]
    if optimizer is not None:
        for state in optimizer.state.values():
            out += [v for v in state.values() if isinstance(v, torch.Tensor)]
    return out


def storage_bytes(tensors: list[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind `tensors` (views counted once)."""
    seen: dict[int, int] = {}
    for t in tensors:
        s = t.untyped_storage()
        seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())
