"""Headline numbers quoted in README.md and docs/*.md, generated from the report's results.

`kairos report --publish` writes `docs/results/headlines.json` (each headline row: ours read
from the experiment's JSON, the paper's number, where the spec gives it) and rewrites every
block between `<!-- report: SYSTEMS -->` and `<!-- /report -->` in the docs from it. The
docs test renders each block again from the checked-in JSON and fails, naming file and line,
when the text differs: a number edited by hand in a block is caught, and so is a JSON file
regenerated without the docs that quote it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kairos.report.cited import first_difference, rewrite
from kairos.report.headlines import HEADLINES, interval, locate, seeds

PUBLISHED = Path("docs/results/headlines.json")
BLOCK = re.compile(r"(<!-- report: (?P<what>[a-z, ]+) -->\n)(?P<body>.*?)(<!-- /report -->)", re.S)


def headline_rows(site: Path) -> list[dict[str, Any]]:
    """Every headline row of the experiments the report at `site` ran."""
    rows = []
    for spec in HEADLINES:
        path = site / spec.system / spec.experiment / f"{spec.experiment}.json"
        if not path.is_file():
            continue
        result = json.loads(path.read_text())
        for h in spec.rows:
            rows.append(
                {
                    "system": spec.system,
                    "experiment": spec.experiment,
                    "label": h.label,
                    "ours": locate(result, h),
                    "ci95": interval(result, h),
                    "seeds": seeds(result, h),
                    "paper": h.paper,
                    "source": h.source,
                }
            )
    return rows


def published(site: Path) -> dict[str, Any]:
    """What the docs quote: the headline rows and how the report that made them ran."""
    report = json.loads((site / "report.json").read_text())
    return {
        "command": "kairos report" + (" --quick" if report["config"]["quick"] else ""),
        "provenance": report["provenance"],
        "summary": report["summary"],
        "timings": report["rows"],
        "rows": headline_rows(site),
    }


def number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "n/a" if value is None else str(value)
    return f"{value:.3g}"


def render(pub: Mapping[str, Any], systems: Sequence[str]) -> str:
    """The markdown of a block quoting `systems`' headline rows."""
    prov, summary = pub["provenance"], pub["summary"]
    seconds = {t["system"]: t["seconds"] for t in pub["timings"]}
    lines = [
        f"From `{pub['command']}` (docs/results/headlines.json; commit "
        f"{prov['git_revision'][:10]}, {prov['machine']}, {prov['cpu_count']} CPUs, "
        f"{prov['created_at'][:10]}; the whole report {summary['total_s']:.0f} s wall, "
        f"{summary['total_cpu_s']:.0f} CPU s"
        + (f", load average {summary['load_average']:.1f} at its start" if "load_average"
           in summary else "")
        + "):",
        "",
        "| system | headline | ours [95% CI] | seeds | paper | paper's source |",
        "| --- | --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    for r in pub["rows"]:
        if r["system"] in systems:
            ci = f" [{number(r['ci95'][0])}, {number(r['ci95'][1])}]" if r["ci95"] else ""
            lines.append(
                f"| {r['system']} | {r['label']} | {number(r['ours'])}{ci} | "
                f"{number(r['seeds'])} | {number(r['paper'])} | {r['source']} |"
            )
    took = [f"{s} {seconds[s]:.0f} s" for s in systems if s in seconds]
    lines += ["", f"Time per experiment: {', '.join(took)}.", ""]
    return "\n".join(lines)


def _systems(what: str) -> list[str]:
    return [s.strip() for s in what.split(",") if s.strip()]


def sync(text: str, pub: Mapping[str, Any]) -> str:
    """`text` with every report block rendered afresh from `pub`."""
    return BLOCK.sub(lambda m: m[1] + render(pub, _systems(m["what"])) + m[4], text)


def drift(text: str, pub: Mapping[str, Any], name: str) -> list[str]:
    """Each block of `text` whose body is not what `pub` renders, as 'name:line: ...'."""
    problems = []
    for m in BLOCK.finditer(text):
        want = render(pub, _systems(m["what"]))
        if m["body"] != want:
            first, got = first_difference(m["body"], want)
            line = text.count("\n", 0, m.start("body")) + 1 + first
            problems.append(
                f"{name}:{line}: differs from {PUBLISHED} (kairos report --publish writes both): "
                f"{got!r}"
            )
    return problems


def publish(site: Path, root: Path) -> list[Path]:
    """Write `root/docs/results/headlines.json` from the report at `site` and rewrite the
    report blocks of README.md and docs/*.md under `root`; the files changed."""
    pub = published(site)
    out = root / PUBLISHED
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(pub, indent=1, sort_keys=True) + "\n")
    return [out, *rewrite(root, lambda text: sync(text, pub))]
