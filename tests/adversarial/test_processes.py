"""The servers as their users start them (`kairos ... serve` in a process of its own): killed
with -9 and restarted, two on one store, and stopped with SIGTERM while a stream is open."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import httpx

from kairos.andes.latency import LinearProfile
from kairos.runtime.ports import free_port
from tests.andes.e2e.conftest import engine

ENV = {**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}


@contextmanager
def kairos(args: list[str], log: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`kairos <args> --port P` until it answers /health; killed (-9) on the way out."""
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kairos", *args, "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=ENV,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"kairos {args[0]} exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(log.read_text()[-2000:])
            time.sleep(0.1)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def test_venn_killed_with_9_restarts_with_every_job_and_a_second_server_is_refused(
    tmp_path: Path,
) -> None:
    """Two servers on one database both ran and over-assigned devices (a defect this guards
    against)."""
    db = str(tmp_path / "venn.sqlite")
    serve = ["venn", "serve", "--db", db]
    with kairos(serve, tmp_path / "first.log") as (proc, url):
        ids = [
            httpx.post(url + "/v1/jobs", json={"name": f"j{i}", "demand": 3, "rounds": 2}).json()[
                "id"
            ]
            for i in range(3)
        ]
        second = subprocess.run(
            [sys.executable, "-m", "kairos", *serve, "--port", str(free_port())],
            capture_output=True,
            text=True,
            env=ENV,
            timeout=120,
        )
        assert second.returncode == 1, second.stdout + second.stderr
        said = second.stdout + second.stderr
        assert f"pid {proc.pid}" in said and "in use" in said, said
        assert "Traceback" not in said
        assert httpx.get(url + "/health").status_code == 200  # the first one is untouched
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    with kairos(serve, tmp_path / "second.log") as (_, url):  # the kernel freed the lock
        jobs = httpx.get(url + "/v1/jobs").json()["jobs"]
        assert sorted(j["id"] for j in jobs) == sorted(ids)


def andes_args(tmp_path: Path) -> list[str]:
    profile = tmp_path / "profile.json"
    eng = engine()
    cast(LinearProfile, eng.latency).save(profile)  # engine() builds it from a LinearProfile
    return [
        "serve",
        "--model",
        "kairos-tiny-llama-random",  # random weights: the same speed, no training first
        "--profile",
        str(profile),
        "--num-gpu-blocks",
        "256",
        "--max-model-len",
        "4096",  # the 256 blocks' whole length: room for a stream longer than the grace
        "--shutdown-grace-s",
        "1",
    ]


def test_andes_sigterm_ends_open_streams_with_a_final_error_event(tmp_path: Path) -> None:
    """SIGTERM used to cut streams mid-body with no final event and log CancelledError
    tracebacks."""
    log = tmp_path / "andes.log"
    with kairos(andes_args(tmp_path), log) as (proc, url):
        body = {
            "model": "kairos-tiny-llama-random",
            "messages": [{"role": "user", "content": "hi"}],
            # longer than the 1 s grace can finish: the built-in model decoded 1,000 tokens in
            # 0.75 s alone on a fast 2-CPU host once the engine ran on one OpenMP team, and a
            # 1,000-token stream then finished in the grace (CI run of 239b707)
            "max_tokens": 4000,
            "ignore_eos": True,
            "stream": True,
            "qoe": {"ttft_s": 1.0, "tokens_per_s": 2.0},
        }
        events: list[str] = []
        with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=60) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if line.startswith("data: "):
                    events.append(line[len("data: ") :])
                if len(events) == 3:
                    proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it caught
    assert events[-1] == "[DONE]", events[-3:]
    final = json.loads(events[-2])
    assert final["error"]["code"] == "shutting_down", final
    text = log.read_text()
    assert "Traceback" not in text and "CancelledError" not in text, text[-3000:]


def test_andes_killed_with_9_comes_back_serving(tmp_path: Path) -> None:
    args = andes_args(tmp_path)
    body = {
        "model": "kairos-tiny-llama-random",
        "prompt": "hi",
        "max_tokens": 3,
        "ignore_eos": True,
    }
    with kairos(args, tmp_path / "a.log") as (proc, url):
        assert httpx.post(url + "/v1/completions", json=body, timeout=60).status_code == 200
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    with kairos(args, tmp_path / "b.log") as (_, url):
        r = httpx.post(url + "/v1/completions", json=body, timeout=60)
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 3


SALUS_JOB = {"name": "long", "factory": "kairos.salus.runtime.zoo:cnn", "iterations": 1_000_000,
             "options": {"batch": 4}}  # fmt: skip


def _running(url: str, job_id: int) -> None:
    deadline = time.monotonic() + 60
    while httpx.get(f"{url}/v1/jobs/{job_id}").json()["state"] != "running":
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)


def test_salus_sigterm_answers_waiting_clients_and_exits_cleanly(tmp_path: Path) -> None:
    log = tmp_path / "salus.log"
    with kairos(["salus", "serve", "--threads", "1"], log) as (proc, url):
        job = httpx.post(url + "/v1/jobs", json=SALUS_JOB, timeout=30).json()
        _running(url, job["id"])
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(
                httpx.get, f"{url}/v1/jobs/{job['id']}", params={"wait_s": 50}, timeout=60
            )
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            answer = waiting.result()
        assert proc.wait(60) in (0, -signal.SIGTERM)
    assert answer.status_code == 200
    assert answer.json()["state"] == "cancelled", answer.json()
    assert "shutting down" in answer.json()["error"]
    text = log.read_text()
    assert "Traceback" not in text and "CancelledError" not in text, text[-3000:]


def test_salus_killed_with_9_comes_back_serving(tmp_path: Path) -> None:
    """The jobs' programs lived in the killed process (Salus keeps models resident, not
    checkpointed): the restarted service starts empty and serves new jobs."""
    args = ["salus", "serve", "--threads", "1"]
    with kairos(args, tmp_path / "a.log") as (proc, url):
        job = httpx.post(url + "/v1/jobs", json=SALUS_JOB, timeout=30).json()
        _running(url, job["id"])
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    with kairos(args, tmp_path / "b.log") as (_, url):
        short = {**SALUS_JOB, "iterations": 3}
        r = httpx.post(url + "/v1/jobs", json=short, timeout=30)
        assert r.status_code == 201, r.text
        done = httpx.get(f"{url}/v1/jobs/{r.json()['id']}", params={"wait_s": 50}, timeout=60)
        assert done.json()["state"] == "done", done.json()
