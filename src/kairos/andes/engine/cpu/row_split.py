"""Decode-sized matrix products on a CPU, split by weight rows over the intra-op threads.

Why. A decode step multiplies a few activation rows (one per sequence) by every weight
matrix: the step is a stream of weight reads, and its speed is how fast the cores read the
weights. torch sends `linear(x, W)` with a skinny `x` to one BLAS GEMM, and on the CPU wheel
we pin (MKL sgemm) that GEMM neither reads a large weight fast nor threads a skinny product.
The same product as a batch of k independent row blocks (`bmm` of W viewed `[k, out/k, in]`
against the rows) runs each block as its own product, the blocks spread over the threads,
faster on the machine measured (the "ours, one GEMM per product" row of
`benchmarks/bench_engine.py` is the engine without it). This is how llama.cpp and other CPU
inference engines run decode, each thread owning a slice of the weight's rows. Each output
is still one dot product of a weight row with an activation row, summed by another kernel,
so results agree with `linear` to float rounding.

Where. On CPU tensors in float32, with at least 2 intra-op threads, for at most `MAX_ROWS`
activation rows (decode batches and the vocabulary projection of any iteration; prefill's
long inputs thread well in one GEMM and keep it), when the output size divides into the
blocks. Anything else takes the plain op. The gain is a property of the BLAS and the CPU
(measured on an AMD EPYC; an MKL that threads skinny products well would gain nothing), so
the engine's runner hook (hook.py) measures both ways and keeps the faster (path_choice.py),
switching this thread's splitting with `splitting`. Measured gains: docs/andes.md, the
operating point's target 6.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

MAX_ROWS = 64  # activation rows up to which a product is split

_here = threading.local()  # per thread: a runner's choice holds on its own thread only


@contextmanager
def splitting(on: bool) -> Iterator[None]:
    """Products on this thread split (where `blocks_for` allows) or not, for the block."""
    before = getattr(_here, "on", True)
    _here.on = on
    try:
        yield
    finally:
        _here.on = before


def blocks_for(x: torch.Tensor, weight: torch.Tensor) -> int:
    """How many row blocks to split this product into; below 2, don't split."""
    if (
        not getattr(_here, "on", True)
        or x.device.type != "cpu"
        or x.dtype != torch.float32
        or x.dim() != 2
        or x.shape[0] > MAX_ROWS
        or weight.dim() != 2
        or not weight.is_contiguous()
    ):
        return 1
    k = torch.get_num_threads()  # a block per thread: 2 per thread measured the same
    return k if k >= 2 and weight.shape[0] % k == 0 else 1


def _split(x: torch.Tensor, weight: torch.Tensor, k: int) -> torch.Tensor:
    out, inp = weight.shape
    rows = x.shape[0]
    # The product's operands in the strides BLAS takes as they are. A one-row tensor counts
    # as contiguous whatever the stride of its size-1 dimension (a one-row output of this
    # very function, transposed, has strides (1, 1)); handed such a row, bmm took a slow
    # path, 0.63 ms instead of 0.06 for the anchor model's gate|up product. Flattening
    # first gives the row its canonical strides.
    xt = x.reshape(-1).view(rows, inp).t().unsqueeze(0).expand(k, inp, rows)
    y = torch.bmm(weight.view(k, out // k, inp), xt)  # [k, out / k, rows]
    return y.view(1, out) if rows == 1 else y.view(out, rows).t().contiguous()


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """`F.linear(x, weight, bias)`."""
    k = blocks_for(x, weight)
    if k < 2:
        return F.linear(x, weight, bias)
    y = _split(x, weight, k)
    return y if bias is None else y.add_(bias)


def project(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """`layer(x)`, split where `blocks_for` allows."""
    return linear(x, layer.weight, layer.bias)


def linear_add(residual: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """`residual + F.linear(x, weight)`: the residual add riding on the product."""
    k = blocks_for(x, weight)
    if k < 2:
        return torch.addmm(residual, x, weight.t())
    return _split(x, weight, k).add_(residual)
