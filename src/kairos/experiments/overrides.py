"""Settings given on the command line change an experiment's own settings, not replace them.

`deep_merge` is how an override dict meets the settings it overrides, for every system's
experiments: a dict merges into a dict key by key, recursively, so `{"andes": {"pacing":
{"margin": 0.7}}}` changes one field and keeps the experiment's arrivals, its trace and the
other pacing fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `update` applied: a dict merges into a dict key by key, recursively; any
    other value (a list, None, a number) replaces. Neither argument is changed."""
    out = dict(base)
    for key, value in update.items():
        old = out.get(key)
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            out[key] = deep_merge(old, value)
        else:
            out[key] = value
    return out
