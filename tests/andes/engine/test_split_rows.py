"""The row split's crossover with packed products (split_rows.py): a product splits up to
`split_rows` activation rows and takes its packed layout above, and the crossover measured
is where splitting stopped being faster."""

from __future__ import annotations

import time

import pytest
import torch
import torch.nn.functional as F

from kairos.andes.engine.cpu import packed, split_rows
from kairos.andes.engine.cpu.packed import PackedWeights, cpu_products
from kairos.andes.engine.cpu.split_rows import measure_split_rows

from .conftest import hook_of, make_engine

pytestmark = [
    pytest.mark.skipif(not packed.available(), reason="this torch has no oneDNN"),
    pytest.mark.usefixtures("two_threads"),
]


def test_products_split_up_to_the_crossover_and_are_packed_above(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    split_calls: list[int] = []
    real = packed.split_linear

    def counted(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
        split_calls.append(x.shape[0])
        return real(x, w, b)

    monkeypatch.setattr(packed, "split_linear", counted)
    w = torch.randn(64, 48)
    products = cpu_products(PackedWeights([w]), split=True, split_rows=4)
    with torch.inference_mode():
        for rows in (1, 4, 5, 16):
            x = torch.randn(rows, 48)
            torch.testing.assert_close(products.linear(x, w), F.linear(x, w), rtol=1e-5, atol=1e-4)
    assert split_calls == [1, 4]


def _timed(slow_from: int, fast_s: float, slow_until: int = 10**6) -> object:
    """A stand-in product that takes 5 ms from `slow_from` activation rows up to (not
    including) `slow_until`, and `fast_s` elsewhere: no real arithmetic, so the machine's
    load cannot decide the test."""

    def product(*args: object) -> None:
        x = next(a for a in args if isinstance(a, torch.Tensor))
        time.sleep(0.005 if slow_from <= x.shape[0] < slow_until else fast_s)

    return product


@pytest.mark.parametrize(
    ("split_slow_from", "packed_slow_from", "want"),
    [
        (1000, 1, 64),  # packed slower everywhere: split up to the largest count tried
        (1, 1000, 0),  # split slower everywhere: never split
        (8, 1000, 4),  # split slower from 8 rows: the crossover is 4
    ],
)
def test_the_measured_crossover_is_where_splitting_stops_paying(
    monkeypatch: pytest.MonkeyPatch, split_slow_from: int, packed_slow_from: int, want: int
) -> None:
    ws = [torch.randn(64, 32), torch.randn(32, 64)]
    monkeypatch.setattr(split_rows, "split_linear", _timed(split_slow_from, 0.0003))
    monkeypatch.setattr(split_rows, "packed_linear", _timed(packed_slow_from, 0.0015))
    assert measure_split_rows(PackedWeights(ws), ws) == want


def test_the_search_stops_at_the_first_row_count_where_splitting_loses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Split slower at 2 rows only: the crossover is 1, not a larger count where it wins
    again (a split past a loss is not one the measurement vouches for)."""
    ws = [torch.randn(64, 32), torch.randn(32, 64)]
    monkeypatch.setattr(split_rows, "split_linear", _timed(2, 0.0003, slow_until=3))
    monkeypatch.setattr(split_rows, "packed_linear", _timed(1000, 0.0015))
    assert measure_split_rows(PackedWeights(ws), ws) == 1


def test_an_engine_measures_its_crossover_unless_told_and_never_splits_at_zero() -> None:
    measured = hook_of(make_engine(dtype="float32", split_rows=None))
    assert measured.split_rows in split_rows.ROW_COUNTS  # at least 1 when measured
    never = hook_of(make_engine(dtype="float32", split_rows=0))
    assert never.split_rows == 0 and never.split_choice is None and not never.split_fixed
