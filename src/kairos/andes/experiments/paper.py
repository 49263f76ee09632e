"""The paper's published numbers, placed beside ours in every table (sources in comments)."""

from __future__ import annotations

# Table 2.5 (thesis) / Multi-Round ShareGPT: serving-capacity gain, Andes over vLLM.
CAPACITY_GAIN_SHAREGPT: dict[str, dict[float, float]] = {
    "phi-3-mini": {0.95: 1.74, 0.96: 1.73, 0.97: 1.71, 0.98: 1.65, 0.99: 1.58},
    "command-r": {0.95: 1.05, 0.96: 1.05, 0.97: 1.04, 0.98: 1.02, 0.99: 1.00},
    "phi-3.5-moe": {0.95: 1.35, 0.96: 1.29, 0.97: 1.22, 0.98: 1.15, 0.99: 1.08},
    "llama-3.1-70b": {0.95: 1.22, 0.96: 1.15, 0.97: 1.08, 0.98: 1.33, 0.99: 1.17},
}
# Table A.2: average arrival rate r (req/s) of the cyclic burst pattern, ShareGPT column.
ARRIVAL_RATE_SHAREGPT = {
    "phi-3-mini": 1.8,
    "command-r": 1.8,
    "phi-3.5-moe": 0.45,
    "llama-3.1-70b": 0.8,
}
MAX_QOE_GAIN_INTENSITY = 4.7  # Fig. 15: "up to 4.7x" average QoE over vLLM
MAX_QOE_GAIN_DURATION = 3.5  # Fig. 16: "up to 3.5x"
# Section 6.2 / Figs. 3, 11-13, one-hour BurstGPT slice on Phi-3.5-MoE: vLLM -> Andes.
TRACE = {
    "avg_qoe": (0.88, 0.99),
    "avg_ttft": (10.5, 1.8),
    "share_qoe_095": (0.75, 0.97),
    "avg_tds": (11.2, 10.9),
    "peak_queue_reduction": 0.85,
}
GREEDY_SPEEDUP_OVER_DP = 20.0  # Fig. 18: greedy about 20x faster, QoE about equal
VOICE_SILENCE_VLLM = 0.40  # Fig. 2.12: vLLM's silence-time ratio reaches 40%
VOICE_SILENCE_REDUCTION = 3.3  # ... Andes lowers it by up to 3.3x
IDEAL_GAIN = 2.3  # Section 2.3: 11 tokens/s generated / 4.8 tokens/s read
REALISED_SHARE_OF_IDEAL = 0.6  # "realizing approximately 60% of the ideal gain" (1.4x)
