"""Shared helpers for the systems' real servers (uvicorn in the foreground or a background
thread). Needs the `serve` extra; import submodules directly."""
