"""Device populations and eligibility on the real AI Benchmark catalogue."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kairos.fl import (
    Requirement,
    aibenchmark_specs,
    atom_shares,
    population_from_specs,
    read_device_specs,
    signature_of,
    signatures,
    synthetic_population,
)
from kairos.workloads import TraceFormatError


def test_aibenchmark_catalogue_loads_all_952_devices(data_dir: Path) -> None:
    specs = read_device_specs(data_dir / "aibenchmark_devices.csv")
    assert len(specs) == 952
    assert specs.name[0] == "Asus ROG Phone 7"
    assert np.all(specs.speed_ms > 0) and specs.ram_gb.max() == 16.0
    assert len(aibenchmark_specs()) == 952  # the default path finds the same file


def test_bad_spec_row_names_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "specs.csv"
    bad.write_text(
        "device_id,device,cpu_ghz,ram_gb,fp16_mem_mb,android_os,speed_ms\n"
        "0,A,1.0,2.0,300,10,20\n"
        "1,B,1.0,-4,300,10,20\n"
    )
    with pytest.raises(TraceFormatError) as err:
        read_device_specs(bad)
    assert err.value.line == 3 and err.value.column == "ram_gb"
    missing = tmp_path / "missing.csv"
    missing.write_text("device,cpu_ghz\nA,1\n")
    with pytest.raises(TraceFormatError, match="missing column"):
        read_device_specs(missing)
    with pytest.raises(FileNotFoundError, match="KAIROS_SHARED"):
        read_device_specs(tmp_path / "nope.csv")


def test_population_resamples_models_and_keeps_their_attributes(data_dir: Path) -> None:
    specs = read_device_specs(data_dir / "aibenchmark_devices.csv")
    pop = population_from_specs(specs, 5000, np.random.default_rng(0))
    assert len(pop) == 5000
    assert np.array_equal(pop.ram_gb, specs.ram_gb[pop.model])
    assert np.median(pop.slowness) == pytest.approx(1.0, rel=0.05)
    bench = population_from_specs(specs, 5000, np.random.default_rng(0), speed="benchmark")
    # measured latency: a faster phone (lower speed_ms) has lower slowness
    assert np.corrcoef(bench.slowness, specs.speed_ms[bench.model])[0, 1] > 0.99
    with pytest.raises(ValueError, match="speed source"):
        population_from_specs(specs, 5, np.random.default_rng(0), speed="fast")  # type: ignore[arg-type]


def test_signatures_are_bitmasks_of_met_requirements() -> None:
    pop = synthetic_population(2000, np.random.default_rng(1))
    low = Requirement(name="low", min_ram_gb=2.0)
    high = Requirement(name="high", min_ram_gb=8.0, min_cpu_ghz=6.0)
    sig = signatures(pop, [low, high])
    assert np.array_equal(sig & 1 == 1, low.mask(pop))
    assert np.array_equal(sig & 2 == 2, high.mask(pop))
    assert not np.any(sig == 2)  # high implies low here (nested requirements)
    assert sum(atom_shares(sig).values()) == pytest.approx(1.0)
    one = pop.attributes(7)
    assert signature_of(one, [low, high]) == int(sig[7])
    assert signature_of({}, [low]) == 0  # an unreported attribute is not met
