"""The differential harness: artifact input formats round-trip, the artifact-compatible fleet's
rules, the driver's contract with the artifact (against a stand-in module), output reading."""

from __future__ import annotations

import json
import math
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kairos.venn.artifact import (
    ARTIFACT_VENN,
    PERIOD_S,
    STRETCH_S,
    artifact_sim_config,
    load_artifact_inputs,
    read_artifact_output,
    write_artifact_inputs,
)
from kairos.venn.differential import run_kairos
from kairos.venn.workloads import CLASSES, FleetConfig, WorkloadConfig, make_fleet, make_jobs

SMALL = FleetConfig(devices=4000)
# six small jobs (3-15 devices, 2-10 rounds) that a 4,000-device fleet serves in hours
WORK = WorkloadConfig(
    jobs=6, participant_scale=0.01, min_participants=3, round_scale=0.005, min_rounds=2
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    jobs = make_jobs(WORK, np.random.default_rng(3))
    out = tmp_path_factory.mktemp("artifact_inputs")
    return write_artifact_inputs(out, jobs, make_fleet(SMALL, 3), seed=3, weeks=2)


def test_inputs_round_trip_in_the_artifacts_formats(inputs: Path) -> None:
    jobs = make_jobs(WORK, np.random.default_rng(3))
    back = load_artifact_inputs(inputs)
    assert [(j.job_id, j.arrival, j.participants, j.rounds) for j in back.jobs] == [
        (j.job_id, j.arrival, j.participants, j.rounds) for j in jobs
    ]
    assert [j.requirement for j in back.jobs] == [j.requirement for j in jobs]
    assert [j.rule.deadline_s for j in back.jobs] == [j.rule.deadline_s for j in jobs]
    assert np.all(np.diff(back.start) >= 0) and back.start.max() <= 5 * 86_400
    assert back.start.min() < 86_400 < 4 * 86_400 < back.start.max()  # all five days
    # what the artifact computes from the capacity pickle is the row's response time
    with open(inputs / "trace/client_device_capacity", "rb") as f:
        cap = pickle.load(f)
    for i in (0, len(back.start) // 2):
        c = cap[i + 1]
        duration = 30 * c["computation"] / 78 + 2 * 10 / (c["communication"] / 13736)
        assert duration == pytest.approx(back.response_s[i], rel=1e-9)
    with open(inputs / "trace/eligibility", "rb") as f:
        elig = pickle.load(f)
    assert len(elig) == len(back.start)
    for e, a in zip(elig[:200], back.atoms[:200], strict=True):
        assert e == [k + 1 for k in range(len(CLASSES)) if a >> k & 1]


def test_the_artifact_fleet_repeats_the_trace_with_fixed_response_times(inputs: Path) -> None:
    fleet = load_artifact_inputs(inputs).fleet()
    a, b = fleet.chunk(0), fleet.chunk(1)
    assert len(a) == len(b)
    assert np.allclose(np.asarray(b.start) - np.asarray(a.start), PERIOD_S)
    assert a.response_s == b.response_s  # the same row, the same duration, every week
    back = load_artifact_inputs(inputs)
    assert np.allclose(np.asarray(a.end) - back.end, STRETCH_S)
    assert np.all((np.asarray(a.delay_s) >= 0) & (np.asarray(a.delay_s) <= 2))
    assert artifact_sim_config(2).max_days == 10 and artifact_sim_config(2).supply_window == (
        "count:1000"
    )


def test_kairos_runs_the_artifact_inputs(inputs: Path) -> None:
    fifo = run_kairos(inputs, "fifo")
    venn = run_kairos(inputs, "venn-nomatch")
    art = run_kairos(inputs, "venn-nomatch", ARTIFACT_VENN)  # the artifact's IRS readings
    for r in (fifo, venn, art):
        assert r["finished"] == 6 and math.isfinite(r["avg_jct"]) and r["avg_jct"] > 0
        assert r["avg_jct"] == pytest.approx(np.mean(r["jct"]))
    assert run_kairos(inputs, "fifo") == fifo  # deterministic


FAKE_ARTIFACT = {
    "util.py": """
        from collections import namedtuple
        class Event:
            def __init__(self, time, type, obj_id, msg):
                self.time, self.type, self.obj_id, self.msg = time, type, obj_id, msg
        Request = namedtuple("Request", "duration amount fraction workload comm eligibility")
    """,
    "setup_config.py": """
        import sys, yaml
        from util import Event, Request
        config = yaml.safe_load(open(sys.argv[5]))
        NUM_DAY, NUM_WEEK = config["NUM_DAY"], config["NUM_WEEK"]
        client_file, eligibility_file = config["client_file"], config["eligibility_file"]
        class GoogleJob:
            def __init__(self, id, job_type, request, round, start, buffer_size):
                self.id, self.request, self.round, self.start = id, request, round, start
                self.amount, self.requirement = request.amount, request.eligibility + 1
                self.job_finsh_time, self.round_num, self.abort_rounds = -1, 0, 0
                self.wasted_res = 0
            def generate_round_event(self):
                return [Event(self.start, "START", self.id, self.request)]
    """,
    "venn_event.py": """
        from setup_config import *
        def generate_job_request(num_job, job_type, days=5):
            raise RuntimeError("the driver must replace the artifact's job generator")
        def show_state(job_list):
            return ""
        def visualize_result(*a):
            raise RuntimeError("plots must be silenced")
        def simulate_venn_event(state, eligibility, sched, job_type, client_type):
            events, jobs, reqs = generate_job_request(3, job_type)
            assert events[-1].type == "END" and events[-1].time == NUM_DAY * 86400 * NUM_WEEK
            for j in jobs:  # a pretend schedule: job i finishes 1000 * (i + 1) s after start
                if j.id != 1:
                    j.job_finsh_time = j.start + 1000.0 * (j.id + 1)
                j.abort_rounds = j.id
            show_state(jobs)
            visualize_result()
    """,
}


def test_the_driver_injects_our_jobs_and_reads_every_job_back(inputs: Path, tmp_path: Path) -> None:
    src = tmp_path / "venn" / "src"
    src.mkdir(parents=True)
    for name, code in FAKE_ARTIFACT.items():
        (src / name).write_text(textwrap.dedent(code))
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "kairos.venn.artifact_driver", str(src.parent), str(inputs)]
    subprocess.run([*cmd, "VennReqScheduler", str(out)], check=True, capture_output=True)
    res = read_artifact_output(out)
    jobs = json.loads((inputs / "config/jobs.json").read_text())
    assert res["sched"] == "VennReqScheduler" and len(res["jct"]) == len(jobs)
    assert res["jct"][0] == pytest.approx(1000.0) and res["jct"][2] == pytest.approx(3000.0)
    assert res["jct"][1] is None and res["finished"] == len(jobs) - 1
    assert res["avg_jct"] == math.inf  # an unfinished job is never averaged away
    assert res["aborts"] == list(range(len(jobs)))


def test_differential_names_a_missing_artifact_and_how_to_fetch_it(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kairos.cli import app

    work = tmp_path / "work"
    result = CliRunner(env={"COLUMNS": "300"}).invoke(
        app, ["venn", "differential", "--artifact", str(tmp_path), "--work", str(work)]
    )
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "not a checkout of the Venn artifact" in text and "SymbioticLab/Venn" in text, text
    assert not work.exists()  # refused before any input was written
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "venn_event.py").write_text("")
    from kairos.venn.differential import check_artifact

    assert check_artifact(tmp_path) == tmp_path.resolve()
