"""Shared fixtures of the vLLM integration tests; they run where vLLM is installed (the second
virtual environment, `make vllm-test`) and are skipped elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from .checkpoint import write_checkpoint


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_checkpoint(tmp_path_factory.mktemp("ckpt"))
