"""Non-streaming answers, models, health, metrics, the chat page and the engine lifecycle."""

from __future__ import annotations

import math
import re
from pathlib import Path

import httpx
import pytest

import kairos.andes.server.app as app_module
from kairos.andes.server import BackgroundServer, ServerSettings, create_app
from tests.andes.server.conftest import CHAT, Live, chat_body
from tests.andes.server.fake_engine import FakeEngine
from tests.scrape import scrape


def test_non_streaming_chat_with_openai_client(live: Live) -> None:
    resp = live.openai().chat.completions.create(
        model="fake-model",
        messages=[
            {"role": "system", "content": "be brief"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "hel"}, {"type": "text", "text": "lo"}],
            },
        ],
        max_completion_tokens=3,
        temperature=0,
        top_p=0.5,
        seed=7,
    )
    assert resp.object == "chat.completion" and resp.id.startswith("chatcmpl-")
    assert resp.model == "fake-model"
    assert resp.choices[0].message.role == "assistant"
    assert resp.choices[0].message.content == "w0 w1 w2 "
    assert resp.choices[0].finish_reason == "length"
    n_prompt = len("<system>be brief<user>hello<assistant>")
    assert resp.usage is not None
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (n_prompt, 3)
    (rec,) = live.engine.requests.values()
    assert (rec.params.temperature, rec.params.top_p, rec.params.seed) == (0.0, 0.5, 7)
    assert rec.params.max_tokens == 3
    assert rec.prompt_ids == live.engine.encode("<system>be brief<user>hello<assistant>")


def test_developer_role_is_sent_as_system(live: Live) -> None:
    body = chat_body(
        messages=[{"role": "developer", "content": "d"}, {"role": "user", "content": "u"}]
    )
    assert live.http.post(CHAT, json=body).status_code == 200
    (rec,) = live.engine.requests.values()
    assert rec.prompt_ids == live.engine.encode("<system>d<user>u<assistant>")


def test_non_streaming_completion_with_openai_client(live: Live) -> None:
    resp = live.openai().completions.create(model="fake-model", prompt="abcd", max_tokens=2)
    assert resp.object == "text_completion" and resp.id.startswith("cmpl-")
    assert resp.choices[0].text == "w0 w1 "
    assert resp.choices[0].finish_reason == "length"
    assert resp.usage is not None and resp.usage.total_tokens == 6


def test_response_headers_carry_request_id_and_qoe(live: Live) -> None:
    r = live.http.post(CHAT, json=chat_body(qoe={"ttft_s": 2.5, "tokens_per_s": 8}))
    assert r.headers["X-Request-Id"] == r.json()["id"]
    assert r.headers["X-Kairos-QoE-TTFT-S"] == "2.5"
    assert r.headers["X-Kairos-QoE-Tokens-Per-S"] == "8"


def test_models_and_health(live: Live) -> None:
    models = live.http.get("/v1/models").json()
    assert models["object"] == "list"
    assert [(m["id"], m["object"]) for m in models["data"]] == [("fake-model", "model")]
    assert [m.id for m in live.openai().models.list()] == ["fake-model"]
    health = live.http.get("/health")
    assert health.status_code == 200 and health.json() == {"status": "ok"}


def test_metrics_are_prometheus_text(live: Live) -> None:
    live.http.post(CHAT, json=chat_body())
    live.http.post(CHAT, json=chat_body(model="nope"))
    r = live.http.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    got = scrape(r.text)
    p = "kairos_andes_"
    for gauge in (
        "requests_running",
        "requests_waiting",
        "requests_swapped",
        "kv_cache_usage_ratio",
        "gpu_blocks_free",
    ):
        assert got.types[p + gauge] == "gauge"
    for counter in (
        "iterations",
        "preemptions",
        "requests_finished",
        "requests_aborted",
        "http_requests",
    ):
        assert got.types[p + counter] == "counter"
    assert got.types[p + "qoe"] == "summary"
    assert got.value(p + "kv_cache_usage_ratio") == 0.25
    assert got.value(p + "gpu_blocks_free") == 48
    assert got.value(p + "iterations_total") == 42
    assert got.value(p + "preemptions_total") == 3
    assert got.value(p + "requests_finished_total") == 1
    assert got.value(p + "http_requests_total", code="200") >= 1
    assert got.value(p + "http_requests_total", code="404") == 1
    qoe = (0.5, 0.9, 1.0, 1.0)  # the fake's window
    assert got.value(p + "qoe", quantile="0.5") == pytest.approx(0.95)
    assert got.value(p + "qoe", quantile="0.99") == pytest.approx(1.0)
    assert got.value(p + "qoe_sum") == pytest.approx(sum(qoe))
    assert got.value(p + "qoe_count") == len(qoe)


def test_metrics_with_no_finished_requests_report_nan_quantiles(live: Live) -> None:
    live.engine.qoe_window = ()
    got = scrape(live.http.get("/metrics").text)
    assert math.isnan(got.value("kairos_andes_qoe", quantile="0.9"))
    assert got.value("kairos_andes_qoe_count") == 0


def test_chat_page_and_static_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "index.html").write_text("<!doctype html><title>chat</title>")
    (tmp_path / "pacer.js").write_text("export const x = 1;")
    monkeypatch.setattr(app_module, "STATIC_DIR", tmp_path)
    with BackgroundServer(create_app(FakeEngine())) as srv, httpx.Client(base_url=srv.url) as http:
        page = http.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "<title>chat</title>" in page.text
        js = http.get("/static/pacer.js")
        assert js.status_code == 200 and "export const x" in js.text
        assert http.get("/static/missing.js").status_code == 404
        assert http.get("/health").status_code == 200


def test_no_static_dir_means_no_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_module, "STATIC_DIR", tmp_path / "absent")
    with BackgroundServer(create_app(FakeEngine())) as srv, httpx.Client(base_url=srv.url) as http:
        assert http.get("/").status_code == 404
        assert http.get("/health").status_code == 200


def test_the_installed_chat_page_and_everything_it_loads_are_served(live: Live) -> None:
    """The chat page ships with the package (package data; the wheel itself is checked in
    test_packaging.py): missing, it is a packaging bug, so this fails rather than skips."""
    index = app_module.STATIC_DIR / "index.html"
    assert index.is_file(), (
        f"the chat page is missing from the installed package ({index}): check "
        "[tool.setuptools.package-data] in pyproject.toml"
    )
    page = live.http.get("/")
    assert page.status_code == 200 and "<html" in page.text.lower()
    # what the page loads, and what its scripts import, must be there too
    wanted = set(re.findall(r'(?:href|src)="/static/([^"]+)"', page.text))
    seen: set[str] = set()
    while wanted - seen:
        name = min(wanted - seen)
        seen.add(name)
        got = live.http.get(f"/static/{name}")
        assert got.status_code == 200, f"/static/{name}: {got.status_code}"
        assert (app_module.STATIC_DIR / name).read_bytes() == got.content
        if name.endswith(".js"):
            wanted |= set(re.findall(r'from\s+"/static/([^"]+)"', got.text))
    assert {"chat.css", "chat.js", "pacer.js"} <= seen


def test_engine_started_and_stopped_with_the_server() -> None:
    engine = FakeEngine()
    srv = BackgroundServer(create_app(engine, ServerSettings())).start()
    assert engine.started and not engine.stopped
    srv.stop()
    assert engine.stopped


def test_server_binds_loopback_by_default(live: Live) -> None:
    assert ServerSettings().host == "127.0.0.1"
    assert live.server.server.servers[0].sockets[0].getsockname()[0] == "127.0.0.1"
