"""The server-wide settings of Andes inside vLLM, read from vLLM's `--additional-config`.

vLLM hands a custom scheduler nothing but its `VllmConfig`; `additional_config` is the
documented place for a plug-in's own settings (a JSON object on the command line), so the
Andes scheduler reads the object under the key `andes`:

    --additional-config '{"andes": {"policy": "andes", "profile": "llama-3.1-8b",
                                    "options": {"horizon_s": 5}, "qoe": {"preset": "reader"}}}'

Every part is optional and an unknown key is refused at startup, naming the allowed ones. No
vLLM import here, so the settings are testable without vLLM.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kairos.andes.integrations.qoe_args import QoEDefaults
from kairos.andes.latency import DEFAULT_PROFILE, LatencyModel, load_profile
from kairos.andes.policies.registry import make_policy, policy_names
from kairos.andes.policy import Policy

CONFIG_KEY = "andes"
# vLLM v1 preempts by recompute only (it has no host swap pool), so the policy's cost model
# is told so: with swap preferred it would price preemptions at a swap's cost vLLM cannot pay
KNAPSACK_DEFAULTS: dict[str, Any] = {"prefer_swap": False, "chunked_prefill": True}
KNAPSACK_POLICIES = ("andes", "andes-dp", "lqsf")


class IntegrationSettings(BaseModel):
    """`policy`: a kairos Andes policy by name; `options`: its `AndesConfig` fields (the
    knapsack policies only), over `KNAPSACK_DEFAULTS`; `profile`: a built-in latency profile
    or a fitted profile's JSON file (`kairos andes profile`); `qoe`: the default QoE."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: str = "andes"
    options: dict[str, Any] = Field(default_factory=dict)
    profile: str = DEFAULT_PROFILE
    qoe: QoEDefaults = Field(default_factory=QoEDefaults)

    @classmethod
    def from_additional_config(cls, additional: Any) -> IntegrationSettings:
        """The settings under `andes` in vLLM's `additional_config` (defaults if absent)."""
        raw = additional.get(CONFIG_KEY, {}) if isinstance(additional, Mapping) else {}
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise ValueError(f"--additional-config {CONFIG_KEY!r}: {exc}") from None

    def make_policy(self) -> Policy:
        """A fresh policy object: the same factory kairos's own engine uses."""
        if self.policy not in policy_names():
            raise ValueError(
                f"--additional-config {CONFIG_KEY!r}: unknown policy {self.policy!r}; "
                f"choose one of {list(policy_names())}"
            )
        if self.policy not in KNAPSACK_POLICIES:
            if self.options:
                raise ValueError(
                    f"--additional-config {CONFIG_KEY!r}: policy {self.policy!r} takes no options"
                )
            return make_policy(self.policy)
        try:
            return make_policy(self.policy, **{**KNAPSACK_DEFAULTS, **self.options})
        except ValidationError as exc:
            raise ValueError(f"--additional-config {CONFIG_KEY!r} options: {exc}") from None

    def latency(self) -> LatencyModel:
        return load_profile(self.profile)
