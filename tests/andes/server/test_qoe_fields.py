"""QoE travels as an extra body field in three forms and reaches the engine with the right
numbers; nonsense values are refused with a 400 naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from kairos.andes.qoe import LISTENER_SPEEDS, READER_SPEEDS
from kairos.andes.server import ServerSettings
from kairos.andes.server.settings import profile_mean_speed
from tests.andes.server.conftest import CHAT, COMPLETIONS, Live, Serve, assert_serves, chat_body

READER = sum(s * w for s, w in READER_SPEEDS) / sum(w for _, w in READER_SPEEDS)
LISTENER = sum(s * w for s, w in LISTENER_SPEEDS) / sum(w for _, w in LISTENER_SPEEDS)


def test_profile_means_are_population_weighted() -> None:
    assert profile_mean_speed("reader") == pytest.approx(READER)
    assert profile_mean_speed("listener") == pytest.approx(LISTENER)
    assert 4.4 < READER < 4.6 and 3.3 < LISTENER < 3.5  # tables 2.1 and 2.2


def _sent_qoe(live: Live, **extra: Any) -> tuple[float, float]:
    r = live.http.post(CHAT, json=chat_body(**extra))
    assert r.status_code == 200, r.text
    rec = live.engine.requests[r.json()["id"]]
    return rec.qoe.ttft_s, rec.qoe.tokens_per_s


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, (1.0, READER)),  # server defaults: reader profile, max(len/5000, 1 s)
        ({"qoe": {"ttft_s": 0.5, "tokens_per_s": 12.0}}, (0.5, 12.0)),
        ({"qoe": {"ttft_s": 2}}, (2.0, READER)),
        ({"qoe": {"tokens_per_s": 7}}, (1.0, 7.0)),
        ({"qoe": {}}, (1.0, READER)),
        ({"qoe": "listener"}, (1.0, LISTENER)),
        ({"qoe": "reader"}, (1.0, READER)),
        ({"qoe_required": {"ttft": 3.0, "latency": 0.05, "output_len": 100}}, (3.0, 20.0)),
        ({"qoe_required": {"latency": 0.25}}, (1.0, 4.0)),
        ({"qoe": None}, (1.0, READER)),
    ],
)
def test_qoe_forms_reach_the_engine(live: Live, extra: dict[str, Any], expected: tuple) -> None:
    ttft, speed = _sent_qoe(live, **extra)
    assert ttft == pytest.approx(expected[0])
    assert speed == pytest.approx(expected[1])


def test_server_defaults_apply(serve: Serve) -> None:
    live = serve(ServerSettings(default_profile="listener", prefill_tokens_per_s=10.0))
    body = {"model": "fake-model", "prompt": "p" * 30, "max_tokens": 1}
    r = live.http.post(COMPLETIONS, json=body)
    rec = live.engine.requests[r.json()["id"]]
    assert rec.qoe.ttft_s == pytest.approx(3.0)  # ttft_target: 30 tokens / 10 tok/s
    assert rec.qoe.tokens_per_s == pytest.approx(LISTENER)
    live2 = serve(ServerSettings(default_ttft_s=0.25))
    assert _sent_qoe(live2)[0] == 0.25


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"qoe": {"ttft_s": -1}}, "qoe.ttft_s"),
        ({"qoe": {"tokens_per_s": 0}}, "qoe.tokens_per_s"),
        ({"qoe": {"tokens_per_s": "fast"}}, "qoe.tokens_per_s"),
        ({"qoe": {"speed": 3}}, "qoe"),
        ({"qoe": "skimmer"}, "qoe"),
        ({"qoe": 5}, "qoe"),
        ({"qoe_required": {"latency": 0}}, "qoe_required.latency"),
        ({"qoe_required": {"ttft": -0.5}}, "qoe_required.ttft"),
        ({"qoe_required": {"latency": 5e-324}}, "qoe_required.latency"),  # 1/latency = inf
        ({"qoe": "reader", "qoe_required": {"ttft": 1}}, "qoe_required"),
    ],
)
def test_bad_qoe_is_400_naming_the_field(live: Live, extra: dict[str, Any], param: str) -> None:
    r = live.http.post(CHAT, json=chat_body(**extra))
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param
    assert param in err["message"]
    assert not live.engine.requests
    assert_serves(live)


def test_qoe_survives_the_openai_client_extra_body(live: Live) -> None:
    resp = live.openai().chat.completions.create(
        **chat_body(), extra_body={"qoe": {"ttft_s": 0.75, "tokens_per_s": 9.5}}
    )
    rec = live.engine.requests[resp.id]
    assert (rec.qoe.ttft_s, rec.qoe.tokens_per_s) == (0.75, 9.5)
