"""Orloj's worker process killed with -9 mid-load: the server logs the death, answers the
requests the worker held with 503 + Retry-After (not 500), tells the truth on `/health` while a
new worker starts and warms up, then serves again; a crash loop is bounded; nothing (process,
pipe, thread, open request) is left behind."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from kairos.orloj.runtime.calibrate import CalibrationConfig
from kairos.orloj.runtime.dispatcher import Dispatcher
from kairos.orloj.runtime.executor import ThreadExecutor
from kairos.orloj.runtime.models import ModelSpec
from kairos.orloj.runtime.process import ProcessExecutor
from kairos.orloj.runtime.server import RuntimeSettings, create_app
from kairos.orloj.speed import served_options
from kairos.orloj.systems import make_system
from kairos.runtime.http import BackgroundServer

SIZES = (1, 2)
APPS = {"easy": ("exit1",), "hard": ("exit4",)}
SLOW = {"app": "hard", "slo_ms": 60_000, "input": {"exit": 4}}
NORMAL = {"app": "easy", "slo_ms": 60_000, "input": {"exit": 1}}


def _until(what: Callable[[], bool], timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not what():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _pipes() -> int:
    """Pipes this process holds open (sockets come and go with HTTP connections)."""
    held = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            held += os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
    return held


def _result_threads() -> int:
    return sum(t.name == "orloj-results" and t.is_alive() for t in threading.enumerate())


def test_a_worker_killed_with_9_is_logged_replaced_and_the_server_serves_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    spec = {"kind": "early-exit", "options": {"stage_blocks": [2, 4, 4, 12]}, "device": "cpu"}
    model = ModelSpec.model_validate(spec).build()
    cal = ThreadExecutor(model, warm_sizes=SIZES).calibrate(
        CalibrationConfig(batch_sizes=SIZES, solo_runs=3, batch_reps=1)
    )
    policy = make_system(
        "orloj",
        model=cal.batch_model,
        slo_ms=200.0,
        sizes=SIZES,
        options=served_options("orloj", {}),
    )
    worker = ProcessExecutor(model, warm_sizes=SIZES)
    d = Dispatcher(
        policy, model, worker, offline=cal.app_profile(APPS, 200), max_restarts=1, watch_s=0.02
    )
    answers: list[httpx.Response] = []
    stop = threading.Event()

    def flood() -> None:  # a client that keeps one slow request open at all times
        with httpx.Client(timeout=20) as c:
            while not stop.is_set():
                r = c.post(url + "/v1/infer", json=SLOW)
                answers.append(r)
                if r.status_code != 200:
                    time.sleep(0.05)

    caplog.set_level(logging.WARNING, logger="kairos.orloj.runtime.dispatcher")
    settings = RuntimeSettings(log_level="critical")
    with BackgroundServer(create_app(d, APPS, settings)) as srv:
        url = srv.url
        clients = [threading.Thread(target=flood) for _ in range(6)]
        for t in clients:
            t.start()
        try:
            _kill_twice(d, worker, url, answers, stop, clients, caplog)
        finally:
            stop.set()
            for t in clients:
                t.join(60)
    assert _until(lambda: not mp.active_children() and _result_threads() == 0, 10.0)


def _kill_twice(
    d: Dispatcher,
    worker: ProcessExecutor,
    url: str,
    answers: list[httpx.Response],
    stop: threading.Event,
    clients: list[threading.Thread],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with httpx.Client(base_url=url, timeout=20) as c:
        assert _until(lambda: sum(a.status_code == 200 for a in answers) >= 3)
        assert _until(lambda: worker.outstanding > 0, 10.0)  # a batch is on the worker
        pipes_before = _pipes()  # a worker's pipes and sentinel, the server's own
        first_pid = worker.pid
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        # while no worker runs /health says so
        assert _until(lambda: c.get("/health").json()["status"] == "restarting", 10.0)
        down = c.get("/health")
        assert down.status_code == 503 and down.json()["status"] == "restarting"
        assert _until(lambda: c.get("/health").status_code == 200)  # a new worker, warmed up
        stop.set()
        for t in clients:
            t.join(60)
        assert _pipes() == pipes_before  # the dead worker's pipes were closed, not leaked
        assert worker.pid != first_pid and c.get("/health").json()["restarts"] == 1
        served = c.post("/v1/infer", json=NORMAL)  # once hung: see ProcessExecutor._send
        assert served.status_code == 200 and served.json()["outcome"] == "ok"

        codes = {a.status_code for a in answers}
        assert codes <= {200, 503}, codes  # never a 500 for a request the worker held
        refused = [a for a in answers if a.status_code == 503]
        assert refused and all(a.headers["Retry-After"] == "1" for a in refused)
        assert any("died while running" in a.json()["error"]["message"] for a in refused)
        assert f"orloj worker pid {first_pid} died (signal SIGKILL)" in caplog.text
        assert d.open_requests == 0 and _result_threads() == 1
        assert len(mp.active_children()) == 1  # the dead worker was reaped

        # a crash loop: max_restarts=1 within the window, so the second death is final
        second_pid = worker.pid
        assert second_pid is not None
        os.kill(second_pid, signal.SIGKILL)
        assert _until(lambda: c.get("/health").json()["status"] == "failed", 10.0)
        assert c.get("/health").status_code == 503
        gone = c.post("/v1/infer", json=NORMAL)
        assert gone.status_code == 503 and gone.headers["Retry-After"] == "1"
        assert "giving up" in caplog.text
