"""The 45 workloads of Table A.1 (15 models x 3 batch sizes) as `Profile`s.

33 of them (11 CNNs x 3 batch sizes) are measured: `shared/data/salus_workloads.csv` (the Salus
release's `tests/workloads.csv`) gives each workload's solo run time, iteration count and peak
memory for runs of 1, 5 and 10 minutes. Following spec 6.9 we take `t_iter` from the 10-minute
row (the shorter rows include 62-129 s of start-up), `P` = parameter + optimizer-state bytes
of the network (fp32 weights; the paper's jobs ran tf_cnn_benchmarks, whose default optimizer
is plain SGD and keeps no per-parameter state, so 4 bytes a parameter; the counts are the
published sizes of the torchvision/timm builds; resnet152's 241 MB sits inside the 110.9 -
822.2 MB the paper measured), `E` = peak - P and `u` = 1 (CNN training is compute bound).
The other 12 (vae, superres, speech, seq2seq) are not in the data: their numbers below are
stated assumptions, marked `source="assumed"`, used only by the model demonstrations.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from pathlib import Path

from kairos.salus.profile import MIB, Profile, ProfileError
from kairos.workloads.shared import shared_data

DATA_FILE = "salus_workloads.csv"
COLUMNS = ("workload", "jct_s", "peak_mem_mb", "iterations")
BYTES_PER_PARAM = 4  # fp32 weights; plain SGD (tf_cnn_benchmarks default) keeps no slot

# Published parameter counts (millions) of the 11 CNNs.
PARAMS_M: dict[str, float] = {
    "alexnet": 61.10,
    "googlenet": 6.62,
    "inception3": 27.16,
    "inception4": 42.68,
    "overfeat": 145.9,
    "resnet50": 25.56,
    "resnet101": 44.55,
    "resnet152": 60.19,
    "vgg11": 132.86,
    "vgg16": 138.36,
    "vgg19": 143.67,
}

# (peak MiB, P MiB, t_iter s, u) per workload the data file lacks. ASSUMED, not measured. P
# counts framework-internal memory too (the paper's smallest measured P is 110.9 MB, far above
# googlenet's 26 MB of weights); with weights alone a tiny model's P is ~0 and Algorithm 2.1's
# guard never stops admission, so every extra job joins the oldest lane (best fit's tie rule).
# vae's peak follows Fig. A.1 (185 MB); superres's u = 0.4 is what makes E4's 2.38x possible;
# seq2seq sizes follow the PTB LSTM small/medium/large configs.
ASSUMED: dict[str, tuple[float, float, float, float]] = {
    "vae_64": (185, 150, 0.005, 0.2),
    "vae_128": (200, 150, 0.007, 0.2),
    "vae_256": (230, 150, 0.010, 0.2),
    "superres_32": (600, 100, 0.05, 0.4),
    "superres_64": (1100, 100, 0.09, 0.4),
    "superres_128": (2100, 100, 0.17, 0.4),
    "speech_25": (4000, 400, 0.30, 0.9),
    "speech_50": (7000, 400, 0.55, 0.9),
    "speech_75": (10000, 400, 0.80, 0.9),
    "seq2seq_small": (500, 100, 0.03, 0.6),
    "seq2seq_medium": (1800, 200, 0.08, 0.6),
    "seq2seq_large": (5000, 500, 0.20, 0.6),
}

_NAME = re.compile(r"^(?P<model>[a-z0-9]+)_(?P<batch>[0-9]+)_(?P<minutes>[0-9]+)min$")


def _field(path: Path, row: int, rec: Mapping[str, str | None], col: str, kind: type) -> float:
    raw = rec.get(col)
    where = f"{path}: row {row}: column {col!r}"
    if raw is None or raw.strip() == "":
        raise ProfileError(f"{where}: missing value")
    try:
        value = kind(raw)
    except ValueError:
        raise ProfileError(f"{where}: {raw!r} is not a {kind.__name__}") from None
    if not (math.isfinite(value) and value > 0):
        raise ProfileError(f"{where}: {raw!r} must be a finite number > 0")
    return float(value)


def read_rows(path: Path) -> list[dict[str, float | str]]:
    """Every row of a workload file, validated: a broken cell is reported by file, row (1 is the
    first data row) and column."""
    if not path.exists():
        raise ProfileError(
            f"workload profiles not found: {path} (set KAIROS_SHARED to the shared/ folder, "
            "or pass the file's path)"
        )
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ProfileError(f"{path}: header lacks column(s) {missing}; need {list(COLUMNS)}")
        out: list[dict[str, float | str]] = []
        for row, rec in enumerate(reader, start=1):
            name = (rec.get("workload") or "").strip()
            m = _NAME.match(name)
            if not m:
                raise ProfileError(
                    f"{path}: row {row}: column 'workload': {name!r} is not <model>_<batch>_<N>min"
                )
            out.append(
                {
                    "workload": f"{m['model']}_{m['batch']}",
                    "minutes": int(m["minutes"]),
                    "jct_s": _field(path, row, rec, "jct_s", float),
                    "peak_mem_mb": _field(path, row, rec, "peak_mem_mb", float),
                    "iterations": _field(path, row, rec, "iterations", int),
                }
            )
    return out


def measured(path: Path | None = None) -> dict[str, Profile]:
    """The CSV's training workloads: per workload, the longest run's row gives `t_iter`."""
    path = path or shared_data(DATA_FILE)
    best: dict[str, dict[str, float | str]] = {}
    for rec in read_rows(path):
        name = str(rec["workload"])
        if name not in best or int(rec["minutes"]) > int(best[name]["minutes"]):
            best[name] = rec
    out: dict[str, Profile] = {}
    for name, rec in best.items():
        model = name.rsplit("_", 1)[0]
        if model not in PARAMS_M:
            raise ProfileError(f"{path}: workload {name!r}: unknown model {model!r}")
        peak = round(float(rec["peak_mem_mb"]) * MIB)
        p = min(peak, round(PARAMS_M[model] * 1e6 * BYTES_PER_PARAM))
        t_iter = float(rec["jct_s"]) / float(rec["iterations"])
        out[name] = Profile(name, p, peak - p, t_iter, busy=1.0, source="csv")
    return out


def assumed() -> dict[str, Profile]:
    """The 12 workloads missing from the data, built from the stated assumptions above."""
    out = {}
    for name, (peak_mib, p_mib, t_iter, u) in ASSUMED.items():
        peak = round(peak_mib * MIB)
        p = min(peak, round(p_mib * MIB))
        out[name] = Profile(name, p, peak - p, t_iter, busy=u, source="assumed")
    return out


def load_workloads(path: Path | None = None) -> dict[str, Profile]:
    """All 45 workloads of Table A.1: the measured 33, then the assumed 12."""
    return {**measured(path), **assumed()}
