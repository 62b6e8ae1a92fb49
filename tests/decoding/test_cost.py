from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from toys import tiny_llama

from decoding import cost
from pldcore.cost import CPU_SMOLLM2, CostProfile


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


@pytest.fixture
def any_noise(monkeypatch):
    """Tests time tiny models on a machine that may be busy: their profiles are kept however noisy."""
    monkeypatch.setattr(cost, "NOISY_SPREAD", float("inf"))
    monkeypatch.setattr(cost, "BUSY_LOAD", float("inf"))


@pytest.mark.measures_profile
def test_measure_and_cache_per_model_and_device(tmp_path, monkeypatch, any_noise):
    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path))
    target = tiny_llama()
    p = cost.cost_profile(target, sizes=(1, 2, 4, 8), contexts=(32,), repeats=2)
    assert p.sizes == (1, 2, 4, 8) and all(s > 0 for s in p.seconds)
    assert list(p.seconds) == sorted(p.seconds)  # smoothed to be monotone
    assert cost.profile_path(target).exists()
    assert cost.cost_profile(target) == p  # second call reads the cache
    assert p.spread is not None and p.spread >= 0 and p.measured_at and p.host  # where, when, how noisy
    assert CostProfile.load(cost.profile_path(target)) == p


def noisy(spread: float, load: float = 0.1, measured_at: str = "") -> CostProfile:
    return CostProfile((1, 2), (1.0, 1.5), model="m", contexts=(16,), grid=((1.0, 1.5),), spread=spread,
                       load_per_core=load, measured_at=measured_at)


def test_busy_means_wide_repeats_or_more_work_than_cores():
    assert not cost.is_noisy(noisy(0.02)) and cost.is_noisy(noisy(0.3)) and cost.is_noisy(noisy(0.02, load=1.2))


@pytest.mark.parametrize("embedded", [True, False])
def test_a_noisy_profile_is_never_cached_and_says_so(tmp_path, monkeypatch, embedded):
    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path))
    target = tiny_llama()
    if embedded:
        monkeypatch.setattr(target, "name", cost.EMBEDDED_NAME)
    monkeypatch.setattr(cost, "load_per_core", lambda: 0.1)
    monkeypatch.setattr(cost, "measure_cost_profile", lambda *a, **k: noisy(0.3))
    with pytest.warns(cost.NoisyProfileWarning, match="busy while it was measured \\(repeats spread 30%"):
        p = cost.cost_profile(target)
    assert p == (CPU_SMOLLM2 if embedded else noisy(0.3))
    assert not cost.profile_path(target).exists()
    monkeypatch.setattr(cost, "measure_cost_profile", lambda *a, **k: noisy(0.02))
    assert cost.cost_profile(target) == noisy(0.02) and cost.profile_path(target).exists()


T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def clock(monkeypatch):
    """A fake clock (``clock.now``, set by the test) and a fake measurement (``clock.next``, a profile;
    ``clock.measured`` counts the calls); the cache in a temporary folder."""

    class Clock:
        now, next, measured = T0, None, 0

    def measure(*args, **kwargs):
        Clock.measured += 1
        return Clock.next

    monkeypatch.setattr(cost, "_utc_now", lambda: Clock.now)
    monkeypatch.setattr(cost, "measure_cost_profile", measure)
    return Clock


@pytest.fixture
def cached_target(tmp_path, monkeypatch):
    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path))
    monkeypatch.setattr(cost, "load_per_core", lambda: 0.1)  # a quiet machine when the measurement begins
    return tiny_llama()


def test_a_machine_busy_before_measuring_is_not_measured_where_a_profile_can_stand_in(clock, cached_target,
                                                                                       monkeypatch):
    """The measurement would be thrown away as noisy (the load it begins with decides): none is taken."""
    monkeypatch.setattr(cached_target, "name", cost.EMBEDDED_NAME)
    monkeypatch.setattr(cost, "load_per_core", lambda: 1.6)
    with pytest.warns(cost.NoisyProfileWarning, match=r"^cost profile not measured: the machine is busy \(load "
                                                      r"1.60 per core; 1 or more is busy\).*the reference profile"):
        assert cost.cost_profile(cached_target) == CPU_SMOLLM2
    assert clock.measured == 0 and not cost.noisy_path(cached_target).exists()
    with pytest.warns(cost.NoisyProfileWarning):  # asked to: measured (and found noisy)
        clock.next = noisy(0.02, load=1.6)
        cost.cost_profile(cached_target, remeasure=True)
    assert clock.measured == 1
    monkeypatch.setattr(cached_target, "name", "my-own-model")  # nothing to stand in: measured all the same
    clock.next = noisy(0.02)
    assert cost.cost_profile(cached_target) == noisy(0.02) and clock.measured == 2


def test_a_noisy_measurement_is_remembered_for_a_while_instead_of_measured_again(clock, cached_target):
    target = cached_target
    clock.next = noisy(0.3, measured_at=T0.isoformat())
    with pytest.warns(cost.NoisyProfileWarning, match="using it, without measuring again for 60 min"):
        assert cost.cost_profile(target) == clock.next and clock.measured == 1
    assert cost.noisy_path(target).exists() and not cost.profile_path(target).exists()
    clock.now = T0 + timedelta(minutes=20)
    with pytest.warns(cost.NoisyProfileWarning) as seen:
        assert cost.cost_profile(target) == noisy(0.3, measured_at=T0.isoformat()) and clock.measured == 1
    [warning] = seen
    assert str(warning.message) == (
        "cost profile not measured again: the last measurement, 20 min ago, was taken on a busy machine (repeats "
        "spread 30%, load 0.1 per core; over 10% or 1 is busy); using that measurement until 13:00 UTC. Measure now: "
        "python experiments/traces.py profile --remeasure")
    # an hour on, it is measured again; a quiet measurement is cached and the noisy one forgotten
    clock.now, clock.next = T0 + timedelta(minutes=61), noisy(0.02)
    assert cost.cost_profile(target) == noisy(0.02) and clock.measured == 2
    assert cost.profile_path(target).exists() and not cost.noisy_path(target).exists()


def test_the_embedded_models_remembered_noise_means_the_reference_profile(clock, cached_target, monkeypatch):
    monkeypatch.setattr(cached_target, "name", cost.EMBEDDED_NAME)
    clock.next = noisy(0.02, load=1.5, measured_at=T0.isoformat())
    with pytest.warns(cost.NoisyProfileWarning, match="load 1.5 per core"):
        assert cost.cost_profile(cached_target) == CPU_SMOLLM2
    clock.now = T0 + timedelta(minutes=59)
    with pytest.warns(cost.NoisyProfileWarning, match="using the reference profile .* until 13:00 UTC"):
        assert cost.cost_profile(cached_target) == CPU_SMOLLM2 and clock.measured == 1
    with pytest.warns(cost.NoisyProfileWarning):  # asked to: measured again, however recent the noise
        cost.cost_profile(cached_target, remeasure=True)
    assert clock.measured == 2


@pytest.mark.parametrize("measured_at", ["", "not a time", (T0 + timedelta(minutes=5)).isoformat()])
def test_noise_of_no_known_time_or_from_the_future_is_measured_again(clock, cached_target, measured_at):
    noisy(0.3, measured_at=measured_at).save(cost.noisy_path(cached_target))
    clock.next = noisy(0.02)
    assert cost.cost_profile(cached_target) == noisy(0.02) and clock.measured == 1


def test_a_noisy_measurement_never_replaces_a_quiet_one(clock, cached_target):
    quiet = noisy(0.02, measured_at="2026-01-01T00:00:00+00:00")
    quiet.save(cost.profile_path(cached_target))
    clock.next = noisy(0.3, measured_at=T0.isoformat())
    with pytest.warns(cost.NoisyProfileWarning, match="using the cached profile, kept"):
        assert cost.cost_profile(cached_target, remeasure=True) == quiet
    assert CostProfile.load(cost.profile_path(cached_target)) == quiet
    assert cost.cost_profile(cached_target) == quiet and clock.measured == 1  # the quiet one, not the remembered noise


def test_the_guard_refuses_measuring_in_tests(cached_target):
    """conftest: a test that would time a profile fails instead, unless marked measures_profile."""
    from experiments import traces

    for measure in (cost.measure_cost_profile, traces.measure_cost_profile, cost.cost_profile):
        with pytest.raises(AssertionError, match="a test measured a cost profile"):
            measure(cached_target)


def grid_profile(prefill=(0.2, 1.0)) -> CostProfile:
    # one token costs 1.0 at context 100 and 2.0 at 1100; four tokens 2.0 and 6.0
    return CostProfile((1, 4), (1.0, 2.0), contexts=(100, 1100), grid=((1.0, 2.0), (2.0, 6.0)), prefill=prefill,
                       prefill_rows=(0.3, 1.5))


def test_context_axis_interpolates_and_extrapolates():
    p = grid_profile()
    assert p.cost(1) == 1.0 and p.cost(4) == 2.0  # without a context: the reference row
    assert p.cost(1, 100) == 1.0 and p.cost(1, 50) == 1.0  # flat below the first context
    assert p.cost(4, 600) == pytest.approx(4.0) and p.cost(2, 600) == pytest.approx(0.5 * (4 / 3 + 10 / 3))
    assert p.cost(4, 2100) == pytest.approx(10.0)  # the last slope past the last context
    assert p.relative(4, 1100) == pytest.approx(3.0)
    assert p.cost(300, 1100) == pytest.approx(6.0 + 296 * 4 / 3)  # the last slope past the last size


def test_prefill_cost_is_linear_through_the_origin():
    p = grid_profile()
    assert p.prefill_cost(0) == 0.0 and p.prefill_cost(50) == pytest.approx(0.1)
    assert p.prefill_cost(600) == pytest.approx(0.6) and p.prefill_cost(2100) == pytest.approx(1.8)
    assert CostProfile((1,), (1.0,)).prefill_cost(500) == 0.0  # a profile without prefill
    assert p.prefill_cost(600, rows=True) == pytest.approx(0.9)  # with every row's top-k
    assert CostProfile((1,), (1.0,), contexts=(10,), grid=((1.0,),), prefill=(0.5,)).prefill_cost(10, rows=True) == 0.5


def test_malformed_grids_are_refused():
    with pytest.raises(ValueError):
        CostProfile((1, 4), (1.0, 2.0), contexts=(100,), grid=((1.0,),))
    with pytest.raises(ValueError):
        CostProfile((1, 4), (1.0, 2.0), contexts=(100, 50), grid=((1.0, 2.0), (1.0, 2.0)))
    with pytest.raises(ValueError):
        CostProfile((1, 4), (1.0, 2.0), contexts=(100,), grid=((1.0, 2.0),), prefill=(1.0, 2.0))


def test_grid_json_round_trip_and_old_profiles_still_load(tmp_path):
    grid_profile().save(tmp_path / "g.json")
    assert CostProfile.load(tmp_path / "g.json") == grid_profile()
    old = CostProfile.from_json('{"sizes": [1, 2], "seconds": [0.5, 0.7], "model": "m", "device": "cpu"}')
    assert old.contexts == () and old.cost(2, 5000) == 0.7


@pytest.mark.measures_profile
def test_measure_a_grid_with_prefill(tmp_path, monkeypatch):
    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path))
    p = cost.measure_cost_profile(tiny_llama(), sizes=(1, 2, 4), contexts=(48, 16), repeats=2)
    assert p.contexts == (16, 48) and len(p.grid) == 2 and len(p.prefill) == 2
    grid = [list(row) for row in p.grid]
    assert all(row == sorted(row) for row in grid)  # dearer with more tokens
    assert all(a <= b for a, b in zip(*grid))  # and with a longer context
    assert 0 < p.prefill[0] <= p.prefill[1]
    assert all(a <= b for a, b in zip(p.prefill, p.prefill_rows))  # reading every row costs more
    assert p.seconds == p.grid[1]  # 48 is the measured context nearest the reference


@pytest.mark.measures_profile
def test_an_old_cached_profile_is_measured_again(tmp_path, monkeypatch, any_noise):
    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path))
    target = tiny_llama()
    CostProfile((1, 2), (1.0, 1.0)).save(cost.profile_path(target))
    p = cost.cost_profile(target, sizes=(1, 2), contexts=(16,), repeats=1)
    assert p.contexts == (16,) and cost.cost_profile(target) == p


def test_estimated_speedup_with_context_and_prefill():
    from decoding.generate import StepRecord

    p = grid_profile()
    # 4 tokens after a 100-token prompt, in two steps that each verify 4 tokens and commit 2
    steps = [StepRecord(100, 3, 1, 2, 0.0, 0.0), StepRecord(102, 3, 1, 2, 0.0, 0.0)]
    plain = sum(p.cost(1, 100 + i) for i in range(4))
    spent = p.cost(4, 100) + p.cost(4, 102)
    assert cost.estimated_speedup(steps, p, with_prefill=False) == pytest.approx(plain / spent)
    assert cost.estimated_speedup(steps, p) == pytest.approx((0.2 + plain) / (0.2 + spent))
    # a drafter that reads every row pays the dearer prefill; plain decoding does not
    assert cost.estimated_times(steps, p, prefill_rows=True) == pytest.approx((0.2 + plain, 0.3 + spent))
    # ... and the difference is its own cost in the decoding phase's rating too (the board's)
    assert cost.estimated_times(steps, p, with_prefill=False, prefill_rows=True) == pytest.approx((plain, 0.1 + spent))
    assert cost.estimated_times(steps, p, with_prefill=False) == pytest.approx((plain, spent))
    assert cost.estimated_speedup([], p) == 0.0
