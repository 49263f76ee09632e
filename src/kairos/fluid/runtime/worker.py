"""A worker process on one slot of a virtual device, and its handle in the engine's process.

The worker hosts at most one trial member at a time: it builds the trainable (restoring a
checkpoint if there is one), joins the trial's `gloo` group when the trial is a gang, runs
steps, saves and unloads. The handle serialises the commands to its worker on one thread, so a
trial released from a slot is always saved and unloaded before the next trial loads there; a
load can also wait for another worker's save (a resize moves a trial between slots). A worker
that dies is reported as the trial's error and replaced.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

Reply = Callable[[str, Any], None]


def worker_main(conn: Connection) -> None:
    import torch
    import torch.distributed as dist

    from kairos.fluid.runtime.trainable import load_factory

    torch.set_num_threads(1)
    trainable: Any = None
    rank = 0
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            break
        kind = msg[0]
        try:
            if kind == "load":
                _, factory, config, ckpt, rank, world, port, seed = msg
                if world > 1:
                    dist.init_process_group(
                        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
                    )
                trainable = load_factory(factory)(config, rank, world, seed)
                if ckpt is not None and Path(ckpt).exists():
                    trainable.restore(Path(ckpt))
                conn.send(("ok", None))
            elif kind == "step":
                start = time.perf_counter()
                metric = trainable.step()
                conn.send(("ok", (time.perf_counter() - start, metric)))
            elif kind == "save":
                if rank == 0 and trainable is not None:
                    trainable.save(Path(msg[1]))
                conn.send(("ok", None))
            elif kind == "unload":
                trainable = None
                if dist.is_initialized():
                    dist.destroy_process_group()
                conn.send(("ok", None))
            elif kind == "ping":  # ready: imports done (and the trainable's data loaded)
                warm = getattr(load_factory(msg[1]), "warm", None) if len(msg) > 1 else None
                if warm is not None:
                    warm()
                conn.send(("ok", None))
            elif kind == "exit":
                conn.send(("ok", None))
                break
        except Exception as exc:  # the trial's error, reported; the worker lives on
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class WorkerHandle:
    def __init__(self, ctx: Any, name: str) -> None:
        self.ctx = ctx
        self.name = name
        self.jobs: queue.Queue[tuple[tuple[Any, ...], Reply, threading.Event | None] | None] = (
            queue.Queue()
        )
        self._spawn()
        self.thread = threading.Thread(target=self._serve, name=f"fluid-{name}", daemon=True)
        self.thread.start()

    def _spawn(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=worker_main, args=(child,), daemon=True, name=self.name)
        self.proc.start()
        child.close()

    def submit(
        self, msg: tuple[Any, ...], reply: Reply, after: threading.Event | None = None
    ) -> None:
        self.jobs.put((msg, reply, after))

    def _serve(self) -> None:
        while (job := self.jobs.get()) is not None:
            msg, reply, after = job
            if after is not None:
                after.wait()
            try:
                self.conn.send(msg)
                status, value = self.conn.recv()
            except (EOFError, OSError):
                self.proc.join(timeout=5)
                status, value = "error", f"worker {self.name} died (exit code {self.proc.exitcode})"
                self._spawn()
            reply(status, value)

    def close(self, timeout: float = 10.0) -> None:
        done = threading.Event()
        self.submit(("exit",), lambda _s, _v: done.set())
        self.jobs.put(None)
        done.wait(timeout)
        self.thread.join(timeout)
        self.proc.join(timeout)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()
