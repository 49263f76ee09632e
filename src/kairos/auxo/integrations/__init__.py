"""Auxo inside the FL frameworks users already run: a Flower strategy over any Flower base
strategy, with the Auxo client library as Flower ClientApp handlers (needs the `fl` extra)."""
