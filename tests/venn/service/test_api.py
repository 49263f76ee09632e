"""The Venn service's HTTP API over a real socket: the job and device protocol, errors that name
the field, auth, metrics, and that the server keeps serving after bad requests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from kairos.fl import Requirement
from kairos.runtime.http import BackgroundServer
from kairos.venn.manager import ResourceManager
from kairos.venn.policies import make_policy
from kairos.venn.service.app import ServiceSettings, create_app
from kairos.venn.service.offers import THRESHOLDS, accepted_atom, requirement_of
from tests.scrape import scrape

KEY = "s3cret"
AUTH = {"Authorization": f"Bearer {KEY}"}
JSON_AUTH = {**AUTH, "content-type": "application/json"}


@pytest.fixture()
def url(store_spec: Callable[[], str]) -> Iterator[str]:
    """The service on each backend: the single-process service on a SQLite file, and one
    stateless front-end on a PostgreSQL database (same API, same answers)."""
    app = create_app(ServiceSettings(api_key=KEY), db=store_spec())
    with BackgroundServer(app) as srv:
        yield srv.url


def _post(url: str, path: str, body: object) -> httpx.Response:
    return httpx.post(url + path, json=body, headers=AUTH)


def test_round_trip_job_offer_result(url: str) -> None:
    job = {"name": "kb", "requirement": {"min_ram_gb": 4.0}, "demand": 2, "rounds": 1}
    r = _post(url, "/v1/jobs", job)
    assert r.status_code == 201, r.text
    jid = r.json()["id"]
    assert r.json()["state"] == "waiting"
    assert _post(url, "/v1/checkin", {"device_id": "d0"}).json()["offers"] == []
    assert _post(url, f"/v1/jobs/{jid}/rounds", {"round": 0}).status_code == 201
    offers = _post(url, "/v1/checkin", {"device_id": "d0"}).json()["offers"]
    assert offers == [
        {
            "offer_id": f"{jid}.r0",
            "requirement": {
                "min_cpu_ghz": 0.0,
                "min_ram_gb": 4.0,
                "min_fp16_mem_mb": 0.0,
                "min_android_os": 0.0,
            },
        }
    ]
    for dev in ("d0", "d1"):
        a = _post(url, f"/v1/offers/{jid}.r0/accept", {"device_id": dev, "capability": 1.0})
        assert a.json() == {"assigned": True, "job_id": jid, "round": 0, "deadline_s": 600.0}
    # fully dispatched: no more offers; one result of two (0.8 * 2 -> 2 needed) keeps it open
    assert _post(url, "/v1/checkin", {"device_id": "d2"}).json()["offers"] == []
    res = _post(url, "/v1/results", {"device_id": "d0", "job_id": jid, "round": 0}).json()
    assert res == {"accepted": True, "round_complete": False, "job_finished": False}
    res = _post(url, "/v1/results", {"device_id": "d1", "job_id": jid, "round": 0}).json()
    assert res == {"accepted": True, "round_complete": True, "job_finished": True}
    got = httpx.get(f"{url}/v1/jobs/{jid}", headers=AUTH).json()
    assert got["state"] == "finished" and got["rounds_done"] == 1
    late = _post(url, "/v1/results", {"device_id": "d1", "job_id": jid, "round": 0})
    assert late.status_code == 200 and late.json()["accepted"] is False
    metrics = httpx.get(url + "/metrics").text
    assert scrape(metrics).value("kairos_venn_rounds_completed_total") == 1


@pytest.mark.parametrize(
    ("path", "body", "status", "param", "words"),
    [
        ("/v1/checkin", {}, 400, "device_id", "Missing required parameter"),
        ("/v1/checkin", {"device_id": 7}, 400, "device_id", "device_id"),
        ("/v1/checkin", {"device_id": "d", "ram_gb": 8}, 400, "ram_gb", "unknown field"),
        ("/v1/checkin", "[1]", 400, None, "JSON object"),
        ("/v1/jobs", {"name": "x", "demand": 0, "rounds": 1}, 400, "demand", "demand"),
        (
            "/v1/jobs",
            {"name": "x", "demand": 1, "rounds": 1, "requirement": {"min_ram": 1}},
            400,
            "requirement.min_ram",
            "unknown field",
        ),
        ("/v1/jobs/job-nope/rounds", {}, 404, None, "Unknown job 'job-nope'"),
        ("/v1/offers/job-nope.r0/accept", {"device_id": "d"}, 404, None, "Unknown offer"),
        ("/v1/results", {"device_id": "d", "job_id": "job-x", "round": 0}, 404, None, "job-x"),
    ],
)
def test_errors_name_the_problem_and_server_keeps_serving(
    url: str, path: str, body: object, status: int, param: str | None, words: str
) -> None:
    if isinstance(body, str):
        r = httpx.post(url + path, content=body, headers=JSON_AUTH)
    else:
        r = _post(url, path, body)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert words in err["message"]
    if param is not None:
        assert err["param"] == param
    assert httpx.get(url + "/health").json()["status"] == "ok"


def test_bad_json_unknown_job_and_auth(url: str) -> None:
    r = httpx.post(url + "/v1/checkin", content=b"{nope", headers=JSON_AUTH)
    assert r.status_code == 400 and "parse the JSON" in r.json()["error"]["message"]
    r = httpx.get(url + "/v1/jobs/job-missing", headers=AUTH)
    assert r.status_code == 404 and "job-missing" in r.json()["error"]["message"]
    r = httpx.post(url + "/v1/checkin", json={"device_id": "d"})
    assert r.status_code == 401
    assert _post(url, "/v1/checkin", {"device_id": "d"}).status_code == 200


def test_round_order_and_expired_offer(url: str) -> None:
    jid = _post(url, "/v1/jobs", {"name": "a", "demand": 1, "rounds": 2}).json()["id"]
    r = _post(url, f"/v1/jobs/{jid}/rounds", {"round": 1})
    assert r.status_code == 409 and "next round" in r.json()["error"]["message"]
    assert _post(url, f"/v1/jobs/{jid}/rounds", {}).status_code == 201
    assert _post(url, f"/v1/jobs/{jid}/rounds", {}).status_code == 409
    r = _post(url, f"/v1/offers/{jid}.r1/accept", {"device_id": "d"})
    assert r.status_code == 409 and "expired" in r.json()["error"]["message"]


def test_accepted_offer_implies_weaker_requirements() -> None:
    """The atom the service gives a device that accepted R: every registered requirement R
    implies, and no other."""
    strong = requirement_of({"min_ram_gb": 8, "min_cpu_ghz": 6})
    weak = requirement_of({"min_ram_gb": 4})
    other = requirement_of({"min_android_os": 10})
    assert requirement_of({"min_ram_gb": 4.0}) == weak  # same thresholds, same group
    mgr = ResourceManager(make_policy("venn"), [strong, weak, other])

    def atom(r: Requirement) -> int:
        return accepted_atom(mgr, {k: getattr(r, k) for k in THRESHOLDS})

    assert atom(strong) == 0b011 and atom(weak) == 0b010 and atom(other) == 0b100


def test_a_device_serves_a_round_once_and_is_given_another_job(url: str) -> None:
    jobs = [
        _post(url, "/v1/jobs", {"name": n, "demand": 2, "rounds": 1}).json()["id"]
        for n in ("x", "y")
    ]
    for jid in jobs:
        assert _post(url, f"/v1/jobs/{jid}/rounds", {}).status_code == 201
    first = _post(url, f"/v1/offers/{jobs[0]}.r0/accept", {"device_id": "d0"}).json()
    assert first["assigned"] is True
    served = first["job_id"]
    other = jobs[1] if served == jobs[0] else jobs[0]
    # whichever offer it accepts next, d0 is not given the round it already serves
    again = _post(url, f"/v1/offers/{served}.r0/accept", {"device_id": "d0"}).json()
    assert again["assigned"] is True and again["job_id"] == other
    third = _post(url, f"/v1/offers/{other}.r0/accept", {"device_id": "d0"}).json()
    assert third == {
        "assigned": False,
        "reason": "this device already serves every round that needs it",
    }
    # the slots d0 could not take are still there for other devices
    d1 = _post(url, f"/v1/offers/{other}.r0/accept", {"device_id": "d1"}).json()
    d2 = _post(url, f"/v1/offers/{other}.r0/accept", {"device_id": "d2"}).json()
    assert {d1["job_id"], d2["job_id"]} == {served, other}
    assert _post(url, "/v1/checkin", {"device_id": "d3"}).json()["offers"] == []
