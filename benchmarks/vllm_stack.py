"""The model both vLLM benchmarks serve: the engine anchor's 56M-parameter Llama, as a checkpoint
that vLLM, kairos's engine and transformers all load (random weights, written here, no download).

The scheduler benchmarks measure a policy's cost against a model's step time, so the model
must cost what a small real one does: the 2-layer test checkpoint of the integration tests
steps in a few milliseconds, where vLLM's own per-step bookkeeping is most of the time. The
anchor model (8 layers, hidden 512, a 32k vocabulary: `benchmarks.engine_anchor`) is the
largest that two CPU cores serve at a useful rate; a bigger model only lowers a scheduler's
share of a step.

The vLLM test helpers (`tests.andes.integrations`: the scheduler without a model, the
`vllm serve` process, the BPE tokenizer writer) are imported from the tests rather than moved
here: they are the tests' fixtures first, the benchmarks use them unchanged, and the
benchmarks run from a checkout, where `tests` is a package.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tests.andes.bpe_tokenizer import write_tokenizer
from tests.andes.integrations.server import BLOCK as VLLM_BLOCK

from benchmarks.engine_anchor import ANCHOR_MODEL
from kairos.andes.engine.weights import random_model, save_checkpoint

BOS, EOS = 1, 2  # the BPE tokenizer's <s> and </s>
BENCH_MODEL = ANCHOR_MODEL.model_copy(update={"bos_token_id": BOS, "eos_token_id": EOS})


def write_bench_checkpoint(path: Path) -> Path:
    """Random weights (seed 0) in Hugging Face's layout plus a `tokenizer.json` whose
    vocabulary is the model's: a BPE trained on a few sentences, padded with placeholder
    tokens, so every id the random model samples decodes (vLLM and kairos both detokenize
    every streamed token). Written once; an existing checkpoint is reused."""
    if (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file():
        return path
    path.mkdir(parents=True, exist_ok=True)
    save_checkpoint(random_model(BENCH_MODEL, seed=0), BENCH_MODEL, path)
    tok = write_tokenizer(
        path,
        BENCH_MODEL.vocab_size,
        tokenizer_class="PreTrainedTokenizerFast",
        unk_token="<unk>",
        model_max_length=BENCH_MODEL.max_position_embeddings,
    )
    missing = BENCH_MODEL.vocab_size - tok.get_vocab_size()
    tok.add_tokens([f"<v{i}>" for i in range(missing)])
    tok.save(str(path / "tokenizer.json"))
    return path


def fit_vllm_profile(
    checkpoint: Path, out: Path, *, kv_tokens: int, max_num_seqs: int, max_len: int
) -> Path:
    """vLLM's CPU engine measured on this machine (`vllm_engine_steps.profile_rows`) and
    fitted as kairos's profiler fits its own engine: the profile the Andes scheduler inside
    vLLM plans with, so it predicts the engine it schedules. Reused when present."""
    from benchmarks.vllm_engine_steps import in_child, profile_rows
    from kairos.andes.latency import fit_profile

    if not out.is_file():
        decode, prefill = in_child(profile_rows, checkpoint, max_num_seqs, max_len)
        fitted = fit_profile(
            f"vllm-cpu:{checkpoint.name}",
            np.array(decode),
            np.array(prefill),
            kv_capacity=kv_tokens,
            block_size=VLLM_BLOCK,
        )
        fitted.save(out)
    return out
