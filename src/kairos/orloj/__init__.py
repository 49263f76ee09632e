"""Orloj: serving dynamic DNNs by latency distributions (specs/orloj.md)."""
