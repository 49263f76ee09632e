"""The worker process dies and is replaced: no job is left without an answer.

A killed process closes its pipes one at a time, so a job can be written into its jobs pipe
after its result stream has already ended; that job was once never answered and hung its
request (and the server's shutdown). Here the window is held open on purpose: the jobs pipe is
swapped for one whose read end the test keeps, so the write succeeds and nothing will read it."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import time

from kairos.orloj.policy import Batch, Request
from kairos.orloj.runtime.models import EarlyExitInput, ModelSpec
from kairos.orloj.runtime.process import ProcessExecutor
from kairos.orloj.runtime.results import WORKER_EXITED
from kairos.orloj.worker import BatchRun, SoloRun

SPEC = {"kind": "early-exit", "options": {"stage_blocks": [1, 1, 1, 1]}, "device": "cpu"}


def _batch(i: int) -> Batch:
    return Batch([Request(i, "easy", 0.0, 1e6, payload=EarlyExitInput(exit=1, seed=i))])


def _next(results: queue.Queue[BatchRun | SoloRun]) -> BatchRun:
    run = results.get(timeout=30)
    assert isinstance(run, BatchRun)
    return run


def test_a_job_written_after_the_results_ended_fails_and_a_restart_serves_again() -> None:
    worker = ProcessExecutor(ModelSpec.model_validate(SPEC).build(), warm_sizes=(1,))
    results: queue.Queue[BatchRun | SoloRun] = queue.Queue()
    worker.deliver = results.put
    worker.start()
    try:
        worker.submit(_batch(0))
        assert _next(results).outputs is not None  # a live worker answers
        first = worker.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while worker.alive and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not worker.alive and worker.exit_status() == "signal SIGKILL"

        dead_tx = worker._jobs_tx
        keep_rx, worker._jobs_tx = mp.get_context("spawn").Pipe(duplex=False)
        dead_tx.close()
        worker.submit(_batch(1))  # the write succeeds; only the ended stream says it is lost
        lost = _next(results)
        assert lost.outputs is None and lost.error == WORKER_EXITED and not lost.rejected
        assert keep_rx.poll(0) and worker.outstanding == 0
        keep_rx.close()

        worker.restart()
        assert worker.alive and worker.pid not in (None, first)
        worker.submit(_batch(2))
        again = _next(results)
        assert again.outputs is not None and again.error is None
        assert worker.outstanding == 0 and results.empty()  # each job answered exactly once
    finally:
        worker.stop()
    assert not worker.alive
