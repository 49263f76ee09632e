"""What the source reports, printed beside our numbers (spec 5)."""

from __future__ import annotations

# Table 2.1 (E1, 100-job trace), minutes: makespan, avg queuing, avg JCT, p95 JCT
TABLE_2_1: dict[str, tuple[float, float, float, float]] = {
    "fifo": (303.4, 167.6, 170.6, 251.1),
    "srtf": (306.0, 28.6, 53.4, 217.0),
    "pack": (287.4, 129.9, 145.5, 266.1),
    "fair": (301.6, 58.5, 96.6, 281.2),
}
SRTF_VS_FIFO = 3.19  # 170.6 / 53.4, the headline number
E3_FINISH_S = (142.5, 172.5, 180.0)  # spec 4.6: 60 s jobs at 0, 15, 30 s under FAIR's min rule
FIG_2_10 = {"resnet50_50": 1.07, "superres_128": 2.38}  # makespan FIFO / PACK
FIG_2_11 = {"no_sharing": 42, "mps": 6, "salus": 1}  # GPUs for 42 inference instances
