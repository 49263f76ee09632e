"""Loading Hugging Face-format checkpoints (Llama and Qwen2) from local files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kairos.andes.engine.api import SamplingParams
from kairos.andes.engine.config import EngineConfig, ModelConfig
from kairos.andes.engine.cpu import build_engine
from kairos.andes.engine.weights import load_checkpoint, save_checkpoint
from tests.andes.bpe_tokenizer import write_tokenizer

from .conftest import TINY, flat_profile, tiny_model


@pytest.mark.parametrize("qwen", [False, True])
def test_checkpoint_round_trip_serves_same_tokens(tmp_path: Path, qwen: bool) -> None:
    cfg = TINY.model_copy(
        update={
            "attention_bias": qwen,
            "vocab_size": 320,
            "tie_word_embeddings": qwen,
            "bos_token_id": 1,
            "eos_token_id": 2,
        }
    )
    model = tiny_model(4, cfg)
    if qwen:
        with torch.no_grad():  # non-zero biases, so loading them really matters
            for name, p in model.named_parameters():
                if name.endswith(".bias"):
                    p.normal_(0, 0.5)
    save_checkpoint(model, cfg, tmp_path)
    tok = write_tokenizer(tmp_path, 320)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == ["Qwen2ForCausalLM" if qwen else "LlamaForCausalLM"]
    assert ModelConfig.from_hf(tmp_path / "config.json") == cfg

    loaded = load_checkpoint(tmp_path).to(torch.float64)
    ids = torch.tensor(tok.encode("the lazy fox").ids)
    torch.testing.assert_close(loaded.dense_logits(ids), model.dense_logits(ids))

    engine = build_engine(
        EngineConfig(model=str(tmp_path), dtype="float64", num_gpu_blocks=64, max_model_len=256),
        latency=flat_profile(1024, 8192),
    )
    assert engine.model_name == tmp_path.name
    assert engine.tokenizer.eos_token_id == tok.token_to_id("</s>")
    prompt = engine.tokenizer.encode("hello world")
    assert prompt == tok.encode("hello world").ids
    out = engine.generate([prompt], SamplingParams(max_tokens=8, temperature=0, ignore_eos=True))
    ref_engine = build_engine(
        EngineConfig(dtype="float64", num_gpu_blocks=64, max_model_len=256),
        model=model,
        latency=flat_profile(1024, 8192),
    )
    assert out == ref_engine.generate(
        [prompt], SamplingParams(max_tokens=8, temperature=0, ignore_eos=True)
    )
    chat = engine.tokenizer.chat_prompt([{"role": "user", "content": "hi"}])
    assert chat == "<user>hi<assistant>"


def test_bad_checkpoints_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no config\.json"):
        load_checkpoint(tmp_path)
    save_checkpoint(tiny_model(0), TINY, tmp_path)
    raw = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**raw, "architectures": ["GPT2LMHead"]}))
    with pytest.raises(ValueError, match="not supported"):
        load_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**raw, "num_hidden_layers": 3}))
    with pytest.raises(ValueError, match="missing"):
        load_checkpoint(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(ValueError, match="safetensors"):
        load_checkpoint(tmp_path)
