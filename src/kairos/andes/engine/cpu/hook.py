"""The CPU's ways to run an iteration's forward pass faster, as the runner's one hook.

The core runner (kairos.andes.engine.runner) turns a decision into one forward pass. On a CPU
four things make decode iterations faster, each measured where it depends on the machine:

- staging (staging.py): a decode batch that is the last one's, one token further, reuses the
  contexts gathered last time instead of gathering them again;
- decode lanes (lanes.py, off by default): a decode-only iteration with at least
  `LANE_MIN_ROWS` sequences per lane split into balanced parts, each part's pass through the
  layers on its own lane thread (a request stays in its lane while the batch allows, so each
  lane's staged contexts are reused), the vocabulary projection and sampling on all rows in
  the batch's order on the calling thread; lanes or one pass by measured speed
  (path_choice.py);
- split products (row_split.py): the products of a decode-only iteration split by weight
  rows over the threads, or each one product against its prepacked weight (packed.py; one
  GEMM where packing is off), whichever a second `PathChoice` measured faster (other
  iterations keep its current choice); with packing, only products of at most `split_rows`
  activation rows split, the crossover measured when the hook is built (split_rows.py);
- intra-op threads: every thread the engine's thread has, or one, whichever a third
  `PathChoice` measured faster on decode-only iterations (the others follow it). On a quiet
  2-core machine the second thread made decode 1.6x faster; with a core held by another
  process, an OpenMP team of two waits at every op for a thread the kernel has parked, and a
  server's decode step took 319 ms on two threads against 49 ms on one. The split's choice
  is timed only while this one is settled on every thread (one thread never splits).

Each path stages its decode contexts on its own; switching path flushes and drops the other's.
`cpu_hook` builds the hook for an engine's settings (None when none of it applies) and puts
the CPU products (packed.py) into the model; the engine's builder passes it to `LLMEngine`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch

from kairos.andes.decisions import Iteration
from kairos.andes.engine.attention import AttentionBatch, StageMode
from kairos.andes.engine.config import EngineConfig
from kairos.andes.engine.cpu.lanes import DecodeLanes
from kairos.andes.engine.cpu.packed import PackedWeights, cpu_products, model_weights
from kairos.andes.engine.cpu.packed import available as packing_available
from kairos.andes.engine.cpu.path_choice import PathChoice
from kairos.andes.engine.cpu.row_split import MAX_ROWS, splitting
from kairos.andes.engine.cpu.split_rows import measure_split_rows, sample_weights
from kairos.andes.engine.cpu.staging import DecodeStage
from kairos.andes.engine.kv_cache import KVCache, LayerKV
from kairos.andes.engine.model import LlamaForCausalLM
from kairos.andes.engine.runner import ModelRunner, Rows

LANE_MIN_ROWS = 2  # fewer decodes per lane than this run whole (a one-row part gains little)
# the thread count's probes back off to one in this many decode iterations while they keep
# losing: a probe of two threads on a loaded machine costs several slow steps
THREADS_MAX_PERIOD = 1024


@contextmanager
def intra_op_threads(n: int | None) -> Iterator[None]:
    """This thread's torch intra-op threads set to `n` for the block (None: unchanged)."""
    if n is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def cpu_hook(
    config: EngineConfig, model: LlamaForCausalLM, cache: KVCache, device: torch.device
) -> CpuHook | None:
    """The hook for an engine's settings on its device, or None (nothing of it applies)."""
    cpu = device.type == "cpu"
    stage = config.stage_decodes if config.stage_decodes is not None else cpu
    lanes = config.decode_lanes if cpu else 0
    split = config.split_products if cpu else "off"
    threads = config.adaptive_threads and cpu
    packed = config.packed_products and cpu and packing_available()
    if not stage and lanes < 2 and split == "off" and not threads and not packed:
        return None
    rows = MAX_ROWS
    if split != "off" or packed:
        weights = PackedWeights(model_weights(model)) if packed else None
        if config.split_rows is not None:
            rows = config.split_rows
        elif weights is not None and split != "off":
            # at least one row: alone is where splitting gained most, and a measurement taken
            # while another process holds a core (a team of two threads then waits for a
            # parked one) says 0; the iteration's measured choice still decides, later
            rows = max(1, measure_split_rows(weights, sample_weights(model, weights)))
        if rows == 0:  # packed wins at every size: nothing to split, nothing to choose
            split = "off"
        model.use_products(cpu_products(weights, split=split != "off", split_rows=rows))
    hook = CpuHook(
        model,
        cache,
        stage_decodes=stage,
        lanes=lanes,
        adaptive_lanes=config.adaptive_lanes,
        split_products=split,
        adaptive_threads=threads,
    )
    hook.split_rows = rows if split != "off" else 0
    return hook


class CpuHook:
    def __init__(
        self,
        model: LlamaForCausalLM,
        cache: KVCache,
        *,
        stage_decodes: bool = False,
        lanes: int = 0,
        adaptive_lanes: bool = True,
        split_products: str = "measured",
        adaptive_threads: bool = True,
    ) -> None:
        """`lanes`: decode lanes (threads of one intra-op thread each); below 2, none.
        `adaptive_lanes`: a `PathChoice` picks lanes or one pass by measured speed; off,
        every eligible iteration runs on the lanes. `split_products`: row_split.py on, off,
        or per decode iteration by measured speed. `adaptive_threads`: every intra-op
        thread or one, by measured speed (off: every thread)."""
        self.model = model
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
        self.split_rows = MAX_ROWS  # products with more activation rows never split
        self.split_iterations = 0
        self.thread_choice = PathChoice(max_period=THREADS_MAX_PERIOD) if adaptive_threads else None
        self.one_thread_iterations = 0
        self.stage_counts = {"off": 0, "fill": 0, "reuse": 0}  # per (lane) forward pass
        self.lane_iterations = 0

    def idle(self) -> None:
        """An iteration without steps: the next decode batch regathers."""
        self._unstage_lanes()
        self.stage.unstage()

    def forward(self, runner: ModelRunner, decision: Iteration, rows: Rows) -> torch.Tensor:
        lane_rows = self._lane_rows(decision, rows.rids)
        lanes = lane_rows is not None and (self.lane_choice is None or self.lane_choice.now())
        threads = self.thread_choice if torch.get_num_threads() > 1 and not lanes else None
        every_thread = True  # lanes run one intra-op thread each on their own
        if threads is not None:
            every_thread = threads.now() if rows.decodes_only else threads.on_candidate
        settled = threads is None or (every_thread and not threads.probing)
        choice = self.split_choice
        timed = choice is not None and not lanes and rows.decodes_only and settled
        if choice is None:
            split = self.split_fixed
        else:
            split = choice.now() if timed else choice.on_candidate
        t0 = time.perf_counter()
        with intra_op_threads(None if every_thread else 1), splitting(split):
            if lane_rows is not None and lanes:
                logits = self._on_lanes(runner, lane_rows, rows)
            else:
                logits = self._whole(runner, decision, rows)
        seconds = time.perf_counter() - t0
        self.split_iterations += int(split and not lanes and every_thread)
        self.one_thread_iterations += int(not every_thread)
        if threads is not None and rows.decodes_only:
            threads.record(every_thread, seconds, len(rows.rids))
        if lane_rows is not None and self.lane_choice is not None:
            self.lane_choice.record(lanes, seconds, len(rows.rids))
        if timed and choice is not None:
            choice.record(split, seconds, len(rows.rids))
        return logits

    def _lane_rows(self, decision: Iteration, rids: list[str]) -> list[list[int]] | None:
        """The batch rows of each lane, or None when the iteration runs whole. A request
        keeps its lane; new ones go to the smallest; a lane two or more larger than another
        gives its last request away (both lanes then regather once)."""
        if self.lanes is None or decision.swaps or len(rids) < self.lanes.n * LANE_MIN_ROWS:
            return None
        if any(step.tokens != 1 for step in decision.steps):
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

    def _whole(self, runner: ModelRunner, decision: Iteration, rows: Rows) -> torch.Tensor:
        """The iteration in one forward pass on this thread: its logits."""
        self._unstage_lanes()
        mode, blocks = self.stage.mode(rows.rids, rows.starts, rows.lengths, bool(decision.swaps))
        runner.apply_swaps(decision)
        batch = runner.batch(rows, mode, blocks)
        self.stage.record(batch)
        self.stage_counts[mode] += 1
        runner.last_stage = mode
        return runner.forward(rows, batch, self.stage.layers)

    def _on_lanes(
        self, runner: ModelRunner, lane_rows: list[list[int]], rows: Rows
    ) -> torch.Tensor:
        """A decode-only iteration split over the lanes: its logits, in the batch's order.
        Every stage decision (and so every flush) happens here, before any lane runs."""
        assert self.lanes is not None
        self.stage.unstage()
        rids, starts, tables, ids = rows.rids, rows.starts, rows.tables, rows.ids
        device = runner.device
        tasks = []
        modes: list[StageMode] = []
        for stage, part_rows in zip(self.lane_stages, lane_rows, strict=True):
            part = [starts[i] for i in part_rows]
            ones = [1] * len(part_rows)
            mode, blocks = stage.mode([rids[i] for i in part_rows], part, ones, swaps=False)
            part_tables: Sequence[Sequence[int]] = [tables[i] for i in part_rows]
            batch = AttentionBatch.build(
                part, ones, part_tables, stage.block_size, device, mode, blocks
            )
            stage.record(batch)
            modes.append(mode)
            self.stage_counts[mode] += 1
            input_ids = torch.tensor([ids[i] for i in part_rows], dtype=torch.long, device=device)
            positions = torch.tensor(part, device=device)
            tasks.append(
                functools.partial(self.model.hidden, input_ids, positions, batch, stage.layers)
            )
        hidden = torch.cat(self.lanes.run(tasks))
        order = [i for part_rows in lane_rows for i in part_rows]
        if order != sorted(order):  # back to the batch's order, for sampling
            hidden = hidden[torch.from_numpy(np.argsort(order)).to(device)]
        self.lane_iterations += 1
        runner.last_stage = "reuse" if all(m == "reuse" for m in modes) else "fill"
        return self.model.logits(hidden)

    def _unstage_lanes(self) -> None:
        for stage in self.lane_stages:
            stage.unstage()
