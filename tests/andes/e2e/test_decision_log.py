"""`kairos serve --decision-log`: the served engine's decisions, written as they are made, by
the server its users start (a process of its own on a real socket)."""

from __future__ import annotations

import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from typer.testing import CliRunner

from kairos.andes.decisions import CODEC, SYSTEM, Iteration
from kairos.cli import app
from kairos.decisions import is_plain, read_log
from tests.adversarial.test_processes import andes_args, kairos


def test_serve_writes_every_decision_to_its_log(tmp_path: Path) -> None:
    log = tmp_path / "decisions.jsonl"
    body = {"model": "kairos-tiny-llama-random", "max_tokens": 6, "ignore_eos": True}
    with kairos([*andes_args(tmp_path), "--decision-log", str(log)], tmp_path / "serve.log") as (
        proc,
        url,
    ):

        def complete(prompt: str) -> int:
            r = httpx.post(url + "/v1/completions", json=body | {"prompt": prompt}, timeout=60)
            assert r.status_code == 200
            return int(r.json()["usage"]["completion_tokens"])

        with ThreadPoolExecutor(3) as pool:
            assert list(pool.map(complete, ["a b c", "hello there", "x"])) == [6, 6, 6]
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    loaded = read_log(log, CODEC, system=SYSTEM)
    assert loaded.meta["mode"] == "serve" and loaded.meta["engine"]["policy"] == "andes"
    records = [e.record for e in loaded.entries]
    assert all(isinstance(r, Iteration) and is_plain(r) for r in records)
    # three requests, six tokens each: every token was a sampling step of some decision
    sampled: dict[str, int] = {}
    for r in records:
        for s in r.steps:
            sampled[s.request_id] = sampled.get(s.request_id, 0) + s.samples
    assert sorted(sampled.values()) == [6, 6, 6]
    assert [e.t for e in loaded.entries] == sorted(e.t for e in loaded.entries)


def test_serve_names_a_decision_log_it_cannot_write(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    args = ["serve", "--profile", "none.json", "--decision-log", str(blocker / "d.jsonl")]
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, args)
    assert result.exit_code == 2
    assert "decision log" in result.output and "a-file" in result.output
