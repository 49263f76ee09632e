"""Every intra-op thread or one, by measured speed: the engine's text is the same either way,
a slower every-thread path moves decode to one thread (and the split products' choice waits
meanwhile), and the probes of a path that keeps losing back off."""

from __future__ import annotations

import pytest
import torch

from kairos.andes.engine.api import QoESpec, SamplingParams
from kairos.andes.engine.cpu.hook import CpuHook
from kairos.andes.engine.cpu.path_choice import PathChoice

from .conftest import drive, hook_of, make_engine
from .test_correctness import prompts

QOE = QoESpec(ttft_s=1.0, tokens_per_s=5.0)
PS = prompts(6, seed=29)
PARAMS = [SamplingParams(max_tokens=n, temperature=0, ignore_eos=True) for n in range(30, 90, 10)]


def timed_as(choice: PathChoice, seconds_per_row: dict[bool, float]) -> None:
    """Make `choice` see each path take `seconds_per_row[path]`, whatever it really took."""
    choice.record = lambda candidate, seconds, rows: PathChoice.record(  # type: ignore[method-assign]
        choice, candidate, seconds_per_row[candidate] * rows, rows
    )


def threads_seen(hook: CpuHook, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The intra-op thread count inside each whole forward pass the hook runs."""
    seen: list[int] = []
    whole = hook._whole

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(torch.get_num_threads())
        return whole(*args, **kwargs)

    monkeypatch.setattr(hook, "_whole", counted)
    return seen


@pytest.mark.usefixtures("two_threads")
def test_switching_the_thread_count_changes_no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    reference = drive(make_engine(dtype="float32"), PS, PARAMS, QOE)
    engine = make_engine(dtype="float32", adaptive_threads=True)
    hook = hook_of(engine)
    choice = PathChoice(period=3, probe=2, first_after=1)
    choice.record = lambda candidate, seconds, rows: PathChoice.record(  # type: ignore[method-assign]
        choice, candidate, 1.0 if candidate == choice.on_candidate else 0.5, rows
    )  # the path not in use always measures faster: it switches after every probe
    hook.thread_choice = choice
    seen = threads_seen(hook, monkeypatch)
    assert drive(engine, PS, PARAMS, QOE) == reference
    assert choice.switches > 10
    assert set(seen) == {1, 2} and seen.count(1) == hook.one_thread_iterations
    assert torch.get_num_threads() == 2  # the engine's thread keeps its own count


@pytest.mark.usefixtures("two_threads")
def test_a_slower_every_thread_path_moves_decode_to_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two threads measured 6.5x slower (as on a core another process holds): after the
    first probe the engine decodes on one thread, probes two ever more rarely, and the split
    products' choice is not timed while it does."""
    engine = make_engine(dtype="float32", adaptive_threads=True, split_products="measured")
    hook = hook_of(engine)
    choice = PathChoice(period=4, probe=2, first_after=1, max_period=32)
    timed_as(choice, {True: 6.5, False: 1.0})
    hook.thread_choice = choice
    split = hook.split_choice
    assert split is not None
    split_timed: list[bool] = []
    real_record = split.record

    def record(candidate: bool, seconds: float, rows: int) -> None:
        split_timed.append(candidate)
        real_record(candidate, seconds, rows)

    split.record = record  # type: ignore[method-assign]
    seen = threads_seen(hook, monkeypatch)
    drive(engine, PS, PARAMS, QOE)
    assert not choice.on_candidate and choice.switches == 1
    assert choice.period == 32  # every later probe of two threads lost: backed off to the cap
    ones = seen.count(1)
    assert ones == hook.one_thread_iterations and ones > 0.8 * len(seen)
    # only the few decode iterations before the switch timed the split
    assert len(split_timed) <= 2


def test_probes_back_off_while_they_lose_and_reset_on_a_switch() -> None:
    choice = PathChoice(period=4, probe=2, first_after=4, max_period=16)
    timed_as(choice, {True: 1.0, False: 2.0})  # the current path stays faster
    periods = []
    for _ in range(120):
        path = choice.now()
        choice.record(path, 1.0, 1)
        periods.append(choice.period)
    assert sorted(set(periods)) == [4, 8, 16]
    assert choice.switches == 0
    timed_as(choice, {True: 2.0, False: 1.0})  # the machine changed: the other path wins
    for _ in range(20):
        path = choice.now()
        choice.record(path, 1.0, 1)
        if choice.switches:
            break
    assert choice.switches == 1 and choice.period == 4 and not choice.on_candidate
