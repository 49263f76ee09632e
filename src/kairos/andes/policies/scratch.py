"""Reusable numpy buffers for the knapsack policies' per-decision grids.

A decision at N=1000 with 49 candidate batch sizes works on (N, nB) grids of 392 KB. Arrays
that big are above glibc's 128 KiB mmap threshold, so a fresh one is mapped and page-faulted
on every solve; on the benchmark machine that cost more than the arithmetic on it (measured
when the grids were numpy expressions; the compiled kernels now write into them directly).
A policy keeps one `Scratch` and takes its grids from it instead; nothing taken outlives the
solve that took it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import DTypeLike


class Scratch:
    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}

    def take(self, name: str, shape: tuple[int, ...], dtype: DTypeLike = np.float64) -> np.ndarray:
        """A C-contiguous array of `shape`, uninitialised, reusing the buffer called `name`
        (grown with headroom when too small: N changes a little between solves)."""
        size = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.size < size or buf.dtype != np.dtype(dtype):
            buf = self._buffers[name] = np.empty(2 * size, dtype=dtype)
        return buf[:size].reshape(shape)
