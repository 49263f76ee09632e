"""Andes: QoE-aware LLM text-streaming serving (token-level preemptive scheduling + token pacer)."""
