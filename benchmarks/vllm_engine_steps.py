"""vLLM's CPU engine in process, timed step by step: the model step time the overhead
benchmark sets the schedulers against, and the latency profile of that engine the Andes
scheduler inside vLLM plans with (the same fit kairos's profiler makes of its own engine).

Each function here runs in a fresh process (`in_child`): vLLM's CPU worker, started in
process, scans every loaded module for Triton kernels to replace and fails on numba's
(llvmlite's) objects, which kairos's policy code loads. So this module imports neither at the
top, and the parent imports whatever it likes.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


def in_child(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a freshly spawned process (a module-level function of this module)."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
        return pool.submit(fn, *args).result()


def vllm_engine(checkpoint: Path, max_num_seqs: int, max_len: int, tokenizer: bool = True) -> Any:
    """vLLM's CPU engine in this process (`LLMEngine`), float32, eager, no prefix caching.
    `tokenizer=False`: for token-id prompts only (the checkpoint may have no tokenizer)."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    from vllm import LLM

    llm = LLM(
        model=str(checkpoint),
        dtype="float32",
        max_model_len=max_len,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=4096,
        enforce_eager=True,
        enable_prefix_caching=False,  # every timed prompt computes its whole prefill
        seed=0,
        skip_tokenizer_init=not tokenizer,
    )
    return llm.llm_engine


def _add(engine: Any, tag: str, n: int, prompt: int, max_tokens: int, rng: Any) -> None:
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
    for i in range(n):
        ids = rng.integers(3, 300, prompt).tolist()
        engine.add_request(f"{tag}-{i}", {"prompt_token_ids": ids}, params)


def _prefill(engine: Any, n: int) -> None:
    """Step until each of the `n` newest requests has its first token."""
    started: set[str] = set()
    while len(started) < n:
        for o in engine.step():
            if o.outputs and o.outputs[0].token_ids:
                started.add(o.request_id)


def _drain(engine: Any) -> None:
    while engine.has_unfinished_requests():
        engine.step()


def decode_steps(
    checkpoint: Path, sizes: tuple[int, ...], prompt: int, warm: int, steps: int
) -> dict[int, dict[str, list[float]]]:
    """Per batch size: engine step times (`LLMEngine.step()`: schedule, forward pass,
    sampling, output processing) while `size` requests decode after `prompt`-token prompts,
    and vLLM's own scheduler time inside each step."""
    engine = vllm_engine(checkpoint, max(sizes), 1024)
    sched = engine.engine_core.engine_core.scheduler
    inside: list[float] = []
    sched.schedule = _timed(sched.schedule, inside)  # instrumentation only
    sched.update_from_output = _timed(sched.update_from_output, inside)
    rng = np.random.default_rng(0)
    out: dict[int, dict[str, list[float]]] = {}
    for size in sizes:
        _add(engine, f"b{size}", size, prompt, warm + steps + 4, rng)
        _prefill(engine, size)
        for _ in range(warm):  # the first decodes of a batch shape run slower (kernel set-up)
            engine.step()
        step_s, sched_s = [], []
        for _ in range(steps):
            inside.clear()
            t = time.perf_counter()
            engine.step()
            step_s.append(time.perf_counter() - t)
            sched_s.append(sum(inside))
        _drain(engine)
        out[size] = {"step_s": step_s, "sched_s": sched_s}
    return out


def profile_rows(
    checkpoint: Path, max_num_seqs: int, max_len: int
) -> tuple[list[tuple[float, float, float]], list[tuple[float, float]]]:
    """Decode rows `(batch, context tokens, s)` and prefill rows `(tokens, s)` of vLLM's CPU
    engine (`kairos.andes.latency.fit_profile` reads them): single prompts of a few lengths,
    and decode steps at a few batch sizes and prompt lengths, up to `max_num_seqs`."""
    engine = vllm_engine(checkpoint, max_num_seqs, max_len)
    rng = np.random.default_rng(1)
    prefill: list[tuple[float, float]] = []
    lengths = [n for n in (16, 64, 128, 256, 384) if n < max_len - 8]
    for rep in range(3):
        for n in lengths:
            _add(engine, f"p{rep}-{n}", 1, n, 1, rng)
            t = time.perf_counter()
            _drain(engine)  # one step: the prompt's prefill and its only token
            if rep > 0:  # the first pass sets up the kernels for each shape
                prefill.append((float(n), time.perf_counter() - t))
    decode: list[tuple[float, float, float]] = []
    batches = sorted({b for b in (1, 4, 8, 16, 32, 64) if b <= max_num_seqs} | {max_num_seqs})
    for prompt in (32, min(256, max_len // 2)):
        for b in batches:
            _add(engine, f"d{prompt}-{b}", b, prompt, 10, rng)
            _prefill(engine, b)
            for _ in range(3):  # a batch's first decodes set up kernels: not timed
                engine.step()
            for k in range(5):
                t = time.perf_counter()
                engine.step()
                decode.append((float(b), float(b * (prompt + 4 + k)), time.perf_counter() - t))
            _drain(engine)
    return decode, prefill


def _timed(fn: Callable[..., Any], sink: list[float]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            sink.append(time.perf_counter() - t)

    return call
