"""Auxo inside the FL frameworks users already run (needs the `fl` extra).

Flower: `flower.AuxoStrategy` wraps any Flower strategy per cohort; `flower_affinity` is the
Auxo client library for any Flower ClientApp; `flower_client` is a ready ClientApp over the
`kairos.fl.learning` datasets; `flower_simulation.run_auxo_simulation` runs both under Flower's
simulation engine. The rest (`flower_cohort`, `flower_exchange`, `flower_records`) is the
per-cohort bookkeeping and the wire format they share.
"""
