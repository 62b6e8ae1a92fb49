"""rows.py: the one result row. JSON round trip, a strict reader, and ``case_result`` as the one
place a generation's numbers (``decoding.generate.GenerationResult``) become a row (drafter time,
speedup, estimated times)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decoding.generate import GenerationResult, Stats, StepRecord
from experiments.running.rows import CaseResult, case_result
from pldcore.cost import CostProfile
from pldcore.errors import PLDError

FIELDS = [f.name for f in dataclasses.fields(CaseResult)]


def case_row(**fields) -> CaseResult:
    """A plausible live drafter row; ``fields`` override any field."""
    base = dict(
        case="code-edit/000", category="code-edit", turn=1, method="suffix-automaton", params={"drafter": "x"},
        prompt_tokens=300, new_tokens=64, forwards=20, drafted=80, accepted=44, drafter_us_per_step=12.5,
        wall_s=1.5, forward_s=1.2, speedup=1.8, est_plain_s=2.0, est_run_s=1.0, est_prefill_s=0.0, identical=True,
        mismatch=None,
        accepted_lengths=[2] * 20, drafted_lengths=[4] * 20, contexts=list(range(300, 320)), tokens=[7] * 64,
        profile="flat", experiment="b0b68ef122b2", code="0123456789abcdef", git_sha="0" * 40, time=1.7e9,
        config={"model": "m", "device": "cpu"},
    )
    base.update(fields)
    return CaseResult(**base)


# -- strategies -----------------------------------------------------------------------------------
finite = st.floats(allow_nan=False, allow_infinity=False)
maybe_float = st.none() | finite
json_scalar = st.none() | st.booleans() | st.integers(-(2 ** 53), 2 ** 53) | finite | st.text(max_size=8)
json_value = st.recursive(json_scalar, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
json_dict = st.dictionaries(st.text(max_size=8), json_value, max_size=4)
counts = st.integers(0, 10 ** 7)
int_lists = st.lists(st.integers(0, 10 ** 6), max_size=12)

case_results = st.builds(
    CaseResult,
    case=st.text(), category=st.text(), turn=st.integers(1, 9), method=st.text(), params=json_dict,
    prompt_tokens=counts, new_tokens=counts, forwards=counts, drafted=counts, accepted=counts,
    drafter_us_per_step=maybe_float, wall_s=maybe_float, forward_s=maybe_float, speedup=maybe_float,
    est_plain_s=maybe_float, est_run_s=maybe_float, est_prefill_s=maybe_float, identical=st.none() | st.booleans(),
    mismatch=st.none() | st.text(), accepted_lengths=int_lists, drafted_lengths=int_lists, contexts=int_lists,
    tokens=int_lists, profile=st.none() | st.text(), experiment=st.text(), code=st.text(),
    git_sha=st.none() | st.text(), time=finite, config=json_dict,
)


# -- (de)serialisation ----------------------------------------------------------------------------
@given(case_results)
def test_to_json_from_json_round_trip(row):
    assert CaseResult.from_json(row.to_json()) == row
    # and through JSON text, as the store writes it
    assert CaseResult.from_json(json.loads(json.dumps(row.to_json()))) == row


@given(case_results)
def test_to_json_is_a_copy_of_every_field(row):
    data = row.to_json()
    assert sorted(data) == sorted(FIELDS)  # derived properties are never stored
    data["params"]["a key longer than any drawn"] = 1
    data["accepted_lengths"].append(99)
    assert "a key longer than any drawn" not in row.params
    assert len(row.accepted_lengths) == len(data["accepted_lengths"]) - 1


@pytest.mark.parametrize("name", FIELDS)
def test_from_json_names_a_missing_field(name):
    data = case_row().to_json()
    del data[name]
    with pytest.raises(PLDError, match=rf"results\.jsonl:3 lacks {name}\b"):
        CaseResult.from_json(data, where="results.jsonl:3")


@pytest.mark.parametrize("unknown", ["tau", "replay_s", "versions"])  # what rows of older versions held
def test_from_json_names_an_unknown_field(unknown):
    data = {**case_row().to_json(), unknown: 1.0}
    with pytest.raises(PLDError, match=rf"has unknown {unknown}\b"):
        CaseResult.from_json(data)


def test_from_json_names_missing_and_unknown_together():
    data = {**case_row().to_json(), "est_speedup": 2.0}
    del data["est_plain_s"], data["est_run_s"]
    with pytest.raises(PLDError, match=r"lacks est_plain_s, est_run_s and has unknown est_speedup"):
        CaseResult.from_json(data)


@pytest.mark.parametrize("data", [[], "row", 3, None])
def test_from_json_refuses_a_non_object(data):
    with pytest.raises(PLDError, match="JSON object"):
        CaseResult.from_json(data)


# -- derived properties ---------------------------------------------------------------------------
def test_derived_properties():
    row = case_row(new_tokens=60, forwards=20, wall_s=2.0, est_plain_s=3.0, est_run_s=1.5)
    assert row.tau == 3.0 and row.tokens_per_s == 30.0 and row.est_speedup == 2.0 and not row.replay
    assert row.group == "code-edit"
    assert case_row(case="mt-bench/81#2", category="mt-bench", turn=2).group == "mt-bench (turn 2)"
    bare = case_row(forwards=0, wall_s=None, est_plain_s=None, est_run_s=None)
    assert bare.tau == 0.0 and bare.tokens_per_s is None and bare.est_speedup is None and bare.replay


# -- case_result ----------------------------------------------------------------------------------
# Two steps over a prompt of 10 tokens: 3 drafted / 2 accepted / 3 committed, then 4 / 4 / 5.
STEPS = [StepRecord(10, 3, 2, 3, 0.001, 0.5), StepRecord(13, 4, 4, 5, 0.002, 0.5)]


def drafter_run(wall_s: float = 2.0, tokens: int = 8, steps=STEPS, top_rows: int = 0) -> GenerationResult:
    stats = Stats(new_tokens=tokens, forwards=len(steps), drafted=sum(s.drafted for s in steps),
                  accepted=sum(s.accepted for s in steps), drafter_s=sum(s.drafter_s for s in steps),
                  forward_s=sum(s.forward_s for s in steps), top_rows=top_rows, wall_s=wall_s, steps=list(steps))
    return GenerationResult(list(range(tokens)), stats, "length")


def reference_run(wall_s: float = 4.0, tokens: int = 8) -> GenerationResult:
    """transformers' generate: no drafter, no per-step records."""
    return GenerationResult(list(range(tokens)), Stats(new_tokens=tokens, forwards=tokens, wall_s=wall_s), "length")


def row_of(run: GenerationResult, method: str = "m", **kwargs) -> CaseResult:
    kwargs.setdefault("profile", None)
    return case_result("code-edit/000", "code-edit", 1, 10, method, {"drafter": method}, run, experiment="e",
                       code="k", **kwargs)


def reference_row(run: GenerationResult | None = None, **kwargs) -> CaseResult:
    """The row of transformers' greedy generate (a reference: no drafter)."""
    return row_of(run or reference_run(), method="hf-greedy", has_drafter=False, **kwargs)


def test_case_result_copies_the_run():
    run = drafter_run()
    config = {"model": "m"}
    row = row_of(run, config=config, identical=False, mismatch="at 3", git_sha="abc")
    assert (row.new_tokens, row.forwards, row.drafted, row.accepted) == (8, 2, 7, 6)
    assert row.accepted_lengths == [2, 4] and row.drafted_lengths == [3, 4] and row.contexts == [10, 13]
    assert row.tokens == list(range(8)) and row.prompt_tokens == 10
    assert (row.identical, row.mismatch, row.git_sha, row.code, row.experiment) == (False, "at 3", "abc", "k", "e")
    assert row.wall_s == 2.0 and row.forward_s == 1.0
    config["model"] = "changed"
    assert row.config == {"model": "m"}
    assert row_of(run, keep_tokens=False).tokens == []


def test_drafter_time_is_per_forward_in_microseconds():
    # 0.003 s of drafter time over 2 forwards = 1500 µs per step (counted once, converted once)
    assert row_of(drafter_run()).drafter_us_per_step == pytest.approx(1500.0)
    run = drafter_run()
    run.stats = dataclasses.replace(run.stats, drafter_s=0.5, forwards=4)
    assert row_of(run).drafter_us_per_step == pytest.approx(125_000.0)
    # no drafter (transformers' references): no drafter time and no forward time, not 0
    ref = reference_row()
    assert ref.drafter_us_per_step is None and ref.forward_s is None
    # what decides it is the method (has_drafter), not what the run happens to hold
    assert row_of(reference_run()).drafter_us_per_step == 0.0
    assert reference_row(drafter_run()).drafter_us_per_step is None and reference_row(drafter_run()).forward_s is None


def test_the_reference_has_speedup_one():
    assert reference_row().speedup == 1.0
    assert row_of(drafter_run()).speedup == 1.0


def test_speedup_is_a_throughput_ratio_against_the_reference_row():
    ref = reference_row(reference_run(wall_s=4.0, tokens=100))  # 25 tokens/s
    assert row_of(drafter_run(wall_s=2.0, tokens=60), reference=ref).speedup == pytest.approx(1.2)  # 30 tokens/s
    # same tokens: the wall-time ratio
    assert row_of(drafter_run(wall_s=1.0, tokens=100), reference=ref).speedup == pytest.approx(4.0)
    # a reference with no wall time (a replay's row) measures nothing
    replayed = reference_row(measured=False)
    assert row_of(drafter_run(), reference=replayed).speedup is None


def test_a_replay_is_not_measured():
    ref = reference_row()
    for reference in (None, ref):
        row = row_of(drafter_run(), reference=reference, measured=False, profile=CostProfile.flat(64))
        assert row.speedup is None and row.wall_s is None and row.forward_s is None and row.replay
        assert row.tokens_per_s is None
        assert row.drafter_us_per_step == pytest.approx(1500.0)  # the drafter's time is still its own
        assert row.est_speedup is not None


def test_estimated_times_by_hand():
    # flat: every forward of up to 64 tokens costs 1 s; no prefill measured
    row = row_of(drafter_run(), profile=CostProfile.flat(64))
    assert row.est_plain_s == pytest.approx(8.0)  # 8 tokens, one 1 s forward each
    assert row.est_run_s == pytest.approx(2.003)  # two 1 s forwards + 3 ms of drafting
    assert row.est_speedup == pytest.approx(8.0 / 2.003)
    assert row.profile == "flat"


def test_estimated_times_with_prefill():
    profile = CostProfile((1, 64, 65), (1.0, 1.0, 2.0), model="p", contexts=(10, 100),
                          grid=((1.0, 1.0, 2.0), (1.0, 1.0, 2.0)), prefill=(5.0, 50.0), prefill_rows=(7.0, 70.0))
    row = row_of(drafter_run(), profile=profile)
    assert (row.est_plain_s, row.est_run_s) == pytest.approx((5.0 + 8.0, 5.0 + 2.003))
    decoding_only = row_of(drafter_run(), profile=profile, with_prefill=False)
    assert (decoding_only.est_plain_s, decoding_only.est_run_s) == pytest.approx((8.0, 2.003))
    # the row says which prefill its estimate holds, so the decoding phase's figure is known either way
    assert (row.est_prefill_s, decoding_only.est_prefill_s) == (5.0, 0.0)
    assert row.decode_speedup == pytest.approx(decoding_only.est_speedup)
    assert decoding_only.decode_speedup == pytest.approx(decoding_only.est_speedup)
    assert row.est_speedup == pytest.approx(13.0 / 7.003) and row.est_speedup < row.decode_speedup
    # a drafter that read the target's top ids paid the dearer prefill that computes every row
    rows_read = row_of(drafter_run(top_rows=4), profile=profile)
    assert (rows_read.est_plain_s, rows_read.est_run_s) == pytest.approx((5.0 + 8.0, 7.0 + 2.003))
    # ... and in the decoding phase's rating too, as the board charges it
    assert rows_read.decode_speedup == pytest.approx(8.0 / (2.0 + 2.003))
    assert rows_read.decode_speedup == pytest.approx(row_of(drafter_run(top_rows=4), profile=profile,
                                                            with_prefill=False).est_speedup)


def test_the_drafters_time_outside_the_steps_counts_in_the_estimate():
    """``reset`` (and the prompt's top-k rows) take drafter time that no step holds: the board's
    sandbox charges it to the first step, so a comparison's estimate charges it too."""
    run = drafter_run()
    run.stats = dataclasses.replace(run.stats, drafter_s=0.503)  # the steps hold 0.003 s: 0.5 s of reset
    row = row_of(run, profile=CostProfile.flat(64))
    assert row.est_run_s == pytest.approx(2.503) and row.est_plain_s == pytest.approx(8.0)
    assert row.drafter_us_per_step == pytest.approx(1e6 * 0.503 / 2)  # one figure of the drafter's time


@pytest.mark.parametrize("has_steps", [True, False])
@pytest.mark.parametrize("has_profile", [True, False])
def test_estimates_exist_iff_steps_and_profile(has_steps, has_profile):
    run = drafter_run() if has_steps else reference_run()
    row = row_of(run, profile=CostProfile.flat(64, name="flat-64") if has_profile else None)
    priced = has_steps and has_profile
    assert (row.est_plain_s is not None, row.est_run_s is not None, row.est_prefill_s is not None,
            row.est_speedup is not None, row.decode_speedup is not None) == (priced,) * 5
    assert row.profile == ("flat-64" if priced else None)
