"""Round timing: how long a device takes, and when a synchronous round succeeds or aborts.

A device's response time is compute plus communication (FedScale's model): `compute_s *
slowness * noise + 2 * comm_s / bandwidth` (download and upload). A device that goes offline
before it finishes fails and its result is lost. A round asks for `request_size` devices
(participants times the job's over-commitment), succeeds as soon as `needed` responses arrive
(the minimum response fraction of the participants, 0.8 by default), and otherwise is judged at
its deadline. These are shared rules: every FL scheduler in kairos times rounds the same way.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


class ResponseModel(BaseModel):
    """Seconds a task takes on a device, from the device's speed factors."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compute_s: float = Field(120.0, ge=0)  # work of one task on a slowness-1 device
    comm_s: float = Field(0.0, ge=0)  # one model transfer at bandwidth factor 1
    noise_sigma: float = Field(0.15, ge=0)  # per-task LogNormal jitter of the compute part

    def sample(
        self, slowness: np.ndarray, bandwidth: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Response times for tasks on devices with these factors (vectorised)."""
        slowness = np.asarray(slowness, dtype=np.float64)
        noise = rng.lognormal(0.0, self.noise_sigma, size=slowness.shape)
        return self.compute_s * slowness * noise + 2.0 * self.comm_s / np.asarray(bandwidth)


class RoundRule(BaseModel):
    """When a synchronous round succeeds: deadline, minimum response fraction, over-commit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    deadline_s: float = Field(600.0, gt=0)
    min_resp_frac: float = Field(0.8, gt=0, le=1)
    overcommit: float = Field(1.0, ge=1)

    def request_size(self, participants: int) -> int:
        """Devices to ask for: the participants times the over-commitment, rounded up."""
        return math.ceil(participants * self.overcommit - 1e-9)

    def needed(self, participants: int) -> int:
        """Responses that close the round successfully at once."""
        return max(1, math.ceil(participants * self.min_resp_frac - 1e-9))

    def succeeds_at_deadline(self, participants: int, dispatched: int, responses: int) -> bool:
        """The deadline verdict (Venn artifact): enough devices were dispatched, and enough of
        those responded. A round that got fewer devices than it needs can still pass if almost
        all of the ones it got answered, so a starved round is not aborted for stragglers."""
        frac = self.min_resp_frac
        return (
            dispatched >= frac * participants
            and responses >= frac * min(dispatched, participants)
            and responses > 0
        )


def completes(start: np.ndarray, response: np.ndarray, offline: np.ndarray) -> np.ndarray:
    """Whether each task finishes before its device goes offline (else it fails)."""
    return np.asarray(start) + np.asarray(response) <= np.asarray(offline)
