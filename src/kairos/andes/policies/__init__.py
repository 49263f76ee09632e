"""Andes batch-selection policies: the exact DP oracle and the heuristics compared against it."""
