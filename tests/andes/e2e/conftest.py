"""The real serving stack on a real socket: built-in model, torch engine, FastAPI server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kairos.andes.engine.async_engine import AsyncEngine
from kairos.andes.engine.config import EngineConfig
from kairos.andes.engine.cpu import build_engine
from kairos.andes.engine.engine import LLMEngine
from kairos.andes.latency import LinearProfile
from kairos.andes.server.app import create_app
from kairos.andes.server.settings import ServerSettings
from kairos.runtime.http import BackgroundServer

BLOCKS = 256


def engine(policy: str = "andes", blocks: int = BLOCKS) -> LLMEngine:
    """The built-in model; a fixed profile instead of startup calibration keeps tests fast."""
    profile = LinearProfile(
        name="test",
        decode_coef=(0.004, 0.0003, 1e-7),
        prefill_coef=(0.004, 3e-5, 0.0),
        swap_s_per_token=1e-6,
        kv_capacity=blocks * 16,
        swap_capacity=128 * 16,
    )
    return build_engine(
        EngineConfig(
            num_gpu_blocks=blocks,
            num_cpu_blocks=128,
            max_model_len=1024,
            max_num_seqs=64,
            policy=policy,
        ),
        latency=profile,
    )


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[BackgroundServer, LLMEngine]]:
    eng = engine()
    settings = ServerSettings(max_prompt_tokens=512, max_body_bytes=64 * 1024, log_level="warning")
    with BackgroundServer(create_app(AsyncEngine(eng), settings)) as server:
        yield server, eng
