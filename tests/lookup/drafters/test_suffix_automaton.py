"""The suffix automaton against brute-force searches, incrementally after every extend."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.base import EMPTY_DRAFT, Draft, Evidence
from lookup.indexes import automaton_kernels as K
from lookup.indexes.automaton import MAX_LOAD, SuffixAutomaton
from lookup.indexes.continuations import continuation_tree, majority_chain
from lookup.drafters.suffix_automaton import LinearLength, SuffixAutomatonDrafter

UNBOUNDED = 1 << 30  # max_depth that records every ancestor: rings exact, for comparison with brute force
TOP_ID = K.VOCAB_LIMIT - 1  # 262,143


def brute_match(seq: list[int]) -> tuple[int, int, int]:
    """(length, most recent end, earliest end) of the longest suffix that occurs earlier."""
    n = len(seq)
    best = (0, -1, -1)
    for length in range(1, n):
        suffix = seq[n - length :]
        ends = [e for e in range(length - 1, n - 1) if seq[e - length + 1 : e + 1] == suffix]
        if not ends:
            break  # a longer suffix cannot occur if this one does not
        best = (length, max(ends), min(ends))
    return best


@st.composite
def chunked_sequences(draw, max_len: int = 70, alphabet: tuple[int, int] = (2, 4), top: bool = False):
    """A token sequence over a 2-4 symbol alphabet, split into random extend() chunks."""
    k = draw(st.integers(*alphabet))
    symbols = [TOP_ID - i for i in range(k)] if top else list(range(k))
    seq = draw(st.lists(st.sampled_from(symbols), max_size=max_len))
    cuts = sorted(draw(st.lists(st.integers(0, len(seq)), max_size=8)))
    chunks = [seq[a:b] for a, b in zip([0, *cuts], [*cuts, len(seq)])]
    return seq, chunks


def transitions_of(sam: SuffixAutomaton, state: int) -> dict[int, int]:
    """The state's transitions read through its linked list of hash slots."""
    out = {}
    i = sam.states[state, K.HEAD]
    while i != -1:
        out[int(sam.table[i, 0] & K.TOKEN_MASK)] = K.slot_target(sam.table, i)
        i = K.slot_next(sam.table, i)
    return out


@settings(max_examples=150, deadline=None)
def matches_after_each_extend(sam: SuffixAutomaton, chunks):
    """Extend ``sam`` chunk by chunk from empty; yield (tokens so far, sam.match()) after each."""
    sam.reset([])
    done: list[int] = []
    for chunk in chunks:
        sam.extend(chunk)
        done += chunk
        yield done, sam.match()


@given(chunked_sequences(), st.booleans())
def test_match_equals_brute_force_after_every_extend(data, top_ids):
    seq, chunks = data
    if top_ids:  # the same shapes with ids at the top of the 2**18 range
        seq = [TOP_ID - x for x in seq]
        chunks = [[TOP_ID - x for x in c] for c in chunks]
    sam = SuffixAutomaton(max_depth=UNBOUNDED, capacity=1)  # tiny: every growth path runs
    for done, (_, length, recent, earliest) in matches_after_each_extend(sam, chunks):
        assert (length, recent, earliest) == brute_match(done)
        assert sam.sequence.tolist() == done


@settings(max_examples=60, deadline=None)
@given(chunked_sequences(max_len=120, alphabet=(2, 3)), st.integers(1, 3))
def test_shallow_rings_still_give_a_valid_occurrence(data, max_depth):
    """With a small max_depth the recent end may be older than the truth, never wrong."""
    seq, chunks = data
    sam = SuffixAutomaton(max_depth=max_depth, capacity=2)
    for done, (_, length, recent, earliest) in matches_after_each_extend(sam, chunks):
        true_length, true_recent, true_earliest = brute_match(done)
        assert (length, earliest) == (true_length, true_earliest)
        if length:
            assert earliest <= recent <= true_recent
            assert done[recent - length + 1 : recent + 1] == done[len(done) - length :]


@settings(max_examples=40, deadline=None)
@given(chunked_sequences(max_len=150, alphabet=(2, 4)), st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=8), max_size=20))
def test_transitions_accept_exactly_the_substrings(data, probes):
    """Growth and rehash keep every transition: the automaton accepts exactly the substrings."""
    seq, chunks = data
    sam = SuffixAutomaton(max_depth=UNBOUNDED, capacity=1)
    sam.reset([])
    for chunk in chunks:
        sam.extend(chunk)
    text = "," + ",".join(map(str, seq)) + ","
    for probe in probes + [seq[i : i + 5] for i in range(0, len(seq), 7)]:
        state = 0
        for x in probe:
            state = K.transition(sam.table, sam.meta, state, x)
            if state < 0:
                break
        is_substring = ("," + ",".join(map(str, probe)) + ",") in text
        assert (state >= 0) == is_substring, probe


@settings(max_examples=40, deadline=None)
@given(chunked_sequences(max_len=150))
def test_transition_lists_match_hash_contents(data):
    """Each state's slot list enumerates exactly the keys of that state in the hash table."""
    seq, chunks = data
    sam = SuffixAutomaton(capacity=1)
    sam.reset([])
    for chunk in chunks:
        sam.extend(chunk)
    n_states = int(sam.meta[K.M_STATES])
    by_state: dict[int, dict[int, int]] = {}
    for key, link in sam.table[sam.table[:, 0] != K.EMPTY].tolist():
        by_state.setdefault(key >> K.TOKEN_BITS, {})[key & K.TOKEN_MASK] = link & 0xFFFFFFFF
    assert sum(map(len, by_state.values())) == sam.meta[K.M_TRANS]
    for s in range(n_states):
        assert transitions_of(sam, s) == by_state.get(s, {})
    # SAM bounds: <= 2n - 1 states, <= 3n - 4 transitions (n >= 3)
    n = len(seq)
    if n >= 3:
        assert n_states <= 2 * n - 1 and sam.meta[K.M_TRANS] <= 3 * n - 4


def test_growth_paths_run():
    rng = np.random.default_rng(0)
    sam = SuffixAutomaton(capacity=1)
    sam.reset([])
    h0, s0, t0 = len(sam.table), len(sam.states), len(sam.tokens)
    for _ in range(300):
        sam.extend(rng.integers(0, 3, size=int(rng.integers(1, 4))).tolist())
    assert len(sam.table) > h0 and len(sam.states) > s0 and len(sam.tokens) > t0
    assert sam.meta[K.M_TRANS] <= MAX_LOAD * len(sam.table)


@pytest.mark.parametrize("bad", [[-1], [K.VOCAB_LIMIT], [1, 2, 1 << 40]])
def test_out_of_range_ids_raise_and_change_nothing(bad):
    sam = SuffixAutomaton()
    sam.reset([1, 2, 1, 2])
    before = (sam.match(), len(sam))
    with pytest.raises(ValueError):
        sam.extend(bad)
    assert (sam.match(), len(sam)) == before
    sam.extend([TOP_ID, 0, TOP_ID])
    assert sam.match()[1:3] == (1, 4) and len(sam) == 7  # the top id matched its earlier self


def reference_draft(seq, budget, min_match, max_tokens, occurrence, rule, fallback, loop=False) -> list[int]:
    """The documented rule, from brute force: copy what followed the chosen occurrence of the
    longest earlier match, ``n = min(budget, length rule)`` tokens; with ``fallback``, when the
    chosen occurrence is followed by fewer than ``n`` tokens, copy from the earliest one instead;
    with ``loop``, copy from a text that grows by what it copies (round the loop)."""
    length, recent, earliest = brute_match(seq)
    if length < min_match or budget <= 0:
        return []
    want = max_tokens if rule is None else max(0, min(max_tokens, LinearLength(*rule)(length)))
    n = min(budget, want)
    end = recent if occurrence == "recent" else earliest
    if fallback and len(seq) - 1 - end < n:
        end = earliest
    text = list(seq)
    for i in range(n if loop else 0):
        text.append(text[end + 1 + i])
    return text[end + 1 : end + 1 + n]


@settings(max_examples=120, deadline=None)
@given(
    chunked_sequences(max_len=60),
    st.integers(0, 12),
    st.integers(1, 3),
    st.integers(1, 12),
    st.sampled_from(["recent", "earliest"]),
    st.sampled_from([None, (1.0, 1.0), (0.5, 0.0)]),
    st.booleans(),
    st.booleans(),
)
def test_drafter_copies_the_continuation_of_the_chosen_occurrence(data, budget, min_match, max_tokens, occurrence, rule,
                                                                  fallback, loop):
    seq, chunks = data
    d = SuffixAutomatonDrafter(min_match=min_match, max_tokens=max_tokens, occurrence=occurrence, length_rule=rule,
                               max_depth=UNBOUNDED, fallback=fallback, loop=loop)
    d.reset(chunks[0] if chunks else [])
    for chunk in chunks[1:]:
        d.extend(chunk)
    draft = d.propose(budget)
    assert draft.tokens.tolist() == reference_draft(seq, budget, min_match, max_tokens, occurrence, rule, fallback, loop)
    assert draft.parents is None


def fed(chunks, **params) -> SuffixAutomatonDrafter:
    """A drafter made with ``params``, reset on the first chunk and extended by the others."""
    d = SuffixAutomatonDrafter(**params)
    d.reset(chunks[0] if chunks else [])
    for chunk in chunks[1:]:
        d.extend(chunk)
    return d


def recent_ends(seq, k: int) -> list[int]:
    """The ``k`` most recent earlier ends of the longest match of ``seq``'s suffix, newest first (brute force)."""
    length = brute_match(seq)[0] if seq else 0
    return [e for e in range(len(seq) - 2, -1, -1)
            if length and e + 1 >= length and seq[e + 1 - length : e + 1] == seq[len(seq) - length :]][:k]


@settings(max_examples=60, deadline=None)
@given(chunked_sequences(max_len=60), st.integers(0, 12), st.integers(2, 5), st.integers(1, 8), st.booleans())
def test_branches_draft_the_tree_of_the_most_recent_occurrences_continuations(data, budget, branches, max_tokens, loop):
    seq, chunks = data
    d = fed(chunks, max_tokens=max_tokens, length_rule=None, max_depth=UNBOUNDED, branches=branches, loop=loop)
    draft = d.propose(budget)
    ends = recent_ends(seq, branches)
    want = continuation_tree(np.asarray(seq, dtype=np.int64), ends, min(budget, max_tokens), budget, loop) if ends else None
    if want is None or budget == 0:
        assert len(draft) == 0
    else:
        assert draft.tokens.tolist() == want[0].tolist() and draft.parents.tolist() == want[1].tolist()
        assert d.params()["branches"] == branches and d.sam.occurrences >= branches


@settings(max_examples=60, deadline=None)
@given(chunked_sequences(max_len=60), st.integers(0, 12), st.integers(1, 6), st.integers(1, 8), st.booleans())
def test_the_majority_drafts_the_chain_most_remembered_occurrences_follow(data, budget, occurrences, max_tokens, loop):
    seq, chunks = data
    d = fed(chunks, max_tokens=max_tokens, length_rule=None, max_depth=UNBOUNDED, occurrence="majority",
            occurrences=occurrences, loop=loop)
    draft = d.propose(budget)
    ends = recent_ends(seq, occurrences)
    n = min(budget, max_tokens)
    out = np.zeros(max(n, 1), dtype=np.int64)
    m = majority_chain(np.asarray(seq, dtype=np.int32), np.asarray(ends, dtype=np.int64), n, loop, out) \
        if ends and n else 0
    assert draft.tokens.tolist() == out[:m].tolist() and draft.parents is None
    if occurrences == 1:  # one occurrence remembered: the most recent one's continuation
        assert draft.tokens.tolist() == reference_draft(seq, budget, 1, max_tokens, "recent", None, False, loop)


@pytest.mark.parametrize(
    "seq, budget, fallback, want",
    [
        # the cases hypothesis found: the most recent occurrence of the match is followed by too
        # few tokens, the earliest by enough
        ([1, 0, 1, 1], 2, True, [0, 1]),
        ([1, 0, 1, 1], 2, False, [1]),
        ([0, 0, 1, 0], 3, True, [0, 1, 0]),
        ([0, 0, 1, 0], 3, False, [1, 0]),
        ([0, 0, 1, 0], 2, True, [1, 0]),  # the most recent one has enough: no fallback
    ],
)
def test_fallback_copies_from_the_earliest_occurrence_when_the_recent_one_runs_out(seq, budget, fallback, want):
    d = SuffixAutomatonDrafter(min_match=1, max_tokens=budget, length_rule=None, fallback=fallback, loop=False)
    d.reset(seq)
    assert d.propose(budget).tokens.tolist() == want


def test_linear_length_rule():
    d = SuffixAutomatonDrafter(min_match=1, max_tokens=6, length_rule=(2.0, 1.0))
    assert [d.draft_length(m) for m in (0, 1, 2, 3, 10)] == [1, 3, 5, 6, 6]
    d = SuffixAutomatonDrafter(max_tokens=10, length_rule=lambda m: m - 1)
    assert [d.draft_length(m) for m in (0, 1, 5, 50)] == [0, 0, 4, 10]


def test_memory_is_linear_and_counted():
    sam = SuffixAutomaton()
    sam.reset(np.random.default_rng(1).integers(0, 50_000, size=20_000))
    stats = sam.stats()
    assert stats["states"] <= 2 * 20_000 and stats["nbytes"] == sam.nbytes()
    assert sam.nbytes() / 20_000 < 200  # the 160 B/token target is checked at 1M by the bench


def brute_ends(seq: list[int], k: int) -> list[int]:
    """The k most recent earlier end positions (newest first) of the longest suffix of ``seq`` that
    occurs earlier; [] when none does."""
    n = len(seq)

    def ends(length: int) -> list[int]:
        return [e for e in range(n - 2, length - 2, -1) if seq[e - length + 1 : e + 1] == seq[n - length :]]

    longest = max((m for m in range(1, n) if ends(m)), default=0)
    return ends(longest)[:k] if longest else []


def brute_agreement(seq, ends, draft, loop=False):
    """Per depth d: occurrences whose continuation is draft[:d] with a token at d, and those with draft[d] there;
    with ``loop``, continuations read on into the draft as if the text went on with it."""
    support, agree = [0] * len(draft), [0] * len(draft)
    text = list(seq) + list(draft) if loop else seq
    for e in ends:
        after = text[e + 1 : e + 1 + len(draft)]
        for d in range(len(after)):
            if after[:d] == list(draft[:d]):
                support[d] += 1
                agree[d] += after[d] == draft[d]
    return support, agree


def evidence_of(d: SuffixAutomatonDrafter, tokens) -> Evidence:
    return d.evidence(Draft(np.asarray(tokens, dtype=np.int64)))


def chain_agreement(d: SuffixAutomatonDrafter, tokens):
    """(support, agree) of the match the chain is copied after, or None."""
    own = evidence_of(d, tokens).own
    return None if own is None else (own.support, own.agree)


def other_index(d: SuffixAutomatonDrafter, tokens, source: str):
    """What the other index says of a chain from ``source`` (length, support, agree), or None (also when
    the draft now comes from the other source)."""
    evidence = evidence_of(d, tokens)
    if evidence.source != source or evidence.other is None:
        return None
    return evidence.other.match_length, evidence.other.support, evidence.other.agree


def source_of(d: SuffixAutomatonDrafter) -> str:
    return d.evidence(EMPTY_DRAFT).source


@settings(max_examples=120, deadline=None)
@given(chunked_sequences(max_len=60), st.integers(1, 8), st.lists(st.integers(0, 4), max_size=6), st.booleans())
def test_match_ends_and_chain_agreement_equal_brute_force(data, occurrences, tail, loop):
    """The automaton remembers the most recent occurrences of its match; the drafter's chain agreement
    counts, per depth, those that follow the draft so far and those that go on with its token."""
    seq, chunks = data
    # no fallback: the draft copies the most recent occurrence, as adaptive's default base does
    d = SuffixAutomatonDrafter(max_depth=UNBOUNDED, occurrences=occurrences, fallback=False, loop=loop)
    d.reset(chunks[0] if chunks else [])
    for chunk in chunks[1:]:
        d.extend(chunk)
    want = brute_ends(seq, occurrences)
    out = np.zeros(occurrences, dtype=np.int64)
    assert out[: d.sam.match_ends(out)].tolist() == want
    own = d.propose(8).tokens.tolist()
    for draft in (own, own[:2] + tail, tail):
        found = chain_agreement(d, np.array(draft, dtype=np.int64))
        if want:
            assert want[0] == d.sam.match()[2]
            assert [a.tolist() for a in found] == list(brute_agreement(seq, want, draft, loop))
        else:
            assert found is None
    if want and own:
        support, agree = chain_agreement(d, np.array(own, dtype=np.int64))
        # the draft's own occurrence (the most recent) follows it all the way
        assert support.min() >= 1 and agree.min() >= 1 and support[0] == len(want)


def test_chain_agreement_grows_its_scratch_for_drafts_longer_than_max_tokens():
    seq = [1, 2, 3, 4, 5, 9, 1, 2, 3, 4, 6, 1, 2]
    d = SuffixAutomatonDrafter(max_tokens=2, occurrences=4, fallback=False)
    d.reset(seq)
    draft = [3, 4, 5, 9, 1]
    support, agree = chain_agreement(d, draft)  # any sequence of ids, longer than the scratch
    assert [support.tolist(), agree.tolist()] == [list(a) for a in brute_agreement(seq, brute_ends(seq, 4), draft)]
    assert support.tolist() == [2, 2, 2, 1, 1] and agree.tolist() == [2, 2, 1, 1, 1]
    with pytest.raises(ValueError, match="room for the 5 draft tokens"):
        d.sam.agreement(np.array(draft), np.zeros(2, dtype=np.int64), np.zeros(5, dtype=np.int64))


def test_chain_agreement_reads_the_history_for_a_draft_from_the_history():
    d = SuffixAutomatonDrafter(history=True, occurrences=4)
    d.reset([5])
    d.extend([6, 7, 8, 9])  # this request's output goes to the history
    d.reset([5])
    d.extend([6, 7, 4])  # and this one's
    d.reset([1, 2, 5, 6, 7])  # the history's "6 7" is a longer match than the context's (none)
    assert source_of(d) == "history" and d.propose(4).tokens.tolist() == [4]
    # (support, agree): the most recent occurrence ends its request after "4", never running on into
    # the next request; the older one goes on with "8 9"
    assert [a.tolist() for a in chain_agreement(d, np.array([4, 1]))] == [[2, 0], [1, 0]]
    assert [a.tolist() for a in chain_agreement(d, np.array([8, 9]))] == [[2, 1], [1, 1]]
    assert other_index(d, [4], "history") is None  # the context's own suffix "7" never occurred before
    d.reset([7, 3, 9, 6, 7])  # the history's "9 6 7" (then "4") is longer than the context's "7" (then "3")
    assert source_of(d) == "history" and d.propose(4).tokens.tolist() == [4]
    evidence = evidence_of(d, [4])
    own, (length, support, agree) = evidence.own, other_index(d, [4], "history")
    assert (length, support.tolist(), agree.tolist()) == (1, [1], [0])
    assert [own.support.tolist(), own.agree.tolist()] == [[1], [1]] and evidence.second_index
    assert other_index(d, [3], "history")[2].tolist() == [1]
    d.extend([3, 9, 6])  # now the context's "3 9 6" is the longer match
    assert source_of(d) == "context" and other_index(d, [7], "history") is None
    assert [a.tolist() for a in chain_agreement(d, np.array([7, 3]))] == [[1, 1], [1, 1]]


def test_history_agreement_is_what_the_history_says_of_a_draft_from_the_context():
    d = SuffixAutomatonDrafter(history=True, occurrences=4)
    d.reset([5])
    d.extend([6, 7, 8])
    d.reset([5])
    d.extend([6, 7, 4])
    d.reset([9, 6, 7, 2, 9, 6, 7])  # the context's "9 6 7" (then 2) is longer than the history's "6 7"
    assert source_of(d) == "context" and d.propose(1).tokens.tolist() == [2]
    # the history's "6 7" occurred twice, followed by 4 (the most recent) and by 8: neither goes on with 2
    length, support, agree = other_index(d, [2, 9], "context")
    assert (length, support.tolist(), agree.tolist()) == (2, [2, 0], [0, 0])
    own, other = evidence_of(d, [2, 9]).own, evidence_of(d, [2, 9]).other
    assert [own.support.tolist(), own.agree.tolist()] == [[1, 1], [1, 1]]  # the two have scratch of their own
    assert [other.support.tolist(), other.agree.tolist()] == [[2, 0], [0, 0]]
    support, agree = other_index(d, [4, 1], "context")[1:]
    assert support.tolist() == [2, 0] and agree.tolist() == [1, 0]  # its request ends after 4
    d.reset([1, 6, 7])  # now the history's "6 7" is the longer match: its draft is the history's own
    assert source_of(d) == "history" and other_index(d, [4], "context") is None
    d.reset([3])  # no match in the history
    assert d.history.match_length() == 0 and other_index(d, [3], "context") is None
    plain = SuffixAutomatonDrafter()
    plain.reset([1, 2, 1])
    assert other_index(plain, [2], "context") is None


def same_evidence(a: Evidence, b: Evidence) -> bool:
    def arrays(x):
        return None if x is None else (x.match_length, x.support.tolist(), x.agree.tolist())
    return (a.source, a.match_length, a.second_index, arrays(a.own)) == (b.source, b.match_length, b.second_index, arrays(b.own))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=2, max_size=14), min_size=2, max_size=5),
       st.integers(1, 6), st.sampled_from(["recent", "majority"]))
def test_context_candidate_is_what_the_context_alone_drafts(requests, budget, occurrence):
    """Where the history's match is the longer, ``context_candidate`` is the draft (and the evidence of
    its own index) of a drafter that never kept a history, over the same context; elsewhere, or where
    that draft is empty, None. A query."""
    params = dict(occurrences=4, occurrence=occurrence, fallback=False, length_rule=None, max_tokens=8)
    d = SuffixAutomatonDrafter(history=True, **params)
    for request in requests:
        prompt, output = request[: len(request) // 2], request[len(request) // 2:]
        d.reset(prompt)
        for k, token in enumerate([None] + output):
            if token is not None:
                d.extend([token])
            alone = SuffixAutomatonDrafter(**params)
            alone.reset(prompt + output[:k])
            before = d.propose(budget).tokens.tolist()
            found = d.context_candidate(budget)
            assert d.propose(budget).tokens.tolist() == before  # a query
            want = alone.propose(budget)
            if source_of(d) == "context" or not len(want):
                assert found is None
                continue
            draft, evidence = found
            assert draft.tokens.tolist() == want.tokens.tolist()
            assert evidence.source == "context" and evidence.second_index
            assert same_evidence(evidence, dataclasses.replace(alone.evidence(want), second_index=True))
