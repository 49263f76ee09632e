"""Reading `config.json` in both transformers dialects: each RoPE schedule is computed as the
reference computes it or refused by name, and what this decoder does not implement is refused
with the file and the key, never ignored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
import transformers
from hypothesis import example, given, settings
from hypothesis import strategies as st
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from kairos.andes.engine.config import ModelConfig
from kairos.andes.engine.rope import LinearRope, Llama3Rope, YarnRope, inverse_frequencies
from kairos.andes.engine.weights import random_model, save_checkpoint

from .conftest import TINY
from .hf_reference import ROPES

HEAD_DIM, MAX_POS = 16, 64


def write_config(path: Path, arch: str = "llama", **changes: Any) -> Path:
    """A config.json as transformers 5 writes it, with `changes` applied (None deletes)."""
    config = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config}[arch](
        vocab_size=300,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POS,
    )
    raw = config.to_dict()
    raw["architectures"] = [type(config).__name__.replace("Config", "ForCausalLM")]
    for key, value in changes.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    (path / "config.json").write_text(json.dumps(raw))
    return path / "config.json"


def refused(path: Path, match: str) -> str:
    with pytest.raises(ValueError, match=match) as info:
        ModelConfig.from_hf(path)
    assert str(path) in str(info.value)  # every refusal names the file
    return str(info.value)


@pytest.mark.parametrize("rope_type", ["dynamic", "longrope", "mrope"])
@pytest.mark.parametrize("dialect", ["rope_parameters", "rope_scaling"])
def test_unsupported_rope_types_are_refused_by_name(
    tmp_path: Path, rope_type: str, dialect: str
) -> None:
    params = {"rope_type": rope_type, "factor": 2.0}
    changes: dict[str, Any] = {"rope_parameters": None, dialect: params}
    path = write_config(tmp_path, **changes)
    message = refused(path, f"{dialect}.rope_type '{rope_type}' is not supported")
    if rope_type == "mrope":
        assert "supported: default, linear, llama3, yarn" in message
    else:
        assert "paged cache" in message  # says why, not only that


def test_legacy_type_key_and_missing_theta(tmp_path: Path) -> None:
    """transformers 4 once wrote `type` for `rope_type`; a config with no theta anywhere gets
    the reference's 10000 (the only case where 10000 is right)."""
    path = write_config(
        tmp_path,
        rope_parameters=None,
        rope_theta=None,
        rope_scaling={"type": "linear", "factor": 4},
    )
    cfg = ModelConfig.from_hf(path)
    assert cfg.rope_theta == 10000.0 and cfg.rope_scaling == LinearRope(factor=4.0)
    assert transformers.AutoConfig.from_pretrained(tmp_path).rope_parameters == {
        "rope_type": "linear",
        "type": "linear",
        "factor": 4,
        "rope_theta": 10000.0,
    }


def test_both_dialects_agreeing_load_and_disagreeing_are_refused(tmp_path: Path) -> None:
    rope = ROPES["llama3"]
    v4 = {k: v for k, v in rope.items() if k != "rope_theta"}
    path = write_config(tmp_path, rope_parameters=rope, rope_scaling=v4, rope_theta=1.0)
    cfg = ModelConfig.from_hf(path)  # the rope dict's own theta wins, as in transformers 5
    assert cfg.rope_theta == rope["rope_theta"] and isinstance(cfg.rope_scaling, Llama3Rope)
    write_config(tmp_path, rope_parameters=rope, rope_scaling={**v4, "factor": 2.0})
    refused(path, "both rope_scaling .* and rope_parameters .* disagree")


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0}},
         r"rope_parameters\.low_freq_factor: Field required"),
        ({"rope_parameters": {**ROPES["llama3"], "low_freq_factor": 4.0}},
         "high_freq_factor=4.0 must exceed low_freq_factor=4.0"),
        ({"rope_parameters": {**ROPES["yarn"], "beta_fats": 32}},
         r"rope_parameters\.beta_fats: Extra inputs"),
        ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "factor": 2.0}},
         r"'default' takes no other keys; found \['factor'\]"),
        ({"rope_parameters": {"rope_type": "default", "rope_theta": -1.0}},
         "rope_theta must be a positive finite number"),
        ({"rope_parameters": [1, 2]}, "rope_parameters must be an object"),
        ({"partial_rotary_factor": 0.5}, "partial_rotary_factor=0.5"),
        ({"hidden_act": "gelu"}, "hidden_act 'gelu'"),
        ({"mlp_bias": True}, "mlp_bias=true"),
        ({"attention_bias": True}, "attention_bias=true on LlamaForCausalLM"),
    ],
)  # fmt: skip
def test_settings_we_do_not_compute_are_refused(
    tmp_path: Path, changes: dict[str, Any], match: str
) -> None:
    refused(write_config(tmp_path, **changes), match)


def test_qwen2_sliding_window_is_refused(tmp_path: Path) -> None:
    assert ModelConfig.from_hf(write_config(tmp_path, "qwen2")).attention_bias
    # the architecture follows model_type when `architectures` is missing
    assert ModelConfig.from_hf(write_config(tmp_path, "qwen2", architectures=None)).attention_bias
    path = write_config(tmp_path, "qwen2", use_sliding_window=True, sliding_window=16)
    refused(path, "sliding-window attention")
    path = write_config(tmp_path, "qwen2", layer_types=["full_attention", "sliding_attention"])
    refused(path, "sliding-window attention")


@pytest.mark.parametrize("rope", sorted(ROPES))
def test_our_checkpoints_round_trip_and_transformers_reads_them(tmp_path: Path, rope: str) -> None:
    """`save_checkpoint` writes the transformers 5 dialect: we read back the same config, and
    the reference reads the same RoPE settings from it."""
    path = write_config(tmp_path, rope_parameters=ROPES[rope])
    theta_and_scaling = ModelConfig.from_hf(path)
    cfg = TINY.model_copy(
        update={
            "rope_theta": theta_and_scaling.rope_theta,
            "rope_scaling": theta_and_scaling.rope_scaling,
            "max_position_embeddings": MAX_POS,
        }
    )
    save_checkpoint(random_model(cfg), cfg, tmp_path)
    assert ModelConfig.from_hf(path) == cfg
    expected = dict(ROPES[rope])
    if rope == "yarn":  # transformers fills in yarn's defaults on reading; we write only ours
        expected.update(beta_fast=32.0, beta_slow=1.0, truncate=True)
    assert transformers.AutoConfig.from_pretrained(tmp_path).rope_parameters == expected


def reference_frequencies(rope: dict[str, Any]) -> tuple[torch.Tensor, float]:
    config = transformers.LlamaConfig(
        hidden_size=64,
        num_attention_heads=4,
        head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POS,
        rope_parameters=dict(rope),
    )
    inv_freq, scale = ROPE_INIT_FUNCTIONS[rope["rope_type"]](config, torch.device("cpu"))
    return inv_freq, float(scale)


thetas = st.floats(100.0, 1e7)
factors = st.floats(1.0, 64.0)
lengths = st.integers(2, MAX_POS)
schedules = st.one_of(
    st.builds(LinearRope, factor=factors),
    st.builds(
        Llama3Rope,
        factor=factors,
        low_freq_factor=st.floats(0.5, 2.0),
        high_freq_factor=st.floats(2.5, 8.0),
        original_max_position_embeddings=lengths,
    ),
    st.builds(
        YarnRope,
        factor=factors,
        original_max_position_embeddings=lengths,
        attention_factor=st.none() | st.floats(0.5, 2.0),
        beta_fast=st.floats(8.0, 64.0),
        beta_slow=st.floats(0.5, 4.0),
        mscale=st.none() | st.floats(0.5, 2.0),
        mscale_all_dim=st.none() | st.floats(0.5, 2.0),
        truncate=st.booleans(),
    ),
)


@settings(max_examples=60, deadline=None)
@given(theta=thetas, scaling=schedules)
@example(
    100.0,
    Llama3Rope(
        factor=42.0,
        low_freq_factor=1.5828228897064145,
        high_freq_factor=2.5,
        original_max_position_embeddings=10,
    ),
)
@example(
    100.0,
    Llama3Rope(
        factor=64.0,
        low_freq_factor=1.75,
        high_freq_factor=2.5,
        original_max_position_embeddings=11,
    ),
)
def test_frequencies_match_the_reference(
    theta: float, scaling: LinearRope | Llama3Rope | YarnRope
) -> None:
    """Every schedule's inverse frequencies and cos/sin scale equal transformers' (computed in
    float32 there, float64 here) over the whole parameter space.

    To within the reference's own float32 error: Llama 3's smoothing weight
    s = (L / wavelength - low) / (high - low) cancels near the low band edge, and the result
    inv (1 - s) / f + inv s carries s's rounding times (f - 1), so up to about
    ulp x low / (high - low) x (f - 1), 1.5e-5 at low 2, high 2.5, f 64. Hypothesis found
    2.03e-6 in one CI run (theta 100, f 42, low 1.58, original length 10; the bound was
    2e-6), a grid over this space 6.8e-6 (f 64, low 1.75, length 11). A wrong band edge,
    smoothing or factor moves a frequency by a factor, not by ulps."""
    ours, our_scale = inverse_frequencies(HEAD_DIM, theta, scaling)
    ref, ref_scale = reference_frequencies(
        {"rope_theta": theta, **scaling.model_dump(exclude_none=True)}
    )
    torch.testing.assert_close(ours.float(), ref, rtol=5e-5, atol=0)
    assert our_scale == pytest.approx(ref_scale, rel=1e-12)
