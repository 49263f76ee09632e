"""Products against weights prepacked for oneDNN (packed.py): torch's numbers to float
rounding, every product of a float32 CPU engine packed or split, and the same greedy tokens
with packing on and off."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.andes.engine.api import SamplingParams
from kairos.andes.engine.config import SplitProducts
from kairos.andes.engine.cpu import packed
from kairos.andes.engine.cpu.packed import PackedWeights, cpu_products

from .conftest import drive, make_engine
from .test_correctness import prompts

pytestmark = pytest.mark.skipif(not packed.available(), reason="this torch has no oneDNN")


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 80),
    out=st.integers(1, 150),
    inp=st.integers(1, 150),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_packed_products_equal_torchs_ops(
    rows: int, out: int, inp: int, bias: bool, seed: int
) -> None:
    g = torch.Generator().manual_seed(seed)
    x, w = torch.randn(rows, inp, generator=g), torch.randn(out, inp, generator=g)
    b = torch.randn(out, generator=g) if bias else None
    r = torch.randn(rows, out, generator=g)
    products = cpu_products(PackedWeights([w]), split=False)
    with torch.inference_mode():
        y = products.linear(x, w, b)
        torch.testing.assert_close(y, F.linear(x, w, b), rtol=1e-5, atol=1e-6 * inp)
        added = products.linear_add(r, x, w)
        torch.testing.assert_close(added, torch.addmm(r, x, w.t()), rtol=1e-5, atol=1e-6 * inp)


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Whether each product's weight had a packed layout, as the model asked."""
    found: list[bool] = []
    get = PackedWeights.get

    def spy(self: PackedWeights, weight: torch.Tensor) -> torch.Tensor | None:
        hit = get(self, weight)
        found.append(hit is not None)
        return hit

    monkeypatch.setattr(PackedWeights, "get", spy)
    yield found


def test_every_product_of_a_float32_engine_is_packed(lookups: list[bool]) -> None:
    """With the row split off, each product of prefill and decode (the fused q|k|v and
    gate|up, o, down, the vocabulary projection) finds its packed layout."""
    engine = make_engine(dtype="float32", split_products="off")
    drive(engine, prompts(3), [SamplingParams(max_tokens=4, temperature=0)] * 3)
    assert lookups and all(lookups), f"{lookups.count(False)} of {len(lookups)} unpacked"


def test_greedy_tokens_are_the_same_packed_or_not() -> None:
    ps = prompts(5, seed=4)
    params = [SamplingParams(max_tokens=12, temperature=0, ignore_eos=True)] * len(ps)
    settings: list[tuple[SplitProducts, bool]] = [("off", True), ("off", False), ("measured", True)]
    runs = [
        drive(make_engine(dtype="float32", split_products=split, packed_products=pack), ps, params)
        for split, pack in settings
    ]
    assert runs[0] == runs[1] == runs[2]
