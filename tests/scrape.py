"""Read a `/metrics` body with prometheus-client's own parser, so tests check what a real
scraper sees rather than matching strings."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    """Family types by name, and sample values by (sample name, labels)."""

    types: dict[str, str]
    helps: dict[str, str]
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]

    def value(self, name: str, **labels: str) -> float:
        """The sample `name` with exactly these labels; KeyError naming what there is."""
        key = (name, frozenset(labels.items()))
        if key not in self.samples:
            have = sorted(n for n, _ in self.samples if n.startswith(name))
            raise KeyError(f"no sample {name}{labels or ''}; samples named like it: {have}")
        return self.samples[key]


def scrape(text: str) -> Scrape:
    types: dict[str, str] = {}
    helps: dict[str, str] = {}
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        assert family.name not in types, f"family {family.name} twice"
        types[family.name] = family.type
        helps[family.name] = family.documentation
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return Scrape(types, helps, samples)
