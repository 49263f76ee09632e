"""Executing one scheduled iteration on the model: swaps, one forward pass, sampling.

The scheduler decided which tokens of which requests to compute (`SchedulerOutput`) and
where their KV lives (block tables); the runner turns that into tensors. A step of `n` tokens
for a request with `computed` tokens already cached feeds tokens `computed .. computed+n-1`
at those positions: a prefill, a prefill chunk, a recompute after preemption (prompt plus
generated text) and a decode are all the same operation.

An iteration that only decodes, with no swap, and has at least `LANE_MIN_ROWS` sequences per
decode lane may run on the lanes (lanes.py), when they are measured faster than one pass at
the time (path_choice.py): the batch is split into balanced parts, a request
staying in its lane while the batch allows (so each lane's staged contexts are reused), each
part's pass through the layers runs on its own lane thread, and the vocabulary projection and
sampling run on all rows in the batch's order on the calling thread. Any other iteration runs
whole on the calling thread with torch's intra-op threads. Each path stages its decode
contexts on its own (staging.py); switching path flushes and drops the other's.

On a CPU the products of a decode-only iteration run split over the threads
(row_split.py) or each as one GEMM, whichever a second `PathChoice` measured faster; other
iterations keep its current choice.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from kairos.andes.engine.api import SamplingParams
from kairos.andes.engine.attention import AttentionBatch, StageMode
from kairos.andes.engine.config import SplitProducts
from kairos.andes.engine.kv_cache import KVCache, LayerKV
from kairos.andes.engine.lanes import DecodeLanes
from kairos.andes.engine.model import LlamaForCausalLM
from kairos.andes.engine.path_choice import PathChoice
from kairos.andes.engine.row_split import splitting
from kairos.andes.engine.sampler import sample
from kairos.andes.engine.staging import DecodeStage
from kairos.andes.scheduler import SchedulerOutput

LANE_MIN_ROWS = 2  # fewer decodes per lane than this run whole (a one-row part gains little)


class ModelRunner:
    def __init__(
        self,
        model: LlamaForCausalLM,
        cache: KVCache,
        device: torch.device,
        *,
        stage_decodes: bool = False,
        lanes: int = 0,
        adaptive_lanes: bool = True,
        split_products: SplitProducts = "measured",
    ) -> None:
        """`lanes`: decode lanes (threads of one intra-op thread each); below 2, none.
        `adaptive_lanes`: a `PathChoice` picks lanes or one pass by measured speed; off,
        every eligible iteration runs on the lanes. `split_products`: row_split.py on, off,
        or per decode iteration by measured speed."""
        self.model = model
        self.cache = cache
        self.device = device
        bs = cache.block_size
        self.stage = DecodeStage(cache.layers, bs, stage_decodes)
        self.lanes = DecodeLanes(lanes) if lanes >= 2 else None
        self.lane_stages = [  # each lane stages in LayerKVs of its own over the shared cache
            DecodeStage([LayerKV(kv.k, kv.v) for kv in cache.layers], bs, stage_decodes)
            for _ in range(lanes if self.lanes else 0)
        ]
        self._lane_of: dict[str, int] = {}  # request id -> its lane, while it decodes there
        self.lane_choice = PathChoice() if self.lanes and adaptive_lanes else None
        self.split_choice = PathChoice() if split_products == "measured" else None
        self.split_fixed = split_products != "off"  # without a choice
        self.split_iterations = 0
        self.stage_counts = {"off": 0, "fill": 0, "reuse": 0}  # per (lane) forward pass
        self.lane_iterations = 0
        self.last_stage: StageMode = "off"  # the last iteration's ("reuse": nothing gathered)

    def apply_swaps(self, out: SchedulerOutput) -> None:
        for direction, mapping in out.block_copies:
            if direction == "out":
                self.cache.swap_out(mapping)
            else:
                self.cache.swap_in(mapping)

    def _lane_rows(self, out: SchedulerOutput, rids: list[str]) -> list[list[int]] | None:
        """The batch rows of each lane, or None when the iteration runs whole. A request
        keeps its lane; new ones go to the smallest; a lane two or more larger than another
        gives its last request away (both lanes then regather once)."""
        if self.lanes is None or out.block_copies or len(rids) < self.lanes.n * LANE_MIN_ROWS:
            return None
        if any(step.tokens != 1 for step in out.steps):
            return None
        n = self.lanes.n
        lane_of = {r: self._lane_of[r] for r in rids if r in self._lane_of}
        sizes = [0] * n
        for lane in lane_of.values():
            sizes[lane] += 1
        for r in rids:
            if r not in lane_of:
                lane_of[r] = small = sizes.index(min(sizes))
                sizes[small] += 1
        while max(sizes) - min(sizes) > 1:
            big, small = sizes.index(max(sizes)), sizes.index(min(sizes))
            moved = next(r for r in reversed(rids) if lane_of[r] == big)
            lane_of[moved] = small
            sizes[big] -= 1
            sizes[small] += 1
        self._lane_of = lane_of
        return [[i for i, r in enumerate(rids) if lane_of[r] == lane] for lane in range(n)]

    @torch.inference_mode()
    def execute(
        self,
        out: SchedulerOutput,
        token_ids: Mapping[str, Sequence[int]],
        block_tables: Mapping[str, Sequence[int]],
        params: Mapping[str, SamplingParams],
        generators: Mapping[str, torch.Generator],
    ) -> dict[str, int]:
        """Run the iteration; returns the new token of every step that completes a context."""
        if not out.steps:  # swaps alone (or nothing): the next decode batch regathers
            self._unstage_lanes()
            self.stage.unstage()
            self.last_stage = "off"
            self.apply_swaps(out)
            return {}
        starts: list[int] = []
        lengths: list[int] = []
        tables: list[Sequence[int]] = []
        ids: list[int] = []
        rids_all: list[str] = []
        for step in out.steps:
            r = step.request
            rid = r.request_id
            start = r.computed
            rids_all.append(rid)
            starts.append(start)
            lengths.append(step.tokens)
            tables.append(block_tables[rid])
            ids.extend(token_ids[rid][start : start + step.tokens])
        lane_rows = self._lane_rows(out, rids_all)
        lanes = lane_rows is not None and (self.lane_choice is None or self.lane_choice.now())
        choice = self.split_choice
        timed = choice is not None and not lanes and len(ids) == len(starts)  # decodes only
        if choice is None:
            split = self.split_fixed
        else:
            split = choice.now() if timed else choice.on_candidate
        t0 = time.perf_counter()
        with splitting(split):
            if lane_rows is not None and lanes:
                logits = self._on_lanes(lane_rows, rids_all, starts, tables, ids)
            else:
                logits = self._whole(out, rids_all, starts, lengths, tables, ids)
        seconds = time.perf_counter() - t0
        self.split_iterations += int(split and not lanes)
        if lane_rows is not None and self.lane_choice is not None:
            self.lane_choice.record(lanes, seconds, len(rids_all))
        if timed and choice is not None:
            choice.record(split, seconds, len(rids_all))
        rows = [i for i, s in enumerate(out.steps) if s.samples]
        if not rows:
            return {}
        if len(rows) < len(rids_all):  # a prefill chunk that ends mid-prompt samples nothing
            logits = logits[rows]
        rids = [rids_all[i] for i in rows]
        tokens = sample(logits, [params[r] for r in rids], [generators[r] for r in rids])
        return dict(zip(rids, tokens, strict=True))

    def _whole(
        self,
        out: SchedulerOutput,
        rids: list[str],
        starts: list[int],
        lengths: list[int],
        tables: list[Sequence[int]],
        ids: list[int],
    ) -> torch.Tensor:
        """The iteration in one forward pass on this thread: its logits."""
        self._unstage_lanes()
        mode, blocks = self.stage.mode(rids, starts, lengths, bool(out.block_copies))
        self.apply_swaps(out)
        batch = AttentionBatch.build(
            starts, lengths, tables, self.cache.block_size, self.device, mode, blocks
        )
        self.stage.record(batch)
        self.stage_counts[mode] += 1
        self.last_stage = mode
        if len(ids) == len(starts):  # decodes only: one position each
            positions = torch.tensor(starts, device=self.device)
        else:
            spans = [np.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)]
            positions = torch.from_numpy(np.concatenate(spans)).to(self.device)
        input_ids = torch.tensor(ids, dtype=torch.long, device=self.device)
        return self.model(input_ids, positions, batch, self.stage.layers)

    def _on_lanes(
        self,
        lane_rows: list[list[int]],
        rids: list[str],
        starts: list[int],
        tables: list[Sequence[int]],
        ids: list[int],
    ) -> torch.Tensor:
        """A decode-only iteration split over the lanes: its logits, in the batch's order.
        Every stage decision (and so every flush) happens here, before any lane runs."""
        assert self.lanes is not None
        self.stage.unstage()
        tasks = []
        modes: list[StageMode] = []
        for stage, rows in zip(self.lane_stages, lane_rows, strict=True):
            part = [starts[i] for i in rows]
            ones = [1] * len(rows)
            mode, blocks = stage.mode([rids[i] for i in rows], part, ones, swaps=False)
            batch = AttentionBatch.build(
                part, ones, [tables[i] for i in rows], stage.block_size, self.device, mode, blocks
            )
            stage.record(batch)
            modes.append(mode)
            self.stage_counts[mode] += 1
            input_ids = torch.tensor([ids[i] for i in rows], dtype=torch.long, device=self.device)
            positions = torch.tensor(part, device=self.device)
            tasks.append(
                functools.partial(self.model.hidden, input_ids, positions, batch, stage.layers)
            )
        hidden = torch.cat(self.lanes.run(tasks))
        order = [i for rows in lane_rows for i in rows]
        if order != sorted(order):  # back to the batch's order, for sampling
            hidden = hidden[torch.from_numpy(np.argsort(order)).to(self.device)]
        self.lane_iterations += 1
        self.last_stage = "reuse" if all(m == "reuse" for m in modes) else "fill"
        return self.model.logits(hidden)

    def _unstage_lanes(self) -> None:
        for stage in self.lane_stages:
            stage.unstage()
