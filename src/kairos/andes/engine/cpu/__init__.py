"""The engine's CPU paths, behind the runner's one hook (hook.py): decode staging
(staging.py), decode lanes (lanes.py), products split over the threads (row_split.py), and
the measured choice between each and the plain path (path_choice.py).

The core engine (engine.py, runner.py, model.py, attention.py, kv_cache.py, sampler.py)
imports nothing from here; `build_engine` is the engine as `kairos serve` and the tools
build it, with this hook plugged in.
"""

from __future__ import annotations

from typing import Any

from kairos.andes.engine.config import EngineConfig
from kairos.andes.engine.cpu.hook import CpuHook, cpu_hook
from kairos.andes.engine.engine import LLMEngine

__all__ = ["CpuHook", "build_engine", "cpu_hook"]


def build_engine(config: EngineConfig | None = None, **kwargs: Any) -> LLMEngine:
    """`LLMEngine(config, **kwargs)` with the CPU hook (it applies only where it can)."""
    return LLMEngine(config, runner_hook=cpu_hook, **kwargs)
