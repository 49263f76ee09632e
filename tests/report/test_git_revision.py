"""Result files record the git revision they were made with: a real commit inside a checkout,
`unknown` only outside one."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import kairos
import kairos.report.results as results
from kairos.report import write_result
from kairos.report.results import git_dir, git_revision

HEX = re.compile(r"[0-9a-f]{40}(-dirty)?")
REPO = Path(__file__).resolve().parents[2]


def _git(where: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=where,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A fresh repository with one commit: (its folder, the commit)."""
    where = tmp_path / "repo"
    where.mkdir()
    _git(where, "init", "-q", "-b", "main")
    (where / "a.txt").write_text("one\n")
    _git(where, "add", "a.txt")
    _git(where, "commit", "-q", "-m", "first")
    return where, _git(where, "rev-parse", "HEAD")


def no_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the git program were not installed."""

    def missing(*_a: object, **_k: object) -> None:
        raise FileNotFoundError("git")

    monkeypatch.setattr(results.subprocess, "run", missing)


def test_result_files_made_in_this_checkout_record_its_commit(tmp_path: Path) -> None:
    js, _ = write_result(tmp_path, "r", config={}, rows=[{"x": 1}])
    rev = json.loads(js.read_text())["provenance"]["git_revision"]
    source = Path(kairos.__file__).resolve()
    if (REPO / ".git").exists() and source.is_relative_to(REPO):  # the usual: tests of a checkout
        assert HEX.fullmatch(rev), rev
        assert rev.removesuffix("-dirty") == _git(REPO, "rev-parse", "HEAD")
    else:  # tests run against an installed copy of kairos
        assert rev == "unknown"


def test_a_commit_and_uncommitted_changes(repo: tuple[Path, str]) -> None:
    where, sha = repo
    assert git_revision(where) == sha
    (where / "new.txt").write_text("untracked files do not count\n")
    assert git_revision(where) == sha
    (where / "a.txt").write_text("two\n")
    assert git_revision(where) == sha + "-dirty"
    sub = where / "deep" / "er"
    sub.mkdir(parents=True)
    assert git_revision(sub) == sha + "-dirty"  # any folder of the checkout


def test_without_the_git_program_the_commit_is_read_from_the_files(
    repo: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    where, sha = repo
    _git(where, "commit", "-q", "--allow-empty", "-m", "second")
    second = _git(where, "rev-parse", "HEAD")
    assert second != sha
    no_git(monkeypatch)
    assert git_revision(where) == second  # loose ref
    monkeypatch.undo()
    _git(where, "pack-refs", "--all")
    assert not (where / ".git/refs/heads/main").exists()
    no_git(monkeypatch)
    assert git_revision(where) == second  # packed ref
    monkeypatch.undo()
    _git(where, "checkout", "-q", "--detach", sha)
    no_git(monkeypatch)
    assert git_revision(where) == sha  # detached HEAD


def test_a_worktree_points_to_its_git_directory(
    repo: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    where, sha = repo
    tree = tmp_path / "tree"
    _git(where, "worktree", "add", "-q", "-b", "side", str(tree))
    assert (tree / ".git").is_file()
    assert git_revision(tree) == sha
    no_git(monkeypatch)
    assert git_revision(tree) == sha


def test_unknown_only_outside_a_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_dir(outside) is None  # the test's premise: no repository around tmp_path
    assert git_revision(outside) == "unknown"
    no_git(monkeypatch)
    assert git_revision(outside) == "unknown"


def test_a_repository_before_its_first_commit(tmp_path: Path) -> None:
    where = tmp_path / "empty"
    where.mkdir()
    _git(where, "init", "-q")
    assert git_revision(where) == "uncommitted"
