"""`kairos report --quick` for the six systems, smaller than quick mode, opened in Debian
chromium from disk: every headline row is read from a result its experiment really wrote,
every table shows its result file's numbers and every plot loads; a doctored copy of the site
fails the same check (tests/report/site_check.py)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kairos.report.headlines import HEADLINES, SystemHeadline, locate
from tests.andes.browser import chromium
from tests.report.site_check import check_site

SYSTEMS = [h.system for h in HEADLINES]
# Smaller than quick mode (fewer seeds, requests, rounds or cases) but with every row a
# headline names.
TINY: dict[str, dict[str, Any]] = {
    "andes": {"policies": ["fcfs", "andes"], "intensities": [2.8],
              "point": {"span_s": 400.0, "cycle_s": 400.0}},
    "orloj": {"workloads": ["skipnet-imagenet"], "seeds": [0, 1], "n_requests": 300},
    "salus": {"seeds": 2},
    "fluid": {"seeds": 2, "settings_gpus": []},
    "auxo": {"seeds": 2, "label_skew": None, "unequal": None,
             "point": {"data": {"n_clients": 100}, "rounds": 40}},
    "venn": {"seeds": [1, 2], "round_scale": 0.01},
}  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kairos.report.run_report import run_report

    out = tmp_path_factory.mktemp("report")
    run_report(out, quick=True, echo=lambda _: None, settings=TINY)
    return out


@pytest.mark.parametrize("spec", HEADLINES, ids=lambda s: s.system)
def test_every_headline_row_is_in_a_real_result(spec: SystemHeadline, site: Path) -> None:
    folder = site / spec.system / spec.experiment
    result = json.loads((folder / f"{spec.experiment}.json").read_text())
    for row in spec.rows:
        value = locate(result, row)  # raises if the row or its key is missing
        assert value is None or isinstance(value, int | float), (row.label, value)


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    with chromium() as browser:
        yield browser.new_page()


def test_the_site_shows_every_result_file_and_plot(site: Path, page: Any) -> None:
    assert check_site(page, site) == []
    shown = page.evaluate("[...document.querySelectorAll('section.system')].map(s => s.id)")
    assert shown == SYSTEMS
    assert page.evaluate("document.images.length") > 0, "no plot on the page"


def _doctor(site: Path, tmp: Path, pattern: str, change: Any) -> Path:
    copy = tmp / "doctored"
    shutil.copytree(site, copy)
    index = copy / "index.html"
    html = index.read_text()
    doctored, n = re.subn(pattern, change, html, count=1, flags=re.S)
    assert n == 1, f"nothing to doctor: {pattern}"
    index.write_text(doctored)
    return copy


def test_a_changed_number_fails_the_check(site: Path, page: Any, tmp_path: Path) -> None:
    copy = _doctor(
        site,
        tmp_path,
        r'(<table class="rows".*?<td class="num">)([^<]*)(</td>)',
        lambda m: f"{m[1]}{float(m[2]) * 1.01 + 0.01:.6g}{m[3]}",
    )
    problems = check_site(page, copy)
    assert len(problems) == 1 and " rows row 0 " in problems[0], problems


def test_a_broken_image_path_fails_the_check(site: Path, page: Any, tmp_path: Path) -> None:
    copy = _doctor(site, tmp_path, r'<img src="([^"]+)\.png"', lambda m: f'<img src="{m[1]}.PNG"')
    problems = check_site(page, copy)
    assert any(p.startswith("images shown") for p in problems), problems
    assert any(p.endswith(".PNG did not load") for p in problems), problems


def test_an_unreadable_plot_fails_the_check(site: Path, page: Any, tmp_path: Path) -> None:
    copy = tmp_path / "doctored"
    shutil.copytree(site, copy)
    plot = sorted(copy.rglob("*.png"))[0]
    plot.write_bytes(b"not a png")
    assert check_site(page, copy) == [f"image {plot.relative_to(copy).as_posix()} did not load"]
