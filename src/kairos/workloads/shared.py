"""Where the shared real-data folder lives, for every system's loaders and benchmarks.

The data (device specs, traces) is read in place from `shared/data/` and never copied into the
repository. `KAIROS_SHARED` points at the `shared/` folder (the Makefile exports it); without
it we look for a `shared/` folder next to the repository checkout.
"""

from __future__ import annotations

import os
from pathlib import Path


def shared_dir() -> Path:
    """The shared/ folder: $KAIROS_SHARED, else `../shared` next to the repository."""
    root = os.environ.get("KAIROS_SHARED")
    return Path(root) if root else Path(__file__).resolve().parents[4] / "shared"


def shared_data(name: str) -> Path:
    """A file of the shared data folder (it may not exist; callers check and explain)."""
    return shared_dir() / "data" / name
