"""Which threads run torch on a CPU, and the one rule that keeps its intra-op threads fast.

torch's CPU wheels parallelise an op with GNU OpenMP (libgomp). Every thread that runs a
parallel op with more than one intra-op thread gets an OpenMP team of its own: worker threads
that stay alive, parked, as long as that thread lives. A parked worker spins for a while
before it sleeps, so the next op finds it awake. But libgomp spins only while the threads it
manages in the whole process (every live team's, plus the first thread) are no more than the
CPUs; past that it spins 100 times and sleeps on a futex, and every parallel op then waits to
wake its workers (libgomp `config/linux/wait.h`, `do_spin`; `env.c`, the throttled count).

So a process whose main thread built a model with 2 intra-op threads and whose model then runs
on another thread, as a server's engine thread does, has two teams on 2 CPUs: each of the
thousands of small parallel ops per second pays a wake-up. Measured on a 2-CPU VM
(2026-11-28, the Andes anchor: 56M-parameter Llama, 16 mixed-length requests through our
engine, decode phase): 3.93-3.98 s with one team (built and run on one thread), 5.42-5.98 s
with two, 6.38-6.73 s on one intra-op thread; `OMP_WAIT_POLICY=ACTIVE` makes it worse with two
teams (8.23 s: the idle team's workers spin on the cores the other needs) and is harmless with
one (4.07 s). `GOMP_SPINCOUNT` does not help: the throttled count ignores it.

The rule: a model's torch work (building, calibrating, running) stays on one thread, and no
other long-lived thread runs parallel torch ops. `TorchThread` is such a thread for a server,
whose main thread serves HTTP; `on_fresh_thread` runs a one-off job on a thread that ends with
it, taking its team along (a benchmark's runs, or setup whose thread must not keep a team);
`in_fresh_process` runs a job in a new interpreter, for a caller whose threads already have
teams (a benchmark after others in one process).
Threads set to one intra-op thread (`torch.set_num_threads(1)` on that thread, as decode lanes
do) never make a team; `waiting_thread` sets the calling thread so for a while, for a thread
that only waits on another that runs the model (transformers' continuous batching, whose
caller otherwise made a second team).
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

import torch

T = TypeVar("T")
P = ParamSpec("P")
_STOP = None  # the sentinel that ends a TorchThread


def _serve(tasks: queue.SimpleQueue[Any]) -> None:
    while (task := tasks.get()) is not _STOP:
        fn, future = task
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn())
            except BaseException as e:  # handed to whoever waits on the future
                future.set_exception(e)


class TorchThread:
    """A long-lived daemon thread that runs the calls submitted to it, one at a time, in order.

    `threads`: its intra-op thread count, set on it before any call (torch's count is per
    thread); None keeps the process default it starts with. It ends when closed or
    garbage-collected, after the calls already submitted."""

    def __init__(self, name: str, threads: int | None = None) -> None:
        self.name = name
        self._tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        default = torch.get_num_threads()
        self._thread = threading.Thread(target=_serve, args=(self._tasks,), name=name, daemon=True)
        self._thread.start()
        self._finalizer = weakref.finalize(self, self._tasks.put, _STOP)
        # not at interpreter exit: a daemon thread woken then dies taking the GIL back, and
        # torch's C++ frames under it abort the process ("terminate called without an active
        # exception"); blocked on its queue, it just ends with the process
        self._finalizer.atexit = False
        if threads is not None:
            self.call(lambda: _set_threads(threads))
            torch.set_num_threads(default)  # the process-wide default, for threads started later

    @property
    def ident(self) -> int | None:
        return self._thread.ident

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        if not self._finalizer.alive:
            raise RuntimeError(f"{self.name} is closed")
        future: Future[T] = Future()
        self._tasks.put((fn, future))
        return future

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on this thread and wait for it: its result, or its exception re-raised."""
        if threading.get_ident() == self._thread.ident:
            return fn()  # already here: queueing would wait on itself
        return self.submit(fn).result()

    def close(self) -> None:
        """End the thread once the calls already submitted are done (a call still running
        forever, such as an event loop, must be stopped first)."""
        self._finalizer()


def _set_threads(n: int) -> None:
    torch.get_num_threads()  # initialise this thread's count from the default ...
    torch.set_num_threads(n)  # ... then set it: torch reads the default on first use


def on_fresh_thread(fn: Callable[[], T], threads: int | None = None, name: str = "torch") -> T:
    """Run `fn` on a thread started for it and ended after it, so any OpenMP team it makes ends
    too (module docstring); its result, or its exception re-raised here.

    `threads`: its intra-op threads, if not the default. `torch.set_num_threads` sets the
    calling thread's count and the process-wide default that threads started meanwhile read,
    so the default is put back when `fn` ends."""
    box: list[T] = []
    errors: list[BaseException] = []
    default = torch.get_num_threads()

    def target() -> None:
        try:
            if threads is not None:
                torch.set_num_threads(threads)
            box.append(fn())
        except BaseException as e:  # re-raised on the caller's thread
            errors.append(e)
        finally:
            if threads is not None:
                torch.set_num_threads(default)

    thread = threading.Thread(target=target, name=name)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return box[0]


def in_fresh_process(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`fn(*args, **kwargs)` in a new interpreter ("spawn": nothing inherited, no OpenMP team);
    `fn`, its arguments and its result must pickle (a module-level function)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args, **kwargs).result()


@contextmanager
def waiting_thread() -> Iterator[None]:
    """The calling thread on one intra-op thread while the process default (what threads
    started meanwhile read) stays as it was; its own count back afterwards."""
    default = torch.get_num_threads()
    torch.set_num_threads(1)  # this thread's count, and the default ...
    on_fresh_thread(lambda: torch.set_num_threads(default))  # ... the default put back
    try:
        yield
    finally:
        torch.set_num_threads(default)
