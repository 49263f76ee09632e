from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import kairos
from kairos.cli import SYSTEMS, app

runner = CliRunner(env={"COLUMNS": "200"})


def test_help_lists_every_system_group() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for system in SYSTEMS:
        assert system in result.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and kairos.__version__ in result.output


def test_trace_describe_prints_tables_and_saves_a_plot(data_dir: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["trace", "describe", str(data_dir / "azure_llm_conv_1h.csv"), "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "19366" in result.output and "arrival rate per minute" in " ".join(result.output.split())
    assert (tmp_path / "azure_llm_conv_1h_rate.png").is_file()
    assert (tmp_path / "azure_llm_conv_1h.json").is_file()


def test_trace_describe_reports_a_broken_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n1,2,x\n")
    result = runner.invoke(app, ["trace", "describe", str(bad), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "line 2" in result.output


def test_a_bad_setting_of_any_systems_experiment_is_one_line_naming_it(tmp_path: Path) -> None:
    """The shared `experiment` command: a wrongly typed or unknown `--set` is a usage error
    naming the key, whatever the system's config class (not a pydantic traceback)."""
    cases = [
        (["salus", "experiment", "service_e3", "--set", "windows=x"], "invalid setting windows"),
        (["salus", "experiment", "service_e3", "--set", "device=gpu"], "one of 'cpu', 'cuda'"),
        (["salus", "experiment", "service_e3", "--set", "windowz=4"], "windowz"),
        (["auxo", "experiment", "e1", "--set", "seeds=many"], "invalid setting seeds"),
    ]
    import torch

    if not torch.cuda.is_available():  # a GPU asked for where there is none: said at once
        cases.append(
            (["salus", "experiment", "service_e3", "--set", "device=cuda"], "CUDA is not available")
        )
    for args, expected in cases:
        result = runner.invoke(app, [*args, "--out", str(tmp_path)])
        assert result.exit_code == 2, (args, result.output)
        assert expected in result.output and "Traceback" not in result.output, result.output
        assert not any(tmp_path.iterdir())  # nothing ran


def test_an_unknown_set_key_is_refused_in_every_system_naming_the_allowed_keys(
    tmp_path: Path,
) -> None:
    """One rule for `--set` in every system: a key the config lacks (a misspelling, a top-level
    or a nested one) is refused with the allowed keys, never run on the defaults."""
    cases = [
        (["fluid", "experiment", "fig3_13a", "--set", "seed=20"], "unknown setting 'seed'"),
        (["venn", "experiment", "toy", "--set", "bogus_key=1"], "unknown setting 'bogus_key'"),
        (["orloj", "experiment", "bimodal", "--set", "sedes=[1]"], "unknown setting 'sedes'"),
        (["andes", "experiment", "e2", "--set", "burst=3"], "unknown setting 'burst'"),
    ]
    for args, expected in cases:
        result = runner.invoke(app, [*args, "--quick", "--out", str(tmp_path)])
        assert result.exit_code == 2, (args, result.output)
        assert expected in result.output and "(allowed: " in result.output, result.output
        assert not any(tmp_path.iterdir())  # nothing ran


def test_every_experiments_default_and_quick_settings_are_its_own_keys() -> None:
    """The quick settings go through the same refusal: none may name a key its config lacks."""
    from kairos.experiments.registry import list_experiments

    for system in SYSTEMS:
        for exp in list_experiments(system):
            exp.config(quick=False)
            exp.config(quick=True)
