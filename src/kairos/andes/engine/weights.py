"""Building a model: the built-in random-weight model, or a local Hugging Face checkpoint.

A checkpoint directory holds `config.json`, one or more `*.safetensors` files and
`tokenizer.json`. Safetensors never executes code, so loading a checkpoint someone hands us is
safe (we never unpickle `.bin` files). Parameter names match Hugging Face's, so tensors load
by name; anything missing or unexpected is an error naming the tensor.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from kairos.andes.engine.config import BUILTIN_MODEL, ModelConfig
from kairos.andes.engine.model import LlamaForCausalLM


def random_model(cfg: ModelConfig = BUILTIN_MODEL, seed: int = 0) -> LlamaForCausalLM:
    """Weights drawn like a fresh Llama (normal, std 0.02; norms at 1), reproducibly."""
    gen = torch.Generator().manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif name.endswith(".bias"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
    return model.eval()


def load_checkpoint(directory: str | Path) -> LlamaForCausalLM:
    """A Llama or Qwen2 checkpoint from local files (no network)."""
    from safetensors.torch import load_file

    path = Path(directory)
    if not (path / "config.json").is_file():
        raise ValueError(f"{path}: not a checkpoint directory (no config.json)")
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise ValueError(f"{path}: no *.safetensors files (only safetensors weights load)")
    cfg = ModelConfig.from_hf(path / "config.json")
    model = LlamaForCausalLM(cfg)
    state: dict[str, torch.Tensor] = {}
    for f in files:
        state.update(load_file(str(f)))
    expected = {k for k in model.state_dict() if not k.startswith("rope.")}
    if cfg.tie_word_embeddings:
        expected.discard("lm_head.weight")
        state.pop("lm_head.weight", None)
    missing = sorted(expected - state.keys())
    unexpected = sorted(k for k in state.keys() - expected if "rotary_emb" not in k)
    if missing or unexpected:
        raise ValueError(
            f"{path}: checkpoint does not match {cfg.num_hidden_layers}-layer config; "
            f"missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name in expected:
            params[name].copy_(state[name].to(params[name].dtype))
    return model.eval()


def save_checkpoint(model: nn.Module, cfg: ModelConfig, directory: str | Path) -> None:
    """Write `config.json` + `model.safetensors` in Hugging Face's layout (tests build their
    small checkpoints with it)."""
    from safetensors.torch import save_file

    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(cfg.to_hf(), indent=2))
    state = {
        k: v.detach().contiguous()
        for k, v in model.state_dict().items()
        if not k.startswith("rope.") and not (cfg.tie_word_embeddings and k == "lm_head.weight")
    }
    save_file(state, str(path / "model.safetensors"))
