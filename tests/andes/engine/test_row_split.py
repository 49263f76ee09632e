"""Row-split products (row_split.py): the same numbers as torch's own op, split only where
they are meant to be, and handed on in strides that BLAS takes as they are."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.andes.engine.api import QoESpec, SamplingParams
from kairos.andes.engine.config import SplitProducts
from kairos.andes.engine.cpu import row_split
from kairos.andes.engine.cpu.path_choice import PathChoice
from kairos.andes.engine.cpu.row_split import blocks_for, linear, linear_add

from .conftest import drive, hook_of, make_engine
from .test_correctness import prompts

QOE = QoESpec(ttft_s=1.0, tokens_per_s=5.0)


def _close(a: torch.Tensor, b: torch.Tensor, inp: int) -> None:
    # float32 dot products of `inp` terms summed in another order: a few ulps per term
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6 * inp)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, row_split.MAX_ROWS + 8),
    out_half=st.integers(1, 96),
    odd=st.booleans(),
    inp=st.integers(1, 160),
    bias=st.booleans(),
    threads=st.sampled_from([1, 2, 3]),
    seed=st.integers(0, 2**16),
)
def test_linear_and_linear_add_equal_torchs_ops(
    rows: int, out_half: int, odd: bool, inp: int, bias: bool, threads: int, seed: int
) -> None:
    """Split or not (rows past MAX_ROWS, an output size the blocks don't divide, one
    thread), the result is torch's own to float rounding, with canonical strides."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        g = torch.Generator().manual_seed(seed)
        out = 2 * out_half + odd
        x = torch.randn(rows, inp, generator=g)
        w = torch.randn(out, inp, generator=g)
        b = torch.randn(out, generator=g) if bias else None
        r = torch.randn(rows, out, generator=g)
        y = linear(x, w, b)
        _close(y, F.linear(x, w, b), inp)
        _close(linear_add(r, x, w), torch.addmm(r, x, w.t()), inp)
        assert y.is_contiguous() and y.stride() == (out, 1)
    finally:
        torch.set_num_threads(before)


@pytest.mark.usefixtures("two_threads")
def test_decode_sized_float32_products_split_over_the_threads() -> None:
    w = torch.randn(64, 8)
    assert blocks_for(torch.randn(1, 8), w) == 2
    assert blocks_for(torch.randn(row_split.MAX_ROWS, 8), w) == 2


@pytest.mark.usefixtures("two_threads")
@pytest.mark.parametrize(
    ("x", "w"),
    [
        (torch.randn(row_split.MAX_ROWS + 1, 8), torch.randn(64, 8)),  # prefill-sized
        (torch.randn(1, 8, dtype=torch.float64), torch.randn(64, 8, dtype=torch.float64)),
        (torch.randn(1, 8, dtype=torch.bfloat16), torch.randn(64, 8, dtype=torch.bfloat16)),
        (torch.randn(1, 8), torch.randn(63, 8)),  # 63 rows don't cut in 2 equal blocks
        (torch.randn(1, 8), torch.randn(8, 64).t()),  # a transposed (non-contiguous) weight
        (torch.randn(2, 1, 8), torch.randn(64, 8)),  # not a matrix of rows
    ],
)
def test_anything_else_takes_torchs_op(x: torch.Tensor, w: torch.Tensor) -> None:
    assert blocks_for(x, w) == 1
    torch.testing.assert_close(linear(x, w), F.linear(x, w))


def test_one_thread_takes_torchs_op() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert blocks_for(torch.randn(1, 8), torch.randn(64, 8)) == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.usefixtures("two_threads")
def test_a_row_with_a_degenerate_stride_is_read_as_a_row() -> None:
    """A one-row tensor counts as contiguous whatever its size-1 dimension's stride; one
    with strides (1, 1) (a transposed one-row output) must give the same product, and the
    output of a one-row product must carry canonical strides, not (1, 1)."""
    w = torch.randn(64, 16)
    column = torch.randn(16, 1)
    row = column.t()
    assert row.stride() == (1, 1) and row.is_contiguous()
    torch.testing.assert_close(linear(row, w), F.linear(row.clone(), w))
    y = linear(row, w)
    assert y.stride() == (64, 1)
    assert linear_add(torch.zeros(1, 64), row, w).stride() == (64, 1)


@pytest.mark.usefixtures("two_threads")
def test_the_engine_splits_by_its_setting_and_no_token_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """float32 on 2 threads: "off" never splits, "on" splits every decode iteration, and
    "measured", made to switch after every probe, moves between the two many times; the
    text is the same throughout."""
    splits = [0]
    real_split = row_split._split

    def counted(x: torch.Tensor, w: torch.Tensor, k: int) -> torch.Tensor:
        splits[0] += 1
        return real_split(x, w, k)

    monkeypatch.setattr(row_split, "_split", counted)
    ps = prompts(6, seed=23)
    params = [
        SamplingParams(max_tokens=n, temperature=0, ignore_eos=True) for n in range(20, 80, 10)
    ]

    def run(setting: SplitProducts, choice: PathChoice | None = None):  # type: ignore[no-untyped-def]
        engine = make_engine(dtype="float32", split_products=setting)
        if choice is not None:
            hook_of(engine).split_choice = choice
        splits[0] = 0
        return drive(engine, ps, params, QOE), hook_of(engine), splits[0]

    reference, off, n_off = run("off")
    assert n_off == 0 and off.split_iterations == 0 and off.split_choice is None
    tokens, on, n_on = run("on")
    assert tokens == reference
    assert on.split_iterations > 50 and n_on >= on.split_iterations
    choice = PathChoice(period=3, probe=2, first_after=1)
    choice.record = lambda candidate, seconds, rows: PathChoice.record(  # type: ignore[method-assign]
        choice, candidate, 1.0 if candidate == choice.on_candidate else 0.5, rows
    )  # the path not in use always measures faster: it switches after every probe
    tokens, measured, n_measured = run("measured", choice)
    assert tokens == reference
    assert choice.switches > 10
    assert 0 < measured.split_iterations < on.split_iterations
    assert 0 < n_measured < n_on
