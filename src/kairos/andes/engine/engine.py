"""The serving engine: the real worker of the Andes driver (model runner + detokenizer).

Deciding and executing are separate, as in vLLM v1: the driver (`kairos.andes.driver`, the
same loop the simulator runs) asks the scheduler what to run each iteration, the engine
executes it on the model (`execute`), and the driver reports back what happened. The engine
owns what the scheduler deliberately does not know: token ids, sampling, and when a request
stops (EOS, stop strings; `max_tokens` is the scheduler's). Time is wall-clock seconds since
start, so the QoE the policy optimises is the QoE the client sees.

The lock is held only while the scheduler's state changes (deciding, recording), not during
the forward pass, so requests can be added or aborted from another thread while the model
runs. `step()` runs one iteration synchronously (offline use); a server runs the driver's
loop on its engine thread (`async_engine`). An engine built without a profile runs on a
provisional one: `kairos.andes.engine.profiler.calibrated_engine` measures the real one.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kairos.andes.driver import Driver, Executed
from kairos.andes.engine.api import EngineStats, QoESpec, SamplingParams, TokenEvent
from kairos.andes.engine.config import BUILTIN_RANDOM_NAME, EngineConfig
from kairos.andes.engine.kv_cache import KVCache
from kairos.andes.engine.model import LlamaForCausalLM
from kairos.andes.engine.runner import HookFactory, ModelRunner
from kairos.andes.engine.tokenizer import ByteTokenizer, Detokenizer, HFTokenizer, Tokenizer
from kairos.andes.engine.weights import load_checkpoint, random_model
from kairos.andes.iteration import iteration_time
from kairos.andes.latency import LatencyModel, LinearProfile, load_profile
from kairos.andes.policies.registry import make_policy
from kairos.andes.policy import Policy
from kairos.andes.request import Request
from kairos.andes.scheduler import Scheduler, SchedulerConfig, SchedulerOutput
from kairos.sim import WallClock

DTYPES = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
}


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return DTYPES[name]


@dataclass
class Sequence_:
    """Engine-side state of one request: its tokens, sampling and text so far."""

    request: Request
    token_ids: list[int]
    params: SamplingParams
    generator: torch.Generator
    detok: Detokenizer
    reported: bool = False


@dataclass
class Counters:
    finished: int = 0
    aborted: int = 0
    preemptions: int = 0
    schedule_s: float = 0.0  # wall time deciding and recording (scheduler + policy)
    execute_s: float = 0.0  # wall time in the model runner (swaps, forward, sampling)
    predicted_s: float = 0.0  # what the latency profile says those iterations take
    qoe: deque[float] = field(default_factory=lambda: deque(maxlen=1024))


@dataclass
class ModelIteration(Executed):
    """An iteration the model ran: each request's new token and the text it added."""

    tokens: dict[str, int] = field(default_factory=dict)
    deltas: dict[str, str] = field(default_factory=dict)


def provisional_profile(cfg: EngineConfig) -> LinearProfile:
    """Stands in only while the engine measures itself for its real profile."""
    return LinearProfile(
        name="provisional",
        decode_coef=(0.01, 0.0, 0.0),
        prefill_coef=(0.01, 0.0, 0.0),
        swap_s_per_token=0.0,
        kv_capacity=cfg.num_gpu_blocks * cfg.block_size,
        swap_capacity=cfg.num_cpu_blocks * cfg.block_size,
        block_size=cfg.block_size,
    )


class LLMEngine:
    def __init__(
        self,
        config: EngineConfig | None = None,
        *,
        model: LlamaForCausalLM | None = None,
        tokenizer: Tokenizer | None = None,
        latency: LatencyModel | None = None,
        policy: Policy | None = None,
        clock: WallClock | None = None,
        runner_hook: HookFactory | None = None,
    ) -> None:
        """`policy` overrides `config.policy` with any object of the policy interface.
        `runner_hook` builds the runner's hook for the settings and device (on a CPU:
        kairos.andes.engine.cpu.cpu_hook, which `build_engine` there passes)."""
        self.config = cfg = config or EngineConfig()
        self._policy = policy
        self.device = resolve_device(cfg.device)
        self.dtype = resolve_dtype(cfg.dtype, self.device)
        if model is None:
            model = load_checkpoint(cfg.model) if cfg.model else random_model(seed=cfg.seed)
        if tokenizer is None:
            mc = model.config
            tokenizer = HFTokenizer(cfg.model, mc.eos_token_id) if cfg.model else ByteTokenizer()
        self.model = model.to(device=self.device, dtype=self.dtype).fuse()
        self.tokenizer = tokenizer
        self.model_name = cfg.model_name or (
            Path(cfg.model).name if cfg.model else BUILTIN_RANDOM_NAME
        )
        self.max_model_len = min(cfg.max_model_len, self.model.config.max_position_embeddings)
        self.cache = KVCache(
            self.model.config,
            cfg.num_gpu_blocks,
            cfg.num_cpu_blocks,
            cfg.block_size,
            self.dtype,
            self.device,
        )
        hook = runner_hook(cfg, self.model, self.cache, self.device) if runner_hook else None
        self.runner = ModelRunner(self.model, self.cache, self.device, hook)
        self.lock = threading.RLock()
        self.seqs: dict[str, Sequence_] = {}
        self.counters = Counters()
        self._rng = torch.Generator().manual_seed(cfg.seed)
        self.clock = clock or WallClock()
        if latency is None and cfg.profile is not None:
            latency = load_profile(cfg.profile)
        self.latency: LatencyModel = latency or provisional_profile(cfg)
        self.driver = Driver(self._new_scheduler(self.latency), self, self.clock, lock=self.lock)
        self.emit: Callable[[list[TokenEvent]], None] | None = None  # a server streams here
        self._events: list[TokenEvent] = []  # what `step()` returns, when nobody streams

    @property
    def scheduler(self) -> Scheduler:
        return self.driver.scheduler

    @scheduler.setter
    def scheduler(self, scheduler: Scheduler) -> None:
        self.driver.scheduler = scheduler

    @property
    def provisional(self) -> bool:
        """Running on the stand-in profile (measure the real one before serving)."""
        return self.latency.name == "provisional"

    def _new_scheduler(self, latency: LatencyModel) -> Scheduler:
        cfg = self.config
        return Scheduler(
            self._policy or make_policy(cfg.policy, **cfg.policy_options),
            latency,
            SchedulerConfig(
                max_num_seqs=cfg.max_num_seqs,
                max_num_batched_tokens=cfg.max_num_batched_tokens,
                chunk_size=cfg.chunk_size,
            ),
            num_gpu_blocks=cfg.num_gpu_blocks,
            num_cpu_blocks=cfg.num_cpu_blocks,
        )

    def use_latency(self, latency: LatencyModel) -> None:
        """Swap in a (re)fitted profile; only while idle (the scheduler is rebuilt)."""
        with self.lock:
            if self.scheduler.num_unfinished:
                raise RuntimeError("cannot change the latency profile while requests run")
            self.latency = latency
            self.scheduler = self._new_scheduler(latency)

    def now(self) -> float:
        return self.clock.now()

    # -- requests ------------------------------------------------------------------------
    def add_request(
        self, request_id: str, prompt_ids: Sequence[int], params: SamplingParams, qoe: QoESpec
    ) -> Request:
        """Queue a request. ValueError if it could never run (the engine state is untouched)."""
        n = len(prompt_ids)
        if n < 1:
            raise ValueError("the prompt is empty")
        if n >= self.max_model_len:
            raise ValueError(
                f"prompt of {n} tokens leaves no room for output (max_model_len="
                f"{self.max_model_len})"
            )
        vocab = self.model.config.vocab_size
        if any(not 0 <= t < vocab for t in prompt_ids):
            raise ValueError(f"prompt token ids must be in [0, {vocab})")
        if params.seed is not None and not 0 <= params.seed < 2**63:
            raise ValueError(f"seed must be in [0, 2**63), got {params.seed}")
        if request_id in self.seqs:
            raise ValueError(f"request id '{request_id}' is already running")
        # All-or-nothing: everything that can fail is built before the scheduler hears of the
        # request, so a refusal leaves no half-registered request holding blocks.
        gen = torch.Generator().manual_seed(params.seed) if params.seed is not None else self._rng
        detok = Detokenizer(self.tokenizer, params.stop)
        with self.lock:
            req = Request(
                request_id=request_id,
                arrival=self.now(),
                prompt_len=n,
                max_tokens=min(params.max_tokens, self.max_model_len - n),
                ttft_s=qoe.ttft_s,
                tokens_per_s=qoe.tokens_per_s,
            )
            self.seqs[request_id] = Sequence_(req, list(prompt_ids), params, gen, detok)
            try:
                self.scheduler.add_request(req)
            except BaseException:
                self.seqs.pop(request_id)
                raise
        self.driver.wake()
        return req

    def abort(self, request_id: str) -> None:
        with self.lock:
            if request_id not in self.seqs:
                return
            self.scheduler.finish_requests([request_id], self.now(), "abort")
            self.seqs.pop(request_id)
            self.counters.aborted += 1
        self.driver.wake()  # its blocks are free: a waiting request may fit now

    @property
    def has_unfinished(self) -> bool:
        return self.scheduler.num_unfinished > 0

    # -- one iteration (the driver's worker) ------------------------------------------------
    def step(self) -> list[TokenEvent]:
        """One iteration now (offline use): the events it produced."""
        self.driver.run_once()
        events, self._events = self._events, []
        return events

    def execute(self, out: SchedulerOutput) -> ModelIteration:
        t0 = time.perf_counter()
        decision = out.decision()  # what the runner executes (and a decision log holds)
        with self.lock:
            self.counters.preemptions += len(decision.preempted) + len(out.swap_out)
            if any(s.request_id not in self.seqs for s in decision.steps):
                # aborted from another thread since the decision: its blocks are free and
                # its token would be dropped, so it is not computed
                live = tuple(s for s in decision.steps if s.request_id in self.seqs)
                decision = dataclasses.replace(decision, steps=live)
            block_tables = self.scheduler.blocks.tables
            tables, tokens, params, generators = {}, {}, {}, {}
            for rid in (s.request_id for s in decision.steps):
                seq = self.seqs[rid]
                tables[rid] = list(block_tables[rid])  # copies: another thread may add/abort
                tokens[rid], params[rid], generators[rid] = seq.token_ids, seq.params, seq.generator
        t1 = time.perf_counter()
        new = self.runner.execute(decision, tokens, tables, params, generators)
        t2 = time.perf_counter()
        with self.lock:
            done = self._take(new)
        self.counters.schedule_s += out.decision_s + (t1 - t0) + (time.perf_counter() - t2)
        self.counters.execute_s += t2 - t1
        regather = self.runner.last_stage != "reuse"
        self.counters.predicted_s += iteration_time(self.latency, out, regather=regather)
        return done

    def _take(self, new: dict[str, int]) -> ModelIteration:
        """Append the new tokens and find the requests they stop (EOS, stop strings)."""
        eos = self.tokenizer.eos_token_id
        done = ModelIteration()
        for rid, tok in new.items():
            seq = self.seqs.get(rid)
            if seq is None or seq.request.is_finished:
                continue  # aborted while the model ran
            seq.token_ids.append(tok)
            is_eos = tok == eos and not seq.params.ignore_eos
            delta, hit = ("", False) if is_eos else seq.detok.add(tok)
            done.tokens[rid], done.deltas[rid] = tok, delta
            if hit or is_eos:
                done.stopped.append(rid)
        return done

    def recorded(self, out: SchedulerOutput, executed: Executed, t: float) -> None:
        """The scheduler recorded the iteration: stream every new token and every end."""
        ran = executed if isinstance(executed, ModelIteration) else ModelIteration()
        events: list[TokenEvent] = []
        with self.lock:
            for rid, delta in ran.deltas.items():
                seq = self.seqs.get(rid)
                if seq is not None:  # not aborted meanwhile
                    events.append(self._event(seq, ran.tokens[rid], delta, t))
            for r in out.finished:  # stopped inside schedule(): its context outgrew the cache
                seq = self.seqs.get(r.request_id)
                if seq is not None and not seq.reported:
                    events.append(self._event(seq, None, "", t))
        if self.emit is not None:
            self.emit(events)
        else:
            self._events.extend(events)

    def _event(self, seq: Sequence_, token: int | None, delta: str, t: float) -> TokenEvent:
        r = seq.request
        reason = r.finish_reason if r.is_finished else None
        if reason:
            delta += seq.detok.flush()
            seq.reported = True
            self.seqs.pop(r.request_id, None)
            self.counters.finished += 1
            self.counters.qoe.append(r.qoe.qoe_at(t, finished=True))
        return TokenEvent(
            request_id=r.request_id,
            token_id=token,
            text=delta,
            time=t,
            prompt_tokens=r.prompt_len,
            completion_tokens=r.generated,
            finish_reason=reason,
        )

    def stats(self) -> EngineStats:
        with self.lock:
            s = self.scheduler
            return EngineStats(
                running=len(s.running),
                waiting=len(s.waiting),
                swapped=len(s.swapped),
                preempted_total=self.counters.preemptions,
                kv_usage=s.blocks.usage,
                num_gpu_blocks=s.blocks.gpu.num_blocks,
                num_cpu_blocks=s.blocks.cpu.num_blocks,
                free_gpu_blocks=s.blocks.gpu.free,
                iterations=s.iteration,
                finished=self.counters.finished,
                aborted=self.counters.aborted,
                busy_s=self.counters.schedule_s + self.counters.execute_s,
                predicted_busy_s=self.counters.predicted_s,
                qoe=tuple(self.counters.qoe),
            )

    # -- offline use -----------------------------------------------------------------------
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        qoe: QoESpec | None = None,
    ) -> list[list[int]]:
        """Run prompts to completion together; the output token ids of each."""
        spec = qoe or QoESpec(ttft_s=1.0, tokens_per_s=5.0)
        ids = [f"offline-{i}-{time.monotonic_ns()}" for i in range(len(prompts))]
        seqs = [self.add_request(rid, p, params, spec) for rid, p in zip(ids, prompts, strict=True)]
        outputs: dict[str, list[int]] = {rid: [] for rid in ids}
        while any(not r.is_finished for r in seqs):
            for ev in self.step():
                if ev.token_id is not None and ev.request_id in outputs:
                    outputs[ev.request_id].append(ev.token_id)
        return [outputs[rid] for rid in ids]
