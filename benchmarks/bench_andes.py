"""Andes benchmarks (decision time, simulator speed): filled in by the Andes issues."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    return []
