"""Property tests of the iteration-level simulator under every policy, with real memory pressure.

The latency model is tiny on purpose: 24 KV blocks of 16 tokens (384 tokens, at least twice
the largest context a workload can reach, so every request can always run alone) and a
10-block swap pool, so that running requests outgrow the cache and get preempted, by recompute
and (for the Andes family) by swap, in most examples. `CheckedSimulator` checks the KV
bookkeeping after every scheduling decision and every iteration.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings, target
from hypothesis import strategies as st

from kairos.andes.driver import Executed
from kairos.andes.kv_blocks import BlockManager, blocks_for
from kairos.andes.latency import LinearProfile
from kairos.andes.policies.fcfs import FCFSPolicy
from kairos.andes.policies.registry import POLICY_NAMES, make_policy
from kairos.andes.policy import Decision, Policy, SchedulerView
from kairos.andes.qoe import sample_speeds
from kairos.andes.request import Request, Status
from kairos.andes.scheduler import Scheduler, SchedulerConfig, SchedulerOutput
from kairos.andes.simulator import SimulationResult, Simulator, simulate
from kairos.workloads import Trace

BLOCK = 16
KV_BLOCKS = 24
SWAP_BLOCKS = 10
MAX_PROMPT = 120
MAX_OUTPUT = 60
HORIZON_S = 2_000.0  # a safety net (runs end within ~100 s): a livelock must not hang a test

assert KV_BLOCKS * BLOCK >= 2 * (MAX_PROMPT + MAX_OUTPUT)

# (d0, d1, d2) of decode(B, C) = d0 + d1*B + d2*C: memory-bound (fast) and compute-bound
# (slow enough that Andes' compute trigger fires at modest batch sizes).
DECODE_COEFS: tuple[tuple[float, float, float], ...] = (
    (0.01, 0.001, 1e-5),
    (0.05, 0.03, 1e-4),
)


def tiny_profile(decode_coef: tuple[float, float, float] = DECODE_COEFS[0]) -> LinearProfile:
    return LinearProfile(
        name="tiny",
        decode_coef=decode_coef,
        prefill_coef=(0.01, 1e-4, 0.0),
        swap_s_per_token=2e-5,  # cheaper than a recompute, so Andes prefers swapping
        kv_capacity=KV_BLOCKS * BLOCK,
        swap_capacity=SWAP_BLOCKS * BLOCK,
        block_size=BLOCK,
    )


@dataclass(frozen=True)
class Workload:
    arrivals: tuple[float, ...]
    prompts: tuple[int, ...]
    outputs: tuple[int, ...]
    speeds: tuple[float, ...]
    decode_coef: tuple[float, float, float]
    max_num_seqs: int
    chunk_size: int

    def __len__(self) -> int:
        return len(self.arrivals)

    def config(self) -> SchedulerConfig:
        return SchedulerConfig(max_num_seqs=self.max_num_seqs, chunk_size=self.chunk_size)

    def requests(self, max_tokens: int = 4096) -> list[tuple[Request, int]]:
        return [
            (
                Request(
                    request_id=f"r{i}",
                    arrival=self.arrivals[i],
                    prompt_len=self.prompts[i],
                    max_tokens=max_tokens,
                    ttft_s=1.0,
                    tokens_per_s=self.speeds[i],
                ),
                self.outputs[i],
            )
            for i in range(len(self))
        ]


@st.composite
def workloads(draw: st.DrawFn, min_n: int = 5, max_n: int = 40) -> Workload:
    n = draw(st.integers(min_n, max_n))
    # bursts (gap 0) and spread-out arrivals alike
    gaps = draw(st.lists(st.sampled_from([0.0, 0.0, 0.01, 0.05, 0.2, 1.0]), min_size=n, max_size=n))
    prompts = draw(st.lists(st.integers(1, MAX_PROMPT), min_size=n, max_size=n))
    outputs = draw(st.lists(st.integers(1, MAX_OUTPUT), min_size=n, max_size=n))
    if draw(st.booleans()):
        seed = draw(st.integers(0, 2**32 - 1))
        speeds = sample_speeds("reader", n, np.random.default_rng(seed)).tolist()
    else:
        speeds = draw(st.lists(st.floats(2.0, 8.0), min_size=n, max_size=n))
    return Workload(
        arrivals=tuple(float(x) for x in np.cumsum(gaps)),
        prompts=tuple(prompts),
        outputs=tuple(outputs),
        speeds=tuple(float(s) for s in speeds),
        decode_coef=draw(st.sampled_from(DECODE_COEFS)),
        max_num_seqs=draw(st.integers(2, 16)),
        chunk_size=draw(st.integers(8, 64)),
    )


def max_requests(name: str) -> int:
    return 10 if name == "andes-dp" else 40  # the DP is O(N * B * M) per candidate B


class CheckedSimulator(Simulator):
    """A simulator that checks the KV-cache bookkeeping at every step and counts preemptions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.checked_iterations = 0
        self.swapped_out = 0
        self.swapped_in = 0
        self.recomputed = 0
        self.peak_gpu_blocks = 0
        self.on_decision = self._decision
        recorded, iterate = self.worker.recorded, self.driver._iterate

        def after_update(out: SchedulerOutput, executed: Executed, t: float) -> None:
            recorded(out, executed, t)
            self._check_pools()

        def iterate_and_check_idle() -> None:
            iterate()  # a scheduling decision was just carried out (it may have preempted)
            self._check_pools()
            if not self.driver.busy:  # idle: only when nothing is left, or more will arrive
                stuck = self.scheduler.num_unfinished
                assert not stuck or self._pending_arrivals, f"deadlock: {stuck} stranded"

        self.worker.recorded = after_update  # type: ignore[method-assign]
        self.driver._iterate = iterate_and_check_idle  # type: ignore[method-assign]

    def _decision(self, t: float, out: SchedulerOutput) -> None:
        # the state between `schedule` and `update_from_output`: the iteration's peak usage
        self._check_pools()
        self._check_steps(out)
        self.checked_iterations += 1
        self.swapped_out += len(out.swap_out)
        self.swapped_in += len(out.swap_in)
        self.recomputed += len(out.recomputed)

    def _check_pools(self) -> None:
        s = self.scheduler
        gpu, cpu = s.blocks.gpu, s.blocks.cpu
        self.peak_gpu_blocks = max(self.peak_gpu_blocks, gpu.used)
        assert 0 <= gpu.used <= gpu.num_blocks == KV_BLOCKS
        assert 0 <= cpu.used <= cpu.num_blocks == SWAP_BLOCKS
        gpu_ids = [b for table in s.blocks.tables.values() for b in table]
        cpu_ids = [b for table in s.blocks.cpu_tables.values() for b in table]
        # no block is handed out twice, and every used block belongs to some table
        assert len(gpu_ids) == len(set(gpu_ids)) == gpu.used
        assert len(cpu_ids) == len(set(cpu_ids)) == cpu.used
        assert len(s.running) <= s.config.max_num_seqs
        for r in s.requests.values():
            rid = r.request_id
            holds_gpu = bool(s.blocks.tables.get(rid))
            holds_cpu = rid in s.blocks.cpu_tables
            if r.status is Status.RUNNING:
                assert s.blocks.gpu_blocks(rid) >= blocks_for(r.computed, BLOCK)
                assert not holds_cpu
            elif r.status is Status.SWAPPED:
                assert holds_cpu and not holds_gpu
                assert len(s.blocks.cpu_tables[rid]) == blocks_for(r.computed, BLOCK)
            else:  # waiting (never run, or recompute-preempted) and finished hold nothing
                assert not holds_gpu and not holds_cpu
                assert r.status is Status.FINISHED or r.computed == 0

    def _check_steps(self, out: SchedulerOutput) -> None:
        s = self.scheduler
        assert out.steps or out.block_copies, "an empty schedule must not start an iteration"
        assert len({st.request.request_id for st in out.steps}) == len(out.steps)
        for step in out.steps:
            r = step.request
            assert r.status is Status.RUNNING
            assert 1 <= step.tokens <= r.to_compute
            assert step.samples == (r.computed + step.tokens == r.context_len)
            # the KV of every token this step computes has a GPU slot
            assert s.blocks.gpu_blocks(r.request_id) >= blocks_for(r.computed + step.tokens, BLOCK)
        prefill = out.prefill_tokens
        if s.policy.chunked_prefill:
            decodes = len(out.decode_steps)
            assert sum(prefill) <= max(0, s.config.chunk_size - decodes)
        else:  # vLLM 0.6: prefill-only or decode-only iterations
            assert not (prefill and out.decode_steps)
            assert sum(prefill) <= s.config.max_num_batched_tokens


def run_checked(
    name: str, w: Workload, outputs: tuple[int, ...] | None = None
) -> tuple[CheckedSimulator, SimulationResult]:
    sim = CheckedSimulator(
        make_policy(name),
        tiny_profile(w.decode_coef),
        w.config(),
        count_decision_time=False,
        max_time_s=HORIZON_S,
    )
    for (req, _), n in zip(w.requests(), outputs or w.outputs, strict=True):
        sim.add(req, n)
    return sim, sim.run()


def assert_completed(res: SimulationResult, outputs: tuple[int, ...]) -> None:
    assert len(res.requests) == len(outputs)
    for r, n_out in zip(res.requests, outputs, strict=True):
        assert r.status is Status.FINISHED, f"{r.request_id} ended {r.status.name}"
        assert r.finish_reason == "stop"
        assert r.generated == n_out and len(r.token_times) == n_out and r.qoe.k == n_out
        times = np.asarray(r.token_times)
        assert times[0] >= r.arrival
        assert np.all(np.diff(times) > 0.0)  # one token per iteration, each iteration >= 1 us
        assert r.finish_time == times[-1] < HORIZON_S


def assert_nothing_leaked(sched: Scheduler) -> None:
    assert sched.blocks.gpu.used == 0 and sched.blocks.gpu.free == KV_BLOCKS
    assert sched.blocks.cpu.used == 0 and sched.blocks.cpu.free == SWAP_BLOCKS
    assert not sched.blocks.tables and not sched.blocks.cpu_tables
    assert not sched.running and not sched.waiting and not sched.swapped
    assert sched.num_unfinished == 0


# -- invariants under random workloads -----------------------------------------------------


@pytest.mark.parametrize("name", POLICY_NAMES)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_invariants_hold_under_random_workloads(name: str, data: st.DataObject) -> None:
    w = data.draw(workloads(max_n=max_requests(name)), label="workload")
    sim, res = run_checked(name, w)
    assert_completed(res, w.outputs)
    assert_nothing_leaked(sim.scheduler)
    assert sim.peak_gpu_blocks <= KV_BLOCKS
    # every token needs an iteration of its own; idle `schedule` calls start none
    assert max(w.outputs) <= sim.checked_iterations <= res.iterations
    # everything swapped out came back, and the preemption counts add up
    assert sim.swapped_in == sim.swapped_out
    assert sum(r.preemptions for r in res.requests) == sim.swapped_out + sim.recomputed
    target(float(sim.swapped_out + sim.recomputed), label="preemptions")  # seek pressure
    event(f"recompute preemptions: {sim.recomputed > 0}")
    event(f"swap preemptions: {sim.swapped_out > 0}")


def stress_workload(n: int = 20, seed: int = 0) -> Workload:
    """A 2-second burst of long requests: far more KV than the 24 blocks can hold."""
    rng = np.random.default_rng(seed)
    return Workload(
        arrivals=tuple(np.sort(rng.uniform(0.0, 2.0, n)).tolist()),
        prompts=tuple(rng.integers(20, MAX_PROMPT + 1, n).tolist()),
        outputs=tuple(rng.integers(30, MAX_OUTPUT + 1, n).tolist()),
        speeds=tuple(rng.uniform(2.0, 8.0, n).tolist()),
        decode_coef=DECODE_COEFS[0],
        max_num_seqs=16,
        chunk_size=32,
    )


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_memory_pressure_really_preempts(name: str) -> None:
    """The invariants above are not vacuous: this workload preempts under every policy, by
    recompute always and, for the Andes family (which prefers the cheaper swap), by swap."""
    w = stress_workload()
    sim, res = run_checked(name, w)
    assert_completed(res, w.outputs)
    assert_nothing_leaked(sim.scheduler)
    assert sim.peak_gpu_blocks == KV_BLOCKS  # the cache filled up
    assert sim.recomputed > 0
    assert sum(r.preemptions for r in res.requests) > 0
    if name in ("lqsf", "andes", "andes-dp"):
        assert sim.swapped_out > 0 and sim.swapped_in == sim.swapped_out
    else:  # vLLM 0.6 and Sarathi preempt by recompute only
        assert sim.swapped_out == 0


# -- determinism and causality -------------------------------------------------------------


@pytest.mark.parametrize("name", POLICY_NAMES)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_runs_are_deterministic(name: str, data: st.DataObject) -> None:
    w = data.draw(workloads(max_n=min(20, max_requests(name))), label="workload")
    trace = Trace(
        arrivals=np.array(w.arrivals),
        prompt_tokens=np.array(w.prompts),
        output_tokens=np.array(w.outputs),
    )
    speeds = np.array(w.speeds)

    def once() -> SimulationResult:
        return simulate(
            make_policy(name),
            tiny_profile(w.decode_coef),
            trace,
            speeds,
            w.config(),
            count_decision_time=False,
            max_time_s=HORIZON_S,
        )

    first, second = once(), once()
    assert_completed(first, w.outputs)
    assert [r.token_times for r in first.requests] == [r.token_times for r in second.requests]
    assert [r.preemptions for r in first.requests] == [r.preemptions for r in second.requests]
    assert first.iterations == second.iterations
    assert first.stats == second.stats


@pytest.mark.parametrize("name", ["fcfs", "andes"])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_the_no_eviction_shortcut_schedules_what_the_evicting_path_does(
    name: str, data: st.DataObject
) -> None:
    """`Scheduler._compose` grows every decoding request at once when all their next tokens
    fit (`BlockManager.grow_all`); the run must be the one the per-request, evicting path
    gives, token time for token time, and the shortcut must have been taken and declined."""
    w = data.draw(workloads(max_n=20), label="workload")
    taken: list[bool] = []
    grow_all = BlockManager.grow_all

    def counting(self: BlockManager, contexts: list[tuple[str, int]]) -> bool:
        taken.append(grow_all(self, contexts))
        return taken[-1]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(BlockManager, "grow_all", counting)
        _, fast = run_checked(name, w)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(BlockManager, "grow_all", lambda self, contexts: False)
        _, slow = run_checked(name, w)
    assert [r.token_times for r in fast.requests] == [r.token_times for r in slow.requests]
    assert [r.preemptions for r in fast.requests] == [r.preemptions for r in slow.requests]
    assert fast.iterations == slow.iterations and fast.stats == slow.stats
    assert any(taken)
    event(f"shortcut declined: {not all(taken)}")


@settings(max_examples=50, deadline=None)
@given(
    held=st.lists(st.integers(0, 40), min_size=1, max_size=8),
    extra=st.lists(st.integers(0, 40), min_size=8, max_size=8),
    free=st.integers(0, 12),
)
def test_grow_all_is_growing_each_in_turn_or_nothing(
    held: list[int], extra: list[int], free: int
) -> None:
    """Same tables as `grow` called in order when everything fits; untouched when not."""
    size = 4
    start = [blocks_for(h, size) for h in held]

    def manager() -> BlockManager:
        m = BlockManager(sum(start) + free, 0, size)
        for i, h in enumerate(held):
            m.grow(f"r{i}", h)
        return m

    contexts = [(f"r{i}", h + extra[i]) for i, h in enumerate(held)]
    one_pass, in_turn = manager(), manager()
    before = {k: list(v) for k, v in one_pass.tables.items()}
    fits = sum(blocks_for(t, size) for _, t in contexts) - sum(start) <= free
    assert one_pass.grow_all(contexts) == fits
    if fits:
        for rid, tokens in contexts:
            in_turn.grow(rid, tokens)
        assert one_pass.tables == in_turn.tables
        assert one_pass.gpu.free == in_turn.gpu.free
    else:
        assert one_pass.tables == before and one_pass.gpu.free == free


def test_the_shortcut_is_declined_under_memory_pressure(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property above covers both branches: the stress workload needs evictions."""
    declined = 0
    grow_all = BlockManager.grow_all

    def counting(self: BlockManager, contexts: list[tuple[str, int]]) -> bool:
        nonlocal declined
        fits = grow_all(self, contexts)
        declined += not fits
        return fits

    monkeypatch.setattr(BlockManager, "grow_all", counting)
    run_checked("fcfs", stress_workload())
    assert declined > 0


@pytest.mark.parametrize("name", POLICY_NAMES)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_output_length_is_revealed_only_by_the_stop(name: str, data: st.DataObject) -> None:
    """Two runs that differ only in one request's true output length are identical up to the
    instant the shorter run stops it: no scheduling decision can depend on the length."""
    w = data.draw(workloads(max_n=min(20, max_requests(name))), label="workload")
    x = data.draw(st.integers(0, len(w) - 1), label="request")
    extra = data.draw(st.integers(1, 30), label="extra tokens")
    longer = tuple(n + extra if i == x else n for i, n in enumerate(w.outputs))
    _, short = run_checked(name, w)
    _, long_ = run_checked(name, w, longer)
    assert_completed(short, w.outputs)
    assert_completed(long_, longer)
    t_stop = short.requests[x].token_times[-1]
    for a, b in zip(short.requests, long_.requests, strict=True):
        assert [t for t in a.token_times if t <= t_stop] == [
            t for t in b.token_times if t <= t_stop
        ]
    assert long_.requests[x].token_times[: w.outputs[x]] == short.requests[x].token_times
    assert long_.requests[x].token_times[w.outputs[x]] > t_stop


# -- the true output length stays with the simulator -----------------------------------------

LENGTH_LIKE = re.compile(r"output|true|target|n_out|(?<!prompt)_len(gth)?$", re.I)


def test_request_has_no_field_for_the_true_output_length() -> None:
    names = {f.name for f in dataclasses.fields(Request)}
    assert "prompt_len" in names and not LENGTH_LIKE.search("prompt_len")
    assert LENGTH_LIKE.search("output_len") and LENGTH_LIKE.search("true_length")
    assert not [n for n in names if LENGTH_LIKE.search(n)], names
    view_names = {f.name for f in dataclasses.fields(SchedulerView)}
    assert not [n for n in view_names if LENGTH_LIKE.search(n)], view_names
    # the simulator keeps it to itself, and only `max_tokens` (an upper bound) reaches the
    # request: adding a request does not change any of its fields
    req = Request("a", 0.0, 10, 4096, 1.0, 4.0)
    before = {n: getattr(req, n) for n in names if n != "qoe"}
    sim = Simulator(FCFSPolicy(), tiny_profile())
    sim.add(req, 7)
    assert {n: getattr(req, n) for n in names if n != "qoe"} == before


class SpyPolicy:
    """Delegates to a real policy and keeps every view it was shown."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = inner.name
        self.chunked_prefill = inner.chunked_prefill
        self.chunk_size = inner.chunk_size
        self.views: list[SchedulerView] = []

    def decide(self, view: SchedulerView) -> Decision:
        self.views.append(view)
        return self.inner.decide(view)


def numbers_in(obj: object) -> list[float]:
    """Every number stored on a view, its requests, and their QoE trackers."""
    found: list[float] = []
    values: Iterable[Any] | None = vars(obj).values() if not dataclasses.is_dataclass(obj) else None
    if values is None:
        values = [getattr(obj, f.name) for f in dataclasses.fields(obj)]  # type: ignore[arg-type]
    for v in values:
        if isinstance(v, bool):
            continue
        if isinstance(v, int | float):
            found.append(float(v))
        elif isinstance(v, list | tuple):
            for item in v:
                if isinstance(item, Request):
                    found.extend(numbers_in(item))
                elif isinstance(item, int | float):
                    found.append(float(item))
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            found.extend(numbers_in(v))
    return found


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_policies_never_see_the_true_output_length(name: str) -> None:
    secret = 987_653  # a value no other quantity in this run takes
    spy = SpyPolicy(make_policy(name))
    sim = Simulator(spy, tiny_profile(), max_time_s=0.6)  # ~50 tokens each: all fit
    for i, prompt in enumerate((20, 40, 60)):
        sim.add(Request(f"r{i}", 0.1 * i, prompt, 10**6, 1.0, 4.0), secret)
    res = sim.run()
    assert len(spy.views) > 10 and all(r.generated > 0 for r in res.requests)
    for view in spy.views:
        assert secret not in numbers_in(view)
        assert float(10**6) in numbers_in(view)  # the scan does reach the requests' fields


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_requests_finish_only_through_the_simulators_stop(name: str) -> None:
    w = stress_workload(n=12, seed=3)
    sim = Simulator(make_policy(name), tiny_profile(), w.config(), max_time_s=HORIZON_S)
    true_len = {req.request_id: n for req, n in w.requests()}
    for req, n in w.requests():
        sim.add(req, n)
    sched = sim.scheduler
    inside_update: list[set[str]] = []
    finished: list[tuple[str, str, int]] = []
    real_update, real_finish = sched.update_from_output, sched.finish_requests

    def update(out: SchedulerOutput, now: float, stopped: Any = ()) -> list[Request]:
        ids = set(stopped)
        sampled = {s.request.request_id for s in out.steps if s.samples}
        assert ids <= sampled  # only a request that just produced a token can stop
        assert all(sched.requests[i].generated + 1 == true_len[i] for i in ids)
        inside_update.append(ids)
        try:
            done = real_update(out, now, ids)
        finally:
            inside_update.pop()
        assert {r.request_id for r in done} == ids
        return done

    def finish(request_ids: Any, now: float, reason: str = "abort") -> None:
        ids = list(request_ids)
        assert inside_update, "a request was finished outside update_from_output"
        assert set(ids) <= inside_update[-1] and reason == "stop"
        finished.extend((i, reason, sched.requests[i].generated) for i in ids)
        real_finish(ids, now, reason)

    sched.update_from_output = update  # type: ignore[method-assign]
    sched.finish_requests = finish  # type: ignore[method-assign]
    res = sim.run()
    assert_completed(res, w.outputs)
    assert sorted(i for i, _, _ in finished) == sorted(true_len)
    assert all(gen == true_len[i] for i, _, gen in finished)


def test_the_scheduler_alone_only_enforces_max_tokens() -> None:
    """Without the simulator's stop, the mechanism runs a request until `max_tokens`."""
    sched = Scheduler(FCFSPolicy(), tiny_profile())
    sched.add_request(Request("a", 0.0, 10, 5, 1.0, 4.0))
    sched.add_request(Request("b", 0.0, 10, 50, 1.0, 4.0))
    t = 0.0
    for _ in range(8):
        t += 0.1
        out = sched.schedule(t)
        stopped = ["b"] if sched.requests["b"].generated == 2 else []
        sched.update_from_output(out, t, stopped)
    a, b = sched.requests["a"], sched.requests["b"]
    assert (a.generated, a.finish_reason, a.status) == (5, "length", Status.FINISHED)
    assert (b.generated, b.finish_reason, b.status) == (3, "stop", Status.FINISHED)
    assert_nothing_leaked(sched)


def test_truncation_by_max_tokens_is_reported_as_length() -> None:
    sim = Simulator(FCFSPolicy(), tiny_profile())
    sim.add(Request("a", 0.0, 10, 5, 1.0, 4.0), 50)
    (r,) = sim.run().requests
    assert r.generated == 5
    assert r.finish_reason == "length"


def test_a_changed_decode_batch_pays_the_regather_cost_once() -> None:
    """Requests a (prompt 10, output 5) and b (prompt 20, output 3) arrive together and are
    prefilled together (0.1 s). The first decode iteration is a new batch (2 x 21
    regathered tokens), the next keeps it, the third has lost the finished b (a new batch:
    1 x 13 tokens), the last keeps it. Without a regather cost: 0.1 s + 4 decodes."""

    def run(regather_s_per_token: float) -> dict[str, float]:
        prof = LinearProfile(
            name="regather",
            decode_coef=(0.01, 0.0, 0.0),
            prefill_coef=(0.1, 0.0, 0.0),
            swap_s_per_token=0.0,
            regather_s_per_token=regather_s_per_token,
            kv_capacity=KV_BLOCKS * BLOCK,
            swap_capacity=0,
            block_size=BLOCK,
        )
        sim = Simulator(FCFSPolicy(), prof, SchedulerConfig(max_num_seqs=8))
        for rid, prompt, out in (("a", 10, 5), ("b", 20, 3)):
            sim.add(Request(rid, 0.0, prompt, out, ttft_s=1.0, tokens_per_s=5.0), out)
        return {r.request_id: r.finish_time for r in sim.run().requests}

    ends = run(1e-3)
    assert ends["b"] == pytest.approx(0.1 + (0.01 + 2 * 21e-3) + 0.01)
    assert ends["a"] == pytest.approx(ends["b"] + (0.01 + 13e-3) + 0.01)
    assert run(0.0) == pytest.approx({"a": 0.1 + 4 * 0.01, "b": 0.1 + 2 * 0.01})


def test_tds_of_the_never_paused_streams_is_reported_apart() -> None:
    paused, steady = (
        Request(str(i), arrival=0.0, prompt_len=10, max_tokens=10, ttft_s=1.0, tokens_per_s=4.0)
        for i in (1, 2)
    )
    for t in (1.0, 1.1, 1.2, 11.2):  # 3 tokens in 10.2 s: a 10-s pause
        paused.deliver(t)
    for t in (1.0, 1.1, 1.2, 1.3):  # 3 tokens in 0.3 s
        steady.deliver(t)
    paused.preemptions = 1
    for r in (paused, steady):
        r.finish_time = r.token_times[-1]
    res = SimulationResult([paused, steady], {}, {"waiting": [], "kv_usage": []}, 0)
    summary = res.summary()
    assert summary["tds_unpreempted"] == pytest.approx(10.0)
    assert summary["avg_tds"] == pytest.approx((3 / 10.2 + 10.0) / 2)
