"""Systems reach the `kairos` command through the `kairos.systems` entry points, not imports."""

from __future__ import annotations

from importlib import metadata

import pytest
import typer
from typer.testing import CliRunner

from kairos import systems
from kairos.cli import add_systems
from kairos.systems import System, SystemLoadError

runner = CliRunner(env={"COLUMNS": "200"})


def _register(group: typer.Typer) -> None:
    @group.command("hello")
    def hello() -> None:
        """Say hello."""
        typer.echo("hello from toy")


def _ping() -> None:
    """A root command of the toy system."""
    typer.echo("pong")


TOY = System(name="toy", help="A toy system.", register=(_register,), commands={"ping": _ping})
NOT_A_SYSTEM = object()


def _entry(name: str, attr: str) -> metadata.EntryPoint:
    return metadata.EntryPoint(name, f"{__name__}:{attr}", systems.GROUP)


def _use(monkeypatch: pytest.MonkeyPatch, *entries: metadata.EntryPoint) -> None:
    def entry_points(group: str) -> list[metadata.EntryPoint]:
        assert group == systems.GROUP
        return list(entries)

    monkeypatch.setattr(systems, "entry_points", entry_points)


def test_every_system_of_the_package_is_installed() -> None:
    assert set(systems.installed()) == {"andes", "auxo", "fluid", "orloj", "salus", "venn"}
    assert systems.installed()["andes"].commands.keys() == {"serve", "bench"}


def test_a_system_from_an_entry_point_gets_its_group_and_root_commands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _use(monkeypatch, _entry("toy", "TOY"))
    root = typer.Typer()
    add_systems(root, systems.discover())
    assert runner.invoke(root, ["toy", "hello"]).output.strip() == "hello from toy"
    assert runner.invoke(root, ["ping"]).output.strip() == "pong"
    listed = runner.invoke(root, ["toy", "experiments"])
    assert listed.exit_code == 0 and "toy: no experiments yet" in listed.output


def test_an_entry_point_that_is_not_a_system_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _entry("toy", "NOT_A_SYSTEM"))
    with pytest.raises(SystemLoadError, match=r"toy = .*NOT_A_SYSTEM gives a object"):
        systems.discover()


def test_an_entry_point_must_carry_its_systems_name(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _entry("other", "TOY"))
    with pytest.raises(SystemLoadError, match="gives the system 'toy'"):
        systems.discover()


def test_an_entry_point_that_cannot_load_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _entry("toy", "MISSING"))
    with pytest.raises(SystemLoadError, match=r"cannot load system 'toy'.*AttributeError"):
        systems.discover()


def test_two_systems_may_not_add_the_same_root_command() -> None:
    twin = System(name="twin", help="Another.", commands={"ping": _ping})
    with pytest.raises(RuntimeError, match="`kairos ping`, which system 'toy' adds too"):
        add_systems(typer.Typer(), {"toy": TOY, "twin": twin})
