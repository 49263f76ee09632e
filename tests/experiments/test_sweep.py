from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kairos.experiments import Sweep, SweepError, grid, point_key
from kairos.experiments.sweep import usable_cores
from tests.experiments.points import (
    FileConfig,
    PointConfig,
    noisy_mean,
    read_inputs,
    thread_counts,
)


def _calls(log: Path) -> list[str]:
    return sorted(p.name.rsplit("-", 1)[0] for p in log.iterdir() if not p.name.startswith("STOP"))


def test_grid_is_the_row_major_product() -> None:
    assert grid(a=[1, 2], b=["x", "y"]) == [
        {"a": 1, "b": "x"},
        {"a": 1, "b": "y"},
        {"a": 2, "b": "x"},
        {"a": 2, "b": "y"},
    ]


def test_parallel_sweep_equals_serial_sweep(tmp_path: Path) -> None:
    points = grid(x=[0.0, 1.0, 2.0, 3.0], seed=[1, 2])
    serial = Sweep(noisy_mean, PointConfig(), points, jobs=1, progress=False).run()
    parallel = Sweep(noisy_mean, PointConfig(), points, jobs=2, progress=False).run()
    assert parallel == serial
    assert [r["x"] for r in serial] == [p["x"] for p in points]


def test_pool_workers_share_the_cores_instead_of_each_taking_all(tmp_path: Path) -> None:
    """Two workers each start BLAS with cores // 2 threads (at least one), not one per core:
    J workers x cores threads preempt each other."""
    cores = usable_cores()
    assert 1 <= cores <= (os.cpu_count() or 1)
    points = grid(seed=[0, 1, 2, 3])
    rows = Sweep(thread_counts, PointConfig(), points, jobs=2, progress=False).run()
    assert len({r["pid"] for r in rows} - {os.getpid()}) >= 1  # ran in workers, not here
    _assert_half_the_cores_each(rows)


def test_orloj_fairness_pool_gives_its_workers_the_same_share() -> None:
    """The one pool of points opened outside a `Sweep` (Orloj's fairness rows) also splits
    the cores between its workers."""
    from kairos.orloj.experiments.fairness import _pool

    with _pool(2) as pool:
        rows = list(pool.map(thread_counts, [PointConfig()] * 4))
    assert all(r["pid"] != os.getpid() for r in rows)
    _assert_half_the_cores_each(rows)


def _assert_half_the_cores_each(rows: list[dict[str, Any]]) -> None:
    """Each of two workers' BLAS runs cores // 2 threads (at least one), and later loaders
    are told the same through OMP_NUM_THREADS."""
    share = max(1, usable_cores() // 2)
    for r in rows:
        assert r["blas"] and all(n == share for n in r["blas"])
        assert r["omp_env"] == str(share)


def _clear(log: Path) -> None:
    for p in log.iterdir():
        p.unlink()


def test_interrupted_sweep_resumes_without_recomputing(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    cache = tmp_path / "cache"
    points = grid(x=[0.0, 1.0, 2.0, 3.0])
    base = PointConfig(log_dir=str(log))
    (log / "STOP-2.0").touch()
    with pytest.raises(SweepError, match="1 of 4 points failed") as err:
        Sweep(noisy_mean, base, points, cache_dir=cache, progress=False).run()
    assert "interrupted" in repr(err.value.__cause__)
    assert _calls(log) == ["0.0-0", "1.0-0", "2.0-0", "3.0-0"]
    _clear(log)  # removes the STOP file too: the cause of the interruption is gone
    resumed = Sweep(noisy_mean, base, points, cache_dir=cache, progress=False)
    out = resumed.run()
    assert resumed.computed == 1 and _calls(log) == ["2.0-0"]
    assert out == Sweep(noisy_mean, base, points, progress=False).run()
    _clear(log)
    again = Sweep(noisy_mean, base, points, cache_dir=cache, progress=False)
    assert again.run() == out and again.computed == 0 and _calls(log) == []


def test_parallel_interruption_keeps_finished_points(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    cache = tmp_path / "cache"
    points = grid(x=[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    base = PointConfig(log_dir=str(log))
    (log / "STOP-4.0").touch()
    with pytest.raises(SweepError):
        Sweep(noisy_mean, base, points, cache_dir=cache, jobs=2, progress=False).run()
    _clear(log)
    full = Sweep(noisy_mean, base, points, cache_dir=cache, jobs=2, progress=False)
    out = full.run()
    assert full.computed == 1 and _calls(log) == ["4.0-0"]
    assert out == Sweep(noisy_mean, base, points, jobs=1, progress=False).run()


def test_cache_key_tracks_every_config_field() -> None:
    a = point_key(noisy_mean, PointConfig(x=1.0))
    assert a == point_key(noisy_mean, PointConfig(x=1.0))
    assert a != point_key(noisy_mean, PointConfig(x=1.0, n=999))


def test_a_torn_cache_file_is_recomputed(tmp_path: Path) -> None:
    cfg = PointConfig(x=5.0)
    (tmp_path / f"{point_key(noisy_mean, cfg)}.json").write_text("{not json")
    sweep = Sweep(noisy_mean, PointConfig(), [{"x": 5.0}], cache_dir=tmp_path, progress=False)
    assert sweep.run()[0]["x"] == 5.0 and sweep.computed == 1


def test_bad_point_is_rejected_before_anything_runs() -> None:
    with pytest.raises(ValueError, match="x"):
        Sweep(noisy_mean, PointConfig(), [{"x": "not a number"}], progress=False)


def test_ray_sweep_equals_serial_sweep(tmp_path: Path) -> None:
    """`--ray ADDRESS` path, on a local single-node Ray cluster started for the test."""
    import ray  # the `tune` extra, which make test installs

    points = grid(x=[0.0, 1.0, 2.0], seed=[3])
    serial = Sweep(noisy_mean, PointConfig(), points, progress=False).run()
    try:
        on_ray = Sweep(
            noisy_mean,
            PointConfig(),
            points,
            ray_address="local",
            progress=False,
            cache_dir=tmp_path / "cache",
        )
        assert on_ray.run() == serial and on_ray.computed == 3
    finally:
        ray.shutdown()


def test_a_changed_input_file_is_never_served_from_the_cache(tmp_path: Path) -> None:
    """The cache key hashes the content of every file a point reads, the ones its
    config names and the ones it declares; the same content is still served from the cache."""
    named, fixed = tmp_path / "named.txt", tmp_path / "fixed.txt"
    named.write_text("1")
    fixed.write_text("10")
    base = FileConfig(path=str(named), folder=str(tmp_path))
    cache = tmp_path / "cache"

    def run() -> tuple[dict[str, float], int]:
        sweep = Sweep(read_inputs, base, [{}], cache_dir=cache, progress=False)
        (out,) = sweep.run()
        return out, sweep.computed

    assert run() == ({"named": 1.0, "fixed": 10.0}, 1)
    assert run() == ({"named": 1.0, "fixed": 10.0}, 0)  # unchanged: cached
    named.write_text("2")
    assert run() == ({"named": 2.0, "fixed": 10.0}, 1)
    fixed.write_text("20")
    assert run() == ({"named": 2.0, "fixed": 20.0}, 1)
    assert run() == ({"named": 2.0, "fixed": 20.0}, 0)
    key = point_key(read_inputs, base)
    named.write_text("3")
    assert point_key(read_inputs, base) != key
