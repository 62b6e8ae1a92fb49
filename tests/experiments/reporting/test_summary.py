"""summary.py: the aggregates every view shows, against brute-force references. Speedups pool as
ratios of total times (not means of ratios), rows without a value are left out, nothing gives None."""

from __future__ import annotations

import math
import statistics
from collections import Counter

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from test_plots import case_row  # tests/experiments/reporting is on sys.path under pytest's default import mode

from experiments.reporting.summary import (ALL, MIN_CASES, MIN_ORACLE_GAIN, board_score, by_method_and_group,
                                           decode_speedup_of, est_speedup_of, geo_mean, group_order, is_drafter,
                                           method_order, oracle_gain, oracle_speedups, oracle_times, sample_notes,
                                           score_of, speedup_of, summarize)

# -- rows -----------------------------------------------------------------------------------------
positive = st.floats(1e-3, 1e3, allow_nan=False)
METHODS = ("hf-greedy", "unfold", "voting")
CATEGORIES = ("code-edit", "mt-bench", "summarization")


# the strategies a row draws from, built once: built inside the composite at every draw, their
# construction costs more than the rows (the same draws either way)
CATEGORY, METHOD, TURN, CASE_NO = st.sampled_from(CATEGORIES), st.sampled_from(METHODS), st.integers(1, 2), st.integers(0, 5)
STEPS, BOOL, COUNT, DRAFTS = st.lists(st.integers(0, 8), max_size=6), st.booleans(), st.integers(0, 500), st.integers(0, 100)
MAYBE_POSITIVE, PREFILL, MAYBE_BOOL = st.none() | positive, st.sampled_from([0.0, 1e-4]), st.none() | st.booleans()


@st.composite
def result_rows(draw, method=None):
    """One row with every optional field drawn present or absent, as live runs and replays leave them."""
    category = draw(CATEGORY)
    turn = draw(TURN)
    multi = category == "mt-bench"
    case = f"{category}/{draw(CASE_NO):03d}" + (f"#{turn}" if multi else "")
    steps = draw(STEPS)
    measured = draw(BOOL)
    priced = draw(BOOL)
    return case_row(
        case=case, category=category, turn=turn if multi else 1,
        method=method or draw(METHOD),
        new_tokens=draw(COUNT), forwards=draw(COUNT),
        drafted=draw(DRAFTS), accepted=draw(DRAFTS),
        drafter_us_per_step=draw(MAYBE_POSITIVE),
        wall_s=draw(positive) if measured else None,
        speedup=draw(MAYBE_POSITIVE) if measured else None,
        est_plain_s=draw(positive) if priced else None, est_run_s=draw(positive) if priced else None,
        est_prefill_s=draw(PREFILL) if priced else None,
        identical=draw(MAYBE_BOOL), accepted_lengths=steps, contexts=list(range(100, 100 + len(steps))),
    )


row_lists = st.lists(result_rows(), max_size=12)


def approx(value):
    return None if value is None else pytest.approx(value, rel=1e-9)


# -- brute-force references -----------------------------------------------------------------------
def ref_speedup(rs):
    """Total reference time over total method time, over the rows measured against the reference."""
    ref_time = method_time = 0.0
    for r in rs:
        if r.speedup is not None and r.wall_s is not None:
            ref_time += r.wall_s * r.speedup  # the reference's time on that case
            method_time += r.wall_s
    return ref_time / method_time if method_time else None


def ref_est_speedup(rs):
    plain = [r.est_plain_s for r in rs if r.est_run_s is not None]
    spent = [r.est_run_s for r in rs if r.est_run_s is not None]
    return math.fsum(plain) / math.fsum(spent) if spent else None


# -- speedup_of / est_speedup_of ------------------------------------------------------------------
@given(row_lists)
def test_speedup_is_the_ratio_of_total_times(rs):
    assert speedup_of(rs) == approx(ref_speedup(rs))
    speedups = [r.speedup for r in rs if r.speedup is not None]
    if speedups:  # a time-weighted mean of the rows' speedups: between the worst and the best
        assert min(speedups) * (1 - 1e-9) <= speedup_of(rs) <= max(speedups) * (1 + 1e-9)


@given(row_lists)
def test_estimated_speedup_is_the_ratio_of_estimated_totals(rs):
    assert est_speedup_of(rs) == approx(ref_est_speedup(rs))
    unpriced = [case_row(new_tokens=r.new_tokens) for r in rs]  # rows without an estimate change nothing
    assert est_speedup_of(rs + unpriced) == approx(ref_est_speedup(rs))


@given(row_lists, st.permutations(range(12)))
def test_pooled_speedups_ignore_row_order(rs, order):
    shuffled = [rs[i] for i in order if i < len(rs)]
    assert speedup_of(shuffled) == approx(speedup_of(rs))
    assert est_speedup_of(shuffled) == approx(est_speedup_of(rs))


def test_aggregates_are_time_ratios():
    rs = [  # the reference took 2 s + 2 s; the method 1 s + 3 s -> 4 / 4 = 1.0, not mean(2, 0.67)
        case_row(case="c/0", wall_s=1.0, speedup=2.0, new_tokens=10, forwards=5, est_plain_s=2.0, est_run_s=1.0),
        case_row(case="c/1", wall_s=3.0, speedup=2 / 3, new_tokens=30, forwards=30, est_plain_s=3.0, est_run_s=3.0),
    ]
    s = summarize(rs)
    assert s["speedup"] == pytest.approx(1.0)
    assert s["est_speedup"] == pytest.approx((2 + 3) / (1 + 3))  # not mean(2, 1) = 1.5
    assert s["tau"] == pytest.approx(40 / 35)
    assert s["tokens_per_s"] == pytest.approx(10.0)
    assert s["worst_speedup"] == pytest.approx(2 / 3)
    assert s["identical"] is None and s["acceptance"] is None


def test_estimated_times_pool_over_the_rows_that_have_them():
    rs = [  # plain decoding: 3 s + 1 s estimated; the run: 1 s + 1 s -> 2.0 (not the token-weighted 1.2)
        case_row(case="c/0", new_tokens=10, est_plain_s=3.0, est_run_s=1.0),
        case_row(case="c/1", new_tokens=40, est_plain_s=1.0, est_run_s=1.0),
    ]
    assert est_speedup_of(rs) == pytest.approx(2.0)
    rs[1].est_plain_s = rs[1].est_run_s = None  # a row without a profile is left out, not counted as 1x
    assert est_speedup_of(rs) == pytest.approx(3.0)


def test_nothing_to_pool_is_none():
    for rs in ([], [case_row()], [case_row(wall_s=1.0)], [case_row(speedup=1.5)]):
        assert speedup_of(rs) is None and est_speedup_of(rs) is None
    empty = summarize([])
    assert empty["n"] == 0 and empty["new_tokens"] == 0
    assert all(empty[k] is None for k in ("tau", "tokens_per_s", "speedup", "est_speedup", "worst_speedup",
                                          "drafter_us_per_step", "acceptance", "mean_accepted", "identical"))


# -- summarize ------------------------------------------------------------------------------------
@given(row_lists)
def test_summarize_against_brute_force(rs):
    s = summarize(rs)
    tokens, forwards = sum(r.new_tokens for r in rs), sum(r.forwards for r in rs)
    timed = [r for r in rs if r.wall_s is not None]
    steps = [a for r in rs for a in r.accepted_lengths]
    us = [(r.drafter_us_per_step, r.forwards) for r in rs if r.drafter_us_per_step is not None]
    drafted, accepted = sum(r.drafted for r in rs), sum(r.accepted for r in rs)
    checks = [r.identical for r in rs if r.identical is not None]
    assert s["n"] == len(rs) and s["new_tokens"] == tokens and s["forwards"] == forwards
    assert s["drafted"] == drafted and s["accepted"] == accepted
    assert s["tau"] == approx(tokens / forwards if forwards else None)
    assert s["tokens_per_s"] == approx(sum(r.new_tokens for r in timed) / sum(r.wall_s for r in timed)
                                       if timed else None)
    assert s["speedup"] == approx(ref_speedup(rs)) and s["est_speedup"] == approx(ref_est_speedup(rs))
    assert s["worst_speedup"] == approx(min((r.speedup for r in rs if r.speedup is not None), default=None))
    # drafter time per forward over all forwards, not a mean of the rows' means
    weight = sum(f for _, f in us)
    assert s["drafter_us_per_step"] == approx(sum(u * f for u, f in us) / weight if weight else None)
    assert s["acceptance"] == approx(accepted / drafted if drafted else None)
    assert s["mean_accepted"] == approx(statistics.fmean(steps) if steps else None)
    assert s["identical"] == (None if not checks else False not in checks)


def test_one_mismatch_makes_the_method_not_identical():
    assert summarize([case_row(identical=True), case_row(identical=None)])["identical"] is True
    assert summarize([case_row(identical=True), case_row(identical=False)])["identical"] is False


# -- geo_mean / oracle_gain -----------------------------------------------------------------------
values = st.lists(st.none() | st.floats(allow_nan=True, allow_infinity=True), max_size=10)


@given(values)
def test_geo_mean_of_the_positive_finite_values(xs):
    kept = [x for x in xs if x is not None and math.isfinite(x) and x > 0]
    assume(all(1e-100 < x < 1e100 for x in kept))  # statistics' reference stays exact in this range
    assert geo_mean(xs) == approx(statistics.geometric_mean(kept) if kept else None)


@given(st.lists(st.floats(1e-6, 1e6), min_size=1, max_size=10), st.floats(1e-3, 1e3))
def test_geo_mean_is_a_mean(xs, k):
    g = geo_mean(xs)
    assert min(xs) * (1 - 1e-9) <= g <= max(xs) * (1 + 1e-9)
    assert geo_mean([k * x for x in xs]) == pytest.approx(k * g, rel=1e-9)
    assert geo_mean([g] * 3) == pytest.approx(g)
    assert geo_mean([4.0, 1.0]) == pytest.approx(2.0)


@given(st.none() | st.floats(allow_nan=False), st.none() | st.floats(allow_nan=False) | st.floats(0.99, 1.1))
def test_oracle_gain(score, oracle):
    gain = oracle_gain(score, oracle)
    if score is None or oracle is None or not oracle - 1 >= MIN_ORACLE_GAIN:
        assert gain is None
    else:
        assume(math.isfinite(score) and math.isfinite(oracle))
        assert gain == pytest.approx((score - 1) / (oracle - 1))


def test_oracle_gain_examples():
    assert oracle_gain(1.5, 2.0) == pytest.approx(0.5)
    assert oracle_gain(2.0, 2.0) == pytest.approx(1.0)
    assert oracle_gain(1.0, 3.0) == 0.0
    assert oracle_gain(0.8, 1.4) == pytest.approx(-0.5)  # slower than plain decoding: a negative share
    assert oracle_gain(1.5, 1.0) is None and oracle_gain(1.5, 0.9) is None
    assert oracle_gain(None, 2.0) is None and oracle_gain(1.5, None) is None
    # an oracle of 1.02x: a drafter at 0.977x would read -113%, a figure of noise; none is given
    assert oracle_gain(0.977, 1.02) is None and oracle_gain(1.01, 1.0 + MIN_ORACLE_GAIN) == pytest.approx(0.2)


def test_the_explain_table_and_the_board_share_one_oracle_gain():
    from experiments.running.explain import Loss

    assert Loss(plain=1.0, oracle=1 / 1.02, run=1 / 0.977).share_of_oracle_gain is None
    loss = Loss(plain=2.0, oracle=1.0, run=4 / 3)
    assert loss.share_of_oracle_gain == pytest.approx(oracle_gain(1.5, 2.0)) == pytest.approx(0.5)


# -- decode speedup and the board's score ---------------------------------------------------------
def priced_row(case: str, category: str, plain: float, run: float, prefill: float, turn: int = 1):
    return case_row(case=case, category=category, turn=turn, est_plain_s=plain + prefill, est_run_s=run + prefill,
                    est_prefill_s=prefill)


def test_decode_speedup_takes_the_prefill_out_of_both_sides():
    rows = [priced_row("c/0", "code-edit", 4.0, 1.0, 2.0), priced_row("c/1", "code-edit", 2.0, 2.0, 6.0)]
    assert est_speedup_of(rows) == pytest.approx((6 + 8) / (3 + 8))  # prefill included: diluted
    assert decode_speedup_of(rows) == pytest.approx((4 + 2) / (1 + 2))
    assert [r.decode_speedup for r in rows] == [pytest.approx(4.0), pytest.approx(1.0)]
    # rows rated for the decoding phase (the board's): the two figures are one
    board = [priced_row("c/0", "code-edit", 4.0, 1.0, 0.0), priced_row("c/1", "code-edit", 2.0, 2.0, 0.0)]
    assert decode_speedup_of(board) == pytest.approx(est_speedup_of(board))
    assert decode_speedup_of([case_row()]) is None and decode_speedup_of([]) is None


@given(row_lists)
def test_decode_speedup_pools_the_rows_decoding_times(rs):
    priced = [r for r in rs if r.est_run_s is not None]
    spent = math.fsum(r.est_run_s - r.est_prefill_s for r in priced)
    assume(not priced or spent > 1e-9)
    expected = math.fsum(r.est_plain_s - r.est_prefill_s for r in priced) / spent if priced else None
    assert decode_speedup_of(rs) == approx(expected)


def test_the_score_is_the_geometric_mean_over_groups_of_decode_speedup():
    # code-edit: one long case at 4x, one short at 1x (pooled: 2x); chat: 1.125x; ALL pooled lies elsewhere
    rows = [priced_row("c/0", "code-edit", 8.0, 2.0, 1.0), priced_row("c/1", "code-edit", 2.0, 3.0, 1.0),
            priced_row("m/0#1", "mt-bench", 9.0, 8.0, 5.0, turn=1)]
    groups = {"code-edit": 10 / 5, "mt-bench (turn 1)": 9 / 8}
    assert score_of(rows) == pytest.approx(math.sqrt(groups["code-edit"] * groups["mt-bench (turn 1)"]))
    assert score_of(rows) == pytest.approx(board_score({**groups, ALL: 99.0}))  # ALL never counts
    assert score_of(rows) != pytest.approx(decode_speedup_of(rows))  # the pooled figure is another one
    assert score_of(rows[:2]) == pytest.approx(decode_speedup_of(rows[:2]))  # one group: its decode speedup
    s = summarize(rows)
    assert (s["score"], s["decode_speedup"], s["est_speedup"]) == (score_of(rows), decode_speedup_of(rows),
                                                                  est_speedup_of(rows))
    assert board_score({}) is None and board_score({ALL: 2.0}) is None


def test_the_board_ranks_by_the_same_score():
    """The board's entry score (competition.scoring) of rows rated for the decoding phase is
    ``score_of`` of them: one definition, wherever it is shown."""
    from experiments.competition.scoring import entry_scores

    rows = [priced_row("c/0", "code-edit", 8.0, 2.0, 0.0), priced_row("c/1", "code-edit", 2.0, 3.0, 0.0),
            priced_row("m/0#1", "mt-bench", 9.0, 8.0, 0.0, turn=1)]
    assert entry_scores(rows, rows)["score"] == pytest.approx(score_of(rows))


# -- small samples --------------------------------------------------------------------------------
def test_sample_notes_warn_of_small_groups_and_an_oracle_that_gains_next_to_nothing():
    assert sample_notes({"code-edit": MIN_CASES, ALL: MIN_CASES}) == []
    [small] = sample_notes({"code-edit": 3, "doc-qa": MIN_CASES, ALL: 3 + MIN_CASES})
    assert small.startswith("warning: ") and "code-edit (3)" in small and "doc-qa" not in small and ALL not in small
    [flat] = sample_notes({"chat": 80}, {"chat": 1.02, "code": 2.5})
    assert "chat (1.020x)" in flat and "code" not in flat and "not shown" in flat
    assert len(sample_notes({"chat": 3}, {"chat": 1.0})) == 2


# -- grouping -------------------------------------------------------------------------------------
@given(row_lists)
def test_every_row_appears_under_its_group_and_all(rs):
    cells = by_method_and_group(rs)
    for r in rs:
        assert any(x is r for x in cells[(r.method, r.group)])
        assert any(x is r for x in cells[(r.method, ALL)])
    # exactly once each, and nothing else: every row twice in total
    assert sum(len(v) for v in cells.values()) == 2 * len(rs)
    assert set(cells) == {(r.method, g) for r in rs for g in (r.group, ALL)}
    for (method, group), mine in cells.items():
        assert all(r.method == method and group in (r.group, ALL) for r in mine)
        ids = {id(r) for r in mine}
        assert [id(r) for r in rs if id(r) in ids] == [id(r) for r in mine]  # rows keep their order
    if rs:
        assert Counter(id(r) for m in method_order(rs) for r in cells[(m, ALL)]) == Counter(id(r) for r in rs)


@given(row_lists)
def test_method_and_group_order(rs):
    assert method_order(rs) == list(dict.fromkeys(r.method for r in rs))  # first appearance: reference first
    assert group_order(rs) == sorted({r.group for r in rs})
    assert ALL not in group_order(rs)


def test_multi_turn_cases_group_per_turn():
    rs = [case_row(case="mt-bench/81#1", category="mt-bench", turn=1),
          case_row(case="mt-bench/81#2", category="mt-bench", turn=2),
          case_row(case="code-edit/0", category="code-edit")]
    assert group_order(rs) == ["code-edit", "mt-bench (turn 1)", "mt-bench (turn 2)"]


def test_a_category_named_all_is_not_pooled_twice():
    rs = [case_row(case="all/0", category="all", new_tokens=10, forwards=5),
          case_row(case="code-edit/0", category="code-edit", new_tokens=10, forwards=10)]
    pooled = by_method_and_group(rs)[("m", ALL)]
    assert len(pooled) == 2 and summarize(pooled)["tau"] == pytest.approx(20 / 15)


def test_is_drafter():
    assert is_drafter([case_row(accepted_lengths=[1, 0], drafted=4)])
    assert not is_drafter([case_row(accepted_lengths=[0, 0], drafted=0)])  # the `none` drafter never drafts
    assert not is_drafter([case_row(accepted_lengths=[], drafted=4)])  # transformers' hf-lookup: no steps
    assert not is_drafter([])


def test_oracle_speedups_pool_each_groups_cases_with_their_prefill():
    from experiments.benchmarks.traces import TraceCase
    from experiments.running.oracle import cost_aware_oracle_times
    from pldcore.cost import CostProfile

    # a forward over k tokens costs as much as one up to 64 (a big GPU), and a prompt's prefill 1 ms a token
    profile = CostProfile((1, 64, 65), (0.01, 0.01, 0.02), contexts=(1, 4096),
                          grid=((0.01, 0.01, 0.02), (0.01, 0.01, 0.02)), prefill=(0.001, 4.096))
    copy = TraceCase("code-edit/000", "code-edit", 1, list(range(40)), list(range(40)), [], "toy", 64, [], 40)
    fresh = TraceCase("code-edit/001", "code-edit", 1, [1, 2, 3], list(range(100, 140)), [], "toy", 200, [], 40)
    chat = TraceCase("mt-bench/81#2", "mt-bench", 2, [7] * 20, [7] * 30, [], "toy", 200, [], 30)
    got = oracle_speedups(oracle_times([(copy, profile), (fresh, profile), (chat, profile)]))
    assert set(got) == {"code-edit", "mt-bench (turn 2)", ALL}

    def pooled(cases, prefill=True):
        times = [cost_aware_oracle_times(c, profile) for c in cases]
        pre = [profile.prefill_cost(len(c.prompt)) if prefill else 0.0 for c in cases]
        return sum(p + q for (p, _), q in zip(times, pre)) / sum(b + q for (_, b), q in zip(times, pre))

    assert got["code-edit"] == pytest.approx(pooled([copy, fresh]))
    assert got[ALL] == pytest.approx(pooled([copy, fresh, chat]))
    # a copied answer is nearly free to the oracle; a fresh one is not: the pool lies between
    assert pooled([fresh]) == pytest.approx(1.0) and got["code-edit"] > 1.5
    decoding_phase = oracle_speedups(oracle_times([(copy, profile), (fresh, profile)]), with_prefill=False)
    assert decoding_phase["code-edit"] == pytest.approx(pooled([copy, fresh], prefill=False))
    assert decoding_phase["code-edit"] > got["code-edit"]  # the same prefill on both sides dilutes the gain
    assert oracle_speedups(oracle_times([])) == {}


def test_acceptance_by_position_is_the_rate_of_each_token_given_the_ones_before_it():
    from experiments.reporting.summary import acceptance_by_position
    from experiments.reporting.tables import position_table

    # drafts of 3, 3, 2, 0 tokens accepting 3, 1, 0, 0: position 1 reached by 3 drafts (2 accepted it),
    # position 2 by 2 (the first two: 1 accepted it), position 3 by 1 (accepted)
    rows = [case_row(method="d", drafted=8, drafted_lengths=[3, 3], accepted_lengths=[3, 1]),
            case_row(method="d", drafted=2, drafted_lengths=[2, 0], accepted_lengths=[0, 0])]
    assert acceptance_by_position(rows, 4) == [(3, 2 / 3), (2, 1 / 2), (1, 1.0), (0, None)]
    table = position_table([*rows, case_row(method="hf-greedy")], ["hf-greedy", "d"], positions=4)
    assert table.splitlines()[-1].split() == ["d", "3", "67%", "50%", "100%", "-"]  # drafters only
    assert position_table([case_row(method="hf-greedy")], ["hf-greedy"]) == ""
