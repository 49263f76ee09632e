"""`--set point={...}` changes the experiment's own point instead of replacing it.

Each experiment has a point of its own (E8's arrivals are Poisson, E4 replays the Azure trace,
E9's users listen). A `point` given on the command line used to replace that point whole, so
`--set 'point={"andes": {...}}'` on E8 silently ran cyclic bursts, and each such run had to
repeat the experiment's own settings. Here the given dict is merged into the experiment's
default point, recursively (`deep_merge`), so it changes only what it names. The Andes
settings it names are checked at once (`AndesConfig`): an unknown key is an error naming it,
not a failure inside a sweep's worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationInfo, field_validator

from kairos.andes.policies.andes import AndesConfig
from kairos.andes.workload import SimPoint
from kairos.cli_utils import SettingError, Settings
from kairos.experiments.overrides import deep_merge


class PointSettings(Settings):
    """An experiment's settings whose `point` (a `SimPoint`) is merged, not replaced."""

    @field_validator("point", mode="before", check_fields=False)
    @classmethod
    def _merge_into_default(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, Mapping) or info.field_name is None:
            return value  # a SimPoint built in code: taken as it is
        default = cls.model_fields[info.field_name].default
        merged = deep_merge(default.model_dump(), value) if isinstance(default, SimPoint) else value
        andes = merged.get("andes")
        if isinstance(andes, Mapping):
            try:
                AndesConfig.model_validate(dict(andes))
            except SettingError as exc:
                raise ValueError(f"in point.andes: {exc}") from None
        return merged
