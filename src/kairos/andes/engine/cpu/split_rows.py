"""Up to how many activation rows a product is faster split over the threads than packed.

The row split (row_split.py) and the prepacked product (packed.py) win at different sizes:
on the machine measured, split read the decode weights at 4.6 GB/s and packed at 8.1 at 16
rows, while a lone request (one row) ran 1.13x faster split (docs/andes.md, "Prepacked
products"). Which one a decode iteration uses was one measured choice for the whole
iteration (path_choice.py), so a batch of 16 either split every product, the slower way at
that size, or none, the slower way once the batch had drained to a few rows. Measured once
when the engine is built, the crossover lets each product pick by its own row count: split
up to `split_rows` rows, packed above. The iteration's choice still decides whether products
at or below it split at all, so a machine where splitting stops paying later (other
processes on the cores) is still followed.

The measurement times one layer's products and the vocabulary projection (the decode step's
weights in miniature) both ways at 1, 2, 4, ... rows, the best of a few runs each, and stops
at the first row count where packed is as fast: a few hundred milliseconds on a 56M-parameter
model, milliseconds on the built-in one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch

from kairos.andes.engine.cpu.packed import PackedWeights, packed_linear
from kairos.andes.engine.cpu.row_split import MAX_ROWS
from kairos.andes.engine.cpu.row_split import linear as split_linear
from kairos.andes.engine.model import DecoderLayer, LlamaForCausalLM

ROW_COUNTS = (1, 2, 4, 8, 16, 32, 64)
REPS = 3


def sample_weights(model: LlamaForCausalLM, packed: PackedWeights) -> list[torch.Tensor]:
    """One layer's product weights and the vocabulary projection's, as the model passes them
    (so each finds its packed layout)."""
    layer = model.model.layers[0]
    assert isinstance(layer, DecoderLayer)
    attn, mlp = layer.self_attn, layer.mlp
    ws = [attn._qkv[0]] if attn._qkv is not None else [attn.q_proj.weight]
    ws.append(attn.o_proj.weight)
    ws.append(mlp._gate_up if mlp._gate_up is not None else mlp.gate_proj.weight)
    ws += [mlp.down_proj.weight, model.lm_head.weight]
    return [w for w in ws if packed.get(w) is not None]


def best_seconds(run: Callable[[], object], reps: int) -> float:
    """The fastest of `reps` timed calls, after one untimed call (first calls set up
    kernels and touch pages)."""
    run()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def measure_split_rows(
    packed: PackedWeights,
    weights: Sequence[torch.Tensor],
    row_counts: Sequence[int] = ROW_COUNTS,
    reps: int = REPS,
) -> int:
    """The largest row count up to which splitting beat the packed product at every row count
    tried (0: packed won at one row already). With fewer than 2 intra-op threads nothing
    splits, so 0."""
    if torch.get_num_threads() < 2 or not weights:
        return 0
    found = 0
    with torch.inference_mode():
        for rows in row_counts:
            if rows > MAX_ROWS:
                break
            xs = [torch.randn(rows, w.shape[1]) for w in weights]

            def split_all(xs: list[torch.Tensor] = xs) -> None:
                for x, w in zip(xs, weights, strict=True):
                    split_linear(x, w)

            def packed_all(xs: list[torch.Tensor] = xs) -> None:
                for x, w in zip(xs, weights, strict=True):
                    packed_linear(packed, x, w)

            if best_seconds(split_all, reps) >= best_seconds(packed_all, reps):
                break
            found = rows
    return found
