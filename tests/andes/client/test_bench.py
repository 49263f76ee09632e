"""`kairos bench`: workloads, SSE parsing, metric aggregation, and runs over a real socket."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import typer
from httpx_sse import ServerSentEvent
from pydantic import ValidationError
from typer.testing import CliRunner

from kairos.andes.client.bench import BenchConfig, BenchError, build_workload, run_bench
from kairos.andes.client.bench_cli import bench_command
from kairos.andes.client.bench_report import RequestRecord, aggregate, parse_goodput
from kairos.andes.client.sse import Chunk, StreamError, openai_chunk, openai_events, read_chunk
from kairos.andes.experiments.workload import SimPoint, build_trace
from kairos.andes.qoe import LISTENER_SPEEDS, READER_SPEEDS, qoe_at
from kairos.runtime.ports import free_port
from tests.andes.client.fake_openai import FakeOpenAI

# ---------------------------------------------------------------- workloads


def test_synthetic_workload_is_the_simulators_and_deterministic() -> None:
    cfg = BenchConfig(workload="poisson", rate=5.0, duration_s=20.0, seed=3)
    reqs = build_workload(cfg)
    trace, speeds = build_trace(SimPoint(arrival="poisson", rate=5.0, span_s=20.0, seed=3))
    assert len(reqs) == len(trace) > 50
    assert [r.arrival_s for r in reqs] == trace.arrivals.tolist()
    assert np.all(np.diff([r.arrival_s for r in reqs]) >= 0)
    assert [r.tokens_per_s for r in reqs] == speeds.tolist()
    assert [r.prompt for r in build_workload(cfg)] == [r.prompt for r in reqs]
    other = build_workload(cfg.model_copy(update={"seed": 4}))
    assert [r.prompt for r in other] != [r.prompt for r in reqs]


def test_cyclic_workload_bursts_and_counts() -> None:
    cfg = BenchConfig(
        workload="cyclic", rate=4.0, intensity=2.5, burst_duration=0.2, duration_s=100
    )
    t = np.array([r.arrival_s for r in build_workload(cfg)])
    burst, calm = (t < 20).sum() / 20, (t >= 20).sum() / 80  # 10 req/s, then 2.5 req/s
    assert burst > 2 * calm
    assert len(build_workload(cfg.model_copy(update={"num_requests": 7}))) == 7


def test_scaling_and_clipping() -> None:
    base = BenchConfig(workload="poisson", rate=5.0, duration_s=20.0)
    raw = build_trace(SimPoint(arrival="poisson", rate=5.0, span_s=20.0))[0]
    cfg = base.model_copy(
        update={"prompt_scale": 0.5, "max_prompt_tokens": 64, "max_output_tokens": 16}
    )
    reqs = build_workload(cfg)
    want = np.minimum(np.maximum(np.rint(raw.prompt_tokens * 0.5), 1), 64)
    assert [r.prompt_tokens for r in reqs] == want.astype(int).tolist()
    assert [r.max_tokens for r in reqs] == np.minimum(raw.output_tokens, 16).tolist()
    assert any(r.prompt_tokens == 64 for r in reqs) and any(r.max_tokens == 16 for r in reqs)


def test_prompt_text_matches_a_byte_level_token_count() -> None:
    cfg = BenchConfig(workload="poisson", rate=5.0, duration_s=10.0, max_prompt_tokens=2000)
    for r in build_workload(cfg):  # byte-level: exactly one byte per token
        assert len(r.prompt.encode("utf-8")) == r.prompt_tokens
        assert set(r.prompt) <= set("abcdefghijklmnopqrstuvwxyz ") and "  " not in r.prompt
    long = build_workload(cfg.model_copy(update={"chars_per_token": 4.0}))
    assert all(len(r.prompt) == round(4.0 * r.prompt_tokens) for r in long)
    words = " ".join(r.prompt for r in long).split()
    assert 3.0 < np.mean([len(w) for w in words]) < 8.0


def test_qoe_parameters() -> None:
    cfg = BenchConfig(workload="poisson", rate=5.0, duration_s=30.0, prefill_tokens_per_s=1000)
    reqs = build_workload(cfg)
    assert {r.tokens_per_s for r in reqs} <= {s for s, _ in READER_SPEEDS}
    assert all(r.ttft_s == max(r.prompt_tokens / 1000, 1.0) for r in reqs)
    assert any(r.ttft_s > 1.0 for r in reqs)
    listen = build_workload(cfg.model_copy(update={"profile": "listener"}))
    assert {r.tokens_per_s for r in listen} <= {s for s, _ in LISTENER_SPEEDS}
    fixed = build_workload(cfg.model_copy(update={"qoe_ttft_s": 0.5, "qoe_tokens_per_s": 9.0}))
    assert {(r.ttft_s, r.tokens_per_s) for r in fixed} == {(0.5, 9.0)}


def test_azure_trace_rate_window_and_count(data_dir: Path) -> None:
    path = data_dir / "azure_llm_conv_1h.csv"
    reqs = build_workload(BenchConfig(workload="azure", trace=path, rate=2.0, duration_s=300))
    t = np.array([r.arrival_s for r in reqs])
    assert t.min() >= 0 and t.max() < 300 and np.all(np.diff(t) >= 0)
    assert 300 < len(reqs) < 900  # 2 req/s on average over the hour, with real bursts
    cut = build_workload(BenchConfig(workload="azure", trace=path, time_scale=2.0, num_requests=5))
    from kairos.workloads import read_azure_csv

    raw = read_azure_csv(path)
    assert [r.arrival_s for r in cut] == pytest.approx(2 * (raw.arrivals[:5] - raw.arrivals[0]))
    assert [r.max_tokens for r in cut] == raw.output_tokens[:5].tolist()


BURSTGPT = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"


def test_burstgpt_trace_and_bad_files(tmp_path: Path) -> None:
    good = tmp_path / "b.csv"
    good.write_text(BURSTGPT + "5,ChatGPT,10,20,30,Conversation log\n7,GPT-4,40,50,90,API log\n")
    reqs = build_workload(BenchConfig(workload="burstgpt", trace=good))
    assert [(r.arrival_s, r.prompt_tokens, r.max_tokens) for r in reqs] == [
        (0, 10, 20),
        (2, 40, 50),
    ]
    bad = tmp_path / "bad.csv"
    bad.write_text(BURSTGPT + "5,ChatGPT,ten,20,30,Conversation log\n")
    with pytest.raises(BenchError, match=r"line 2.*Request tokens"):
        build_workload(BenchConfig(workload="burstgpt", trace=bad))
    with pytest.raises(BenchError, match="not found"):
        build_workload(BenchConfig(workload="burstgpt", trace=tmp_path / "missing.csv"))
    with pytest.raises(ValidationError, match="needs a trace"):
        BenchConfig(workload="burstgpt")
    with pytest.raises(ValidationError, match="intensity"):
        BenchConfig(workload="cyclic", intensity=3.0, burst_duration=0.4)


# ---------------------------------------------------------------- SSE


STREAM = (
    b": keep-alive\r\n\r\n"
    b'data: {"choices":[{"text":"h\xc3\xa9"}]}\r\n\r\n'
    b'data: {"choices":[{"delta":{"content":"!"}}]}\n\n'
    b"event: error\ndata: engine failed\n\n"
    b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n'
    b"data: [DONE]\n\n"
)
SSE_HEADERS = {"content-type": "text/event-stream"}


def _events(body: bytes, step: int | None = None) -> list[ServerSentEvent]:
    """The events httpx-sse decodes from `body`, delivered whole or `step` bytes at a time."""

    async def parts() -> AsyncIterator[bytes]:
        n = step or len(body)
        for i in range(0, len(body), n):
            yield body[i : i + n]

    async def go() -> list[ServerSentEvent]:
        resp = httpx.Response(200, headers=SSE_HEADERS, content=parts())
        return [ev async for ev in openai_events(resp)]

    return asyncio.run(go())


def _key(ev: ServerSentEvent) -> tuple[str, str]:
    return ev.event, ev.data


def test_sse_split_reads_give_the_same_events() -> None:
    whole = _events(STREAM)
    assert [_key(e) for e in _events(STREAM, 1)] == [_key(e) for e in whole]
    assert len(whole) == 5
    assert _key(whole[1]) == ("message", '{"choices":[{"delta":{"content":"!"}}]}')
    assert _key(whole[2]) == ("error", "engine failed") and whole[3].event == "message"
    assert openai_chunk(whole[4]) is None


def test_sse_bare_cr_lines_and_a_body_that_is_not_an_event_stream() -> None:
    events = _events(b"data: a\r\rdata: b\r\r", 3)  # a split \r may be half of \r\n
    assert [e.data for e in events] == ["a", "b"]

    async def go() -> None:
        resp = httpx.Response(200, json={"choices": []})
        [ev async for ev in openai_events(resp)]

    with pytest.raises(StreamError, match="not an event stream"):
        asyncio.run(go())


def _chunk(data: str, event: str = "message") -> Chunk:
    obj = openai_chunk(ServerSentEvent(event=event, data=data))
    assert obj is not None
    return read_chunk(obj)


def test_chunk_shapes_and_clear_errors() -> None:
    events = _events(STREAM)
    assert _chunk(events[0].data).text == "hé"
    assert _chunk(events[1].data).text == "!"
    usage = _chunk(events[3].data)
    assert (usage.text, usage.completion_tokens, usage.prompt_tokens) == ("", 2, 3)
    fin = _chunk('{"choices":[{"text":"","finish_reason":"length"}]}')
    assert fin.finish_reason == "length" and fin.text == ""
    for data, event, message in [
        ("engine failed", "error", "server error event: engine failed"),
        ('{"error":{"message":"boom","type":"internal"}}', "message", "internal: boom"),
        ("{oops", "message", "not JSON.*oops"),
        ("[1, 2]", "message", "not an object"),
    ]:
        with pytest.raises(StreamError, match=message):
            openai_chunk(ServerSentEvent(event=event, data=data))


# ---------------------------------------------------------------- metrics


def _rec(i: int, times: list[float], tokens: list[int], ttft: float, speed: float) -> RequestRecord:
    r = RequestRecord(i, 0.0, 10, 8, ttft, speed, send_s=0.0)
    r.chunk_times, r.chunk_tokens = times, tokens
    return r.score()


def test_aggregate_against_hand_computed_values() -> None:
    a = _rec(0, [0.5, 0.7, 0.9, 1.3], [1, 1, 1, 1], 1.0, 5.0)
    b = _rec(1, [2.0, 2.1], [1, 1], 1.0, 5.0)
    c = RequestRecord(2, 0.0, 10, 8, 1.0, 5.0, send_s=0.1, error="HTTP 500: boom").score()
    d = _rec(3, [0.2, 0.6], [1, 3], 1.0, 10.0)  # a chunk carrying three tokens
    assert (a.ttft_s, a.tpot_s, a.e2el_s, a.tds, a.qoe) == pytest.approx(
        (0.5, 0.8 / 3, 1.3, 3.75, 1)
    )
    # b: ideal 1.0, 1.2; consumed 2.0, 2.2 -> delay 2.0, whole 1.2 + 1.0
    assert b.qoe == pytest.approx(1 - 2.0 / 2.2) == qoe_at([2.0, 2.1], 0.0, 1.0, 5.0)
    assert (d.tpot_s, d.tds, *d.itl(), d.output_tokens) == pytest.approx((0.4 / 3, 7.5, 0.4, 4))
    s = aggregate([a, b, c, d], 4.0, {"ttft": 1000})
    assert (s["completed"], s["failed"], s["requests"]) == (3, 1, 4)
    assert s["request_throughput"] == 0.75 and s["output_throughput"] == 2.5
    assert s["mean_ttft_ms"] == pytest.approx(900) and s["median_ttft_ms"] == pytest.approx(500)
    assert s["mean_itl_ms"] == pytest.approx(260) and s["median_itl_ms"] == pytest.approx(200)
    assert s["mean_tpot_ms"] == pytest.approx((800 / 3 + 100 + 400 / 3) / 3)
    assert s["mean_e2el_ms"] == pytest.approx((1300 + 2100 + 600) / 3)
    assert s["avg_qoe"] == pytest.approx((2 + 1 - 2 / 2.2) / 3)
    assert s["avg_qoe_all"] == pytest.approx((2 + 1 - 2 / 2.2) / 4)
    assert s["share_qoe_095"] == pytest.approx(2 / 3)
    assert s["request_goodput"] == 0.5  # a and d meet TTFT <= 1 s
    assert aggregate([a, b, c, d], 4.0, {"ttft": 1000, "tpot": 150})["request_goodput"] == 0.25
    assert aggregate([a, b, c, d], 4.0, {"e2el": 1000})["request_goodput"] == 0.25
    one = _rec(4, [0.1], [1], 1.0, 5.0)  # a one-token answer's TPOT counts as 0 for goodput
    assert aggregate([one], 1.0, {"tpot": 1})["request_goodput"] == 1.0
    assert s["errors"] == {"HTTP 500": 1}


def test_parse_goodput() -> None:
    assert parse_goodput(["ttft:500", "tpot:50"]) == {"ttft": 500.0, "tpot": 50.0}
    assert parse_goodput(["ttft:500,e2el:2000"]) == {"ttft": 500.0, "e2el": 2000.0}
    for bad in ("itl:5", "ttft", "ttft:-1", "ttft:x"):
        with pytest.raises(ValueError, match="goodput"):
            parse_goodput([bad])


# ---------------------------------------------------------------- over a real socket


def _cfg(url: str, out: Path | None, **kw: object) -> BenchConfig:
    base: dict[str, object] = {
        "base_url": url,
        "workload": "poisson",
        "rate": 20.0,
        "num_requests": 6,
    }
    base |= {"max_prompt_tokens": 32, "max_output_tokens": 4, "out": out, "name": "run"}
    return BenchConfig.model_validate(base | kw)


def test_end_to_end_timing_qoe_and_failures(tmp_path: Path) -> None:
    with FakeOpenAI(ttft=0.1, itl=0.05, fail_every=3) as fake:
        cfg = _cfg(fake.url, tmp_path, qoe_ttft_s=0.05, goodput={"ttft": 1000})
        res = asyncio.run(run_bench(cfg))
    assert res.model == "fake-model" and len(fake.bodies) == 6
    assert (res.summary["completed"], res.summary["failed"]) == (4, 2)
    body = fake.bodies[0]
    assert body["model"] == "fake-model" and body["stream"] and body["ignore_eos"]
    assert body["stream_options"] == {"include_usage": True}
    assert body["qoe"]["ttft_s"] == 0.05 and body["qoe"]["tokens_per_s"] > 3
    assert fake.paths == ["/v1/completions"] * 6
    prompts = [q.prompt for q in build_workload(cfg)]
    for r in res.requests:
        if not r.ok:
            assert str(r.error).startswith("HTTP 500") and r.chunk_times == []
            continue
        assert len(r.chunk_times) == r.max_tokens == r.usage_completion_tokens
        assert 0.1 <= r.ttft_s < 5.0  # the server sleeps 0.1 s before the first token
        # the recorded gaps reproduce the server's actual write times: most within 20 ms (a
        # loaded machine delays a read now and then, which moves two gaps, never the median)
        server_gaps = np.diff(fake.emitted[prompts[r.index]])
        assert np.all(server_gaps >= 0.05)
        errors = np.abs(np.asarray(r.itl()) - server_gaps)
        assert len(errors) == len(server_gaps) and np.median(errors) <= 0.02, errors
        assert 0 < r.qoe < 1 and r.qoe == qoe_at(r.chunk_times, 0.0, 0.05, r.tokens_per_s)
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["summary"]["failed"] == 2 and len(data["rows"]) == 6
    assert data["rows"][0]["chunk_times"] == res.requests[0].chunk_times
    assert data["config"]["resolved_model"] == "fake-model"
    assert (tmp_path / "run_qoe_cdf.png").is_file() and (tmp_path / "run_ttft_cdf.png").is_file()


@pytest.mark.parametrize(
    ("mode", "error"), [("error_event", "server error event"), ("broken", "broken stream")]
)
def test_broken_streams_are_recorded_not_fatal(mode: str, error: str) -> None:
    with FakeOpenAI(ttft=0.01, itl=0.01, mode=mode) as fake:
        res = asyncio.run(run_bench(_cfg(fake.url, None, num_requests=2)))
    assert res.summary["failed"] == 2 and res.summary["completed"] == 0
    assert all(
        r.error and r.error.startswith(error) and len(r.chunk_times) == 2 for r in res.requests
    )


def test_timeouts_are_recorded_per_request() -> None:
    with FakeOpenAI(ttft=0.6) as fake:
        res = asyncio.run(run_bench(_cfg(fake.url, None, num_requests=2, request_timeout_s=0.15)))
    assert res.summary["failed"] == 2 and res.summary["errors"] == {"timeout": 2}


def test_chat_endpoint_and_tokens_per_chunk() -> None:
    with FakeOpenAI(ttft=0.01, itl=0.01, mode="continuous") as fake:
        cfg = _cfg(fake.url, None, endpoint="chat", continuous_usage_stats=True, num_requests=2)
        res = asyncio.run(run_bench(cfg))
    assert fake.paths == ["/v1/chat/completions"] * 2 and "messages" in fake.bodies[0]
    assert fake.bodies[0]["stream_options"]["continuous_usage_stats"] is True
    for r in res.requests:
        assert r.ok and sum(r.chunk_tokens) == r.max_tokens and r.chunk_tokens[0] == 2


def test_unreachable_server_is_a_clear_error() -> None:
    cfg = _cfg(f"http://127.0.0.1:{free_port()}", None)
    with pytest.raises(BenchError, match="cannot reach the server"):
        asyncio.run(run_bench(cfg))


# ---------------------------------------------------------------- CLI

cli = typer.Typer()
cli.command("bench")(bench_command)


@cli.callback()
def _root() -> None:
    """Keeps `bench` a sub-command, as on the real root app."""


runner = CliRunner(env={"COLUMNS": "200"})
SMALL = ["--workload", "poisson", "--rate", "20", "--num-requests", "3", "--max-output-tokens", "3"]


def test_cli_writes_the_result(tmp_path: Path) -> None:
    with FakeOpenAI(ttft=0.01, itl=0.01) as fake:
        args = ["bench", "--base-url", fake.url + "/v1", *SMALL, "--out", str(tmp_path)]
        result = runner.invoke(cli, [*args, "--name", "cli", "--goodput", "ttft:1000"])
    assert result.exit_code == 0, result.output
    assert "Average QoE" in result.output and "Request goodput" in result.output
    data = json.loads((tmp_path / "cli.json").read_text())
    assert data["summary"]["completed"] == 3 and data["summary"]["request_goodput"] > 0


def test_cli_fails_when_no_request_completes(tmp_path: Path) -> None:
    with FakeOpenAI(fail_every=1) as fake:
        args = ["bench", "--base-url", fake.url, *SMALL, "--out", str(tmp_path), "--no-plots"]
        result = runner.invoke(cli, args)
    assert result.exit_code == 1
    assert "no request completed; the first failure: HTTP 500" in result.output
    assert len(list(tmp_path.glob("bench_poisson_*.json"))) == 1  # the result is still written


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workload", "burstgpt", "--trace", "/nonexistent/x.csv"], "trace file not found"),
        (["--workload", "nope"], "invalid workload"),
        (["--goodput", "itl:5"], "KEY:MILLISECONDS"),
        (["--base-url", "http://127.0.0.1:1"], "cannot reach the server"),
    ],
)
def test_cli_bad_inputs_are_one_line_errors(args: list[str], message: str, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["bench", *SMALL, *args, "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
