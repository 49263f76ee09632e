"""How `AndesScheduler` takes requests and settings from vLLM: QoE from `extra_args`, a
malformed value without the API-server validator, and configurations it cannot serve."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="the vLLM integration runs in the vLLM environment")

from vllm.sampling_params import SamplingParams

from kairos.andes.integrations.qoe_args import preset_speed
from kairos.andes.integrations.vllm import AndesScheduler, QoEArgsValidator

from .harness import make_scheduler, request, step


def test_qoe_comes_from_extra_args_and_a_bad_value_falls_back_to_the_default(
    checkpoint: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = {"andes": {"qoe": {"preset": "listener", "ttft_s": 3.0}}}
    sched = make_scheduler(AndesScheduler, checkpoint, 20, additional_config=cfg)
    sched.add_request(request("given", 10, 5, 0.0, qoe_ttft_s=0.5, qoe_tokens_per_s=9))
    sched.add_request(request("preset", 10, 5, 0.0, qoe="reader"))
    sched.add_request(request("none", 10, 5, 0.0))
    with caplog.at_level(logging.WARNING, logger="kairos.andes.integrations.vllm"):
        sched.add_request(request("bad", 10, 5, 0.0, qoe_ttft_s=-2))
    m = sched.mirror
    assert (m["given"].ttft_s, m["given"].tokens_per_s) == (0.5, 9.0)
    assert m["preset"].tokens_per_s == pytest.approx(preset_speed("reader"))
    assert (m["none"].ttft_s, m["none"].tokens_per_s) == (
        3.0,
        pytest.approx(preset_speed("listener")),
    )
    assert (m["bad"].ttft_s, m["bad"].tokens_per_s) == (m["none"].ttft_s, m["none"].tokens_per_s)
    assert "vllm_xargs['qoe_ttft_s']" in caplog.text and "bad" in caplog.text
    while sched.requests:  # all four run to the end and leave nothing behind
        step(sched)
    assert not sched.mirror and sched.andes_policy.name == "andes"


def test_the_validator_refuses_what_the_scheduler_would_replace() -> None:
    QoEArgsValidator.validate_params(SamplingParams(extra_args={"qoe": "listener"}))
    QoEArgsValidator.validate_params(SamplingParams())
    with pytest.raises(ValueError, match="qoe_tokens_per_s"):
        QoEArgsValidator.validate_params(SamplingParams(extra_args={"qoe_tokens_per_s": 0}))


def test_async_scheduling_and_bad_settings_are_refused_at_startup(checkpoint: Path) -> None:
    with pytest.raises(ValueError, match="--no-async-scheduling"):
        make_scheduler(AndesScheduler, checkpoint, 20, async_scheduling=True)
    with pytest.raises(ValueError, match="unknown policy 'fifo'"):
        make_scheduler(
            AndesScheduler, checkpoint, 20, additional_config={"andes": {"policy": "fifo"}}
        )
