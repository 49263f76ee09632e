"""Andes variants as changes to the Andes settings given (`point.andes`), not to the defaults.

An experiment's variant (the ablation's rows, E4's rule-off row) changes one thing of the
Andes it is run with: with `--set 'point={"andes": {...}}'` a non-default Andes is ablated as
itself, not as the default one. Updates merge recursively (`deep_merge`), so a pacing
setting changes only what it names. Pacing changes apply only where pacing is on: merging
into `"pacing": None` would turn it back on.

Andes has two anti-starvation rules, both on by default: the knapsack's (`starvation_*`,
policies/starvation.py: a request whose user waits far longer than the queue's mean is
admitted first, even if the refiner dropped it) and pacing's bounded overtaking
(`pacing.overtake`, policies/overtaking.py: a prompt passed by more than 22 later ones, or
2x the queue, goes first). At E4 (seeds 0-2) neither alone bounds the longest wait: max
TTFT 1.98x FCFS's with both, 3.06x with overtaking alone, 4.96x with the knapsack's alone,
5.17x with neither; together they cost 0.004 of average QoE there (docs/andes.md).
"""

from __future__ import annotations

from typing import Any

from kairos.experiments.overrides import deep_merge

GUARDS: dict[str, dict[str, Any]] = {
    "solve_every": {"solve_every": 1},
    "preempt_only_buffered": {"preempt_only_buffered": False},
    "prefer_swap": {"prefer_swap": False},
    "slack_cap": {"slack_cap": False},
    "running_bonus": {"running_bonus": 0.0},
    "min_residency": {"min_residency_s": 0.0},
    "anti_starvation": {"starvation_after": None},  # not a thrash guard: bounds the tail
}
NO_OVERTAKING: dict[str, Any] = {"pacing": {"overtake": None}}


def paced(given: dict[str, Any]) -> bool:
    """Whether the Andes given paces its admissions (the default does)."""
    return given.get("pacing", {}) is not None


def without_anti_starvation(given: dict[str, Any]) -> dict[str, Any]:
    """`given` with both anti-starvation rules off (overtaking only where it paces)."""
    out = deep_merge(given, GUARDS["anti_starvation"])
    return deep_merge(out, NO_OVERTAKING) if paced(given) else out


def ablation_variants(given: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ablation's rows as SimPoint updates. Each removes its guard from the Andes
    settings given; the literal solver removes them all (pacing stays as given, without its
    overtaking rule). A paced Andes is also run without overtaking, without both
    anti-starvation rules (their joint cost in average QoE) and without pacing."""
    literal: dict[str, Any] = dict(given)
    for upd in GUARDS.values():
        literal = deep_merge(literal, upd)
    if paced(given):
        literal = deep_merge(literal, NO_OVERTAKING)
    variants: dict[str, dict[str, Any]] = {
        "fcfs": {"policy": "fcfs"},
        "andes (all guards)": {"policy": "andes"},
        "literal (no guards)": {"policy": "andes", "andes": literal},
    }
    for g, upd in GUARDS.items():
        variants[f"without {g}"] = {"policy": "andes", "andes": deep_merge(given, upd)}
    if paced(given):
        variants |= {
            "without overtaking": {"policy": "andes", "andes": deep_merge(given, NO_OVERTAKING)},
            "without both anti-starvation rules": {
                "policy": "andes",
                "andes": without_anti_starvation(given),
            },
            "without pacing": {"policy": "andes", "andes": deep_merge(given, {"pacing": None})},
        }
    return variants
