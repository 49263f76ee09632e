"""The paged engine computes what the model computes.

Paged attention (scattered blocks, chunked prefill, mixed batches) equals a dense causal
forward; greedy outputs are identical alone, batched, and across preemption by recompute and
by swap. float64 keeps reduction-order differences far below any logit gap.
"""

from __future__ import annotations

import random

import pytest
import torch

from kairos.andes.engine.api import QoESpec, SamplingParams
from kairos.andes.engine.attention import AttentionBatch
from kairos.andes.engine.config import ModelConfig
from kairos.andes.engine.kv_cache import KVCache
from kairos.andes.policies.fcfs import FCFSPolicy
from kairos.andes.policy import Decision, PreemptMode, SchedulerView

from .conftest import TINY, drive, hook_of, make_engine, tiny_model

GREEDY = SamplingParams(max_tokens=24, temperature=0, ignore_eos=True)


def prompts(n: int, seed: int = 1) -> list[list[int]]:
    rng = random.Random(seed)
    return [[256, *(rng.randrange(256) for _ in range(rng.randint(3, 60)))] for _ in range(n)]


@pytest.mark.parametrize("cfg", [TINY, TINY.model_copy(update={"attention_bias": True})])
def test_paged_attention_equals_dense_forward(cfg: ModelConfig) -> None:
    model = tiny_model(3, cfg)
    cache = KVCache(cfg, 40, 0, 16, torch.float64, torch.device("cpu"))
    free = list(range(40))
    random.Random(0).shuffle(free)  # blocks scattered over the cache, not contiguous
    seqs = [torch.randint(0, 259, (n,)) for n in (37, 5, 70)]
    tables = [[free.pop() for _ in range(-(-len(s) // 16))] for s in seqs]
    dense = [model.dense_logits(s) for s in seqs]
    # iteration 1: a chunk of each prompt; then chunks and single tokens mixed in one batch
    cuts = [[0, 20, 21, 37], [0, 5], [0, 33, 34, 35, 70]]
    done = [0, 0, 0]
    with torch.inference_mode():
        while any(d < len(s) for d, s in zip(done, seqs, strict=True)):
            active = [i for i in range(3) if done[i] < len(seqs[i])]
            ends = [next(c for c in cuts[i] if c > done[i]) for i in active]
            batch = AttentionBatch.build(
                [done[i] for i in active],
                [e - done[i] for i, e in zip(active, ends, strict=True)],
                [tables[i] for i in active],
                16,
                torch.device("cpu"),
            )
            ids = torch.cat([seqs[i][done[i] : e] for i, e in zip(active, ends, strict=True)])
            pos = torch.cat([torch.arange(done[i], e) for i, e in zip(active, ends, strict=True)])
            logits = model(ids, pos, batch, cache.layers)
            for row, (i, e) in enumerate(zip(active, ends, strict=True)):
                torch.testing.assert_close(logits[row], dense[i][e - 1], rtol=1e-9, atol=1e-9)
                done[i] = e


def test_fresh_prefills_attend_their_own_keys_and_still_fill_the_cache() -> None:
    """Fresh prompts attend to their keys as computed (no gather from the cache): the cache's
    old contents (large garbage here; finite, as masked decode slots must be) must not
    matter, and the next decodes, which do read the cache, must see what the prefill wrote."""
    model = tiny_model(5)
    cache = KVCache(TINY, 24, 0, 16, torch.float64, torch.device("cpu"))
    for layer in cache.layers:
        layer.k.fill_(1e6)
        layer.v.fill_(-1e6)
    seqs = [
        torch.randint(0, 259, (n,), generator=torch.Generator().manual_seed(n)) for n in (9, 33, 17)
    ]
    tables = [[0, 1, 2], [3, 4, 5, 6], [7, 8]]
    dense = [model.dense_logits(s) for s in seqs]
    cpu = torch.device("cpu")
    with torch.inference_mode():
        lens = [len(s) - 1 for s in seqs]
        batch = AttentionBatch.build([0, 0, 0], lens, tables, 16, cpu)
        ids = torch.cat([s[:-1] for s in seqs])
        pos = torch.cat([torch.arange(n) for n in lens])
        logits = model(ids, pos, batch, cache.layers)
        for row, (s, n) in enumerate(zip(dense, lens, strict=True)):
            torch.testing.assert_close(logits[row], s[n - 1], rtol=1e-9, atol=1e-9)
        batch = AttentionBatch.build(lens, [1, 1, 1], tables, 16, cpu)
        logits = model(torch.stack([s[-1] for s in seqs]), torch.tensor(lens), batch, cache.layers)
        for row, s in enumerate(dense):
            torch.testing.assert_close(logits[row], s[-1], rtol=1e-9, atol=1e-9)


def test_greedy_alone_equals_batched() -> None:
    ps = prompts(6)
    alone = [make_engine().generate([p], GREEDY)[0] for p in ps]
    batched = make_engine().generate(ps, GREEDY)
    assert batched == alone
    assert len({tuple(a) for a in alone}) > 1  # the prompts really lead to different text


class PreemptOnce(FCFSPolicy):
    """FCFS that evicts one running request at a chosen iteration by a chosen mechanism."""

    def __init__(self, victim_index: int, at_iteration: int, mode: PreemptMode) -> None:
        self.victim_index = victim_index
        self.at_iteration = at_iteration
        self.mode = mode
        self.fired = False

    def decide(self, view: SchedulerView) -> Decision:
        decision = super().decide(view)
        if view.iteration >= self.at_iteration and not self.fired and view.running:
            victim = sorted(view.running, key=lambda r: r.arrival)[
                min(self.victim_index, len(view.running) - 1)
            ]
            decision.preempt = [(victim, self.mode)]
            decision.admit = [r for r in decision.admit if r is not victim]
            self.fired = True
        return decision


@pytest.mark.parametrize("mode", [PreemptMode.RECOMPUTE, PreemptMode.SWAP])
def test_greedy_identical_across_preemption(mode: PreemptMode) -> None:
    ps = prompts(4, seed=7)
    reference = make_engine().generate(ps, GREEDY)
    policy = PreemptOnce(victim_index=1, at_iteration=6, mode=mode)
    engine = make_engine(policy_obj=policy)
    outputs = engine.generate(ps, GREEDY)
    assert policy.fired
    assert engine.counters.preemptions == 1
    assert outputs == reference
    assert engine.scheduler.blocks.gpu.free == engine.scheduler.blocks.gpu.num_blocks
    assert engine.scheduler.blocks.cpu.free == engine.scheduler.blocks.cpu.num_blocks


@pytest.mark.parametrize(
    ("policy", "cpu_blocks"), [("fcfs", 0), ("andes", 64), ("sarathi", 0), ("lqsf", 64)]
)
def test_greedy_identical_under_memory_pressure(policy: str, cpu_blocks: int) -> None:
    """A cache too small for the batch forces the policies' own preemptions (fcfs: newest
    victim by recompute; andes: swap when cheaper); the text must not change."""
    ps = prompts(8, seed=11)
    params = SamplingParams(max_tokens=60, temperature=0, ignore_eos=True)
    reference = make_engine(blocks=128).generate(ps, params)
    engine = make_engine(blocks=14, cpu_blocks=cpu_blocks, policy=policy, max_model_len=224)
    outputs = engine.generate(ps, params)
    assert outputs == reference
    if policy == "fcfs":
        assert engine.counters.preemptions > 0
    assert engine.scheduler.blocks.gpu.free == engine.scheduler.blocks.gpu.num_blocks


@pytest.mark.parametrize(("policy", "blocks"), [("fcfs", 128), ("fcfs", 14), ("andes", 14)])
def test_staged_decode_contexts_change_no_token(policy: str, blocks: int) -> None:
    """Reusing the gathered decode contexts between iterations (the CPU default) gives the
    text the plain gather gives, while requests finish at different lengths, join, and (with
    14 blocks) are preempted and resumed; and it is really used."""
    ps = prompts(8, seed=13)
    params = [
        SamplingParams(max_tokens=n, temperature=0, ignore_eos=True) for n in range(20, 100, 10)
    ]

    def run(stage: bool) -> tuple[list[list[int]], dict[str, int]]:
        engine = make_engine(blocks=blocks, policy=policy, max_model_len=224, stage_decodes=stage)
        return drive(engine, ps, params), dict(hook_of(engine).stage_counts)

    gathered, plain_counts = run(False)
    staged, counts = run(True)
    assert staged == gathered
    assert [len(t) for t in staged] == [p.max_tokens for p in params]
    assert plain_counts["reuse"] == plain_counts["fill"] == 0
    assert counts["reuse"] > 2 * counts["fill"] > 0  # mostly reused, refilled as batches change


def test_seeded_sampling_is_reproducible_and_batch_independent() -> None:
    ps = prompts(3, seed=5)
    params = [SamplingParams(max_tokens=16, temperature=1.0, top_p=0.9, seed=s) for s in range(3)]
    alone = []
    for p, sp in zip(ps, params, strict=True):
        alone.append(make_engine().generate([p], sp)[0])
    assert drive(make_engine(), ps, params, e_qoe()) == alone
    greedy = make_engine().generate(ps, SamplingParams(max_tokens=16, temperature=0))
    assert alone != greedy  # sampling really samples
    again = make_engine().generate([ps[0]], params[0])[0]
    assert again == alone[0]


def e_qoe():  # type: ignore[no-untyped-def]

    return QoESpec(ttft_s=1.0, tokens_per_s=5.0)
