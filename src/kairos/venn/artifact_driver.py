"""Run the Venn authors' simulator, unchanged, on inputs written by `kairos.venn.artifact`.

    python -m kairos.venn.artifact_driver ARTIFACT_DIR INPUTS_DIR SCHEDULER OUT.json

ARTIFACT_DIR is a checkout of SymbioticLab/Venn (its `src/` is imported, never copied);
SCHEDULER one of its classes (`FIFOScheduler`, `SmallReqScheduler`, `VennReqScheduler`,
`VennMatchScheduler`, ...). Only input and output are replaced: the job list comes from
`config/jobs.json` (built with the artifact's own `Request` and job class, exactly as its
`generate_job_by_config` would), prints and plots are silenced, and every job's start, finish,
rounds and aborts are written to OUT.json. Why a separate process: the artifact configures
itself from `sys.argv` and module globals at import time, so each run needs a fresh
interpreter. This module imports nothing from kairos, so any Python with the artifact's
dependencies (numpy, pandas, pyyaml, matplotlib) can run it.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import time
from typing import Any


def main(argv: list[str]) -> None:
    artifact, inputs, sched, out = argv[:4]
    out = os.path.abspath(out)
    with open(os.path.join(inputs, "kairos_inputs.json")) as f:
        meta = json.load(f)
    with open(os.path.join(inputs, "config", "jobs.json")) as f:
        jobs_spec = json.load(f)
    os.chdir(inputs)  # the artifact opens trace/client_device_capacity relative to the cwd
    cfg = (
        f"RANDOMSEED: {int(meta['seed'])}\nNUM_DAY: 5\nNUM_WEEK: {int(meta['weeks'])}\n"
        "client_file: trace/clients.csv\neligibility_file: trace/eligibility\n"
        "job_config_file: config/jobs.json\n"
    )
    cfg_path = os.path.abspath(f"cfg_{sched}.yml")
    with open(cfg_path, "w") as f:
        f.write(cfg)
    sys.argv = ["src/venn_event.py", sched, "MixedJob", "VennClient", str(len(jobs_spec)), cfg_path]
    sys.path.insert(0, os.path.join(os.path.abspath(artifact), "src"))
    real_print = builtins.print
    builtins.print = lambda *a, **k: None
    import venn_event

    setup: Any = sys.modules["setup_config"]

    def generate_job_request(num_job: int, job_type: str, days: int = 5) -> tuple[Any, ...]:
        """The artifact's job construction (`setup_config.generate_job_by_config`) on our list."""
        request_list: list[Any] = []
        job_list: list[Any] = []
        job_request_list: list[Any] = []
        for j in jobs_spec:
            req = setup.Request(
                j["deadline"], j["participants"], j["min_resp_frac"], 30, 10, j["eligibility"]
            )
            job_request_list.append(req)
            job_list.append(
                setup.GoogleJob(j["id"], "GoogleJob", req, j["rounds"], j["arrival"], 0)
            )
        for job in job_list:
            request_list += job.generate_round_event()
        end = setup.NUM_DAY * 86400 * setup.NUM_WEEK
        request_list.append(setup.Event(end, "END", None, None))
        return request_list, job_list, job_request_list

    venn_event.generate_job_request = generate_job_request
    captured: dict[str, Any] = {}
    show_state = venn_event.show_state

    def capture(job_list: list[Any]) -> Any:
        captured["jobs"] = [
            {
                "id": j.id,
                "elig": j.requirement,
                "P": j.amount,
                "R": j.round,
                "start": j.start,
                "finish": j.job_finsh_time,
                "rounds_done": j.round_num,
                "aborts": j.abort_rounds,
                "wasted": j.wasted_res,
            }
            for j in job_list
        ]
        return show_state(job_list)

    venn_event.show_state = capture
    venn_event.visualize_result = lambda *a, **k: None
    t0 = time.time()
    venn_event.simulate_venn_event(
        state=venn_event.client_file,
        eligibility=venn_event.eligibility_file,
        sched=sched,
        job_type="MixedJob",
        client_type="VennClient",
    )
    res = {"sched": sched, "seed": meta["seed"], "wall": time.time() - t0, **captured}
    with open(out, "w") as f:
        json.dump(res, f)
    done = [j for j in captured["jobs"] if j["finish"] > 0]
    real_print(sched, "finished", len(done), "/", len(captured["jobs"]))


if __name__ == "__main__":
    main(sys.argv[1:])
