"""The report's static site: one `index.html` written only from result files.

`kairos report` runs each system's headline experiment into `<out>/<system>/<name>/` and
records its timings in `<out>/report.json`; `write_site` then reads those JSON files back, so
every number on the page is one a result file holds (the paper's numbers come from
`kairos.report.headlines`). Plots are every PNG the experiment left in its folder, linked by
relative path, so the folder can be copied or served as it is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from kairos.report.headlines import HEADLINES, SystemHeadline, interval, locate, seeds

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; }
figure { display: inline-block; margin: 0.5em; }
img { max-width: 34em; border: 1px solid #ddd; }
figcaption { font-size: 0.8em; color: #555; }
"""


def cell_text(value: Any) -> str:
    """How a JSON value is shown: floats to 6 significant digits, lists and objects as JSON,
    null as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def _td(value: Any, **data: str) -> str:
    cls = ' class="num"' if isinstance(value, int | float) and not isinstance(value, bool) else ""
    attrs = "".join(f' data-{k}="{escape(v)}"' for k, v in data.items())
    return f"<td{cls}{attrs}>{escape(cell_text(value))}</td>"


def _table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], cls: str, data_json: str = ""
) -> str:
    """A table of already rendered `<td>` cells."""
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join(f"<tr>{''.join(r)}</tr>" for r in rows)
    attr = f' data-json="{escape(data_json)}"' if data_json else ""
    return (
        f'<div class="scroll"><table class="{cls}"{attr}><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def columns_of(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every column of the rows, in order of first appearance (as the CSV writes them)."""
    out: list[str] = []
    for row in rows:
        out.extend(k for k in row if k not in out)
    return out


def _headline_table(spec: SystemHeadline, result: Mapping[str, Any], data_json: str) -> str:
    rows = [
        [
            f"<td>{escape(h.label)}</td>",
            _td(locate(result, h)),
            _td(interval(result, h)),
            _td(seeds(result, h)),
            _td(h.paper),
            f"<td>{escape(h.source)}</td>",
        ]
        for h in spec.rows
    ]
    head = ["headline", "ours", "95% CI", "seeds", "paper", "paper's number from"]
    return _table(head, rows, "headline", data_json)


def _rows_table(result: Mapping[str, Any], data_json: str) -> str:
    cols = columns_of(result["rows"])
    cells = [
        [_td(r[c]) if c in r else "<td></td>" for c in cols] for r in result["rows"]
    ]  # fmt: skip
    return _table(cols, cells, "rows", data_json)


def _summary_table(result: Mapping[str, Any], data_json: str) -> str:
    cells = [[f"<td>{escape(k)}</td>", _td(v)] for k, v in result["summary"].items()]
    return _table(["key", "value"], cells, "summary", data_json)


def _system_section(site: Path, spec: SystemHeadline, timing: Mapping[str, Any]) -> str:
    folder = Path(spec.system) / spec.experiment
    data_json = (folder / f"{spec.experiment}.json").as_posix()
    result = json.loads((site / data_json).read_text())
    plots = sorted(p.relative_to(site).as_posix() for p in (site / folder).rglob("*.png"))
    figures = "".join(
        f'<figure><img src="{escape(p)}" alt="{escape(p)}"><figcaption>{escape(p)}'
        "</figcaption></figure>"
        for p in plots
    )
    config = escape(json.dumps(result["config"], indent=1))
    return f"""
<section id="{escape(spec.system)}" class="system" data-system="{escape(spec.system)}">
<h2>{escape(spec.system)}: <code>{escape(spec.experiment)}</code></h2>
<p>{escape(str(timing.get("title", "")))}; ran in
<span class="seconds">{escape(cell_text(timing["seconds"]))}</span> s
({escape(cell_text(timing["cpu_seconds"]))} CPU s):
<code>{escape(str(timing.get("command", "")))}</code>;
results in <a href="{escape(data_json)}">{escape(data_json)}</a>.
{escape(spec.note)}</p>
{_headline_table(spec, result, data_json)}
<div class="plots">{figures}</div>
<details><summary>every row of {escape(data_json)}</summary>
{_rows_table(result, data_json)}</details>
<details><summary>summary</summary>{_summary_table(result, data_json)}</details>
<details><summary>config</summary><pre>{config}</pre></details>
</section>"""


def write_site(site: str | Path) -> Path:
    """Write `<site>/index.html` from `<site>/report.json` and the experiments' JSON files."""
    site = Path(site)
    report = json.loads((site / "report.json").read_text())
    timings = {(r["system"], r["experiment"]): r for r in report["rows"]}
    specs = [h for h in HEADLINES if (h.system, h.experiment) in timings]
    prov = report["provenance"]
    facts = [
        ("git commit", prov["git_revision"]),
        ("machine", f"{prov['machine']}, {prov['cpu_count']} CPUs"),
        ("python", prov["python"]),
        ("kairos", prov["package_version"]),
        ("written", prov["created_at"]),
        ("mode", "quick" if report["config"]["quick"] else "full"),
        ("jobs", report["config"]["jobs"]),
        ("total seconds", report["summary"]["total_s"]),
        ("total CPU seconds", report["summary"]["total_cpu_s"]),
    ]
    facts_html = _table(
        ["", ""], [[f"<th>{escape(k)}</th>", _td(v)] for k, v in facts], "provenance"
    )
    timing_rows = [
        [
            f'<td><a href="#{escape(s.system)}">{escape(s.system)}</a></td>',
            f"<td>{escape(s.experiment)}</td>",
            _td(timings[(s.system, s.experiment)]["seconds"]),
            _td(timings[(s.system, s.experiment)]["cpu_seconds"]),
        ]
        for s in specs
    ]
    timing_html = _table(["system", "experiment", "seconds", "CPU seconds"], timing_rows, "timings")
    sections = "".join(_system_section(site, s, timings[(s.system, s.experiment)]) for s in specs)
    command = "kairos report" + (" --quick" if report["config"]["quick"] else "")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kairos report</title>
<style>{STYLE}</style></head><body>
<h1>kairos report</h1>
<p>Each system's headline experiment, run by <code>{escape(command)}</code>: ours from the
experiment's own result file, the paper's number beside it (from the system's spec).</p>
{facts_html}
<h2>Time per experiment</h2>
{timing_html}
{sections}
</body></html>
"""
    index = site / "index.html"
    index.write_text(page)
    return index
