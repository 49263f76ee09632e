"""The Salus service over a real socket on CPU: real jobs from several clients run to
completion under each policy, SRTF preempts at iteration boundaries, a switch moves no parameter
bytes (beside suspend/resume), misbehaving jobs fail clearly while the others finish, and bad
submissions get a 4xx naming the field."""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

import httpx
import pytest
from tests.salus.runtime.stack import FAULTY, TINY, ZOO, salus
from tests.scrape import scrape

from kairos.salus.runtime.client import SalusError

JOBS = [("cnn", 12), ("lstm", 10), ("vae", 15), ("superres", 12)]


@pytest.mark.parametrize("policy", ["fifo", "pack", "srtf", "fair"])
def test_jobs_from_several_clients_run_to_completion(policy: str) -> None:
    with salus(policy=policy) as (client, _):
        ids: list[int] = []
        lock = threading.Lock()

        def one_client(k: int) -> None:  # each thread is its own client over its own socket
            from kairos.salus.runtime.client import SalusClient

            with SalusClient(client.http.base_url.__str__()) as mine:
                for name, n in JOBS[k::2]:
                    job = mine.submit(f"{name}-{k}", f"{ZOO}:{name}", n, expected_s=0.05 * n,
                                      options=dict(TINY) if name != "lstm" else {})  # fmt: skip
                    with lock:
                        ids.append(job["id"])

        threads = [threading.Thread(target=one_client, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        finished = [client.wait(i, timeout_s=60) for i in ids]
        assert [j["state"] for j in finished] == ["done"] * len(JOBS), finished
        for j in finished:
            assert j["iterations_done"] == j["iterations"] and j["service_s"] > 0
            assert j["persistent_bytes"] > 0 and j["lane"] is not None
        stats = client.stats()
        assert stats["policy"] == policy and stats["used_bytes"] == 0  # every job's memory freed
        assert stats["lanes"] == [] and stats["reserved_bytes"] == 0
        metrics = scrape(httpx.get(str(client.http.base_url) + "/metrics").text)
        assert metrics.value("kairos_salus_jobs", state="done") == len(JOBS)
        assert metrics.value("kairos_salus_used_bytes") == 0


def test_srtf_runs_a_short_newcomer_first_at_an_iteration_boundary() -> None:
    with salus(policy="srtf") as (client, _):
        long = client.submit("long", f"{ZOO}:cnn", 400, expected_s=100.0, options=TINY)
        while client.get(long["id"])["state"] != "running":
            time.sleep(0.01)
        short = client.submit("short", f"{ZOO}:vae", 30, expected_s=0.1)
        s = client.wait(short["id"], timeout_s=60)
        at_short_end = client.get(long["id"])
        assert s["state"] == "done"
        assert at_short_end["state"] == "running"  # preempted, not finished first
        assert at_short_end["iterations_done"] < 400
        assert s["switches_in"] >= 1  # it took the lane from the long job at a boundary
        client.cancel(long["id"])


def _switching(switch: str) -> tuple[list[float], list[dict[str, Any]]]:
    """Two big-state jobs sharing one lane under FAIR (they alternate every iteration)."""
    opts = {"hidden": 256, "vocab": 2000, "seq": 4, "batch": 2}  # ~18 MB of state each
    with salus(policy="fair", switch=switch, capacity_bytes=2**30) as (client, service):
        ids = [client.submit(f"j{k}", f"{ZOO}:lstm", 40, options=opts)["id"] for k in range(2)]
        jobs = [client.wait(i, timeout_s=60) for i in ids]
        gaps = [g for r in service.jobs.values() for g in r.switches]
    return gaps, jobs


def test_a_switch_moves_no_parameter_bytes_and_beats_suspend_resume() -> None:
    resident_gaps, resident = _switching("resident")
    suspend_gaps, suspended = _switching("suspend")
    assert all(j["state"] == "done" for j in resident + suspended)
    assert len(resident_gaps) >= 10 and len(suspend_gaps) >= 10
    assert all(j["moved_bytes"] == 0 for j in resident)  # storages where set-up put them
    assert all(j["moved_bytes"] > 10**7 for j in suspended)  # every switch moved the state
    # medians, wide margin: copying the state out and in dwarfs a decision and a thread hop
    assert statistics.median(suspend_gaps) > 2 * statistics.median(resident_gaps)


def test_misbehaving_jobs_fail_clearly_and_the_others_finish() -> None:
    with salus(policy="fair", allow_modules=(ZOO, FAULTY)) as (client, _):
        good = [client.submit(f"ok{k}", f"{ZOO}:vae", 30)["id"] for k in range(2)]
        bad = {
            name: client.submit(name, f"{FAULTY}:{name}", 30)["id"]
            for name in ("raising", "leaking", "greedy")
        }
        wrong = client.submit("wrong", f"{FAULTY}:not_a_job", 5)["id"]
        for i in good:
            assert client.wait(i, timeout_s=60)["state"] == "done"
        errors = {n: client.wait(i, timeout_s=60) for n, i in bad.items()}
        assert all(j["state"] == "failed" for j in errors.values())
        assert "ValueError: this step is broken on purpose" in errors["raising"]["error"]
        assert "leaks memory across iterations" in errors["leaking"]["error"]
        assert "exceeded its memory profile" in errors["greedy"]["error"]
        w = client.wait(wrong, timeout_s=30)
        assert w["state"] == "failed" and "JobParts" in w["error"]
        assert client.stats()["used_bytes"] == 0


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"name": "a", "factory": f"{ZOO}:cnn"}, 400, "iterations"),
        ({"name": "a", "factory": f"{ZOO}:cnn", "iterations": "5"}, 400, "iterations"),
        ({"name": "a", "factory": f"{ZOO}:cnn", "iterations": 0}, 400, "iterations"),
        ({"name": "a", "factory": f"{ZOO}:cnn", "iterations": 5, "kind": "eval"}, 400, "kind"),
        ({"name": "a", "factory": f"{ZOO}:cnn", "iterations": 5, "gpus": 2}, 400, "gpus"),
        ({"name": "a", "factory": "os:system", "iterations": 5}, 400, "factory"),
        ({"name": "a", "factory": f"{ZOO}:nope", "iterations": 5}, 400, "factory"),
        ({"name": "a", "factory": f"{ZOO}:cnn", "iterations": 5, "options": {"x": 1}}, 400,
         "options"),
        ({"name": "a b", "factory": f"{ZOO}:cnn", "iterations": 5}, 400, "name"),
        ({"name": "a", "factory": f"{ZOO}:cnn", "iterations": 5, "expected_s": -1}, 400,
         "expected_s"),
    ],
)  # fmt: skip
def test_a_malformed_submission_gets_a_4xx_naming_the_field(
    body: dict[str, Any], status: int, param: str
) -> None:
    with salus() as (client, service):
        r = client.http.post("/v1/jobs", json=body)
        assert r.status_code == status, r.text
        err = r.json()["error"]
        assert err["param"] == param and param in err["message"]
        assert service.jobs == {}  # nothing was accepted, nothing was imported and run


def test_other_bad_requests_and_cancel() -> None:
    with salus() as (client, _):
        r = client.http.post("/v1/jobs", content=b"name=a", headers={"content-type": "text/plain"})
        assert r.status_code == 415
        r = client.http.post(
            "/v1/jobs", content=b'{"iterations": NaN}', headers={"content-type": "application/json"}
        )
        assert r.status_code == 400
        with pytest.raises(SalusError) as err:
            client.get(999)
        assert err.value.status == 404 and err.value.param == "id"
        job = client.submit("c", f"{ZOO}:cnn", 100_000, options=TINY)
        assert client.cancel(job["id"])["state"] == "cancelled"
        assert client.get(job["id"])["state"] == "cancelled"
        assert client.stats()["jobs"] == {"cancelled": 1}


def test_checkpoints_of_a_running_job_are_auxiliary_calls() -> None:
    """Spec 3.7's auxiliary calls, as users meet them: the weights of a training job taken at
    its lane's boundary while SRTF keeps running another job; not charged to the job."""
    from safetensors.torch import load

    with salus(policy="srtf") as (client, service):
        job = client.submit("train", f"{ZOO}:cnn", 100_000, expected_s=1e6, options=TINY)
        while client.get(job["id"])["iterations_done"] < 12:
            time.sleep(0.02)
        first = load(client.checkpoint(job["id"]))
        while client.get(job["id"])["iterations_done"] < 24:
            time.sleep(0.02)
        second = load(client.checkpoint(job["id"]))
        record = service.jobs[job["id"]]
        model = service.sessions[job["id"]].parts.model  # type: ignore[union-attr]
        assert set(first) == set(model.state_dict()) and len(first) >= 4
        assert any(not first[k].equal(second[k]) for k in first)  # training moved the weights
        # a job that only waits in the lane (SRTF runs the shorter one) is checkpointed too
        short = client.submit("short", f"{ZOO}:cnn", 100_000, expected_s=1.0, options=TINY)
        while client.get(short["id"])["state"] != "running":
            time.sleep(0.02)
        waiting = client.get(job["id"])["iterations_done"]
        assert set(load(client.checkpoint(job["id"]))) == set(first)
        assert client.get(job["id"])["iterations_done"] <= waiting + 1  # still not its turn
        for j in (job, short):
            client.cancel(j["id"])
        driven = service.driver.jobs[job["id"]] if service.driver else None
        assert driven is not None
        while driven.finish is None:  # it leaves at its running iteration's end
            time.sleep(0.02)
        # three calls ran, none counted as an iteration: the record's count is the profiler's
        # iterations plus the driver's main iterations, exactly
        profiled = record.spec.iterations - (driven.iterations or 0)
        assert record.iterations_done == profiled + driven.done
        with pytest.raises(SalusError) as err:
            client.checkpoint(job["id"])
        assert err.value.status == 409 and "cancelled" in str(err.value)
        with pytest.raises(SalusError) as err:
            client.checkpoint(999)
        assert err.value.status == 404
