"""Empirical latency distributions as histograms with a uniform density inside each bin.

Orloj never assumes a parametric family (spec 3.1): a request's solo latency is whatever the
profiler saw. Every histogram of one model lives on one grid, so per-app histograms can be
mixed, multiplied (order statistics, `batchdist`) and compared bin by bin. Inside a bin the
density is flat, so the CDF is piecewise linear between edges; that is what makes the score's
closed form (`score`) and the exact E[max] (`batchdist`) possible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

DEFAULT_BINS = 64
DEFAULT_HEADROOM = 1.05  # x_max = 1.05 x the largest sample seen (spec 3.1)


def make_grid(x_max: float, n_bins: int = DEFAULT_BINS) -> FloatArray:
    """The model-wide grid: `n_bins` equal-width bins on [0, x_max]."""
    if not x_max > 0:
        raise ValueError(f"x_max must be positive, got {x_max}")
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1, got {n_bins}")
    return np.linspace(0.0, float(x_max), n_bins + 1)


def _frozen(a: ArrayLike) -> FloatArray:
    out = np.array(a, dtype=np.float64)
    out.flags.writeable = False
    return out


def _readonly(a: ArrayLike) -> FloatArray:
    """`a` itself if it already is a read-only float array (nobody can change it), else a
    read-only copy."""
    if isinstance(a, np.ndarray) and a.dtype == np.float64 and not a.flags.writeable:
        return a
    return _frozen(a)


@dataclass(frozen=True, eq=False)
class Histogram:
    """A distribution on `edges` (n+1, increasing) with bin `masses` (n, summing to 1).

    `count` is how many samples it was built from (0 for derived histograms); `merge` weighs
    by it. Arrays are read-only: histograms are shared between the store and the score tables.
    """

    edges: FloatArray
    masses: FloatArray
    count: float = 0.0

    def __post_init__(self) -> None:
        # the store builds a few hundred of these per rebuild: shared read-only edges are kept
        # as they are, and the checks are one pass each
        edges, masses = _readonly(self.edges), np.asarray(self.masses, dtype=np.float64)
        if edges.ndim != 1 or masses.ndim != 1 or edges.size != masses.size + 1:
            raise ValueError(f"need n+1 edges for n masses, got {edges.size} and {masses.size}")
        if not bool((edges[1:] > edges[:-1]).all()):
            raise ValueError("histogram edges must be strictly increasing")
        if masses.size and not (masses.min() >= 0 and np.isfinite(masses).all()):
            raise ValueError("histogram masses must be finite and non-negative")
        total = masses.sum()
        if not total > 0:
            raise ValueError("histogram has no mass (no samples?)")
        normalized = masses / total
        normalized.flags.writeable = False
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "masses", normalized)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_samples(cls, samples: ArrayLike, edges: ArrayLike) -> Histogram:
        """Bin `samples` on `edges`; samples outside the grid are clipped into the end bins."""
        x = np.asarray(samples, dtype=np.float64).ravel()
        if x.size == 0:
            raise ValueError("cannot build a histogram from zero samples")
        e = np.asarray(edges, dtype=np.float64)
        idx = np.clip(np.searchsorted(e, x, side="right") - 1, 0, e.size - 2)
        masses = np.bincount(idx, minlength=e.size - 1).astype(np.float64)
        return cls(e, masses, float(x.size))

    @classmethod
    def on_grid(
        cls,
        samples: ArrayLike,
        n_bins: int = DEFAULT_BINS,
        headroom: float = DEFAULT_HEADROOM,
    ) -> Histogram:
        """A histogram on a fresh model grid sized to these samples."""
        x = np.asarray(samples, dtype=np.float64)
        if x.size == 0:
            raise ValueError("cannot build a histogram from zero samples")
        return cls.from_samples(x, make_grid(headroom * float(x.max()), n_bins))

    @classmethod
    def point(cls, value: float, edges: ArrayLike) -> Histogram:
        """All mass in the bin holding `value` (a constant latency, as well as a grid allows)."""
        return cls.from_samples([value], edges)

    @staticmethod
    def mixture(hists: Sequence[Histogram], weights: Sequence[float]) -> Histogram:
        """Σ w_j h_j on a shared grid: what a request of unknown app looks like (spec 3.3)."""
        if not hists or len(hists) != len(weights):
            raise ValueError("need one weight per histogram, and at least one histogram")
        w = np.asarray(weights, dtype=np.float64)
        if np.any(w < 0) or not w.sum() > 0:
            raise ValueError(f"mixture weights must be non-negative, not all zero: {w}")
        edges = hists[0].edges
        for h in hists[1:]:
            if not h.same_grid(edges):
                raise ValueError("mixture needs histograms on the same grid")
        masses = np.sum([wi * h.masses for wi, h in zip(w, hists, strict=True)], axis=0)
        return Histogram(edges, masses, float(sum(h.count for h in hists)))

    def merge(self, other: Histogram) -> Histogram:
        """The histogram of both sample sets (count-weighted; equal weights if counts are 0)."""
        if not self.same_grid(other.edges):
            other = other.rebin(self.edges)
        counted = self.count > 0 or other.count > 0
        weights = [self.count, other.count] if counted else [1.0, 1.0]
        return Histogram.mixture([self, other], weights)

    def rebin(self, edges: ArrayLike) -> Histogram:
        """The same distribution on other edges (mass-preserving, uniform inside old bins)."""
        e = np.asarray(edges, dtype=np.float64)
        cum = self.cdf(e)
        cum[0], cum[-1] = 0.0, 1.0  # mass outside the new range goes to its end bins
        return Histogram(e, np.diff(cum), self.count)

    def affine(self, shift: float, scale: float) -> Histogram:
        """The distribution of shift + scale·X: edges map, masses stay (spec 3.3, Eq 4.9)."""
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        edges = shift + scale * self.edges
        edges.flags.writeable = False  # fresh and never written: the histogram keeps it
        return Histogram(edges, self.masses, self.count)

    # -- queries --------------------------------------------------------------------------
    def same_grid(self, edges: FloatArray) -> bool:
        if edges is self.edges:  # histograms of one model share one edges array
            return True
        return edges.shape == self.edges.shape and bool(np.array_equal(edges, self.edges))

    @property
    def n_bins(self) -> int:
        return int(self.masses.size)

    @cached_property
    def widths(self) -> FloatArray:
        return _frozen(np.diff(self.edges))

    @cached_property
    def density(self) -> FloatArray:
        """Probability per unit time in each bin (the `h` of Eq 4.2: mass / width)."""
        return _frozen(self.masses / self.widths)

    @cached_property
    def cum(self) -> FloatArray:
        """The CDF at the edges (n+1 values from 0 to 1)."""
        out = np.concatenate(([0.0], np.cumsum(self.masses)))
        last = self.n_bins - int(np.argmax(self.masses[::-1] > 0))  # edge after the last mass
        out[last:] = 1.0  # exactly 1 from the top of the support on, despite rounding
        return _frozen(out)

    def cdf(self, x: ArrayLike) -> FloatArray:
        """P(X ≤ x): piecewise linear between edges, 0 below and 1 above the grid."""
        xs = np.asarray(x, dtype=np.float64)
        return np.asarray(np.interp(xs, self.edges, self.cum, left=0.0, right=1.0))

    def pdf(self, x: ArrayLike) -> FloatArray:
        """The density at x (right-continuous: a point on an edge belongs to the upper bin)."""
        xs = np.asarray(x, dtype=np.float64)
        idx = np.searchsorted(self.edges, xs, side="right") - 1
        inside = (idx >= 0) & (idx < self.n_bins)
        return np.where(inside, self.density[np.clip(idx, 0, self.n_bins - 1)], 0.0)

    def quantile(self, q: ArrayLike) -> FloatArray:
        """Inverse CDF; q = 0 gives the lowest support point, q = 1 the highest."""
        qs = np.clip(np.asarray(q, dtype=np.float64), 0.0, 1.0)
        cum = self.cum
        # first bin whose upper CDF reaches q, skipping empty bins (they have zero width in q)
        idx = np.clip(np.searchsorted(cum, qs, side="left") - 1, 0, self.n_bins - 1)
        low = self.min_support
        masses = self.masses[idx]
        frac = np.divide(qs - cum[idx], masses, out=np.zeros_like(qs), where=masses > 0)
        frac = np.clip(frac, 0.0, 1.0)
        out = (1.0 - frac) * self.edges[idx] + frac * self.edges[idx + 1]  # exact at edges
        return np.where(qs <= 0.0, low, np.where(qs >= 1.0, self.max_support, out))

    def quantile_at(self, q: float) -> float:
        """`quantile` of one q in plain floats (the same arithmetic, a fraction of the cost:
        the store takes one per batch distribution on every rebuild)."""
        qs = min(max(float(q), 0.0), 1.0)
        if qs <= 0.0:
            return self.min_support
        if qs >= 1.0:
            return self.max_support
        cum = self.cum
        idx = min(max(int(np.searchsorted(cum, qs, side="left")) - 1, 0), self.n_bins - 1)
        mass = float(self.masses[idx])
        frac = (qs - float(cum[idx])) / mass if mass > 0 else 0.0
        frac = min(max(frac, 0.0), 1.0)
        return (1.0 - frac) * float(self.edges[idx]) + frac * float(self.edges[idx + 1])

    def mean(self) -> float:
        mids = 0.5 * (self.edges[:-1] + self.edges[1:])
        return float(np.dot(self.masses, mids))

    @property
    def min_support(self) -> float:
        """The lower edge of the first bin with mass: nothing is faster than this."""
        return float(self.edges[int(np.argmax(self.masses > 0))])

    @property
    def max_support(self) -> float:
        last = self.n_bins - 1 - int(np.argmax(self.masses[::-1] > 0))
        return float(self.edges[last + 1])

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> FloatArray:
        """Draws (a bin by mass, then uniform inside it) from an injected generator."""
        bins = rng.choice(self.n_bins, size=size, p=self.masses)
        return self.edges[bins] + rng.random(size) * self.widths[bins]
