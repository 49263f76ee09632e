"""A worker process on one slot of a virtual device, and its handle in the driver's process.

The worker hosts at most one trial member at a time: it builds the trainable (restoring a
checkpoint if there is one), joins the trial's `gloo` group when the trial is a gang, runs
steps, saves and unloads. The handle serialises the commands to its worker on one thread, so a
trial released from a slot is always saved and unloaded before the next trial loads there; a
load can also wait for another worker's save (a resize moves a trial between slots). A worker
that dies is reported as the trial's error and replaced.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

Reply = Callable[[str, Any], None]


class SlotWorker:
    """What runs on one slot, whatever hosts it (a worker process here, a Ray actor in
    `kairos.fluid.runtime.ray_pool`): one command in, `(status, value)` out. An exception is
    the trial's error, reported; the worker lives on."""

    def __init__(self) -> None:
        import torch

        torch.set_num_threads(1)
        self.trainable: Any = None
        self.rank = 0

    def where(self) -> dict[str, Any]:
        """Inside Ray: the placement group and resources this worker was granted (read back
        from Ray's runtime context); elsewhere an empty dict."""
        ray = sys.modules.get("ray")
        if ray is None or not ray.is_initialized():
            return {}
        ctx = ray.get_runtime_context()
        pg = ctx.get_placement_group_id()
        return {"placement_group": pg, "resources": ctx.get_assigned_resources()}

    def handle(self, msg: tuple[Any, ...]) -> tuple[str, Any]:
        try:
            return "ok", self._handle(msg)
        except Exception as exc:
            return "error", f"{type(exc).__name__}: {exc}"

    def _handle(self, msg: tuple[Any, ...]) -> Any:
        import torch.distributed as dist

        from kairos.fluid.runtime.trainable import load_factory

        kind = msg[0]
        if kind == "load":
            _, factory, config, ckpt, rank, world, port, seed = msg
            self.rank = rank
            if world > 1:
                dist.init_process_group(
                    "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
                )
            self.trainable = load_factory(factory)(config, rank, world, seed)
            if ckpt is not None and Path(ckpt).exists():
                self.trainable.restore(Path(ckpt))
        elif kind == "step":
            start = time.perf_counter()
            metric = self.trainable.step()
            return time.perf_counter() - start, metric
        elif kind == "save":
            if self.rank == 0 and self.trainable is not None:
                self.trainable.save(Path(msg[1]))
        elif kind == "unload":
            self.trainable = None
            if dist.is_initialized():
                dist.destroy_process_group()
        elif kind == "ping":  # ready: imports done (and the trainable's data loaded)
            warm = getattr(load_factory(msg[1]), "warm", None) if len(msg) > 1 else None
            if warm is not None:
                warm()
        return None


def worker_main(conn: Connection) -> None:
    worker = SlotWorker()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            break
        if msg[0] == "exit":
            conn.send(("ok", None))
            break
        conn.send(worker.handle(msg))


class WorkerHandle:
    """Commands to one slot's worker, serialised on a thread of their own; `_spawn` and
    `_exchange` say how the worker is hosted (a process: `ProcessHandle`; a Ray actor:
    `kairos.fluid.runtime.ray_pool.ActorHandle`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.jobs: queue.Queue[tuple[tuple[Any, ...], Reply, threading.Event | None] | None] = (
            queue.Queue()
        )
        self._spawn()
        self.thread = threading.Thread(target=self._serve, name=f"fluid-{name}", daemon=True)
        self.thread.start()

    def _spawn(self) -> None:
        raise NotImplementedError

    def _exchange(self, msg: tuple[Any, ...]) -> tuple[str, Any]:
        """Send one command and wait for its reply; a dead worker is an error and replaced."""
        raise NotImplementedError

    def submit(
        self, msg: tuple[Any, ...], reply: Reply, after: threading.Event | None = None
    ) -> None:
        self.jobs.put((msg, reply, after))

    def _serve(self) -> None:
        while (job := self.jobs.get()) is not None:
            msg, reply, after = job
            if after is not None:
                after.wait()
            reply(*self._exchange(msg))

    def stop(self, timeout: float = 10.0) -> None:
        """Let the worker finish what was submitted, say `exit`, end the thread."""
        done = threading.Event()
        self.submit(("exit",), lambda _s, _v: done.set())
        self.jobs.put(None)
        done.wait(timeout)
        self.thread.join(timeout)

    def close(self, timeout: float = 10.0) -> None:
        self.stop(timeout)


class ProcessHandle(WorkerHandle):
    def __init__(self, ctx: Any, name: str) -> None:
        self.ctx = ctx
        super().__init__(name)

    def _spawn(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=worker_main, args=(child,), daemon=True, name=self.name)
        self.proc.start()
        child.close()

    def _exchange(self, msg: tuple[Any, ...]) -> tuple[str, Any]:
        try:
            self.conn.send(msg)
            status, value = self.conn.recv()
            return status, value
        except (EOFError, OSError):
            self.proc.join(timeout=5)
            code = self.proc.exitcode
            self._spawn()
            return "error", f"worker {self.name} died (exit code {code})"

    def close(self, timeout: float = 10.0) -> None:
        self.stop(timeout)
        self.proc.join(timeout)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()
