"""Decode lanes: a decode batch split into parts that run on threads of one intra-op thread each.

Why. On a CPU, torch parallelises each op on its own across its intra-op threads (an OpenMP
team). A decode step of a small model is hundreds of ops too small to split well: at batch
16 on the 56M anchor model, one of two cores idled half of every step (docs/andes.md, "Where
the second core idles"): attention's batched matmuls and softmax, the norms, RoPE and
activations, the KV gathers and the small projections ran on one core or split badly, and
Python ran between them. Rows of a decode batch are independent until the logits, so the
batch can instead be split into as many parts as there are threads, each part's whole pass
through the layers run on a thread of its own with one intra-op thread: every op, the small
ones and Python included, then has a core per part. torch ops release the GIL, so one
lane's Python overlaps the other's ops.

Threads. torch's intra-op thread count is per thread (the OpenMP `nthreads` ICV, and MKL's
per-thread setting); `torch.set_num_threads` sets the calling thread's and a process-wide
default that threads read when they first run a parallel op. Each lane thread therefore
first initialises its count (reading the default), then sets it to 1; the constructing
thread then puts the default back, so threads started later (and the caller's own) keep the
count they would have had.

A `DecodeLanes` owns its threads; they end when it is closed or garbage-collected.

Measured (56M anchor model, 2 threads, docs/andes.md must-show 6): with both cores free to
the process, decode steps of 8-16 rows ran 1.09-1.11x faster on two lanes, busy cores 1.8
against 1.6; with one core taken by other processes, 0.75-0.95x, since each lane reads every
weight matrix and the lanes then share one core. So the engine leaves them off unless asked
(`EngineConfig.decode_lanes`), and picks per iteration by measured speed when on
(path_choice.py).
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

_STOP = None  # the sentinel that ends a lane thread


def _serve(tasks: queue.SimpleQueue[Any], results: queue.SimpleQueue[Any]) -> None:
    torch.get_num_threads()  # initialise this thread's count from the default ...
    torch.set_num_threads(1)  # ... then one intra-op thread: the lanes are the parallelism
    results.put(None)
    while (task := tasks.get()) is not _STOP:
        try:
            with torch.inference_mode():
                results.put((True, task()))
        except BaseException as e:  # re-raised on the caller's thread
            results.put((False, e))


def _stop(tasks: Sequence[queue.SimpleQueue[Any]]) -> None:
    for q in tasks:
        q.put(_STOP)


class DecodeLanes:
    """`n` threads, each with one intra-op thread, that run one task each per `run`."""

    def __init__(self, n: int) -> None:
        if n < 2:
            raise ValueError(f"decode lanes need at least 2 threads, got {n}")
        self.n = n
        default = torch.get_num_threads()
        self._tasks: list[queue.SimpleQueue[Any]] = [queue.SimpleQueue() for _ in range(n)]
        self._results: list[queue.SimpleQueue[Any]] = [queue.SimpleQueue() for _ in range(n)]
        for i, (t, r) in enumerate(zip(self._tasks, self._results, strict=True)):
            name = f"decode-lane-{i}"
            threading.Thread(target=_serve, args=(t, r), name=name, daemon=True).start()
        for r in self._results:
            r.get()  # every lane has set its own count
        torch.set_num_threads(default)  # the process-wide default, for threads started later
        self._finalizer = weakref.finalize(self, _stop, self._tasks)
        # not at interpreter exit: a daemon thread woken then dies taking the GIL back, and
        # torch's C++ frames under it abort the process ("terminate called without an active
        # exception"); blocked on its queue, it just ends with the process
        self._finalizer.atexit = False

    def run(self, tasks: Sequence[Callable[[], Any]]) -> list[Any]:
        """Run task i on lane i (at most `n`), all at once; their results in order."""
        if len(tasks) > self.n:
            raise ValueError(f"{len(tasks)} tasks for {self.n} lanes")
        for q, task in zip(self._tasks, tasks, strict=False):
            q.put(task)
        out = [r.get() for r in self._results[: len(tasks)]]
        for ok, value in out:
            if not ok:
                raise value
        return [value for _, value in out]

    def close(self) -> None:
        self._finalizer()
