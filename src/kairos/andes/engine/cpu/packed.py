"""Matrix products against weights prepacked for oneDNN, on a CPU.

Why. torch's `linear` on the CPU wheel we pin hands a float32 product to MKL's sgemm, which
at decode sizes (one row per sequence) reads the weight far below the machine's streaming
rate. oneDNN, which the same wheel carries, can lay a weight out once, ahead of time
(`mkldnn._reorder_linear_weight`), and multiply against that layout from then on
(`mkldnn._linear_pointwise`). `bench_engine` measures both: the decode products' read rates
(plain, split, packed) in its roofline, and the engine with and without packing side by side
("ours, products not packed"); docs/andes.md, "Prepacked products", has the numbers.

How. `PackedWeights` packs each given weight once, when the engine is built (the weights are
final by then, as `LlamaForCausalLM.fuse` also requires), and keeps the layout beside the
original, which the row split, the state dict and the GPU path keep using: the weights'
memory doubles on a CPU engine. `cpu_products` is the model's `Products` on a CPU: a product
the row split takes (`row_split.blocks_for`) is split, any other product of a packed weight
goes through its packed layout, and the rest through `linear`. Each output is still the dot
product of a weight row with an activation row, so results agree with `linear` to float
rounding.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.nn.functional as F

from kairos.andes.engine.cpu.row_split import MAX_ROWS, blocks_for
from kairos.andes.engine.cpu.row_split import linear as split_linear
from kairos.andes.engine.cpu.row_split import linear_add as split_linear_add
from kairos.andes.engine.model import DecoderLayer, LlamaForCausalLM, Products

ROWS_HINT = 16  # the row count oneDNN is told to lay the weights out for (a decode batch)


def available() -> bool:
    return torch.backends.mkldnn.is_available()


class PackedWeights:
    """Weights laid out for oneDNN once, looked up by the tensor the model passes."""

    def __init__(self, weights: Iterable[torch.Tensor]) -> None:
        self._packed: dict[tuple[int, tuple[int, ...]], torch.Tensor] = {}
        with torch.inference_mode():
            for w in weights:
                if w.device.type == "cpu" and w.dtype == torch.float32 and w.dim() == 2:
                    key = (w.data_ptr(), tuple(w.shape))
                    self._packed[key] = torch.ops.mkldnn._reorder_linear_weight(
                        w.detach().contiguous(), ROWS_HINT
                    )

    def __len__(self) -> int:
        return len(self._packed)

    def get(self, weight: torch.Tensor) -> torch.Tensor | None:
        return self._packed.get((weight.data_ptr(), tuple(weight.shape)))


def model_weights(model: LlamaForCausalLM) -> list[torch.Tensor]:
    """The weights the model's products take, as it passes them (fused where fused)."""
    out: list[torch.Tensor] = []
    for layer in model.model.layers:
        assert isinstance(layer, DecoderLayer)
        attn, mlp = layer.self_attn, layer.mlp
        if attn._qkv is not None:
            out.append(attn._qkv[0])
        else:
            out += [attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight]
        out.append(attn.o_proj.weight)
        if mlp._gate_up is not None:
            out.append(mlp._gate_up)
        else:
            out += [mlp.gate_proj.weight, mlp.up_proj.weight]
        out.append(mlp.down_proj.weight)
    out.append(model.lm_head.weight)
    return out


def _packed_for(
    weights: PackedWeights | None, x: torch.Tensor, weight: torch.Tensor
) -> torch.Tensor | None:
    """The weight's packed layout when it has one and `x` can use it (float32 on the CPU)."""
    packed = weights.get(weight) if weights is not None else None
    return packed if x.dtype == torch.float32 and x.device.type == "cpu" else None


def packed_linear(
    weights: PackedWeights | None,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """`F.linear(x, weight, bias)` through the weight's packed layout where it has one."""
    packed = _packed_for(weights, x, weight)
    if packed is None:
        return F.linear(x, weight, bias)
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def cpu_products(
    weights: PackedWeights | None, split: bool = True, split_rows: int = MAX_ROWS
) -> Products:
    """Split where the row split applies (`split`) and the product has at most `split_rows`
    activation rows (split_rows.py measures the crossover with packing), else packed where
    packed, else `linear`."""

    def splits(x: torch.Tensor, weight: torch.Tensor) -> bool:
        return split and x.shape[0] <= split_rows and blocks_for(x, weight) >= 2

    def linear(
        x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        if splits(x, weight):
            return split_linear(x, weight, bias)
        return packed_linear(weights, x, weight, bias)

    def linear_add(residual: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if splits(x, weight):
            return split_linear_add(residual, x, weight)
        packed = _packed_for(weights, x, weight)
        if packed is None:
            return torch.addmm(residual, x, weight.t())
        y = torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
        return y.add_(residual)

    return Products(linear, linear_add)
