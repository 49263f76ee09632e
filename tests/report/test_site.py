"""The report's headline registry and site writer, without a browser (tests/report/
test_site_browser.py opens a site written from real runs of all six systems)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import matplotlib
import pytest

from kairos.experiments import get_experiment
from kairos.report import write_result
from kairos.report.headlines import (
    HEADLINES,
    Headline,
    SystemHeadline,
    interval,
    locate,
    seeds,
)
from kairos.report.run_report import pick
from kairos.report.site import cell_text, write_site

matplotlib.use("Agg")


@pytest.mark.parametrize("spec", HEADLINES, ids=lambda s: s.system)
def test_every_headline_names_a_registered_experiment_whose_quick_config_validates(
    spec: SystemHeadline,
) -> None:
    exp = get_experiment(spec.system, spec.experiment)
    exp.config(quick=True, overrides=spec.quick_overrides)
    assert spec.rows, f"{spec.system} has no headline rows"


def test_the_registry_covers_the_six_systems_once() -> None:
    assert sorted(h.system for h in HEADLINES) == sorted(
        ["andes", "orloj", "salus", "fluid", "auxo", "venn"]
    )
    assert [h.system for h in pick(["venn", "salus"])] == ["salus", "venn"]
    with pytest.raises(KeyError, match="nope"):
        pick(["nope"])


def test_locate_reads_rows_summary_lists_and_refuses_ambiguity() -> None:
    result = {
        "rows": [{"p": "a", "x": 1.5}, {"p": "b", "x": 2.5}, {"p": "b", "x": 3.5}],
        "summary": {"gain": 4.0, "averages": [{"slo": 3.0, "r": 0.9}]},
    }
    assert locate(result, Headline("", "x", 1, "", where={"p": "a"})) == 1.5
    assert locate(result, Headline("", "gain", 1, "", part="summary")) == 4.0
    assert locate(result, Headline("", "r", 1, "", "summary.averages", {"slo": 3.0})) == 0.9
    with pytest.raises(KeyError, match="2 rows"):
        locate(result, Headline("", "x", 1, "", where={"p": "b"}))
    with pytest.raises(KeyError):
        locate(result, Headline("", "missing", 1, "", where={"p": "a"}))


def test_interval_and_seeds_read_each_way_a_result_gives_them() -> None:
    nan = float("nan")
    result = {
        "rows": [
            {"p": "named", "x": 2.0, "x_from": 1.5, "x_to": 2.5, "seeds": 10},
            {"p": "lohi", "x": 2.0, "x_lo": 1.0, "x_hi": 3.0, "seeds": [1, 2, 3]},
            {"p": "half", "x": 2.0, "x_ci95": 0.25, "seeds": "0..9"},
            {"p": "none", "x": 2.0},
            {"p": "nan", "x": 2.0, "x_lo": nan, "x_hi": 3.0, "seeds": True},
        ],
        "summary": {"seeds": 4},
    }

    def row(p: str, ci: tuple[str, str] | None = None) -> Headline:
        return Headline("", "x", 1, "", where={"p": p}, ci=ci)

    assert interval(result, row("named", ("x_from", "x_to"))) == [1.5, 2.5]
    assert interval(result, row("lohi")) == [1.0, 3.0]
    assert interval(result, row("half")) == [1.75, 2.25]
    assert interval(result, row("none")) is None
    assert interval(result, row("nan")) is None
    assert [seeds(result, row(p)) for p in ("named", "lohi", "half", "none", "nan")] == [
        10, 3, 10, 4, None
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "—"), (True, "true"), (3, "3"), (0.123456789, "0.123457"), ([1, "a"], '[1, "a"]')],
)
def test_cell_text(value: Any, text: str) -> None:
    assert cell_text(value) == text


class _Tables(HTMLParser):
    """Each table's cell texts, by (class, data-json), and every <img> src."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[tuple[str, str], list[list[str]]] = {}
        self.images: list[str] = []
        self._rows: list[list[str]] | None = None
        self._text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._rows = self.tables.setdefault(
                (a.get("class") or "", a.get("data-json") or ""), []
            )
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._text = []
        elif tag == "img":
            self.images.append(a.get("src") or "")

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._rows is not None and self._text is not None:
            self._rows[-1].append("".join(self._text))
            self._text = None
        elif tag == "table":
            self._rows = None


def _fake_site(site: Path) -> SystemHeadline:
    """A site folder as `kairos report --only venn` leaves it, with made-up numbers."""
    spec = next(h for h in HEADLINES if h.system == "venn")
    folder = site / spec.system / spec.experiment
    rows = [
        {"workload": "even", "policy": p, "speedup": 1.0 + i / 7, "seeds": [1, 2]}
        for i, p in enumerate(["fifo", "srsf", "venn"])
    ]
    rows[0]["note<&>"] = None
    write_result(folder, spec.experiment, config={"q": 1}, rows=rows, summary={"max": 1.5})
    import matplotlib.pyplot as plt

    (folder / "plots").mkdir()
    for path in (folder / "bars.png", folder / "plots" / "more.png"):
        fig, _ = plt.subplots()
        fig.savefig(path)
        plt.close(fig)
    timing = {"system": "venn", "experiment": spec.experiment, "seconds": 2.5, "cpu_seconds": 2.0}
    summary = {"total_s": 3.0, "total_cpu_s": 2.0}
    write_result(site, "report", config={"quick": True, "jobs": 1}, rows=[timing], summary=summary)
    return spec


def test_site_shows_the_result_files_cells_and_every_png(tmp_path: Path) -> None:
    spec = _fake_site(tmp_path)
    page = _Tables()
    page.feed(write_site(tmp_path).read_text())
    rel = f"venn/{spec.experiment}/{spec.experiment}.json"
    result = json.loads((tmp_path / rel).read_text())
    cols = list(dict.fromkeys(k for r in result["rows"] for k in r))
    shown = page.tables[("rows", rel)]
    assert shown[0] == cols
    for tr, row in zip(shown[1:], result["rows"], strict=True):
        assert tr == [cell_text(row[c]) if c in row else "" for c in cols]
    headline = page.tables[("headline", rel)][1:]
    assert [r[1] for r in headline] == [cell_text(locate(result, h)) for h in spec.rows]
    assert [r[2] for r in headline] == [cell_text(interval(result, h)) for h in spec.rows]
    assert [r[3] for r in headline] == ["2"] * len(spec.rows)  # seeds [1, 2]
    assert [r[4] for r in headline] == [cell_text(h.paper) for h in spec.rows]
    assert page.tables[("summary", rel)][1:] == [["max", "1.5"]]
    assert sorted(page.images) == [
        f"venn/{spec.experiment}/bars.png",
        f"venn/{spec.experiment}/plots/more.png",
    ]
    assert page.tables[("timings", "")][1:] == [["venn", spec.experiment, "2.5", "2"]]


def test_report_refuses_an_unknown_system_before_running_anything(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kairos.cli import app

    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["report", "--quick", "--only", "salus,nope", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "no headline for nope" in result.output
    assert not any(tmp_path.iterdir())
