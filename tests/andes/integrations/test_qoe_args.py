"""QoE targets from `vllm_xargs` and the Andes settings from `--additional-config` (no vLLM
needed: these run in kairos's own environment too)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from kairos.andes.integrations.qoe_args import (
    PRESET_KEY,
    SPEED_KEY,
    TTFT_KEY,
    QoEArgError,
    QoEDefaults,
    parse_qoe,
    preset_speed,
)
from kairos.andes.integrations.settings import IntegrationSettings
from kairos.andes.policies.andes import AndesPolicy
from kairos.andes.policies.fcfs import FCFSPolicy

DEFAULTS = QoEDefaults()


def test_a_request_naming_nothing_gets_the_server_default() -> None:
    q = parse_qoe(None, 100, DEFAULTS)
    assert q.tokens_per_s == pytest.approx(preset_speed("reader"))
    assert q.ttft_s == 1.0  # max(100 / 5000, 1 s)
    assert parse_qoe({}, 20_000, DEFAULTS).ttft_s == pytest.approx(4.0)  # a long prompt
    fixed = QoEDefaults(preset="listener", ttft_s=0.25)
    q = parse_qoe({"other_extension": "x"}, 20_000, fixed)  # foreign keys are left alone
    assert (q.ttft_s, q.tokens_per_s) == (0.25, pytest.approx(preset_speed("listener")))


def test_each_key_sets_its_part() -> None:
    q = parse_qoe({TTFT_KEY: 0.5, SPEED_KEY: 12}, 10, DEFAULTS)
    assert (q.ttft_s, q.tokens_per_s) == (0.5, 12.0)
    q = parse_qoe({PRESET_KEY: "listener", TTFT_KEY: 0}, 10, DEFAULTS)
    assert (q.ttft_s, q.tokens_per_s) == (0.0, pytest.approx(preset_speed("listener")))
    assert preset_speed("listener") != preset_speed("reader")


@pytest.mark.parametrize(
    ("args", "key"),
    [
        ({TTFT_KEY: -1}, TTFT_KEY),
        ({TTFT_KEY: math.inf}, TTFT_KEY),
        ({TTFT_KEY: "1.5"}, TTFT_KEY),
        ({TTFT_KEY: True}, TTFT_KEY),
        ({SPEED_KEY: 0}, SPEED_KEY),
        ({SPEED_KEY: math.nan}, SPEED_KEY),
        ({SPEED_KEY: [5]}, SPEED_KEY),
        ({PRESET_KEY: "skimmer"}, PRESET_KEY),
        ({PRESET_KEY: 3}, PRESET_KEY),
        ({PRESET_KEY: "reader", SPEED_KEY: 4}, PRESET_KEY),
    ],
)
def test_a_malformed_value_is_refused_naming_its_key(args: dict[str, Any], key: str) -> None:
    with pytest.raises(QoEArgError, match=f"vllm_xargs\\['{key}'\\]") as info:
        parse_qoe(args, 10, DEFAULTS)
    assert info.value.key == key


def test_settings_build_the_named_policy_with_vllm_defaults() -> None:
    settings = IntegrationSettings.from_additional_config({"andes": {"options": {"horizon_s": 4}}})
    policy = settings.make_policy()
    assert isinstance(policy, AndesPolicy)
    # vLLM v1 preempts by recompute and mixes prefills into decode steps
    assert policy.config.prefer_swap is False and policy.chunked_prefill is True
    assert policy.config.horizon_s == 4
    assert policy.config.starvation_after == 2.0 and policy.config.pacing is not None
    fcfs = IntegrationSettings.from_additional_config({"andes": {"policy": "fcfs"}})
    assert isinstance(fcfs.make_policy(), FCFSPolicy)
    assert isinstance(IntegrationSettings.from_additional_config({}).make_policy(), AndesPolicy)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"polcy": "andes"}, "polcy"),
        ({"policy": "nope"}, "unknown policy 'nope'"),
        ({"options": {"horizon": 3}}, "horizon"),
        ({"policy": "fcfs", "options": {"horizon_s": 3}}, "takes no options"),
        ({"qoe": {"preset": "skimmer"}}, "preset"),
    ],
)
def test_bad_settings_fail_at_startup_naming_the_key(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        IntegrationSettings.from_additional_config({"andes": raw}).make_policy()
