"""The engine against its nearest anchor: transformers, on one checkpoint and one request set.

A speed claim against a loop we also wrote says little; what a user would otherwise run is
transformers itself. So the same checkpoint (our random weights written with
`save_checkpoint`, read back by `AutoModelForCausalLM.from_pretrained`) and the same requests
go through three runners, greedy, and must produce the same tokens:

- ours: `LLMEngine` (paged KV cache, continuous batching, the scheduler asked every step);
- transformers' static `generate`: prompts left-padded into one batch that runs until its
  longest output is done (per-request lengths are cut from it afterwards);
- transformers' continuous batching (`ContinuousBatchingManager`): every request with its own
  `max_new_tokens`, a paged cache and a scheduler on a background thread.

Each runner reports when it started, when every request had its first token (from then on
the work is decoding) and when it ended. `CpuSampler` reads the process's CPU time, all
threads together (transformers' background thread included), every few milliseconds, so the
CPU utilisation of the decode phase can be read afterwards for any runner the same way.

transformers is a development dependency: it is imported only inside the functions that use it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import torch

from kairos.andes.engine.api import QoESpec, SamplingParams
from kairos.andes.engine.config import EngineConfig, ModelConfig, SplitProducts
from kairos.andes.engine.cpu import build_engine
from kairos.andes.engine.model import LlamaForCausalLM
from kairos.andes.engine.weights import random_model, save_checkpoint
from kairos.runtime.torch_threads import waiting_thread

# A 56M-parameter Llama (8 layers, hidden 512, grouped-query attention 8/4, a 32k vocabulary):
# the size the comparison was first measured at, small enough for two CPU cores.
ANCHOR_MODEL = ModelConfig(
    vocab_size=32000,
    hidden_size=512,
    intermediate_size=1408,
    num_hidden_layers=8,
    num_attention_heads=8,
    num_key_value_heads=4,
    head_dim=64,
    max_position_embeddings=2048,
)


@dataclass
class Run:
    """One runner's greedy tokens per request and its phase times (`perf_counter`)."""

    tokens: list[list[int]]
    start: float
    decode_from: float  # every request has its first token from here on
    end: float
    decode_busy: float | None = None  # busy cores in decode, when the run measured its own

    @property
    def wall_s(self) -> float:
        return self.end - self.start


class CpuSampler:
    """Samples (wall time, process CPU time) on a thread every `period_s` seconds, so CPU
    utilisation over any past interval can be read afterwards (`utilisation`), whichever
    thread did the work. The sampler itself wakes a few hundred times a second and does
    nothing else."""

    def __init__(self, period_s: float = 0.005) -> None:
        self.period_s = period_s
        self._samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="cpu-sampler", daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self._samples.append((time.perf_counter(), time.process_time()))
            self._stop.wait(self.period_s)
        self._samples.append((time.perf_counter(), time.process_time()))

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def utilisation(self, t0: float, t1: float) -> float:
        """Busy cores on average between wall times `t0` and `t1` (CPU seconds / wall
        seconds, interpolated between samples)."""
        if t1 <= t0:
            raise ValueError(f"empty interval [{t0}, {t1}]")
        wall, cpu = np.asarray(self._samples, dtype=np.float64).T
        c0, c1 = np.interp([t0, t1], wall, cpu)
        return float((c1 - c0) / (t1 - t0))


def mixed_requests(
    n: int, vocab: int, gen: torch.Generator, prompt: tuple[int, int], output: tuple[int, int]
) -> tuple[list[list[int]], list[int]]:
    """`n` prompts of random tokens, lengths uniform in `prompt`, outputs uniform in `output`
    (both inclusive): lengths spread like real requests."""
    lens = torch.randint(prompt[0], prompt[1] + 1, (n,), generator=gen).tolist()
    outs = torch.randint(output[0], output[1] + 1, (n,), generator=gen).tolist()
    return [torch.randint(0, vocab, (k,), generator=gen).tolist() for k in lens], outs


def write_checkpoint(directory: Path, cfg: ModelConfig = ANCHOR_MODEL) -> LlamaForCausalLM:
    """Random weights (seed 0) saved as a Hugging Face checkpoint; returns our model of them."""
    model = random_model(cfg, seed=0)
    save_checkpoint(model, cfg, directory)
    return model


def transformers_model(directory: Path) -> Any:
    """The checkpoint as transformers reads it (float32, its default attention)."""
    import transformers

    return transformers.AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()


def run_ours(
    model: LlamaForCausalLM,
    prompts: Sequence[list[int]],
    outs: Sequence[int],
    policy: str = "fcfs",
    lanes: int = 0,
    split_products: SplitProducts = "measured",
    packed_products: bool = True,
    split_rows: int | None = None,
) -> Run:
    """Every request added at once, each with its own output length; steps until done.
    `lanes`: the engine's `decode_lanes` (lanes.py; 0, the default: none); `split_products`,
    `packed_products` and `split_rows` the engine's settings of those names (row_split.py,
    packed.py, split_rows.py).

    The engine runs where the model's weights are, in their dtype: its "auto" device would
    move them to a GPU when one is present (in bfloat16), which made a CPU anchor compare our
    GPU run with transformers' CPU run on a machine with CUDA."""
    weights = next(model.parameters())
    bs = 16
    blocks = sum(-(-(len(p) + n) // bs) for p, n in zip(prompts, outs, strict=True)) + 8
    longest = max(len(p) + n for p, n in zip(prompts, outs, strict=True))
    engine = build_engine(
        EngineConfig(
            num_gpu_blocks=blocks,
            num_cpu_blocks=0,
            max_model_len=min(-(-longest // bs) * bs, model.config.max_position_embeddings),
            max_num_seqs=max(len(prompts), 1),
            policy=policy,
            decode_lanes=lanes,
            split_products=split_products,
            packed_products=packed_products,
            split_rows=split_rows,
            device=str(weights.device),
            dtype=str(weights.dtype).removeprefix("torch."),
        ),
        model=model,
    )
    start = time.perf_counter()
    qoe = QoESpec(ttft_s=1.0, tokens_per_s=5.0)
    for i, (p, n) in enumerate(zip(prompts, outs, strict=True)):
        params = SamplingParams(max_tokens=n, temperature=0, ignore_eos=True)
        engine.add_request(str(i), p, params, qoe)
    tokens: list[list[int]] = [[] for _ in prompts]
    waiting = len(prompts)
    decode_from = start
    while engine.has_unfinished:
        for ev in engine.step():
            if ev.token_id is not None:
                row = tokens[int(ev.request_id)]
                row.append(ev.token_id)
                waiting -= len(row) == 1
        if waiting == 0 and decode_from == start:
            decode_from = time.perf_counter()
    return Run(tokens, start, decode_from, time.perf_counter())


def run_static(hf: Any, prompts: Sequence[list[int]], outs: Sequence[int]) -> Run:
    """transformers' `generate` on one left-padded batch up to the longest output."""
    import transformers

    first: list[float] = []

    class MarkDecode(transformers.StoppingCriteria):
        """Called after every generated token: its first call ends the prefill."""

        def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
            if not first:
                first.append(time.perf_counter())
            return torch.zeros(input_ids.shape[0], dtype=torch.bool)

    width = max(map(len, prompts))
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    start = time.perf_counter()
    with torch.inference_mode():
        out = hf.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=max(outs),
            do_sample=False,
            pad_token_id=0,
            stopping_criteria=transformers.StoppingCriteriaList([MarkDecode()]),
        )
    end = time.perf_counter()
    tokens = [out[i, width : width + n].tolist() for i, n in enumerate(outs)]
    return Run(tokens, start, first[0] if first else start, end)


def run_continuous(hf: Any, prompts: Sequence[list[int]], outs: Sequence[int]) -> Run:
    """transformers' continuous batching, each request with its own `max_new_tokens`; timed
    from the first request added (the manager's setup is not counted, as ours is not)."""
    import transformers

    # on CPU it logs that psutil is missing, at error level, on every manager it builds
    logging.getLogger("ContinuousBatchingLogger").setLevel(logging.CRITICAL)
    config = transformers.GenerationConfig(
        do_sample=False, max_new_tokens=max(outs), eos_token_id=-1, pad_token_id=0
    )
    # On CPU transformers sizes its KV cache from free memory (up to 90% of it: 14.6 GB on a
    # 23-GB box, which got a neighbour OOM-killed); give it what ours gets instead: blocks for
    # the whole request set plus 8, and our engine's default 4,096 batched tokens
    page = transformers.ContinuousBatchingConfig.page_size
    blocks = sum(-(-(len(p) + n) // page) for p, n in zip(prompts, outs, strict=True)) + 8
    sized = transformers.ContinuousBatchingConfig(
        num_blocks=blocks, max_batch_tokens=4096, max_requests_per_batch=max(len(prompts), 1)
    )
    results: dict[str, Any] = {}
    # this thread only waits: on one intra-op thread it makes no OpenMP team beside the
    # manager's (kairos.runtime.torch_threads; with two, decode ran about 10% slower)
    with (
        waiting_thread(),
        hf.continuous_batching_context_manager(
            generation_config=config, block=True, timeout=30, continuous_batching_config=sized
        ) as manager,
    ):
        start = time.perf_counter()
        for i, (p, n) in enumerate(zip(prompts, outs, strict=True)):
            manager.add_request(p, request_id=str(i), max_new_tokens=n, record_timestamps=True)
        while len(results) < len(prompts):
            result = manager.get_result(timeout=1)
            if result is not None and result.is_finished():
                if result.error is not None:
                    raise RuntimeError(f"transformers request {result.request_id}: {result.error}")
                results[result.request_id] = result
            elif result is None and not manager.is_running():
                raise RuntimeError("transformers' continuous batching stopped early")
        end = time.perf_counter()
    tokens = [list(results[str(i)].generated_tokens) for i in range(len(prompts))]
    decode_from = max(r.timestamps[0] for r in results.values())
    return Run(tokens, start, decode_from, end)
