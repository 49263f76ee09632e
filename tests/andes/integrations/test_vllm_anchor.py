"""The engine benchmark's vLLM runner (`benchmarks/vllm_anchor.py`): a worker process in
vLLM's environment runs request sets on command and reports what the other runners report.
Its greedy tokens must be kairos's engine's on the same checkpoint, or the benchmark's
comparison (which asserts identical tokens) could not run."""

from __future__ import annotations

import sys
from contextlib import closing
from pathlib import Path

import pytest
import torch

pytest.importorskip("vllm", reason="the vLLM runner runs in the vLLM environment")

from benchmarks.engine_anchor import mixed_requests, run_ours
from benchmarks.vllm_anchor import VllmWorker

from kairos.andes.engine.weights import load_checkpoint


def test_worker_runs_sets_and_its_tokens_are_ours(checkpoint: Path) -> None:
    model = load_checkpoint(checkpoint)
    gen = torch.Generator().manual_seed(0)
    prompts, outs = mixed_requests(3, model.config.vocab_size, gen, (8, 40), (5, 20))
    with closing(VllmWorker(Path(sys.executable), checkpoint, 4, 256).start()) as worker:
        first = worker.run(prompts, outs)
        again = worker.run(prompts, outs)  # the worker stays up between sets
    assert [len(t) for t in first["tokens"]] == outs
    assert first["tokens"] == again["tokens"]
    assert first["start"] <= first["decode_from"] <= first["end"]
    assert first["decode_busy"] >= 0.0
    assert first["tokens"] == run_ours(model, prompts, outs).tokens


def test_a_worker_that_cannot_start_says_why(tmp_path: Path) -> None:
    worker = VllmWorker(Path(sys.executable), tmp_path / "missing", 4, 256)
    with pytest.raises(RuntimeError, match="vLLM worker exited"):
        worker.start()
