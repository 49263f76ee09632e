"""Andes' pacing settings (`PacingConfig`) and their application to each decision (`Pacer`).

Pacing (policies/pacing.py) holds a prefill until the running users' buffered text covers
it, so streams do not stall behind prefill-only iterations; at E4's point that is where
FCFS loses most of its QoE. `PacingConfig()` is the setting docs/andes.md measured best
("Pacing: the default"): margin 0.65, shortest prefill first, admitting between solves, and
bounded overtaking (22 later prompts, or 2x the prompts waiting) as its aging rule; the
measurements at E4 and under bursts are there. `AndesConfig.pacing` None: no pacing (the
paper's Andes).

Options the docs measured as losers were removed: paced prefill chunks (each chunk pays the
prefill iteration's fixed cost: the same frontier or worse), highest-response-ratio order
(mean TTFT 1.14x FCFS's), backfilling past a held prompt, overdue prompts admitted unpaced
(lost the 0.95) and a decode-only compute trigger (lost most of E2's gain).
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from kairos.andes.policies.overtaking import OvertakeCount
from kairos.andes.policies.pacing import pace_admissions, paced_order, with_aged
from kairos.andes.policy import SchedulerView
from kairos.andes.request import RequestView
from kairos.cli_utils import Settings


class PacingConfig(Settings):
    """Buffer-paced admission. The aging rules put overdue prompts first; any of them can be
    combined, a prompt is overdue when one of them says so."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # start a prefill only if margin x its iteration's time fits every running user's
    # buffered text (a smaller margin risks stalls, a larger one holds prompts longer)
    margin: float = Field(0.65, gt=0)
    # which held prompt first: Andes' own order, or fewest prefill tokens
    order: Literal["admission", "shortest"] = "shortest"
    # between solves, admit (paced) instead of holding the queue until the next solve; under
    # the `perfect` objective only what the last solve chose (objectives.py)
    between_solves: bool = True
    # bounded overtaking (policies/overtaking.py): a prompt is overdue once more than this
    # many later prompts were admitted before it; None: off
    overtake: int | None = Field(22, ge=0)
    # ... or more than this many x the prompts waiting, if larger (a burst's queue is long)
    overtake_per_waiting: float = Field(2.0, ge=0)
    # a prompt waiting more than this many TTFT targets past due is overdue; None: off
    starve_after: float | None = Field(None, ge=0)
    # ... or waiting more than this many seconds (the same bound for every prompt length)
    starve_after_s: float | None = Field(None, ge=0)
    aged_always: bool = False  # overdue prompts join every admission, solved or not
    aged_together: bool = False  # once one overdue prompt fits, its overdue peers join it


class Pacer:
    """Applies a `PacingConfig` to the admissions of each decision. Keeps the overtaking
    counts, so one Pacer serves one policy object for one run."""

    def __init__(self, config: PacingConfig) -> None:
        self.config = config
        self._overtaken = OvertakeCount()

    def observe(self, view: SchedulerView) -> None:
        """Count overtakes: call once per decision, before deciding (the prompts admitted
        since the last view are the ones no longer waiting)."""
        if self.config.overtake is not None:
            self._overtaken.observe(view.waiting)

    def admit(self, view: SchedulerView, admit: list[RequestView]) -> list[RequestView]:
        """The decision's admissions, overdue prompts first (and added, with `aged_always`),
        in the configured order, cut before the first prefill the buffers cannot absorb."""
        cfg = self.config
        if not (admit or cfg.aged_always):
            return admit
        aged: frozenset[str] = frozenset()
        if cfg.overtake is not None:
            aged = self._overtaken.overdue(cfg.overtake, cfg.overtake_per_waiting)
        if cfg.aged_always:
            admit = with_aged(view, admit, cfg.starve_after, cfg.starve_after_s, aged)
        ordered = paced_order(
            admit, view.now, cfg.order, cfg.starve_after, cfg.starve_after_s, aged
        )
        return pace_admissions(
            view,
            ordered,
            cfg.margin,
            cfg.starve_after,
            cfg.starve_after_s,
            cfg.aged_together,
            aged,
        )
