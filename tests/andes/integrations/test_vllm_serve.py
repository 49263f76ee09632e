"""`vllm serve` with the Andes scheduler on CPU, spoken to with the official `openai` SDK.

One server with `AndesScheduler` and one with vLLM's default scheduler serve the same local
random-weight checkpoint with a KV cache of 12 blocks, too few for the eight concurrent
requests, so requests are preempted and recomputed. Each request streams with its own QoE in
`vllm_xargs`; a malformed QoE value gets a 400 naming it and the server keeps serving; with
greedy decoding every request's tokens equal those under vLLM's default scheduler.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm", reason="the vLLM integration runs in the vLLM environment")
openai = pytest.importorskip("openai")

from .server import ANDES, VALIDATOR, metric, vllm_server  # noqa: E402

pytestmark = pytest.mark.slow

PROMPTS = [
    "the quick brown fox",
    "hello world, streaming",
    "tokens jump over the lazy dog",
    "the lazy dog",
    "streaming tokens hello",
    "quick brown hello world",
    "over the fox",
    "world",
]
QOE: list[dict[str, Any]] = [
    {"qoe": "reader"},
    {"qoe": "listener", "qoe_ttft_s": 0.5},
    {"qoe_tokens_per_s": 20.0},
    {"qoe_ttft_s": 2},
    {},  # the server default
    {"qoe_tokens_per_s": 3.5, "qoe_ttft_s": 0},
    {"qoe": "reader", "qoe_ttft_s": 1.5},
    {"qoe_tokens_per_s": 50},
]
MAX_TOKENS = 60
# a profile that makes the policy solve on this tiny model: predicted decode slower than a
# reader, so the compute-bound trigger fires (the memory trigger fires too: 12 blocks)
PROFILE = {
    "kind": "linear",
    "name": "cpu-test",
    "decode_coef": [0.3, 0.001, 1e-5],
    "prefill_coef": [0.01, 1e-4, 0.0],
    "swap_s_per_token": 0.0,
    "kv_capacity": 12 * 32,
    "swap_capacity": 0,
    "block_size": 32,
}


def stream(client: Any, prompt: str, xargs: dict[str, Any]) -> tuple[str, list[int], str]:
    """One streamed greedy completion: its text, token ids and finish reason."""
    chunks = client.completions.create(
        model=client.models.list().data[0].id,
        prompt=prompt,
        max_tokens=MAX_TOKENS,
        temperature=0,
        stream=True,
        extra_body={"vllm_xargs": xargs, "return_token_ids": True, "ignore_eos": True},
    )
    ids: list[int] = []
    text, reason = "", ""
    for chunk in chunks:
        choice = chunk.choices[0]
        text += choice.text
        ids += (choice.model_extra or {}).get("token_ids") or []
        reason = choice.finish_reason or reason
    return text, ids, reason


def serve_all(url: str) -> list[tuple[str, list[int], str]]:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=600)
    with ThreadPoolExecutor(len(PROMPTS)) as pool:
        return list(pool.map(lambda pq: stream(client, *pq), zip(PROMPTS, QOE, strict=True)))


@pytest.fixture(scope="module")
def andes(checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("andes")
    (tmp / "profile.json").write_text(json.dumps(PROFILE))
    config = {"andes": {"profile": str(tmp / "profile.json"), "options": {"horizon_s": 1.0}}}
    extra: tuple[str, ...] = ("--scheduler-cls", ANDES, "--logits-processors", VALIDATOR)
    extra += ("--additional-config", json.dumps(config))
    with vllm_server(checkpoint, tmp / "serve.log", *extra) as url:
        yield url


@pytest.fixture(scope="module")
def andes_results(andes: str) -> list[tuple[str, list[int], str]]:
    return serve_all(andes)


def test_andes_streams_every_request_with_its_qoe(
    andes: str, andes_results: list[tuple[str, list[int], str]]
) -> None:
    for text, ids, reason in andes_results:
        assert reason == "length" and len(ids) == MAX_TOKENS and text
    assert metric(andes, "vllm:num_preemptions_total") > 0  # the cache was contended


@pytest.mark.parametrize(
    ("xargs", "key"),
    [
        ({"qoe_ttft_s": -1}, "qoe_ttft_s"),
        ({"qoe_tokens_per_s": "fast"}, "qoe_tokens_per_s"),
        ({"qoe": "skimmer"}, "qoe"),
        ({"qoe": "reader", "qoe_tokens_per_s": 4}, "qoe"),
    ],
)
def test_a_malformed_qoe_gets_400_naming_it_and_serving_goes_on(
    andes: str, xargs: dict[str, Any], key: str
) -> None:
    client = openai.OpenAI(base_url=f"{andes}/v1", api_key="unused", max_retries=0)
    model = client.models.list().data[0].id
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(
            model=model, prompt="hi", max_tokens=4, extra_body={"vllm_xargs": xargs}
        )
    assert f"vllm_xargs['{key}']" in str(info.value)
    chat = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "hello"}],
        max_tokens=4,
        temperature=0,
        extra_body={"vllm_xargs": {"qoe": "listener"}},
    )
    assert chat.choices[0].finish_reason == "length" and chat.usage.completion_tokens == 4


def test_greedy_tokens_equal_those_under_vllms_default_scheduler(
    checkpoint: Path,
    tmp_path: Path,
    andes_results: list[tuple[str, list[int], str]],
) -> None:
    with vllm_server(checkpoint, tmp_path / "default.log") as url:
        default = serve_all(url)
    assert [ids for _, ids, _ in andes_results] == [ids for _, ids, _ in default]
    assert [text for text, _, _ in andes_results] == [text for text, _, _ in default]
    # not vacuous: the prompts' continuations differ from each other
    assert len({tuple(ids) for _, ids, _ in default}) == len(PROMPTS)
