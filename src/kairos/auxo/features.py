"""Clustering features (spec 3.1): what Auxo clusters and the metric it clusters with.

Auxo clusters the model updates participants already send, never their data. One round's updates
exist only for that round's cohort model, so features are built per round and never compared
across rounds.

Pipeline, per cohort and round:
1. update u_i = w_global - w_local_i (the pseudo-gradient; the sign only has to be consistent);
2. compression as the authors' code does it (`client_metadata.register_gradient`): flatten, keep
   the *last* `grad_fraction` of the coordinates (the layers nearest the output; the integer
   division there keeps `len // 2` for a fraction of one half), store as float16. Tiny models
   (LR, MLP) use `grad_fraction=1.0`;
3. normalisation (`feature_norm`): "unit" centres on the round mean and scales each row to unit
   length (the authors centre, then `preprocessing.normalize`); "center" only centres (the
   authors' 2-D playground clusters raw points, and distances are translation invariant); "none"
   leaves rows as they are.

Metric: with unit rows, ||a - b||^2 = 2 - 2 cos(a, b), so L2 is monotone in cosine distance. A
mean of unit vectors is shorter than one, so a centroid is renormalised to unit length before
distances to it are taken; then the nearest centroid by L2 is the one of highest cosine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kairos.auxo.params import FeatureDtype, FeatureNorm

_EPS = 1e-12


def pseudo_gradient(global_weights: np.ndarray, local_weights: np.ndarray) -> np.ndarray:
    """u = w_global - w_local as a flat float64 vector (what a participant's upload implies)."""
    g = np.asarray(global_weights, dtype=np.float64).ravel()
    w = np.asarray(local_weights, dtype=np.float64).ravel()
    if g.shape != w.shape:
        raise ValueError(f"weights differ in size: {g.size} vs {w.size}")
    return g - w


def kept_length(n: int, grad_fraction: float) -> int:
    """Coordinates kept of an n-vector: floor(n * fraction), at least one (n > 0)."""
    if n <= 0:
        raise ValueError("an update needs at least one coordinate")
    return max(1, min(n, int(n * grad_fraction + 1e-9)))


def compress(
    update: np.ndarray, grad_fraction: float, dtype: FeatureDtype = "float16"
) -> np.ndarray:
    """Flatten, keep the last `grad_fraction` of coordinates, store in `dtype` (authors' code)."""
    flat = np.asarray(update).ravel()
    n = kept_length(flat.size, grad_fraction)
    return flat[flat.size - n :].astype(dtype)


def unit_rows(rows: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 length; an all-zero row stays zero (it has no direction)."""
    v = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.where(norms > _EPS, v / np.maximum(norms, _EPS), 0.0)


def renormalise(centroids: np.ndarray) -> np.ndarray:
    """Centroids of unit features scaled back to unit length (spec 3.1 [P])."""
    return unit_rows(centroids)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two vectors; 0 when either is zero."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na <= _EPS or nb <= _EPS:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


@dataclass(frozen=True)
class FeatureFrame:
    """One round's features and the frame they were built in.

    `mean` is the round mean of the compressed updates. It is kept so that a single later update
    (a new client probing this cohort, spec 3.9) can be placed in the same frame.
    """

    features: np.ndarray  # (n, d) float64
    mean: np.ndarray  # (d,) float64
    norm: FeatureNorm

    def place(self, compressed_update: np.ndarray) -> np.ndarray:
        """Map one more compressed update into this round's feature space."""
        u = np.asarray(compressed_update, dtype=np.float64).ravel()
        if u.shape != self.mean.shape:
            raise ValueError(f"update has {u.size} coordinates, frame has {self.mean.size}")
        centred = u - self.mean if self.norm != "none" else u
        return _normalise(centred[None, :], self.norm)[0]


def _normalise(centred: np.ndarray, norm: FeatureNorm) -> np.ndarray:
    return unit_rows(centred) if norm == "unit" else np.asarray(centred, dtype=np.float64)


def build_features(
    updates: np.ndarray,
    *,
    grad_fraction: float = 0.5,
    dtype: FeatureDtype = "float16",
    norm: FeatureNorm = "unit",
) -> FeatureFrame:
    """Features of one cohort-round from its participants' raw update vectors (one per row).

    Only update vectors enter: the function has no way to see client data or labels.
    """
    return frame_of(compress_rows(updates, grad_fraction, dtype), norm)


def compress_rows(
    updates: np.ndarray, grad_fraction: float = 0.5, dtype: FeatureDtype = "float16"
) -> np.ndarray:
    """Each update row compressed (`compress`), as float64: all a cohort-round's clustering
    reads of the updates, so a decision log holds these rows rather than whole models."""
    u = np.asarray(updates)
    if u.ndim == 1:
        u = u[None, :]
    if u.ndim != 2 or u.shape[0] == 0:
        raise ValueError("updates must be a non-empty (n_clients, n_params) array")
    n = kept_length(u.shape[1], grad_fraction)  # `compress` of every row, as one slice
    return u[:, u.shape[1] - n :].astype(dtype).astype(np.float64)


def frame_of(comp: np.ndarray, norm: FeatureNorm = "unit") -> FeatureFrame:
    """The features of compressed rows (`compress_rows`) in their round's frame."""
    comp = np.asarray(comp, dtype=np.float64)
    if comp.ndim != 2 or comp.shape[0] == 0:
        raise ValueError("compressed updates must be a non-empty (n_clients, d) array")
    mean = comp.mean(axis=0)
    centred = comp - mean if norm != "none" else comp
    return FeatureFrame(_normalise(centred, norm), mean, norm)


def nearest(features: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of the nearest centroid by L2 for each feature row (ties: lowest index)."""
    f = np.asarray(features, dtype=np.float64)
    c = np.asarray(centroids, dtype=np.float64)
    d2 = ((f[:, None, :] - c[None, :, :]) ** 2).sum(axis=-1)
    return np.argmin(d2, axis=1)
