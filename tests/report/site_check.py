"""What a reader of the report site must see, checked in a browser against the result files.

`check_site` opens `index.html` in a page and compares every table's cells with the JSON the
experiments wrote, read here on their own (not through the site writer), and asks the browser
whether each image decoded. It returns the problems, so a test can also run it on a doctored
copy of a site and see it fail.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from kairos.report.headlines import HEADLINES, Headline, interval, seeds

READ_PAGE = """() => ({
  tables: [...document.querySelectorAll('table')].map(t => ({
    cls: t.className,
    json: t.dataset.json || '',
    system: t.closest('section')?.dataset.system || '',
    head: [...t.querySelectorAll('thead th')].map(c => c.textContent),
    body: [...t.querySelectorAll('tbody tr')].map(r =>
      [...r.querySelectorAll('td, th')].map(c => c.textContent)),
  })),
  images: [...document.images].map(i => ({
    src: i.getAttribute('src'), loaded: i.complete && i.naturalWidth > 0 })),
  text: document.body.textContent,
})"""


def same(text: str, value: Any) -> bool:
    """Whether a cell's text shows a JSON value (floats to the 6 digits the page keeps)."""
    if value is None:
        return text == "—"
    if isinstance(value, bool):
        return text == str(value).lower()
    if isinstance(value, int):
        return text == str(value)
    if isinstance(value, float):
        try:
            shown = float(text)
        except ValueError:
            return False
        return math.isclose(shown, value, rel_tol=1e-5, abs_tol=1e-12)
    if isinstance(value, list | dict):
        try:
            return bool(json.loads(text) == value)
        except ValueError:
            return False
    return text == str(value)


def _pick(result: dict[str, Any], row: Headline) -> Any:
    node: Any = result
    for step in row.part.split("."):
        node = node[step]
    if not row.where:
        return node[row.key]
    (match,) = [r for r in node if all(r.get(k) == v for k, v in row.where.items())]
    return match[row.key]


def _compare(
    where: str, table: dict[str, Any], head: list[str], body: list[list[Any]]
) -> list[str]:
    problems = []
    if table["head"] != head:
        problems.append(f"{where}: columns {table['head']} != {head}")
    if len(table["body"]) != len(body):
        problems.append(f"{where}: {len(table['body'])} rows shown, {len(body)} in the JSON")
    for i, (shown, wanted) in enumerate(zip(table["body"], body, strict=False)):
        for j, (text, value) in enumerate(zip(shown, wanted, strict=False)):
            ok = text == "" if value is _MISSING else same(text, value)
            if not ok:
                problems.append(f"{where} row {i} col {j}: shows {text!r}, JSON has {value!r}")
    return problems


_MISSING = object()


def check_site(page: Any, site: Path) -> list[str]:
    """Every problem with the site at `site` as the browser shows it (empty: all good)."""
    page.goto((site / "index.html").as_uri())
    page.wait_for_load_state("load")
    seen = page.evaluate(READ_PAGE)
    tables = {(t["cls"], t["json"]): t for t in seen["tables"]}
    report = json.loads((site / "report.json").read_text())
    problems: list[str] = []
    if report["provenance"]["git_revision"] not in seen["text"]:
        problems.append("the git commit is not shown")
    if report["provenance"]["machine"] not in seen["text"]:
        problems.append("the machine is not shown")
    facts = {row[0]: row[1] for row in tables.get(("provenance", ""), {"body": []})["body"]}
    for label, key in (("total seconds", "total_s"), ("total CPU seconds", "total_cpu_s")):
        if not same(facts.get(label, ""), report["summary"][key]):
            problems.append(
                f"{label}: shows {facts.get(label)!r}, JSON has {report['summary'][key]}"
            )
    timings = tables.get(("timings", ""))
    wanted = [
        [r["system"], r["experiment"], r["seconds"], r["cpu_seconds"]] for r in report["rows"]
    ]
    if timings is None:
        problems.append("no timings table")
    else:
        problems += _compare(
            "timings", timings, ["system", "experiment", "seconds", "CPU seconds"], wanted
        )
    expected_images: set[str] = set()
    ran = {(r["system"], r["experiment"]) for r in report["rows"]}
    for spec in (h for h in HEADLINES if (h.system, h.experiment) in ran):
        rel = f"{spec.system}/{spec.experiment}/{spec.experiment}.json"
        result = json.loads((site / rel).read_text())
        folder = site / spec.system / spec.experiment
        expected_images |= {p.relative_to(site).as_posix() for p in folder.rglob("*.png")}
        cols: list[str] = []
        for r in result["rows"]:
            cols += [k for k in r if k not in cols]
        checks = {
            "rows": (cols, [[r.get(c, _MISSING) for c in cols] for r in result["rows"]]),
            "summary": (["key", "value"], [[k, v] for k, v in result["summary"].items()]),
            "headline": (
                ["headline", "ours", "95% CI", "seeds", "paper", "paper's number from"],
                [
                    [
                        h.label,
                        _pick(result, h),
                        interval(result, h),
                        seeds(result, h),
                        h.paper,
                        h.source,
                    ]
                    for h in spec.rows
                ],
            ),
        }
        for cls, (head, body) in checks.items():
            table = tables.get((cls, rel))
            if table is None:
                problems.append(f"{rel}: no {cls} table")
            elif table["system"] != spec.system:
                problems.append(f"{rel}: {cls} table outside the {spec.system} section")
            else:
                problems += _compare(f"{rel} {cls}", table, head, body)
    shown = {i["src"] for i in seen["images"]}
    if shown != expected_images:
        problems.append(f"images shown {sorted(shown)} != PNGs written {sorted(expected_images)}")
    problems += [f"image {i['src']} did not load" for i in seen["images"] if not i["loaded"]]
    return problems
