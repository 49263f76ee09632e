"""Named defects, numbered as in the test names, one test each where the suite's generic cases
do not already cover it: 1 seed 2^64, 2 `1e999` in Venn fields, 6 a 200,000-character stop
string, 7 the startup self-measurement in /metrics, 8 a retried job registration, 9 the Orloj
worker's shutdown, 11 the command's help, errors and tables written to a file. (3, 4, 5 and
Andes' 9 are in test_connections, test_processes and test_bodies; 10 is
tests/andes/server/test_chat_page.py; 12 is tests/andes/engine/test_hf_reference.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.adversarial.targets import AUTH, Target, andes, venn


@pytest.fixture(scope="module")
def andes_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with andes(tmp_path_factory.mktemp("andes")) as t:
        yield t


@pytest.fixture(scope="module")
def venn_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with venn(tmp_path_factory.mktemp("venn")) as t:
        yield t


def chat(**extra: object) -> dict[str, object]:
    return {
        "model": "kairos-tiny-llama-random",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 4,
        **extra,
    }


@pytest.mark.parametrize("seed", [2**64, 2**63, -1])
def test_1_an_out_of_range_seed_is_refused_and_leaves_nothing_behind(
    andes_target: Target, seed: int
) -> None:
    with andes_target.client() as c:
        r = c.post("/v1/chat/completions", json=chat(seed=seed))
        assert r.status_code == 400 and r.json()["error"]["param"] == "seed", r.text
        ok = c.post("/v1/chat/completions", json=chat(seed=2**63 - 1))
        assert ok.status_code == 200, ok.text
    andes_target.assert_healthy()


def test_1_the_engine_itself_is_all_or_nothing() -> None:
    """Below the HTTP layer too: a refused request is not registered with the scheduler."""
    from kairos.andes.engine.api import QoESpec, SamplingParams
    from tests.andes.e2e.conftest import engine

    eng = engine()
    with pytest.raises(ValueError, match="seed"):
        eng.add_request(
            "r1", [1, 2, 3], SamplingParams(max_tokens=4, seed=2**64), QoESpec(1.0, 5.0)
        )
    assert not eng.seqs and eng.scheduler.num_unfinished == 0
    eng.add_request("r1", [1, 2, 3], SamplingParams(max_tokens=4, seed=7), QoESpec(1.0, 5.0))
    assert eng.scheduler.num_unfinished == 1


@pytest.mark.parametrize(
    "body",
    [
        b'{"name": "j", "demand": 2, "rounds": 1, "deadline_s": 1e999}',
        b'{"name": "j", "demand": 2, "rounds": 1, "requirement": {"min_cpu_ghz": 1e999}}',
    ],
)
def test_2_an_infinite_number_never_reaches_the_store(venn_target: Target, body: bytes) -> None:
    headers = {**AUTH, "content-type": "application/json"}
    r = httpx.post(venn_target.url + "/v1/jobs", content=body, headers=headers)
    assert r.status_code == 400 and "finite" in r.json()["error"]["message"], r.text
    with venn_target.client() as c:
        assert c.get("/v1/jobs").status_code == 200
        assert c.post("/v1/checkin", json={"device_id": "d1"}).status_code == 200
    venn_target.assert_healthy()


def test_2_the_store_refuses_infinity_itself(tmp_path: Path) -> None:
    from kairos.venn.service.store import JobRow, NonFiniteError, Store

    store = Store(tmp_path / "s.sqlite")
    job = JobRow("j", "n", {"min_cpu_ghz": float("inf")}, 1, 1, 10.0, 0.5, 0.0, 0, None)
    with pytest.raises(NonFiniteError, match="min_cpu_ghz"):
        store.add_job(job)
    assert store.jobs() == []
    store.close()


def test_6_a_huge_stop_string_is_refused(andes_target: Target) -> None:
    with andes_target.client() as c:
        r = c.post("/v1/chat/completions", json=chat(stop="x" * 200_000))
        assert r.status_code in (400, 413), r.text
        r = c.post("/v1/chat/completions", json=chat(stop="s" * 5_000))  # under the body limit
        assert r.status_code == 400 and "stop" in r.json()["error"]["message"], r.text
        assert c.post("/v1/chat/completions", json=chat(stop=["\n\n", "END"])).status_code == 200
    andes_target.assert_healthy()


def test_7_the_startup_measurement_is_not_in_the_request_counters() -> None:
    from kairos.andes.engine.profiler import measure
    from tests.andes.e2e.conftest import engine

    eng = engine()
    measure(eng, quick=True, reps=1)
    s = eng.stats()
    assert (s.finished, s.aborted, s.busy_s, s.predicted_busy_s) == (0, 0, 0.0, 0.0)
    assert s.free_gpu_blocks == s.num_gpu_blocks


def test_8_a_retried_registration_returns_the_first_job(venn_target: Target) -> None:
    key = {"Idempotency-Key": f"reg-{uuid.uuid4()}"}
    body = {"name": "adv", "demand": 2, "rounds": 1}
    with venn_target.client() as c:
        first = c.post("/v1/jobs", json=body, headers=key)
        again = c.post("/v1/jobs", json=body, headers=key)
        assert first.status_code == 201 and again.status_code == 200, again.text
        assert again.json()["id"] == first.json()["id"]
        assert again.headers["idempotent-replayed"] == "true"
        other = c.post("/v1/jobs", json={**body, "demand": 3}, headers=key)
        assert other.status_code == 422 and "Idempotency-Key" in other.text
        bad = c.post("/v1/jobs", json=body, headers={"Idempotency-Key": "has space"})
        assert bad.status_code == 400
        ids = [j["id"] for j in c.get("/v1/jobs").json()["jobs"]]
        assert ids.count(first.json()["id"]) == 1
    venn_target.assert_healthy()


def test_9_the_orloj_worker_leaves_quietly_when_the_server_goes(
    capfd: pytest.CaptureFixture[str],
) -> None:
    from kairos.orloj.runtime.models import build_model
    from kairos.orloj.runtime.process import ProcessExecutor

    model = build_model("early-exit", stage_blocks=(1, 1, 1, 1))
    worker = ProcessExecutor(model, warm_sizes=(1,))
    worker.start()
    worker._jobs_tx.close()  # the server is gone without saying stop (killed, or exiting)
    worker._proc.join(60)
    assert worker._proc.exitcode == 0
    err = capfd.readouterr().err
    assert "Traceback" not in err and "EOFError" not in err, err


def kairos_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a person pipes it into a file: no terminal, no COLUMNS."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH", "LINES")}
    return subprocess.run(
        [sys.executable, "-m", "kairos", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_11_help_in_a_file_keeps_every_default() -> None:
    out = kairos_cli("serve", "--help").stdout
    assert "[default: 1048576]" in out and "[default: 127.0.0.1]" in out, out
    assert max(len(line) for line in out.splitlines()) > 80  # not folded to rich's default


def test_11_a_config_error_names_the_field_and_the_value_not_pydantic() -> None:
    done = kairos_cli("serve", "--max-waiting", "0", "--profile", "nonexistent-profile")
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "max_waiting" in said and "(got 0)" in said, said
    assert "pydantic.dev" not in said and "Traceback" not in said, said


def test_11_tables_and_log_lines_are_not_cut_in_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    from kairos.cli_utils import make_console

    monkeypatch.delenv("COLUMNS", raising=False)
    with open(os.devnull, "w") as sink:
        saved, sys.stdout = sys.stdout, sink
        try:
            console = make_console()
        finally:
            sys.stdout = saved
    assert console.width >= 200
    url = "http://127.0.0.1:8000/v1  (models: http://127.0.0.1:8000/v1/models)" * 2
    with console.capture() as cap:
        console.print(url)
    assert cap.get().strip() == url  # one line, as written
