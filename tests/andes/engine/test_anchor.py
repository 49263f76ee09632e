"""The transformers anchor of `benchmarks/bench_engine.py`, on a tiny checkpoint: our engine,
transformers' static `generate` and its continuous batching give the same greedy tokens for
mixed-length requests, and the CPU sampler tells busy threads from idle ones."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import torch
from benchmarks.engine_anchor import (
    ANCHOR_MODEL,
    CpuSampler,
    mixed_requests,
    run_continuous,
    run_ours,
    run_static,
    transformers_model,
    write_checkpoint,
)

from kairos.andes.engine.weights import random_model

TINY = ANCHOR_MODEL.model_copy(
    update={
        "vocab_size": 300,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
    }
)


def test_same_greedy_tokens_as_transformers(tmp_path: Path) -> None:
    ours_model = write_checkpoint(tmp_path, TINY)
    hf = transformers_model(tmp_path)
    gen = torch.Generator().manual_seed(3)
    prompts, outs = mixed_requests(5, TINY.vocab_size, gen, (3, 40), (2, 20))
    assert len(set(outs)) > 1 and len(set(map(len, prompts))) > 1  # really mixed
    ours = run_ours(ours_model, prompts, outs, "andes", lanes=2)  # decode lanes (lanes.py)
    assert [len(t) for t in ours.tokens] == outs
    one_pass = run_ours(ours_model, prompts, outs, "andes", lanes=0)
    static = run_static(hf, prompts, outs)
    continuous = run_continuous(hf, prompts, outs)
    assert ours.tokens == one_pass.tokens == static.tokens == continuous.tokens
    for run in (ours, static, continuous):
        assert run.start <= run.decode_from <= run.end


def test_ours_runs_where_the_weights_are_when_cuda_is_present(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a machine with a GPU the engine's "auto" device is CUDA in bfloat16; the anchor
    compares on the CPU, so ours must stay where the checkpoint's weights are (on the device
    machine, an H200, ours ran on the GPU against transformers on the CPU before this)."""
    model = write_checkpoint(tmp_path, TINY)
    gen = torch.Generator().manual_seed(5)
    prompts, outs = mixed_requests(3, TINY.vocab_size, gen, (4, 20), (3, 8))
    expected = run_ours(model, prompts, outs).tokens
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # "auto" would pick cuda
    assert run_ours(model, prompts, outs).tokens == expected
    weights = next(model.parameters())
    assert (weights.device.type, weights.dtype) == ("cpu", torch.float32)


def test_tokens_differ_for_other_weights(tmp_path: Path) -> None:
    """The comparison can fail: another model's tokens are not transformers' tokens."""
    write_checkpoint(tmp_path, TINY)
    hf = transformers_model(tmp_path)
    other = random_model(TINY, seed=1)
    gen = torch.Generator().manual_seed(4)
    prompts, outs = mixed_requests(3, TINY.vocab_size, gen, (8, 30), (8, 16))
    assert run_ours(other, prompts, outs).tokens != run_static(hf, prompts, outs).tokens


def test_cpu_sampler_sees_a_busy_thread_and_an_idle_one() -> None:
    def spin(until: float) -> None:
        while time.perf_counter() < until:
            pass

    with CpuSampler(period_s=0.002) as sampler:
        t0 = time.perf_counter()
        time.sleep(0.15)
        t1 = time.perf_counter()
        worker = threading.Thread(target=spin, args=(t1 + 0.15,))  # CPU time of any thread
        worker.start()
        worker.join()
        t2 = time.perf_counter()
    idle, busy = sampler.utilisation(t0, t1), sampler.utilisation(t1, t2)
    assert idle < 0.5 * busy  # a wide margin: the machine is shared
    with pytest.raises(ValueError):
        sampler.utilisation(t1, t1)
