"""Tiny random checkpoints written by transformers itself, for comparing our model with the
reference implementation (no download: built from a config in code)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import transformers

ARCHS = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config}
VOCAB = 300

# rope_parameters in the transformers 5 dialect, one per schedule we compute
ROPES: dict[str, dict[str, Any]] = {
    "default": {"rope_type": "default", "rope_theta": 1_000_000.0},
    "llama3": {
        "rope_type": "llama3",
        "rope_theta": 500_000.0,
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        # short, so most of a 16-wide head's frequencies are rescaled within a few positions
        "original_max_position_embeddings": 8,
    },
    "linear": {"rope_type": "linear", "rope_theta": 10_000.0, "factor": 4.0},
    "yarn": {
        "rope_type": "yarn",
        "rope_theta": 10_000.0,
        "factor": 4.0,
        "original_max_position_embeddings": 16,
    },
}


def hf_checkpoint(
    path: Path, arch: str, rope_parameters: dict[str, Any], seed: int = 0
) -> transformers.PreTrainedModel:
    """Save a 2-layer random model with `save_pretrained` and return the reference model.

    Every parameter, norms and biases included, is drawn afresh (std 0.2, norms around 1), so
    a weight loaded into the wrong place or not at all changes the logits."""
    cfg = ARCHS[arch](
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=64,
        rope_parameters=dict(rope_parameters),
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.2 + (1.0 if name.endswith("norm.weight") else 0.0))
    model.save_pretrained(path)
    return model.eval()


def as_transformers4(path: Path) -> dict[str, Any]:
    """Rewrite `config.json` as transformers 4 wrote it: top-level `rope_theta` and
    `rope_scaling` (null for plain RoPE), no `rope_parameters`. Returns the new config."""
    raw = json.loads((path / "config.json").read_text())
    rope = dict(raw.pop("rope_parameters"))
    raw["rope_theta"] = rope.pop("rope_theta")
    raw["rope_scaling"] = None if rope["rope_type"] == "default" else rope
    raw.pop("layer_types", None)  # transformers 4 Llama configs had none
    (path / "config.json").write_text(json.dumps(raw))
    return raw


def reference_logits(model: transformers.PreTrainedModel, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        out: torch.Tensor = model(ids[None]).logits[0]
    return out
