"""`kairos venn serve --decision-log PATH` and `kairos venn replay PATH`, as a user runs them:
the log holds the round events of the requests served, in order, the replay finds the
simulator's driver deciding alike (and finds an edited verdict), and a path the server cannot
write or a broken log is refused in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from kairos.decisions import read_log
from kairos.runtime.ports import free_port
from kairos.venn import decisions as rec
from kairos.venn.decisions import CODEC, SYSTEM

ENV = {**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
SERVE = [sys.executable, "-m", "kairos", "venn", "serve"]
REPLAY = [sys.executable, "-m", "kairos", "venn", "replay"]


def _wait_healthy(proc: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + 120  # only against a hang: a loaded machine starts slowly
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the server did not come up (exit code {proc.poll()})")


def test_serve_writes_the_round_events_it_decides(tmp_path: Path) -> None:
    log, port = tmp_path / "logs" / "venn.jsonl", free_port()
    args = ["--db", str(tmp_path / "v.sqlite"), "--decision-log", str(log), "--port", str(port)]
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([*SERVE, *args], env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)  # fmt: skip
    try:
        _wait_healthy(proc, url)
        job = {"name": "j", "demand": 1, "rounds": 1, "min_resp_frac": 1.0}
        jid = httpx.post(url + "/v1/jobs", json=job).json()["id"]
        assert httpx.post(f"{url}/v1/jobs/{jid}/rounds", json={}).status_code == 201
        got = httpx.post(f"{url}/v1/offers/{jid}.r0/accept", json={"device_id": "d1"}).json()
        assert got["assigned"] is True
        res = {"device_id": "d1", "job_id": jid, "round": 0}
        assert httpx.post(url + "/v1/results", json=res).json()["job_finished"] is True
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    loaded = read_log(log, CODEC, system=SYSTEM)
    assert loaded.meta["policy"] == "venn" and loaded.meta["restored_jobs"] == 0
    assert [type(e.record) for e in loaded.entries] == [
        rec.JobArrived, rec.RoundOpened, rec.CheckedIn, rec.Assigned, rec.Responded,
        rec.RoundClosed, rec.JobFinished,
    ]  # fmt: skip
    assert loaded.entries[3].record == rec.Assigned("d1", jid, 0)
    assert loaded.entries[5].record == rec.RoundClosed(jid, 0, True, 1, 1)
    times = [e.t for e in loaded.entries]
    assert times == sorted(times) and abs(times[0] - time.time()) < 600  # Unix time
    # and `kairos venn replay` finds the simulator's driver deciding alike
    done = subprocess.run([*REPLAY, str(log)], env=ENV, capture_output=True, timeout=120)
    assert done.returncode == 0
    assert b"7 entries: the simulator's driver decides alike" in done.stdout
    lines = log.read_text().splitlines()
    lines[6] = lines[6].replace('"success":true', '"success":false')  # the round's verdict
    log.write_text("\n".join(lines) + "\n")
    done = subprocess.run([*REPLAY, str(log)], env=ENV, capture_output=True, timeout=120)
    assert done.returncode == 1 and b"decision 5 differs" in done.stdout


def test_replay_names_a_broken_log(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kairos_decision_log": 1, "system": "venn", "meta": {}}\n{"t": 1}\n{}\n')
    done = subprocess.run([*REPLAY, str(bad)], env=ENV, capture_output=True, timeout=120)
    assert done.returncode == 2 and f"{bad}:2:".encode() in done.stdout


def test_a_log_path_it_cannot_write_is_refused_naming_the_flag(tmp_path: Path) -> None:
    args = ["--db", str(tmp_path / "v.sqlite"), "--decision-log", str(tmp_path)]
    done = subprocess.run([*SERVE, *args], env=ENV, capture_output=True, timeout=120)
    assert done.returncode == 1
    out = done.stdout.decode()
    assert f"--decision-log {tmp_path}" in out and "Is a directory" in out
    assert not (tmp_path / "v.sqlite").exists()
