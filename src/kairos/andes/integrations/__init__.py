"""Andes inside other serving engines: the same policy object, another engine's mechanisms.

`vllm`: a vLLM v1 scheduler class (`--scheduler-cls`); it imports vLLM, so this package
imports nothing on its own. `qoe_args` and `settings` need no vLLM.
"""
