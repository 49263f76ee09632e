"""Pieces of the server checked without a socket: metrics text, chunk shapes, error naming."""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

from kairos.andes.engine.api import EngineStats
from kairos.andes.server.errors import validation_error
from kairos.andes.server.prometheus import AndesCollector, ServerCounters
from kairos.andes.server.protocol import FIELD_NAMES, ChatCompletionRequest, CompletionRequest
from kairos.andes.server.settings import ServerSettings
from kairos.andes.server.streaming import ChunkFormat
from kairos.runtime.prometheus import exposition, registry_for
from tests.scrape import scrape


def _stats(**kw: object) -> EngineStats:
    base: dict[str, object] = dict(
        running=2, waiting=5, swapped=1, preempted_total=9, kv_usage=0.5, num_gpu_blocks=10,
        num_cpu_blocks=4, free_gpu_blocks=5, iterations=100, finished=7, aborted=1, qoe=(1.0,),
    )  # fmt: skip
    base.update(kw)
    return EngineStats(**base)  # type: ignore[arg-type]


def test_metrics_have_help_and_type_for_every_family() -> None:
    counters = ServerCounters(http_responses=Counter({200: 3, 429: 1}), pending=2, in_flight=4)
    got = scrape(exposition(registry_for(AndesCollector(_stats, counters))))
    assert set(got.types) == set(got.helps) and all(got.helps.values())
    assert all(f.startswith("kairos_andes_") for f in got.types)
    assert got.value("kairos_andes_requests_waiting") == 5
    assert got.value("kairos_andes_requests_pending") == 2
    assert got.value("kairos_andes_requests_in_flight") == 4
    assert got.value("kairos_andes_kv_cache_usage_ratio") == 0.5
    assert got.value("kairos_andes_http_requests_total", code="429") == 1
    assert got.value("kairos_andes_qoe", quantile="0.9") == 1.0
    assert got.value("kairos_andes_qoe_count") == 1


def test_one_scrape_reads_the_engine_once() -> None:
    """The collector reads one snapshot per scrape, so no scrape mixes two moments."""
    calls: list[int] = []

    def stats() -> EngineStats:
        calls.append(1)
        return _stats(waiting=len(calls))

    registry = registry_for(AndesCollector(stats, ServerCounters()))
    assert scrape(exposition(registry)).value("kairos_andes_requests_waiting") == 1
    assert scrape(exposition(registry)).value("kairos_andes_requests_waiting") == 2
    assert len(calls) == 2


def test_chunk_shapes() -> None:
    chat = ChunkFormat("chat", "chatcmpl-1", 5, "m")
    assert chat.role()["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chat.text("hi")["choices"][0]["delta"] == {"content": "hi"}
    assert "usage" not in chat.text("hi")
    comp = ChunkFormat("completion", "cmpl-1", 5, "m", include_usage=True)
    assert comp.text("hi")["choices"][0] == {
        "index": 0,
        "text": "hi",
        "logprobs": None,
        "finish_reason": None,
    }
    assert comp.text("hi")["usage"] is None
    assert comp.usage(3, 4)["usage"] == {
        "prompt_tokens": 3,
        "completion_tokens": 4,
        "total_tokens": 7,
    }


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "prompt": "x", "qoe": {"ttft_s": -1}}, "qoe.ttft_s"),
        ({"model": "m", "prompt": 3}, "prompt"),
        (
            {"model": "m", "prompt": "x", "stream_options": {"include_usage": 1}},
            "stream_options.include_usage",
        ),
    ],
)
def test_validation_error_names_the_deepest_field(body: dict[str, object], param: str) -> None:
    with pytest.raises(ValidationError) as info:
        CompletionRequest.model_validate(body)
    err = validation_error(info.value, FIELD_NAMES)
    assert err.status == 400 and err.param == param


def test_max_completion_tokens_wins_over_max_tokens() -> None:
    req = ChatCompletionRequest.model_validate(
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 5,
         "max_completion_tokens": 9}
    )  # fmt: skip
    assert req.requested_max_tokens == 9


def test_settings_reject_typos_and_bad_values() -> None:
    with pytest.raises(ValidationError):
        ServerSettings(max_wating=3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        ServerSettings(max_body_bytes=0)
    with pytest.raises(ValidationError):
        ServerSettings(default_profile="skimmer")
