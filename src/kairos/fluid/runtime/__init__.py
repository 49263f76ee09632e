"""Fluid on real trials: worker processes on virtual devices, each trial a real PyTorch
trainable with save/restore and `gloo` data parallelism (needs the `tune` and `engine` extras)."""
