"""The HTTP API over a real socket: answers, errors that name the field, and it keeps serving."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest

from kairos.orloj.runtime.calibrate import CalibrationConfig
from kairos.orloj.runtime.dispatcher import Dispatcher
from kairos.orloj.runtime.executor import ThreadExecutor
from kairos.orloj.runtime.models import EarlyExitCNN
from kairos.orloj.runtime.server import RuntimeSettings, create_app
from kairos.orloj.speed import MAX_FACTOR, MIN_FACTOR, served_options
from kairos.orloj.systems import make_system
from kairos.runtime.http import BackgroundServer
from tests.scrape import scrape

SIZES = (1, 2, 4)
KEY = "s3cret"
AUTH = {"Authorization": f"Bearer {KEY}"}
APPS = {"easy": ("exit1",), "hard": ("exit4",)}


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Dispatcher]]:
    model = EarlyExitCNN(stage_blocks=(2, 4, 4, 12))
    worker = ThreadExecutor(model, warm_sizes=SIZES)
    cal = worker.calibrate(CalibrationConfig(batch_sizes=SIZES, solo_runs=3, batch_reps=1))
    options = served_options("orloj", {})  # as `kairos orloj serve` runs it
    policy = make_system("orloj", model=cal.batch_model, slo_ms=100.0, sizes=SIZES, options=options)
    d = Dispatcher(policy, model, worker, offline=cal.app_profile(APPS, 100), max_open=4)
    settings = RuntimeSettings(api_key=KEY, max_body_bytes=2048, max_open=4, retry_after_s=2)
    with BackgroundServer(create_app(d, APPS, settings, {"calibration": cal.check()})) as srv:
        yield srv.url, d


def _post(
    url: str, body: object = None, content: bytes | None = None, **kw: object
) -> httpx.Response:
    headers = {**AUTH, "content-type": "application/json", **kw.pop("headers", {})}  # type: ignore[dict-item]
    if content is not None:
        return httpx.post(url + "/v1/infer", content=content, headers=headers, timeout=30)
    return httpx.post(url + "/v1/infer", json=body, headers=headers, timeout=30)


def test_a_request_is_answered_with_its_output_and_timing(server: tuple[str, Dispatcher]) -> None:
    url, _ = server
    r = _post(
        url, {"app": "easy", "slo_ms": 5000, "input": {"exit": 1, "seed": 3}, "model": "early-exit"}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["outcome"] == "ok" and body["deadline_met"] is True
    assert body["output"]["exit"] == 1 and 0 <= body["output"]["label"] < 10
    assert body["batch_size"] >= 1 and 0 <= body["queue_ms"] <= body["latency_ms"]
    assert body["policy"] == "orloj" and body["rejected"] is False


def test_a_hopeless_deadline_is_a_timed_out_answer_not_an_error(
    server: tuple[str, Dispatcher],
) -> None:
    url, _ = server
    r = _post(url, {"app": "hard", "slo_ms": 0.01, "input": {"exit": 4}})
    assert r.status_code == 200
    assert r.json()["outcome"] == "timed_out" and r.json()["output"] is None


BAD = [
    (b"{not json", 400, None, "parse the JSON"),
    (b"[1, 2]", 400, None, "JSON object"),
    (b"", 400, None, "empty"),
    (b'{"app": "easy", "slo_ms": NaN, "input": {"exit": 1}}', 400, None, "NaN"),
    (b'{"app": "easy", "input": {"exit": 1}}', 400, "slo_ms", "Missing required parameter"),
    (b'{"app": "easy", "slo_ms": "fast", "input": {"exit": 1}}', 400, "slo_ms", "number"),
    (b'{"app": "easy", "slo_ms": -5, "input": {"exit": 1}}', 400, "slo_ms", "greater than 0"),
    (b'{"app": 7, "slo_ms": 50, "input": {"exit": 1}}', 400, "app", "string"),
    (b'{"app": "easy", "slo_ms": 50, "input": [1]}', 400, "input", "dictionary"),
    (b'{"app": "easy", "slo_ms": 50}', 400, "input", "Missing required parameter"),
    (
        b'{"app": "easy", "slo_ms": 50, "input": {"exit": 1}, "deadline": 3}',
        400,
        "deadline",
        "unknown field",
    ),
    (b'{"app": "easy", "slo_ms": 50, "input": {"exit": "3"}}', 400, "input.exit", "integer"),
    (
        b'{"app": "easy", "slo_ms": 50, "input": {"exit": 9}}',
        400,
        "input.exit",
        "less than or equal to 4",
    ),
    (
        b'{"app": "easy", "slo_ms": 50, "input": {}}',
        400,
        "input.exit",
        "Missing required parameter",
    ),
    (  # valid for the model, outside what app "easy" declared (exit1 only)
        b'{"app": "easy", "slo_ms": 50, "input": {"exit": 4}}',
        400,
        "input.exit",
        "outside app 'easy''s declared range [1, 1]",
    ),
    (
        b'{"app": "hard", "slo_ms": 50, "input": {"exit": 2}}',
        400,
        "input.exit",
        "outside app 'hard''s declared range [4, 4]",
    ),
    (
        b'{"app": "easy", "slo_ms": 50, "input": {"exit": 1, "tokens": [1]}}',
        400,
        "input.tokens",
        "unknown field",
    ),
    (b'{"app": "nobody", "slo_ms": 50, "input": {"exit": 1}}', 404, "app", "Unknown app"),
    (
        b'{"app": "easy", "slo_ms": 50, "input": {"exit": 1}, "model": "gpt-4"}',
        404,
        "model",
        "not served",
    ),
]


@pytest.mark.parametrize(("body", "status", "param", "words"), BAD)
def test_malformed_requests_get_a_4xx_naming_the_field(
    server: tuple[str, Dispatcher], body: bytes, status: int, param: str | None, words: str
) -> None:
    url, _ = server
    r = _post(url, content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["param"] == param and words in err["message"], err


def test_auth_body_limit_and_overload_then_it_still_serves(server: tuple[str, Dispatcher]) -> None:
    url, d = server
    ok = {"app": "easy", "slo_ms": 5000, "input": {"exit": 1}}
    assert httpx.post(url + "/v1/infer", json=ok).status_code == 401
    bad_key = httpx.post(url + "/v1/infer", json=ok, headers={"Authorization": "Bearer no"})
    assert bad_key.status_code == 401 and bad_key.headers["WWW-Authenticate"] == "Bearer"
    big = _post(url, {**ok, "input": {"exit": 1, "seed": 1, "pad": "x" * 4000}})
    assert big.status_code == 413 and big.json()["error"]["code"] == "request_too_large"
    # max_open = 4: a burst of slow requests overflows; the extra ones get 429 + Retry-After
    slow = {"app": "hard", "slo_ms": 60_000, "input": {"exit": 4}}
    answers: list[httpx.Response] = []
    threads = [threading.Thread(target=lambda: answers.append(_post(url, slow))) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(a.status_code for a in answers)
    assert codes.count(200) >= 4 and 429 in codes and set(codes) <= {200, 429}
    too_many = next(a for a in answers if a.status_code == 429)
    assert too_many.headers["Retry-After"] == "2"
    assert _post(url, ok).json()["outcome"] == "ok"
    assert d.open_requests == 0


def test_stats_health_and_metrics(server: tuple[str, Dispatcher]) -> None:
    url, _ = server
    _post(url, {"app": "easy", "slo_ms": 5000, "input": {"exit": 2}})
    assert httpx.get(url + "/v1/stats").status_code == 401
    stats = httpx.get(url + "/v1/stats", headers=AUTH).json()
    assert stats["policy"] == "orloj" and stats["model"] == "early-exit"
    assert stats["ended"] == sum(stats["outcomes"].values()) >= 1
    assert stats["apps"] == ["easy", "hard"] and "within_tolerance" in stats["calibration"]
    assert 0.0 <= stats["finish_rate"] <= 1.0 and stats["batches"] >= 1
    assert MIN_FACTOR <= stats["speed_factor"] <= MAX_FACTOR  # the served Orloj's feedback
    health = httpx.get(url + "/health")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    got = scrape(httpx.get(url + "/metrics").text)
    p = "kairos_orloj_"
    assert got.value(p + "requests_total", outcome="ok") >= 0
    assert got.value(p + "batches_total") >= stats["batches"] >= 1
    assert 0.0 <= got.value(p + "finish_rate") <= 1.0
    assert got.value(p + "scheduler_cpu_seconds_total") >= 0
    assert MIN_FACTOR <= got.value(p + "speed_factor") <= MAX_FACTOR
    assert got.value(p + "http_requests_total", code="401") >= 1  # the stats call above
    assert got.types[p + "requests"] == "counter" and got.types[p + "finish_rate"] == "gauge"


def test_a_dead_worker_answers_503() -> None:
    model = EarlyExitCNN(stage_blocks=(1, 1, 1, 1))
    worker = ThreadExecutor(model, warm_sizes=(1,))
    policy = make_system(
        "clipper",
        model=worker.calibrate(
            CalibrationConfig(batch_sizes=(1, 2), solo_runs=3, batch_reps=1)
        ).batch_model,
        slo_ms=50.0,
        sizes=(1, 2),
    )
    d = Dispatcher(policy, model, worker)
    with BackgroundServer(create_app(d, {"a": ("exit1",)})) as srv:
        body = {"app": "a", "slo_ms": 1000, "input": {"exit": 1}}
        assert httpx.post(srv.url + "/v1/infer", json=body).status_code == 200
        worker.stop()  # the worker is gone (as if it crashed)
        r = httpx.post(srv.url + "/v1/infer", json=body)
        assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable"
        health = httpx.get(srv.url + "/health")
        assert health.status_code == 503 and health.json()["status"] == "unavailable"
