"""Decode lanes: a decode batch split into parts that run on threads of one intra-op thread each.

Why. On a CPU, torch parallelises each op on its own across its intra-op threads (an OpenMP
team). A decode step of a small model is hundreds of ops too small to split well
(attention's batched matmuls and softmax, the norms, RoPE and activations, the KV gathers
and the small projections), and Python runs between them, so one core can idle for much of a
step. Rows of a decode batch are independent until the logits, so the batch can instead be
split into as many parts as there are threads, each part's whole pass through the layers run
on a thread of its own with one intra-op thread: every op, the small ones and Python
included, then has a core per part. torch ops release the GIL, so one lane's Python overlaps
the other's ops.

Threads. Each lane is a `TorchThread` (kairos.runtime.torch_threads) set to one intra-op
thread: torch's count is per thread, so the lanes never make an OpenMP team of their own
(which would slow every parallel op of the calling thread's, see there), and threads started
later keep the process default.

A `DecodeLanes` owns its threads; they end when it is closed or garbage-collected.

Each lane reads every weight matrix, so lanes that share a core lose; and with one OpenMP
team in the process and split products, one pass is faster than the lanes (the "ours, decode
lanes" row of `benchmarks/bench_engine.py`). So the engine leaves them off unless asked
(`EngineConfig.decode_lanes`), and picks per iteration by measured speed when on
(path_choice.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch

from kairos.runtime.torch_threads import TorchThread


def _inference(task: Callable[[], Any]) -> Any:
    with torch.inference_mode():  # thread-local: the caller's does not reach the lane
        return task()


class DecodeLanes:
    """`n` threads, each with one intra-op thread, that run one task each per `run`."""

    def __init__(self, n: int) -> None:
        if n < 2:
            raise ValueError(f"decode lanes need at least 2 threads, got {n}")
        self.n = n
        self._lanes = [TorchThread(f"decode-lane-{i}", threads=1) for i in range(n)]

    def run(self, tasks: Sequence[Callable[[], Any]]) -> list[Any]:
        """Run task i on lane i (at most `n`), all at once; their results in order."""
        if len(tasks) > self.n:
            raise ValueError(f"{len(tasks)} tasks for {self.n} lanes")
        futures = [
            lane.submit(functools.partial(_inference, task))
            for lane, task in zip(self._lanes, tasks, strict=False)
        ]
        return [f.result() for f in futures]

    def close(self) -> None:
        for lane in self._lanes:
            lane.close()
