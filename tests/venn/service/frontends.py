"""`kairos venn serve --store URL` processes, as an operator runs them: each on its own port,
waited for until it answers /health, killed (-9) on the way out."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from kairos.runtime.ports import free_port

ENV = {**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}


@contextmanager
def frontends(
    store: str, n: int, logs: Path, policy: str = "venn"
) -> Iterator[list[tuple[subprocess.Popen[bytes], str]]]:
    procs: list[tuple[subprocess.Popen[bytes], str]] = []
    try:
        for i in range(n):
            port = free_port()
            with (logs / f"frontend{i}.log").open("wb") as out:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "kairos", "venn", "serve", "--store", store,
                     "--port", str(port), "--policy", policy, "--log-level", "warning"],
                    stdout=out, stderr=subprocess.STDOUT, env=ENV,
                )  # fmt: skip
            procs.append((proc, f"http://127.0.0.1:{port}"))
        for i, (proc, url) in enumerate(procs):
            _wait_healthy(proc, url, logs / f"frontend{i}.log")
        yield procs
    finally:
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(30)


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 120  # only against a hang: a loaded machine starts slowly
    while True:
        if proc.poll() is not None:
            raise RuntimeError(
                f"the front-end exited ({proc.returncode}): {log.read_text()[-2000:]}"
            )
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(log.read_text()[-2000:])
        time.sleep(0.1)
