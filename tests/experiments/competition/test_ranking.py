"""The one ranking (``competition.ranking``) against a brute-force sort: by the board's scores (fresh
where linked) or the public ones, per GPU track, the '#' a view numbers, and the rule ``record_best``
keeps a resubmission by."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.competition.flags import with_fresh
from experiments.competition.ranking import (BOARD, PUBLIC, best_in_group, better, board_scores, public_standing,
                                             ranked, split_peers, standing, track_ranking)
from experiments.competition.records import DISQUALIFIED, OK, PENDING, Entry, GroupScores, Scores

KINDS = ("oracle", "baseline", "peer", "submission")
STATUSES = (OK, DISQUALIFIED, PENDING, "")
SCORES = st.none() | st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0]) | st.floats(0.01, 10.0)


# the strategies are built once, here: built inside the composites at every draw, their construction
# and validation cost more than the examples they draw (the same draws either way)
GROUPS = st.dictionaries(st.sampled_from(["copy", "chat", "code"]), st.builds(GroupScores, est_speedup=SCORES),
                         max_size=3)
NAMES = st.lists(st.text("abcdef", min_size=1, max_size=3), unique=True, max_size=12)


@st.composite
def scores(draw) -> Scores:
    groups = draw(GROUPS)
    return Scores(status=draw(st.sampled_from(STATUSES)), score=draw(SCORES), groups=groups)


SCORES_OF = scores()
FRESH = st.none() | SCORES_OF
TRACKS = st.dictionaries(st.sampled_from(["flat", "h100"]), SCORES_OF, max_size=2)
KIND = st.sampled_from(KINDS)


@st.composite
def boards(draw) -> list[Entry]:
    """Entries of unique names (ties in score are likely: a few scores drawn often)."""
    names = draw(NAMES)
    return [Entry(name=n, kind=draw(KIND), benchmark="b", public=draw(SCORES_OF), fresh=draw(FRESH),
                  tracks=draw(TRACKS))
            for n in names]


def brute_force(entries: list[Entry], basis) -> tuple[list[str], list[str]]:
    """(ranked names, unranked names) by the rule written out: a non-oracle entry whose scores there
    are ok and non-zero, best score first, then by name; every other non-oracle by name."""
    def shown(e: Entry) -> Scores:
        return e.fresh if basis is BOARD and e.fresh is not None else e.public

    eligible = [e for e in entries if e.kind != "oracle" and shown(e).status == OK and shown(e).score]
    best_first = []
    for e in eligible:  # insertion, comparing pairs: no key function shared with the code under test
        at = next((i for i, o in enumerate(best_first)
                   if shown(e).score > shown(o).score or (shown(e).score == shown(o).score and e.name < o.name)),
                  len(best_first))
        best_first.insert(at, e)
    rest = sorted(e.name for e in entries if e.kind != "oracle" and e not in eligible)
    return [e.name for e in best_first], rest


@settings(max_examples=150, deadline=None)
@given(boards(), st.sampled_from([BOARD, PUBLIC]))
def test_ranked_is_the_brute_force_sort(entries, basis):
    ranking = ranked(entries, basis)
    assert ([e.name for e in ranking.ranked], [e.name for e in ranking.unranked]) == brute_force(entries, basis)
    oracles = [e for e in entries if e.kind == "oracle"]
    assert ranking.oracle is (oracles[0] if oracles else None)
    assert len(ranking.ranked) + len(ranking.unranked) + len(oracles) == len(entries)  # everyone, once


@settings(max_examples=100, deadline=None)
@given(boards())
def test_standing_is_the_place_in_the_board_propers_ranking(entries):
    proper = [e for e in entries if e.kind != "peer"]
    order, _ = brute_force(proper, BOARD)
    for e in entries:
        place = standing(entries, e.name)
        assert place == ((order.index(e.name) + 1, len(order)) if e.name in order else None)
    assert split_peers(entries)[1] == [e for e in entries if e.kind == "oracle"] + [e for e in entries if e.kind == "peer"]


@settings(max_examples=100, deadline=None)
@given(boards())
def test_public_standing_ranks_by_public_score_what_the_board_does_not_disqualify(entries):
    pool = [e for e in entries if e.kind != "peer" and board_scores(e).status in (OK, PENDING)]
    order, _ = brute_force(pool, PUBLIC)
    for e in entries:
        expected = (order.index(e.name) + 1, len(order)) if e.name in order else None
        assert public_standing(entries, e.name) == expected


@settings(max_examples=100, deadline=None)
@given(boards(), st.sampled_from(["flat", "h100"]))
def test_track_ranking_is_the_brute_force_sort_of_the_track(entries, track):
    on_track = [dataclasses.replace(e, public=e.tracks[track], fresh=None) for e in entries if track in e.tracks]
    scored = [e for e in on_track if e.public.status == OK and e.public.score is not None and e.kind != "oracle"]
    expected = sorted(scored, key=lambda e: (-e.public.score, e.name))
    assert [e.name for e in track_ranking(entries, track)] == [e.name for e in expected]


@settings(max_examples=100, deadline=None)
@given(boards())
def test_better_agrees_with_the_public_ranking(entries):
    order, _ = brute_force(entries, PUBLIC)
    for a, b in itertools.permutations([e for e in entries if e.kind != "oracle"][:6], 2):
        if a.name in order and b.name in order:
            same = a.public.score == b.public.score
            assert better(a, b) == (same or order.index(a.name) < order.index(b.name))
        else:
            assert better(a, b) == (b.name not in order)  # a scored entry stands over one that is not


@settings(max_examples=100, deadline=None)
@given(boards(), st.sampled_from(["copy", "chat", "code"]))
def test_best_in_group_is_the_highest_public_speedup_later_name_on_a_tie(entries, group):
    scored = [(e.public.groups[group].est_speedup, e.name) for e in entries
              if group in e.public.groups and e.public.groups[group].est_speedup]
    best = best_in_group(entries, group)
    assert (best.name if best else None) == (max(scored)[1] if scored else None)


def test_the_fresh_score_ranks_and_the_public_one_stays_beside_it():
    def entry(name: str, public: float, fresh: float | None) -> tuple[Entry, Entry | None]:
        e = Entry(name=name, kind="baseline", benchmark="p", public=Scores(score=public))
        return e, (dataclasses.replace(e, benchmark="f", public=Scores(score=fresh)) if fresh is not None else None)

    pairs = [entry("a", 2.0, 1.1), entry("b", 1.5, 1.4), entry("c", 1.8, None)]
    shown = with_fresh([p for p, _ in pairs], [f for _, f in pairs if f is not None])
    assert [e.name for e in ranked(shown).ranked] == ["b", "a"]  # by fresh; c waits for its fresh score
    assert [e.name for e in ranked(shown, PUBLIC).ranked] == ["a", "c", "b"]
    assert [e.public.score for e in shown] == [2.0, 1.5, 1.8]  # never overwritten
    assert board_scores(shown[2]).status == PENDING and public_standing(shown, "c") == (2, 3)
