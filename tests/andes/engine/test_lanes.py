"""Decode lanes (lanes.py): a decode batch split over threads of one intra-op thread each
computes the tokens the whole batch computes, and the lanes really are separate threads."""

from __future__ import annotations

import threading

import pytest
import torch

from kairos.andes.engine.api import QoESpec, SamplingParams
from kairos.andes.engine.cpu.lanes import DecodeLanes
from kairos.andes.engine.cpu.path_choice import PathChoice

from .conftest import drive, hook_of, make_engine
from .test_correctness import prompts

QOE = QoESpec(ttft_s=1.0, tokens_per_s=5.0)


@pytest.mark.parametrize(
    ("policy", "blocks", "stage", "lanes"),
    [
        ("fcfs", 128, True, 2),
        ("fcfs", 128, False, 2),
        ("fcfs", 128, True, 3),
        ("fcfs", 14, True, 2),  # preempted by recompute and resumed
        ("andes", 14, True, 2),  # swapped out and in
    ],
)
def test_lanes_change_no_token(policy: str, blocks: int, stage: bool, lanes: int) -> None:
    """Requests finish at different lengths (the lanes rebalance), join, and are preempted;
    the text equals the one-pass engine's, and most decode iterations ran on the lanes."""
    ps = prompts(10, seed=17)
    params = [
        SamplingParams(max_tokens=n, temperature=0, ignore_eos=True) for n in range(15, 115, 10)
    ]

    def engine(n: int):  # type: ignore[no-untyped-def]
        return make_engine(
            blocks=blocks,
            policy=policy,
            max_model_len=224,
            stage_decodes=stage,
            decode_lanes=n,
            adaptive_lanes=False,  # every eligible iteration on the lanes
        )

    whole = engine(0)
    reference = drive(whole, ps, params, QOE)
    split = engine(lanes)
    assert drive(split, ps, params, QOE) == reference
    assert [len(t) for t in reference] == [p.max_tokens for p in params]
    assert hook_of(whole).lane_iterations == 0
    # decode iterations with at least 2 rows per lane run split: from 10 rows down to 2*lanes
    assert hook_of(split).lane_iterations > 40
    if stage:  # each lane reuses its own staged contexts
        counts = hook_of(split).stage_counts
        assert counts["reuse"] > 2 * counts["fill"] > 0


def test_switching_between_lanes_and_one_pass_changes_no_token() -> None:
    """A choice that probes every few iterations moves the decode batch between the lanes'
    staged contexts and the one-pass path's many times; the text stays the one-pass text."""
    ps = prompts(8, seed=19)
    params = [
        SamplingParams(max_tokens=n, temperature=0, ignore_eos=True) for n in range(30, 110, 10)
    ]
    reference = drive(make_engine(decode_lanes=0), ps, params, QOE)
    engine = make_engine(decode_lanes=2, max_model_len=224)
    choice = PathChoice(period=3, probe=2, first_after=1)
    choice.record = lambda candidate, seconds, rows: PathChoice.record(  # type: ignore[method-assign]
        choice, candidate, 1.0 if candidate == choice.on_candidate else 0.5, rows
    )  # the path not in use always measures faster: it switches after every probe
    hook_of(engine).lane_choice = choice
    assert drive(engine, ps, params, QOE) == reference
    assert choice.switches > 10
    assert hook_of(engine).lane_iterations > 10


def test_path_choice_keeps_the_faster_path_and_probes_the_other() -> None:
    choice = PathChoice(period=10, probe=3, first_after=2)
    speed = {True: 2.0, False: 1.0}  # seconds per row: one pass is faster
    paths = []
    for _ in range(60):
        lanes = choice.now()
        paths.append(lanes)
        choice.record(lanes, speed[lanes] * 4, 4)
    assert paths[:2] == [True, True]  # starts on the lanes
    assert paths[2:5] == [False] * 3  # an early probe of one pass ...
    assert not choice.on_candidate and choice.switches == 1  # ... which is faster: switched
    assert paths[5:15] == [False] * 10
    assert paths[15:18] == [True] * 3  # a probe of the lanes every `period` iterations
    assert paths[18:28] == [False] * 10  # which stay slower: no switch
    assert choice.switches == 1
    speed = {True: 0.5, False: 1.0}  # the machine changed: now the lanes are faster
    for _ in range(30):
        lanes = choice.now()
        choice.record(lanes, speed[lanes] * 4, 4)
    assert choice.on_candidate and choice.switches == 2
    # a probe's first iteration regathers: its time is left out of the comparison
    choice = PathChoice(period=10, probe=3, first_after=1)
    choice.record(choice.now(), 4.0, 4)  # lanes: 1 s per row
    for t in (100.0, 0.5, 0.5):  # one pass: a slow regather, then faster
        assert not choice.now()
        choice.record(False, t * 4, 4)
    assert not choice.on_candidate
    with pytest.raises(ValueError):
        PathChoice(probe=1)


def test_sampled_text_is_unchanged_by_lanes() -> None:
    """Sampling stays on the caller's thread in the batch's order: seeded and unseeded
    (the engine's shared generator) requests draw what they draw without lanes."""
    ps = prompts(6, seed=3)
    params = [
        SamplingParams(max_tokens=30, temperature=1.0, top_p=0.9, seed=s if s % 2 else None)
        for s in range(6)
    ]
    whole = drive(make_engine(decode_lanes=0), ps, params, QOE)
    split_engine = make_engine(decode_lanes=2, adaptive_lanes=False)
    assert drive(split_engine, ps, params, QOE) == whole
    assert hook_of(split_engine).lane_iterations > 0


def test_lane_threads_run_at_once_with_one_intra_op_thread_each() -> None:
    """Both tasks wait on one barrier, so they finish only if they run concurrently; each
    sees one intra-op thread, while the caller and threads started later keep the default."""
    default = torch.get_num_threads()
    lanes = DecodeLanes(2)
    barrier = threading.Barrier(2, timeout=30)

    def task() -> tuple[int, str]:
        barrier.wait()
        return torch.get_num_threads(), threading.current_thread().name

    (n0, name0), (n1, name1) = lanes.run([task, task])
    assert (n0, n1) == (1, 1)
    assert name0 != name1 and threading.current_thread().name not in (name0, name1)
    assert torch.get_num_threads() == default
    later: list[int] = []
    t = threading.Thread(target=lambda: later.append(torch.get_num_threads()))
    t.start()
    t.join()
    assert later == [default]
    lanes.close()


def test_a_lane_error_reaches_the_caller_and_lanes_stay_usable() -> None:
    lanes = DecodeLanes(2)

    def boom() -> int:
        raise RuntimeError("lane failed")

    with pytest.raises(RuntimeError, match="lane failed"):
        lanes.run([lambda: 1, boom])
    assert lanes.run([lambda: 2, lambda: 3]) == [2, 3]
    with pytest.raises(ValueError):
        lanes.run([lambda: 1] * 3)
    with pytest.raises(ValueError):
        DecodeLanes(1)
    lanes.close()
    lanes.close()  # idempotent
