"""Model and engine configuration.

`ModelConfig` holds the few numbers that define a Llama-architecture decoder (Qwen2 is the
same shape plus biases on the q/k/v projections); `from_hf` reads them from a Hugging Face
`config.json` of either transformers dialect (see rope.py), and refuses by name what this
decoder does not compute (another architecture, a RoPE schedule, sliding windows, other
activations), since a checkpoint that loads with a setting ignored generates wrong text
without any error. `EngineConfig` is what a deployment chooses: which model, how much KV cache,
which policy, which latency profile.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator

from kairos.andes.engine.rope import RopeScaling, hf_rope_parameters, read_hf_rope

# row_split.py on, off, or chosen per decode iteration by measured speed (path_choice.py)
SplitProducts = Literal["measured", "on", "off"]

SUPPORTED_ARCHITECTURES = ("LlamaForCausalLM", "Qwen2ForCausalLM")


class ModelConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    vocab_size: PositiveInt
    hidden_size: PositiveInt
    intermediate_size: PositiveInt
    num_hidden_layers: PositiveInt
    num_attention_heads: PositiveInt
    num_key_value_heads: PositiveInt
    head_dim: PositiveInt
    max_position_embeddings: PositiveInt = 4096
    rms_norm_eps: float = Field(1e-6, gt=0)
    rope_theta: float = Field(10000.0, gt=0)
    rope_scaling: RopeScaling | None = None  # None: plain RoPE ("default")
    tie_word_embeddings: bool = False
    attention_bias: bool = False  # Qwen2: bias on q, k and v
    bos_token_id: int | None = None
    eos_token_id: int | None = None

    @model_validator(mode="after")
    def _heads(self) -> ModelConfig:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads={self.num_attention_heads} is not a multiple of "
                f"num_key_value_heads={self.num_key_value_heads}"
            )
        return self

    @classmethod
    def from_hf(cls, path: str | Path) -> ModelConfig:
        """Read a Hugging Face `config.json` of the Llama or Qwen2 family (transformers 4 or 5)."""
        raw: dict[str, Any] = json.loads(Path(path).read_text())
        by_type = "Qwen2ForCausalLM" if raw.get("model_type") == "qwen2" else "LlamaForCausalLM"
        arch = (raw.get("architectures") or [by_type])[0]
        if arch not in SUPPORTED_ARCHITECTURES:
            raise ValueError(
                f"{path}: architecture {arch!r} is not supported; "
                f"choose one of {SUPPORTED_ARCHITECTURES}"
            )
        _refuse_unsupported(raw, path, arch)
        heads = int(raw["num_attention_heads"])
        max_positions = raw.get("max_position_embeddings", 4096)
        theta, scaling = read_hf_rope(raw, path, max_positions)
        eos = raw.get("eos_token_id")
        if isinstance(eos, list):
            eos = eos[0] if eos else None
        return cls(
            vocab_size=raw["vocab_size"],
            hidden_size=raw["hidden_size"],
            intermediate_size=raw["intermediate_size"],
            num_hidden_layers=raw["num_hidden_layers"],
            num_attention_heads=heads,
            num_key_value_heads=raw.get("num_key_value_heads") or heads,
            head_dim=raw.get("head_dim") or raw["hidden_size"] // heads,
            max_position_embeddings=max_positions,
            rms_norm_eps=raw.get("rms_norm_eps", 1e-6),
            rope_theta=theta,
            rope_scaling=scaling,
            tie_word_embeddings=raw.get("tie_word_embeddings", False),
            attention_bias=arch == "Qwen2ForCausalLM",
            bos_token_id=raw.get("bos_token_id"),
            eos_token_id=eos,
        )

    def to_hf(self) -> dict[str, Any]:
        """This config as a transformers 5 `config.json` (what `from_hf` reads back equal)."""
        qwen = self.attention_bias
        hf = self.model_dump(exclude={"attention_bias", "rope_theta", "rope_scaling"})
        hf.update(
            architectures=["Qwen2ForCausalLM" if qwen else "LlamaForCausalLM"],
            model_type="qwen2" if qwen else "llama",
            rope_parameters=hf_rope_parameters(self.rope_theta, self.rope_scaling),
        )
        return hf


def _refuse_unsupported(raw: dict[str, Any], path: str | Path, arch: str) -> None:
    """Settings that change the computation and that this decoder does not implement."""
    act = raw.get("hidden_act", "silu")
    if act != "silu":
        raise ValueError(f"{path}: hidden_act {act!r} is not supported (SwiGLU uses 'silu')")
    if raw.get("mlp_bias"):
        raise ValueError(f"{path}: mlp_bias=true is not supported (no biases in the MLP)")
    if arch == "LlamaForCausalLM" and raw.get("attention_bias"):
        raise ValueError(
            f"{path}: attention_bias=true on LlamaForCausalLM (biases on q, k, v and o) is not "
            "supported; only Qwen2's q/k/v biases are"
        )
    layer_types = raw.get("layer_types") or []
    if raw.get("use_sliding_window") or any(t != "full_attention" for t in layer_types):
        raise ValueError(
            f"{path}: sliding-window attention (use_sliding_window / layer_types) is not "
            "supported; every layer attends to the full context here"
        )


# The built-in random-weight model: small enough to serve on two CPU cores, the same
# architecture as Llama; tests and benchmarks that want speed or randomness serve it.
# Vocabulary: 256 bytes plus <bos>, <eos>, <pad> (see tokenizer.ByteTokenizer).
BUILTIN_MODEL = ModelConfig(
    vocab_size=259,
    hidden_size=256,
    intermediate_size=688,
    num_hidden_layers=4,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=32,
    max_position_embeddings=4096,
    bos_token_id=256,
    eos_token_id=257,
)
BUILTIN_RANDOM_NAME = "kairos-tiny-llama-random"

# The built-in trained model (builtin_training.py): the same vocabulary, a shape that two CPU
# cores train to recognisable words in about two minutes. `kairos serve` serves it by default.
BUILTIN_TRAINED_MODEL = ModelConfig(
    vocab_size=259,
    hidden_size=128,
    intermediate_size=352,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    max_position_embeddings=4096,
    bos_token_id=256,
    eos_token_id=257,
)
BUILTIN_NAME = "kairos-tiny-llama"


class EngineConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = None  # a Hugging Face checkpoint directory; None = the random built-in
    model_name: str | None = None  # the name clients use; defaults to the directory name
    seed: int = 0  # the built-in model's weights and unseeded sampling
    device: str = "auto"  # "auto" = cuda when present, else cpu
    dtype: Literal["auto", "float32", "bfloat16", "float16", "float64"] = "auto"
    block_size: PositiveInt = 16
    num_gpu_blocks: PositiveInt = 1024  # KV cache on the device
    num_cpu_blocks: int = Field(512, ge=0)  # host swap pool
    max_model_len: PositiveInt = 2048
    policy: str = "andes"
    policy_options: dict[str, Any] = Field(default_factory=dict)
    profile: str | None = None  # fitted profile JSON; None = calibrate at startup
    max_num_seqs: PositiveInt = 64
    max_num_batched_tokens: PositiveInt = 4096
    chunk_size: PositiveInt = 256
    # keep the decode batch's gathered contexts between iterations (attention.py, "Staging");
    # None: on for CPU, where memory is plentiful and the per-layer gather is the cost
    stage_decodes: bool | None = None
    # decode lanes (lanes.py): decode-only iterations split over this many threads of one
    # intra-op thread each, on a CPU; 0 or 1: none. Off by default: with one OpenMP team in
    # the process one pass runs faster than two lanes, and lanes lose more with a core taken
    # by other processes (docs/andes.md, "Decode lanes")
    decode_lanes: int = Field(0, ge=0)
    # lanes or one pass per iteration by measured speed (path_choice.py); False: always lanes
    adaptive_lanes: bool = True
    # decode-sized products split by weight rows over the intra-op threads on a CPU
    # (row_split.py): "measured" picks split or one GEMM per decode iteration by measured
    # speed (path_choice.py); "on" or "off" fixes it
    split_products: SplitProducts = "measured"
    # activation rows up to which a product splits rather than taking its packed layout;
    # None: measured when the engine is built (split_rows.py), where both apply
    split_rows: int | None = Field(None, ge=0, le=64)
    # the products' weights laid out once for oneDNN on a CPU (packed.py), for every product
    # not split; the weights' memory doubles
    packed_products: bool = True
    # every intra-op thread or one per decode iteration on a CPU, by measured speed
    # (path_choice.py): two threads on cores other processes hold ran 6.5x slower than one
    adaptive_threads: bool = True

    @model_validator(mode="after")
    def _fits(self) -> EngineConfig:
        if self.max_model_len > self.num_gpu_blocks * self.block_size:
            raise ValueError(
                f"max_model_len={self.max_model_len} exceeds the KV cache "
                f"({self.num_gpu_blocks} blocks x {self.block_size} tokens)"
            )
        return self
