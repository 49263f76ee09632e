"""`kairos bench`: an open-loop load generator with a QoE report for any OpenAI-compatible server.

A workload is a list of requests, each with an arrival offset, a prompt, `max_tokens` and QoE
parameters, from a cyclic-burst or Poisson process (lengths from a named dataset, built exactly
as the simulator builds them) or from an Azure or BurstGPT trace file (scaled in time or to a
rate, cut to a window and a count). Requests are sent at their offsets whatever the server's
progress (open loop, like `vllm bench serve`), optionally capped at `max_concurrency` in flight.

Prompt text and workload construction: see `bench_workload`.

Output lengths follow the trace: `max_tokens` = the trace's output length (after scaling and
clipping) and `ignore_eos: true` (a vLLM extension) keeps the model from stopping early.
QoE parameters go in the extra body field `qoe: {ttft_s, tokens_per_s}`; servers that do not
know it ignore it. Token counting: every content chunk counts as one token unless
`continuous_usage_stats` is on (vLLM's `stream_options` flag; usage in every chunk), in which case
a chunk counts the growth of `completion_tokens` since the previous content chunk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kairos.andes.client.bench_report import RequestRecord, aggregate, parse_goodput, save_plots
from kairos.andes.client.bench_workload import BenchError, BenchRequest, build_workload
from kairos.andes.client.sse import StreamError, openai_chunk, openai_events, read_chunk

if TYPE_CHECKING:
    import httpx
    from httpx_sse import ServerSentEvent

Workload = Literal["cyclic", "poisson", "azure", "burstgpt"]


class BenchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_url: str = "http://127.0.0.1:8000"
    endpoint: Literal["completions", "chat"] = "completions"
    model: str | None = None  # default: the first model of GET /v1/models
    api_key: str | None = None  # default: $OPENAI_API_KEY when set
    # workload
    workload: Workload = "cyclic"
    trace: Path | None = None  # azure: defaults to the shared one-hour Azure trace
    rate: float | None = Field(None, gt=0)  # average req/s (synthetic: default 1; trace: rescale)
    time_scale: float | None = Field(None, gt=0)  # trace: multiply timestamps (2 = half the rate)
    intensity: float = Field(2.0, ge=1.0)
    burst_duration: float = Field(0.35, gt=0.0, lt=1.0)
    cycle_s: float | None = Field(None, gt=0)  # default: one cycle over the run
    duration_s: float | None = Field(None, gt=0)  # synthetic: default 60 s; trace: a cut
    trace_start_s: float = Field(0.0, ge=0)
    num_requests: int | None = Field(None, ge=1)
    dataset: Literal["sharegpt", "arxiv", "coding", "azure"] = "sharegpt"
    prompt_scale: float = Field(1.0, gt=0)
    output_scale: float = Field(1.0, gt=0)
    max_prompt_tokens: int | None = Field(None, ge=1)
    max_output_tokens: int | None = Field(None, ge=1)
    chars_per_token: float = Field(1.0, gt=0)
    # QoE
    profile: Literal["reader", "listener"] = "reader"
    prefill_tokens_per_s: float = Field(5000.0, gt=0)
    qoe_ttft_s: float | None = Field(None, ge=0)  # override every request's TTFT target
    qoe_tokens_per_s: float | None = Field(None, gt=0)  # override every request's speed
    send_qoe: bool = True
    # request shape and client
    ignore_eos: bool = True
    temperature: float = Field(0.0, ge=0)
    continuous_usage_stats: bool = False
    extra_body: dict[str, Any] = Field(default_factory=dict)
    seed: int = Field(0, ge=0)
    max_concurrency: int | None = Field(None, ge=1)
    request_timeout_s: float = Field(600.0, gt=0)
    connect_timeout_s: float = Field(10.0, gt=0)
    goodput: dict[str, float] = Field(default_factory=dict)  # SLOs in ms: ttft, tpot, e2el
    out: Path | None = Path("results/bench-client")  # None: write nothing
    name: str | None = None  # result file stem; default bench_<workload>_<time>
    plots: bool = True

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")) or len(v.split("://", 1)[1]) == 0:
            raise ValueError(f"must be an http:// or https:// URL, got {v!r}")
        return v

    @field_validator("goodput")
    @classmethod
    def _goodput(cls, v: dict[str, float]) -> dict[str, float]:
        return parse_goodput(f"{k}:{x}" for k, x in v.items())

    @model_validator(mode="after")
    def _consistent(self) -> BenchConfig:
        if self.workload == "burstgpt" and self.trace is None:
            raise ValueError("the burstgpt workload needs a trace file (--trace PATH)")
        if self.rate is not None and self.time_scale is not None:
            raise ValueError("give either rate or time_scale for a trace, not both")
        if self.workload == "cyclic" and self.intensity * self.burst_duration >= 1.0:
            raise ValueError(
                f"intensity * burst_duration must be < 1, got "
                f"{self.intensity} * {self.burst_duration}"
            )
        return self


@dataclass
class BenchResult:
    config: BenchConfig
    model: str
    summary: dict[str, Any]
    requests: list[RequestRecord]
    json_path: Path | None = None
    plots: list[Path] = field(default_factory=list)


def request_body(cfg: BenchConfig, model: str, req: BenchRequest) -> dict[str, Any]:
    options: dict[str, Any] = {"include_usage": True}
    if cfg.continuous_usage_stats:
        options["continuous_usage_stats"] = True
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": req.max_tokens,
        "temperature": cfg.temperature,
        "stream": True,
        "stream_options": options,
    }
    if cfg.endpoint == "chat":
        body["messages"] = [{"role": "user", "content": req.prompt}]
    else:
        body["prompt"] = req.prompt
    if cfg.ignore_eos:
        body["ignore_eos"] = True
    if cfg.send_qoe:
        body["qoe"] = {"ttft_s": req.ttft_s, "tokens_per_s": req.tokens_per_s}
    body.update(cfg.extra_body)
    return body


def _one_line(text: str, limit: int = 200) -> str:
    return " ".join(text.split())[:limit]


class _Stream:
    """Reads one streaming response into its record, timestamping every content chunk."""

    def __init__(self, rec: RequestRecord, continuous_usage: bool) -> None:
        self.rec, self.continuous, self.done, self.counted = rec, continuous_usage, False, 0

    def handle(self, event: ServerSentEvent, now: float) -> bool:
        """Take one event; False once the stream is over ([DONE] or an error)."""
        rec = self.rec
        try:
            obj = openai_chunk(event)
        except StreamError as exc:
            rec.error = str(exc)
            return False
        if obj is None:
            self.done = True
            return False
        chunk = read_chunk(obj)
        if chunk.text:
            n = 1
            if self.continuous and chunk.completion_tokens is not None:
                n = max(1, chunk.completion_tokens - self.counted)
            self.counted += n
            rec.chunk_times.append(now)
            rec.chunk_tokens.append(n)
        if chunk.completion_tokens is not None:
            rec.usage_completion_tokens = chunk.completion_tokens
        if chunk.prompt_tokens is not None:
            rec.usage_prompt_tokens = chunk.prompt_tokens
        rec.finish_reason = chunk.finish_reason or rec.finish_reason
        return True


async def _stream_one(
    client: httpx.AsyncClient,
    path: str,
    body: dict[str, Any],
    rec: RequestRecord,
    send: float,
    cont: bool,
) -> None:
    async with client.stream("POST", path, json=body) as resp:
        rec.status_code = resp.status_code
        if resp.status_code >= 400:
            detail = (await resp.aread()).decode("utf-8", errors="replace")
            rec.error = f"HTTP {resp.status_code}: {_one_line(detail)}"
            return
        reader = _Stream(rec, cont)
        try:
            async for event in openai_events(resp):
                if not reader.handle(event, time.perf_counter() - send):
                    return
        except StreamError as exc:
            rec.error = str(exc)
            return
        if not reader.done and rec.finish_reason is None:
            rec.error = "broken stream: the connection closed before [DONE]"


async def _resolve_model(client: httpx.AsyncClient, cfg: BenchConfig) -> str:
    import httpx

    try:
        resp = await client.get("/v1/models")
    except httpx.HTTPError as exc:
        why = _one_line(str(exc)) or type(exc).__name__
        raise BenchError(f"cannot reach the server at {cfg.base_url}: {why}") from None
    if cfg.model is not None:
        return cfg.model
    try:
        resp.raise_for_status()
        return str(resp.json()["data"][0]["id"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
        raise BenchError(
            f"could not read a model from {cfg.base_url}/v1/models "
            f"(HTTP {resp.status_code}); pass --model"
        ) from None


def _base(url: str) -> str:
    url = url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


async def run_bench(
    config: BenchConfig, progress: Callable[[int, int], None] | None = None
) -> BenchResult:
    """Send the workload, score every request, and write the result (unless `out` is None)."""
    import httpx

    requests = build_workload(config)
    key = config.api_key or os.environ.get("OPENAI_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    width = config.max_concurrency or len(requests)
    limits = httpx.Limits(max_connections=width, max_keepalive_connections=width)
    timeout = httpx.Timeout(
        connect=config.connect_timeout_s,
        read=config.request_timeout_s,
        write=config.connect_timeout_s,
        pool=None,
    )
    path = "/v1/chat/completions" if config.endpoint == "chat" else "/v1/completions"
    records = [
        RequestRecord(r.index, r.arrival_s, r.prompt_tokens, r.max_tokens, r.ttft_s, r.tokens_per_s)
        for r in requests
    ]
    gate = asyncio.Semaphore(config.max_concurrency) if config.max_concurrency else None
    finished = 0

    async def one(req: BenchRequest, rec: RequestRecord, t0: float) -> None:
        nonlocal finished
        await asyncio.sleep(max(0.0, t0 + req.arrival_s - time.perf_counter()))
        async with gate or contextlib.nullcontext():
            send = time.perf_counter()
            rec.send_s = send - t0
            try:
                async with asyncio.timeout(config.request_timeout_s):
                    body = request_body(config, model, req)
                    await _stream_one(client, path, body, rec, send, config.continuous_usage_stats)
            except TimeoutError:
                rec.error = f"timeout: no complete answer within {config.request_timeout_s:g} s"
            except httpx.TimeoutException as exc:
                rec.error = f"timeout: {type(exc).__name__}"
            except (httpx.HTTPError, OSError) as exc:
                rec.error = f"{type(exc).__name__}: {_one_line(str(exc))}"
            except Exception as exc:  # anything else still fails only this request, by name
                rec.error = f"client error {type(exc).__name__}: {_one_line(str(exc))}"
        finished += 1
        if progress is not None:
            progress(finished, len(records))

    async with httpx.AsyncClient(
        base_url=_base(config.base_url), headers=headers, limits=limits, timeout=timeout
    ) as client:
        model = await _resolve_model(client, config)
        t0 = time.perf_counter()
        await asyncio.gather(*(one(q, r, t0) for q, r in zip(requests, records, strict=True)))
        duration = time.perf_counter() - t0
    for rec in records:
        rec.score()
    summary = aggregate(records, duration, config.goodput)
    result = BenchResult(config, model, summary, records)
    if config.out is not None:
        _write(result, config.out)
    return result


def _write(result: BenchResult, out: Path) -> None:
    from kairos.report import write_result

    cfg = result.config
    name = cfg.name or f"bench_{cfg.workload}_{datetime.now():%Y%m%d-%H%M%S}"
    dump = cfg.model_dump(mode="json")
    dump["api_key"] = "***" if cfg.api_key else None  # never write a secret into a result
    dump["resolved_model"] = result.model
    rows = [r.row() for r in result.requests]
    result.json_path, _ = write_result(
        out, name, config=dump, rows=rows, summary=result.summary, seed=cfg.seed
    )
    if cfg.plots:
        result.plots = save_plots(result.requests, out, name)
