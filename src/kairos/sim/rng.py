"""Named, independent random streams derived from one seed.

Each consumer asks for a stream by name. The stream's seed is derived from the root seed and a
stable hash of the name, never from the order in which streams are requested, so adding a new
consumer does not shift the draws of existing ones (a property the tests check).
"""

from __future__ import annotations

import hashlib

import numpy as np


def _name_key(name: str) -> list[int]:
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=16).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


class RngStreams:
    """A family of `numpy.random.Generator`s keyed by name (and optionally by a sub-name)."""

    def __init__(self, seed: int) -> None:
        if seed < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        self.seed = int(seed)
        self._cache: dict[str, np.random.Generator] = {}

    def stream(self, name: str) -> np.random.Generator:
        """The generator for `name`; the same object on every call within this family."""
        if name not in self._cache:
            self._cache[name] = self.fresh(name)
        return self._cache[name]

    def fresh(self, name: str) -> np.random.Generator:
        """A new generator for `name`, starting from the beginning of its sequence."""
        seq = np.random.SeedSequence(entropy=[self.seed, *_name_key(name)])
        return np.random.Generator(np.random.PCG64(seq))

    def child(self, name: str) -> RngStreams:
        """A sub-family whose streams are independent of this family's (for nested components)."""
        seed = int(np.random.SeedSequence([self.seed, *_name_key(name)]).generate_state(1)[0])
        return RngStreams(seed)
