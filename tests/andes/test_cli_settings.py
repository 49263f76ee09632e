"""The commands do what they say or fail with one clear line.

Each test guards one misleading case: E4 could not take a trace path; `--set`
ignored unknown keys and printed a pydantic traceback for a mistyped value; the sweep cache
served stale results for a changed trace; E4 raised ValueError for some policy orders on a
long-prompt trace (per-second series of unequal length plotted on the first run's time axis);
`simulate --trace` ignored `--load-factor` and `--span` and saved none of its settings; tables
were cut at 80 columns outside a terminal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from kairos.andes.latency import PROFILES
from kairos.andes.operating_point import trace_sustainable_rate
from kairos.andes.policies.andes import AndesConfig
from kairos.andes.policies.pacer import PacingConfig
from kairos.cli import app
from kairos.cli_utils import SettingError, Settings

runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # relative result folders land in the test's own folder


def long_prompt_trace(path: Path, n: int = 150, seed: int = 0) -> Path:
    """Thousands of prompt tokens, tens of output tokens: the shape that broke E4."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0, n))
    prompts = np.clip(rng.lognormal(np.log(4000), 0.5, n), 500, 30000).astype(int)
    outputs = np.clip(rng.lognormal(np.log(30), 0.6, n), 2, 400).astype(int)
    lines = ["arrived_at,num_prefill_tokens,num_decode_tokens"]
    lines += [f"{a:.3f},{p},{o}" for a, p, o in zip(arrivals, prompts, outputs, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def e4(out: Path, *settings: str) -> tuple[int, str, dict[str, Any]]:
    """E4 at its operating point only (one load, one seed, no ablation row): quick to run."""
    args = ["andes", "experiment", "e4", "--out", str(out)]
    for s in ("load_sweep=[1.0]", "seeds=[0]", "starvation_ablation=false", *settings):
        args += ["--set", s]
    result = runner.invoke(app, args)
    path = out / "andes" / "e4" / "e4.json"
    data = json.loads(path.read_text()) if result.exit_code == 0 else {}
    return result.exit_code, result.output, data


@pytest.mark.parametrize("policies", [["andes", "fcfs"], ["sarathi", "andes", "fcfs"]])
def test_e4_replays_any_trace_in_any_policy_order(tmp_path: Path, policies: list[str]) -> None:
    trace = long_prompt_trace(tmp_path / "long.csv")
    code, output, data = e4(
        tmp_path, f"trace={trace}", "span_s=60", f"policies={json.dumps(policies)}"
    )
    assert code == 0, output
    assert [r["policy"] for r in data["rows"]] == policies
    counts = {r["requests"] for r in data["rows"]}
    assert len(counts) == 1 and 0 < counts.pop() < 150  # the first 60 s, rescaled
    assert data["config"]["trace"] == str(trace)
    for name in ("e4_waiting.png", "e4_kv_usage.png", "e4_cdf_qoe.png"):
        assert (tmp_path / "andes" / "e4" / name).is_file()


def test_a_changed_trace_is_not_served_from_the_cache(tmp_path: Path) -> None:
    trace = long_prompt_trace(tmp_path / "t.csv", n=120)
    settings = (f"trace={trace}", "span_s=100000", 'policies=["fcfs"]')
    _, _, first = e4(tmp_path, *settings)
    assert first["rows"][0]["requests"] == 120
    long_prompt_trace(trace, n=60, seed=1)  # same path, new content
    _, _, second = e4(tmp_path, *settings)
    assert second["rows"][0]["requests"] == 60


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("spann_s=100", ["'spann_s'", "allowed:", "span_s", "trace", "policies"]),
        ("span_s=abc", ["span_s='abc'", "expected float"]),
        ('policies="fcfs"', ["policies='fcfs'", "expected list[str]"]),
        ('point={"load_factr": 1}', ["'point.load_factr'", "load_factor", "span_s"]),
    ],
)
def test_a_bad_setting_is_one_clear_line(setting: str, named: list[str]) -> None:
    result = runner.invoke(app, ["andes", "experiment", "e4", "--quick", "--set", setting])
    assert result.exit_code == 2
    assert "Traceback" not in result.output and "pydantic" not in result.output
    assert all(word in result.output for word in named), result.output


def test_simulate_rejects_a_bad_andes_option_naming_the_allowed_ones(tmp_path: Path) -> None:
    out = ["--out", str(tmp_path)]
    bad = runner.invoke(app, ["andes", "simulate", "--andes", "horizn_s=5", *out])
    assert bad.exit_code == 2 and "'horizn_s'" in bad.output and "horizon_s" in bad.output
    typed = runner.invoke(app, ["andes", "simulate", "--andes", "horizon_s=soon", *out])
    assert typed.exit_code == 2 and "horizon_s='soon'" in typed.output
    assert "Traceback" not in typed.output


def test_simulate_trace_applies_load_factor_and_span_and_saves_every_setting(
    tmp_path: Path,
) -> None:
    trace = long_prompt_trace(tmp_path / "t.csv", n=150)
    base = ["andes", "simulate", "--policy", "fcfs", "--trace", str(trace)]
    shaped = runner.invoke(app, [*base, "--load-factor", "0.8", "--span", "60", "--out", "a"])
    assert shaped.exit_code == 0, shaped.output
    data = json.loads(Path("a/simulate_fcfs.json").read_text())
    prompts, outputs = np.loadtxt(trace, delimiter=",", skiprows=1, usecols=(1, 2)).T
    rate = 0.8 * trace_sustainable_rate(PROFILES["llama-3.1-70b"], prompts, outputs)
    assert data["summary"]["rate"] == pytest.approx(rate)
    assert 0 < data["summary"]["requests"] < 150
    cfg = data["config"]
    assert cfg["load_factor"] == 0.8 and cfg["span_s"] == 60 and cfg["trace"] == str(trace)
    assert len(cfg["trace_sha256"]) == 64 and cfg["policy"] == "fcfs" and cfg["seed"] == 0
    whole = runner.invoke(app, [*base, "--as-recorded", "--out", "b"])  # every request
    assert whole.exit_code == 0, whole.output
    assert json.loads(Path("b/simulate_fcfs.json").read_text())["summary"]["requests"] == 150
    for option in ("--intensity", "--duration", "--cycle"):
        wrong = runner.invoke(app, [*base, option, "0.3", "--out", "c"])
        assert wrong.exit_code == 2 and option in wrong.output and "--trace" in wrong.output


def test_tables_are_never_cut_outside_a_terminal() -> None:
    """`simulate`'s summary table is about 135 columns wide; at COLUMNS=80 in a pipe it is
    printed whole: every header intact, nothing ellipsised or folded."""
    narrow = CliRunner(env={"COLUMNS": "80"})
    result = narrow.invoke(app, ["andes", "simulate", "--policy", "fcfs", "--span", "60"])
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) > 120
    assert "…" not in result.output
    for header in ("requests", "preemptions_per_request", "peak_waiting", "end_time"):
        assert f" {header} " in result.output


def test_e4_series_of_unequal_length_share_the_longest_time_axis() -> None:
    """The cause of E4's ValueError: a run that ended after the first one was cut to the
    first one's time axis and one that ended before it was too short for it."""
    from kairos.andes.experiments.trace_replay import aligned_series

    def run(n: int) -> dict[str, Any]:
        return {"series": {"time": list(range(n)), "waiting": [1.0] * n}}

    time, lines = aligned_series([run(3), run(5), run(4)], ["a", "b", "c"], "waiting")
    assert time == [0, 1, 2, 3, 4]
    assert {p: len(v) for p, v in lines.items()} == {"a": 5, "b": 5, "c": 5}
    assert np.isnan(lines["a"][3:]).all() and lines["b"] == [1.0] * 5
    assert np.isnan(lines["c"][4]) and lines["c"][:4] == [1.0] * 4


def test_simulate_trace_runs_at_the_stated_operating_point_by_default(tmp_path: Path) -> None:
    """Without --rate, --load-factor or --as-recorded, a replayed trace is placed where FCFS's
    average QoE is the paper's 0.88 (searched), and the result says where that was."""
    trace = long_prompt_trace(tmp_path / "t.csv", n=150)
    args = ["andes", "simulate", "--policy", "fcfs", "--trace", str(trace), "--out", "a"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(Path("a/simulate_fcfs.json").read_text())
    placed = data["config"]["operating_point"]
    assert placed["target_fcfs_qoe"] == 0.88 and placed["converged"]
    assert data["config"]["load_factor"] == placed["load_factor"]
    assert abs(data["summary"]["avg_qoe"] - 0.88) <= 0.01  # the same run the search measured


class _Inner(Settings):
    a: int = 0


class _Outer(Settings):
    inner: _Inner | None = None  # an optional section: None switches it off


def test_a_key_inside_an_optional_section_is_named_with_its_allowed_keys() -> None:
    """`_model_at` used to stop at `X | None`, so an unknown key in `pacing` listed no allowed
    keys ("allowed: none"), and the Andes check around it printed the union's module path."""
    with pytest.raises(SettingError) as err:
        _Outer.model_validate({"inner": {"b": 1}})
    assert str(err.value) == "unknown setting 'inner.b' (allowed: a)"
    with pytest.raises(SettingError) as err:
        _Outer.model_validate({"inner": 3})
    assert "expected _Inner | None" in str(err.value)
    with pytest.raises(SettingError) as err:
        AndesConfig.model_validate({"pacing": {"margn": 0.7}})
    allowed = ", ".join(sorted(PacingConfig.model_fields))
    assert str(err.value) == f"unknown setting 'pacing.margn' (allowed: {allowed})"
    result = runner.invoke(app, ["andes", "simulate", "--andes", 'pacing={"margn": 1}'])
    assert result.exit_code == 2
    assert "unknown setting 'pacing.margn' (allowed: aged_always" in result.output
    assert "PacingConfig" not in result.output
