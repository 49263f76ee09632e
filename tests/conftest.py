"""Shared fixtures: where the real data lives (../shared/data, never copied into the repo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KAIROS_SHARED", REPO.parent / "shared"))
DATA = SHARED / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.fail(f"shared data not found at {DATA}; set KAIROS_SHARED to the shared/ folder")
    return DATA
