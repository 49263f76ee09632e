"""The worker process: the model in its own interpreter, so its timing ignores our GIL.

CPython's GIL makes an in-process worker thread wait for the frontend between torch ops: we
measured a TinyDecoder batch 1.4x (1.7x) slower while another Python thread of the process was
busy 10% (30%) of the time. The slowdown grows with the frontend's and the policy's own Python
work, so it would bias any comparison of policies. A spawned process has its own GIL: batch
times depend on the model and the hardware only. The process rebuilds the model from its
`ModelSpec` (same seed, same weights), warms it up, then runs jobs in submission order; inputs
travel as plain dicts and are re-validated there, results come back through a pipe to a reader
thread here.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import queue
import signal
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

from kairos.orloj.runtime.calibrate import Calibration, CalibrationConfig, calibrate
from kairos.orloj.runtime.executor import Executor
from kairos.orloj.runtime.forward import WARM_SIZES, configure_threads, execute, warm_up
from kairos.orloj.runtime.models import ModelSpec, ServedModel
from kairos.orloj.runtime.results import WORKER_EXITED
from kairos.sim.clock import WallClock

log = logging.getLogger(__name__)


class ProcessExecutor(Executor):
    """The model in a spawned worker process, rebuilt there from its `ModelSpec`.

    `nice` lowers the worker's nice value (e.g. -10: a higher CPU priority, as the paper ran
    its serving threads) so that other work on a shared machine disturbs batch timings less;
    it needs the privilege to do so and is skipped, with a warning, without it."""

    def __init__(
        self,
        model: ServedModel,
        threads: int = 1,
        warm_sizes: Sequence[int] = WARM_SIZES,
        nice: int | None = None,
    ) -> None:
        super().__init__(model)
        if model.spec is None:
            raise ValueError("a worker process needs a model built from a ModelSpec")
        self._args = (model.spec, threads, tuple(warm_sizes), nice, self.clock.origin)
        self._send_lock = threading.Lock()
        self._calibrations: queue.Queue[Calibration | str] = queue.Queue()
        self.priority: int | None = None  # the nice value the worker runs at
        self._pid: int | None = None
        # Each process is one generation; its reader records the generation whose result
        # stream ended. A job sent to a generation that has ended will never be answered.
        self._generation = 0
        self._ended_generation = -1
        self._spawn()

    def _spawn(self) -> None:
        """A fresh (not yet started) process with its own pipes and result reader."""
        ctx = mp.get_context("spawn")
        self._jobs_rx, self._jobs_tx = ctx.Pipe(duplex=False)
        self._results_rx, self._results_tx = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(
            target=_worker_main,
            args=(*self._args, self._jobs_rx, self._results_tx),
            name="orloj-worker",
            daemon=True,
        )
        self._generation += 1
        self._calibrations = queue.Queue()  # nothing a dead worker left behind
        self._reader = threading.Thread(
            target=self._read, args=(self._generation,), name="orloj-results", daemon=True
        )

    @property
    def alive(self) -> bool:
        try:
            return self._proc.is_alive() and self._reader.is_alive()
        except ValueError:  # closed by stop
            return False

    @property
    def pid(self) -> int | None:
        """The current (or last) worker process's id."""
        return self._pid

    def exit_status(self) -> str:
        """How the process ended, for the log: 'signal SIGKILL', 'exit code 1' or 'running'."""
        self._proc.join(1.0)  # reap it: exitcode is None until then
        code = self._proc.exitcode
        if code is None:
            return "running"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"signal {signal.Signals(-code).name}"
            return f"signal {-code}"
        return f"exit code {code}"

    def restart(self, timeout_s: float = 300.0) -> None:
        """Replace a dead worker by a fresh one, built and warmed up like the first. Jobs the
        dead one held were already failed by its reader (`WORKER_EXITED`)."""
        self._reader.join(5.0)
        self._end_process()
        with self._send_lock:
            self._close_pipes()
            self._spawn()
        self.start(timeout_s)

    def _end_process(self, wait_s: float = 5.0) -> None:
        """Join (or kill) the process and release its sentinel: nothing of it stays open."""
        if self._pid is None:
            return  # never started
        self._proc.join(wait_s)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5.0)
        with contextlib.suppress(ValueError):  # still running: leave it to the OS
            self._proc.close()

    def _close_pipes(self) -> None:
        for conn in (self._jobs_rx, self._jobs_tx, self._results_rx, self._results_tx):
            conn.close()

    def start(self, timeout_s: float = 300.0) -> None:
        """Spawn the worker and wait until it has built and warmed up the model."""
        self._proc.start()
        self._pid = self._proc.pid
        self._jobs_rx.close()
        self._results_tx.close()
        if not self._results_rx.poll(timeout_s):
            self._proc.kill()
            raise TimeoutError(f"the worker process did not start within {timeout_s} s")
        try:
            kind, detail = self._results_rx.recv()
        except EOFError:
            self._proc.join(5.0)
            kind, detail = "failed", f"it exited with code {self._proc.exitcode}"
        if kind != "ready":
            raise RuntimeError(f"the worker process failed to start: {detail}")
        self.priority = detail
        self._reader.start()

    def stop(self) -> None:
        with self._send_lock, contextlib.suppress(OSError):
            self._jobs_tx.send(None)
        self._end_process(30.0)
        self._reader.join(5.0)
        with self._send_lock:
            self._close_pipes()

    def calibrate(self, config: CalibrationConfig | None = None) -> Calibration:
        """Calibrate in the worker process itself (same process, priority and threads that
        will serve); call it while no batches are running."""
        if self.outstanding:
            raise RuntimeError("calibrate the worker before serving, not during")
        with self._send_lock:
            self._jobs_tx.send(("calibrate", config or CalibrationConfig()))
        result = self._calibrations.get()
        if isinstance(result, str):
            raise RuntimeError(f"calibration failed in the worker: {result}")
        return result

    def _send(self, job: int, xs: list[Any], latest: float | None) -> None:
        """Hand a job to the worker. A job the worker can no longer answer fails at once, like
        its peers (`WORKER_EXITED`): a closed pipe raises, but a write can also succeed after
        the result stream ended (a killed process closes its pipes one by one; the jobs pipe
        may still take bytes that nobody will read), and the reader, gone by then, cannot fail
        it. Order makes this exact: the reader marks its generation ended before it fails what
        is registered, and this job was registered before it was sent, so it is failed by the
        reader or seen here (failing twice is harmless, `_finished` delivers once)."""
        try:
            with self._send_lock:
                generation = self._generation
                self._jobs_tx.send(("run", job, [x.model_dump() for x in xs], latest))
        except OSError:  # the worker died, or was stopped
            lost = True
        else:
            with self._lock:
                lost = self._ended_generation >= generation
        if lost:
            now = self.now_ms()
            self._finished(job, (now, now, None, False, WORKER_EXITED))

    def _read(self, generation: int) -> None:
        try:
            while True:
                msg = self._results_rx.recv()
                if msg[0] == "calibration":
                    self._calibrations.put(msg[1])
                else:
                    self._finished(msg[1], msg[2])
        except (EOFError, OSError):
            with self._lock:
                self._ended_generation = generation
            self._calibrations.put(WORKER_EXITED)
            self._fail_all(WORKER_EXITED)


def _set_nice(nice: int | None) -> int:
    """Best effort: the worker's nice value, or the unchanged one without the privilege."""
    if nice is not None:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        except OSError as exc:
            log.warning(
                "cannot set the worker's nice value to %d (%s); running at default", nice, exc
            )
    return os.getpriority(os.PRIO_PROCESS, 0)


def _worker_main(
    spec: ModelSpec,
    threads: int,
    warm_sizes: tuple[int, ...],
    nice: int | None,
    origin: float,
    jobs: Connection,
    results: Connection,
) -> None:
    """The worker process: build, warm up, say ready, then serve jobs in order until None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    clock = WallClock(origin)

    def clock_ms() -> float:
        return clock.now() * 1e3

    try:
        priority = _set_nice(nice)
        configure_threads(threads, flush_denormal=True)
        model = spec.build()
        warm_up(model, warm_sizes)
    except Exception as exc:
        results.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    results.send(("ready", priority))
    try:
        _serve_jobs(model, jobs, results, clock_ms)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the server went away without saying stop (killed, or exiting): so do we


def _serve_jobs(
    model: Any, jobs: Connection, results: Connection, clock_ms: Callable[[], float]
) -> None:
    while (msg := jobs.recv()) is not None:
        if msg[0] == "calibrate":
            try:
                results.send(("calibration", calibrate(model, msg[1])))
            except Exception as exc:
                results.send(("calibration", f"{type(exc).__name__}: {exc}"))
            continue
        _, job, raw, latest = msg
        try:
            xs = [model.parse(x) for x in raw]
        except ValueError as exc:  # cannot happen for inputs the frontend validated
            now = clock_ms()
            results.send(("run", job, (now, now, None, False, f"invalid input: {exc}")))
            continue
        results.send(("run", job, execute(model, xs, latest, clock_ms)))
