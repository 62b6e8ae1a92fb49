from __future__ import annotations

import pytest
from toys import tiny_llama

from decoding import cost
from lookup.cost import CPU_SMOLLM2, CostProfile


def test_interpolation_and_extrapolation():
    p = CostProfile((1, 3, 5), (1.0, 2.0, 4.0))
    assert p.cost(1) == 1.0 and p.cost(2) == pytest.approx(1.5) and p.cost(4) == pytest.approx(3.0)
    assert p.cost(300) == pytest.approx(4.0 + 1.0 * 295)
    assert p.relative(3) == pytest.approx(2.0)


def test_flat_profile_is_free_up_to_its_limit():
    p = CostProfile.flat(64)
    assert p.relative(1) == p.relative(64) == 1.0 and p.relative(65) > 1.0


def test_bad_profiles_are_refused():
    with pytest.raises(ValueError):
        CostProfile((2, 1), (1.0, 1.0))
    with pytest.raises(ValueError):
        CostProfile((1,), ())


def test_json_round_trip(tmp_path):
    CPU_SMOLLM2.save(tmp_path / "p.json")
    assert CostProfile.load(tmp_path / "p.json") == CPU_SMOLLM2


def test_measure_and_cache_per_model_and_device(tmp_path, monkeypatch):
    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path))
    target = tiny_llama()
    p = cost.cost_profile(target, sizes=(1, 2, 4, 8), context=32, repeats=2)
    assert p.sizes == (1, 2, 4, 8) and all(s > 0 for s in p.seconds)
    assert list(p.seconds) == sorted(p.seconds)  # smoothed to be monotone
    assert cost.profile_path(target).exists()
    assert cost.cost_profile(target) == p  # second call reads the cache
