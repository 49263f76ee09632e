"""`compile_kernels` compiles, before any decision, every version of the knapsack's kernels
that real decisions then use, and leaves the server's policy untouched.

numba keeps compiled versions per process, so the check runs in a fresh interpreter: after
the warm-up, a simulated contended run (many solves, through the scheduler's request table)
must add no version, and the warm-up itself must not count as one of the policy's solves.
"""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json
import numpy as np
from kairos.andes import gain_kernel
from kairos.andes.latency import DEFAULT_PROFILE, load_profile
from kairos.andes.policies import pack_kernel
from kairos.andes.policies.registry import make_policy
from kairos.andes.policies.warm_up import compile_kernels
from kairos.andes.simulator import simulate
from kairos.workloads import Trace

def versions():
    return [len(gain_kernel.serve_gain_grid.signatures), len(pack_kernel.pack_columns.signatures)]

latency = load_profile(DEFAULT_PROFILE)
policy = make_policy("andes")
before = versions()
compile_kernels(policy, latency)
warm = versions()
solves_after_warm_up = policy.solves
rng = np.random.default_rng(0)
n = 300
trace = Trace(
    arrivals=np.sort(rng.uniform(0, 20, n)),
    prompt_tokens=rng.integers(100, 1500, n),
    output_tokens=rng.integers(50, 500, n),
)
simulate(policy, latency, trace, np.full(n, 5.0))
print(json.dumps({"before": before, "warm": warm, "after": versions(),
                  "warm_solves": solves_after_warm_up, "solves": policy.solves}))
"""


def test_warm_up_compiles_what_real_solves_use() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600, check=True
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] == [0, 0]
    assert all(v >= 1 for v in got["warm"]), got  # both kernels, the packer's too
    assert got["warm_solves"] == 0
    assert got["solves"] > 10  # the run did solve, under contention
    assert got["after"] == got["warm"], got  # and needed no new version
