"""The drafter contract (:mod:`lookup.base`), run over every registered drafter (plug-ins and
future ones included).

A drafter that needs constructor arguments (e.g. one that wraps another) gets them from
``FACTORIES``; every other name is built with ``lookup.create(name)``. ``VARIANTS`` adds
configurations worth holding to the contract too (tree output, other options).

Besides single calls, drafters run through a simulated decoding loop (:func:`simulate`): a
bigram "target" that commits tokens and hands top-k rows to drafters that want them, so that
``observe`` and ``observe_top`` feedback is part of what the contract checks.
"""

from __future__ import annotations

import inspect
from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from punctuation_drafter import StopAtPunctuation

import lookup
from pldcore.setting import reference_setting
import lookup.peers  # noqa: F401  the peers register on import (until `import lookup` imports them)
from lookup import EMPTY_DRAFT, Draft, Drafter
from lookup.base import hand_vocab
from pldcore.cost import CPU_SMOLLM2, CostProfile

TOP_ID = (1 << 18) - 1  # 262,143: the largest id a drafter must accept


def with_vocab(d: Drafter) -> Drafter:
    """``d``, handed a vocabulary in which every third id of the contract's symbols reads as "."."""
    hand_vocab(d, lambda: tuple("." if i % 3 == 0 else f"w{i}" for i in range(8)))
    return d


# name -> how to build it with sensible defaults, for drafters whose constructor needs arguments
FACTORIES: dict[str, Callable[[], Drafter]] = {}

# extra configurations of registered drafters, held to the same contract
VARIANTS: dict[str, Callable[[], Drafter]] = {
    "suffix-automaton[earliest,linear]": lambda: lookup.create("suffix-automaton", occurrence="earliest", length_rule=(2.0, 1.0)),
    "suffix-automaton[min_match=1,shallow]": lambda: lookup.create("suffix-automaton", min_match=1, max_depth=1),
    "voting[tree]": lambda: lookup.create("voting", tree=True),
    "voting[tree,decay,min_match=1]": lambda: lookup.create("voting", tree=True, decay=0.7, min_match=1, max_branches=2),
    "adaptive[voting tree]": lambda: lookup.create("adaptive", base="voting", base_params={"tree": True, "min_match": 1}),
    "adaptive[recycling]": lambda: lookup.create("adaptive", base="recycling"),
    "recycling[no lookup]": lambda: lookup.create("recycling", base=None),
    "recycling[flat profile]": lambda: lookup.create("recycling", setting=reference_setting(CostProfile.flat(64))),
    "recycling[cpu profile,width=3]": lambda: lookup.create("recycling", setting=reference_setting(CPU_SMOLLM2), width=3, decay=0.5),
    "peer:suffix-decoding[tree]": lambda: lookup.create("peer:suffix-decoding", use_tree_spec=True),
    "peer:sglang-ngram[PROB]": lambda: lookup.create("peer:sglang-ngram", match_type="PROB"),
    "peer:vllm-ngram[min=1]": lambda: lookup.create("peer:vllm-ngram", prompt_lookup_min=1),
    # a drafter that asks for the vocabulary's strings (tests/punctuation_drafter.py), without and with them
    StopAtPunctuation.name: lambda: StopAtPunctuation(),
    f"{StopAtPunctuation.name}[vocab]": lambda: with_vocab(StopAtPunctuation()),
}

# Peers (lookup.peers) follow other systems' code, and two of them break a rule of ours by design;
# each exemption says why, and the rest of the contract still holds for them.
#: drafters whose paths need not be runs of the context (each token still comes from it)
NOT_RUNS = {"peer:llamacpp-lookup": "llama.cpp chains n-gram statistics: each token follows some n-gram of "
                                    "context + draft, the chain as a whole need not occur",
            # the toy chains bigrams, as docs/writing-a-drafter.md's example does
            StopAtPunctuation.name: "a chain of bigrams: each token follows the one before it in the context"}
#: drafters that learn once per step, so that reset(a + b) is not reset(a); extend(b)
STEP_DEPENDENT = {"peer:sglang-ngram": "SGLang inserts the last window into its trie after each step, never the prompt"}

CASES: dict[str, Callable[[], Drafter]] = {
    **{name: FACTORIES.get(name, lambda name=name: lookup.create(name)) for name in lookup.available()},
    **VARIANTS,
}


@pytest.fixture(params=sorted(CASES), scope="module")
def make(request) -> Callable[[], Drafter]:
    try:
        CASES[request.param]()
    except lookup.PLDError as exc:  # an optional dependency is missing: the drafter is left out
        pytest.skip(str(exc))
    return CASES[request.param]


@pytest.fixture(params=sorted(lookup.available()), scope="module")
def name(request) -> str:
    """A registered name (class-level rules)."""
    return request.param


def built(name: str) -> bool:
    """Whether the default drafter of ``name`` can be built (False: an optional dependency is missing)."""
    try:
        CASES[name]()
    except lookup.PLDError:
        return False
    return True


def test_every_registered_name_is_covered():
    assert {"plain", "unfold", "suffix-automaton", "voting", "adaptive", "recycling"} <= set(CASES)
    assert set(lookup.available()) <= set(CASES)


# small alphabets repeat a lot (many matches); a few symbols sit at the top of the id range
SYMBOLS = [0, 1, 2, 3, TOP_ID - 1, TOP_ID]
symbols = st.sampled_from(SYMBOLS)
token_lists = st.lists(symbols, max_size=40)
budgets = st.integers(0, 16)


def occurs_contiguously(run: list[int], context: list[int]) -> bool:
    """``run`` is copied from the context: from some start in it, going on round a loop past its end
    (``(context + run)[i : i + len(run)] == run`` for an ``i`` inside the context; a plain run of the
    context is one that never reaches its end)."""
    text = context + run
    return not run or any(text[i : i + len(run)] == run for i in range(len(context)))


def paths(draft: Draft) -> list[list[int]]:
    """Root-to-node token path of every node (a chain is one path, all its prefixes)."""
    if draft.parents is None:
        return [draft.tokens.tolist()]
    out: list[list[int]] = []
    for i, p in enumerate(draft.parents.tolist()):
        out.append((out[p] if p >= 0 else []) + [int(draft.tokens[i])])
    return out


def same(a: Draft, b: Draft) -> bool:
    pa = None if a.parents is None else a.parents.tolist()
    pb = None if b.parents is None else b.parents.tolist()
    return a.tokens.tolist() == b.tokens.tolist() and pa == pb


def check_wellformed(draft: Draft, budget: int, context: list[int] | None, runs: bool = True) -> None:
    """A valid draft within budget; with ``context``, every path is a run of it, or of its loop (lookup
    only), or
    without ``runs`` (``NOT_RUNS``) every token is one of its tokens."""
    assert isinstance(draft, Draft)
    assert len(draft) <= max(budget, 0)
    assert draft.problem() is None
    assert draft.tokens.dtype == np.int64
    for path in paths(draft) if context is not None else []:
        if runs:
            assert occurs_contiguously(path, context), f"{path} is not a run of the context (or of its loop)"
        else:
            assert set(path) <= set(context), f"{path} has tokens that are not in the context"


def check_match_length(d: Drafter, context: list[int]) -> None:
    m = d.match_length()
    assert m is None or (isinstance(m, int) and 0 <= m <= len(context)), f"match_length() = {m!r}"


def twins(make: Callable[[], Drafter], prompt: list[int], steps: list[list[int]]):
    """Two drafters fed the same sequence, one to probe and one left quiet, at the prompt and after
    each step: yields (probed, quiet, the context so far)."""
    probed, quiet = make(), make()
    probed.reset(prompt)
    quiet.reset(prompt)
    context = list(prompt)
    for step in [[], *steps]:
        probed.extend(step)
        quiet.extend(step)
        context += step
        yield probed, quiet, context


@settings(max_examples=40, deadline=None)
@given(prompt=token_lists, steps=st.lists(st.lists(symbols, min_size=1, max_size=3), max_size=8), budget=budgets)
def test_propose_is_pure_and_wellformed(make, prompt, steps, budget):
    """propose has no side effects: same answer twice, and later answers unaffected by it."""
    for probed, quiet, context in twins(make, prompt, steps):
        check_match_length(probed, context)
        first = probed.propose(budget)
        second = probed.propose(budget)
        probed.propose(budget + 3)  # a different budget must not leak into later answers either
        check_match_length(probed, context)
        assert same(first, second)
        assert same(first, quiet.propose(budget))
        check_wellformed(first, budget, context, runs=probed.name not in NOT_RUNS)


@settings(max_examples=40, deadline=None)
@given(a=token_lists, b=token_lists, budget=budgets)
def test_reset_all_at_once_equals_reset_then_extend(make, a, b, budget):
    whole, parts = make(), make()
    if whole.name in STEP_DEPENDENT:
        pytest.skip(STEP_DEPENDENT[whole.name])
    whole.reset(a + b)
    parts.reset(a)
    parts.extend(b)
    assert same(whole.propose(budget), parts.propose(budget))


@settings(max_examples=25, deadline=None)
@given(a=token_lists, b=token_lists, budget=budgets)
def test_reset_forgets_the_previous_sequence(make, a, b, budget):
    reused, fresh = make(), make()
    reused.reset(a)
    reused.propose(budget)
    reused.reset(b)
    fresh.reset(b)
    assert same(reused.propose(budget), fresh.propose(budget))


@pytest.mark.parametrize("prompt", [[], [7], [TOP_ID], [0, 0], [TOP_ID, TOP_ID, TOP_ID]])
def test_tiny_prompts(make, prompt):
    d = make()
    d.reset(prompt)
    for budget in (0, 1, 8):
        check_wellformed(d.propose(budget), budget, prompt, runs=d.name not in NOT_RUNS)
    d.extend([TOP_ID])
    check_wellformed(d.propose(4), 4, prompt + [TOP_ID], runs=d.name not in NOT_RUNS)


def test_top_ids_are_proposed(make):
    """Ids up to 262,143 survive the round trip, for drafters that propose at all."""
    d = make()
    context = [TOP_ID, TOP_ID - 1, 5, TOP_ID, TOP_ID - 1, 5, TOP_ID, TOP_ID - 1, 5] * 3 + [TOP_ID, TOP_ID - 1]
    d.reset(context)
    draft = d.propose(4)
    check_wellformed(draft, 4, context, runs=d.name not in NOT_RUNS)
    if len(draft):
        assert set(draft.tokens.tolist()) <= {TOP_ID, TOP_ID - 1, 5}


def test_budget_zero_is_empty(make):
    d = make()
    d.reset([1, 2, 3, 1, 2, 3, 1, 2])
    assert len(d.propose(0)) == 0
    assert len(d.propose(-1)) == 0


def test_numpy_inputs_are_accepted(make):
    as_list, as_array = make(), make()
    as_list.reset([1, 2, 3, 1, 2])
    as_array.reset(np.array([1, 2, 3, 1, 2], dtype=np.int32))
    as_list.extend([3, 1])
    as_array.extend(np.array([3, 1], dtype=np.int64))
    assert same(as_list.propose(5), as_array.propose(5))


def test_params_are_json_serialisable(make):
    import json

    json.dumps(make().params())


# ---------------------------------------------------------------- a simulated decoding loop


def row(token: int, k: int) -> list[int]:
    """The bigram target's top-k ids after ``token``: distinct, the sequences' symbols first."""
    i = SYMBOLS.index(token) if token in SYMBOLS else 0
    ranked = SYMBOLS[i + 1 :] + SYMBOLS[: i + 1]
    return (ranked + [10 + j for j in range(k)])[:k]


def truth_from(prompt: list[int], pieces: list[tuple[int, int]]) -> list[int]:
    """What the target commits after ``prompt``, piece by piece: ``(start, length)`` copies
    ``length`` tokens of the sequence so far from ``start`` on (modulo its length), as text
    repeats itself; ``(c, 0)`` appends the ``c``-th id (modulo 6) of the last token's row."""
    seq = list(prompt)
    for start, length in pieces:
        if length == 0:
            seq.append(row(seq[-1], len(SYMBOLS))[start % len(SYMBOLS)])
        else:
            start %= len(seq)
            seq += seq[start : start + length]
    return seq[len(prompt) :]


def accepted_nodes(draft: Draft, truth: list[int]) -> list[int]:
    """The nodes on the path the target accepts (greedy): the longest path that spells ``truth``."""
    parents = draft.parents if draft.parents is not None else np.arange(-1, len(draft) - 1)
    kids: dict[int, list[int]] = {}
    for i, p in enumerate(parents.tolist()):
        kids.setdefault(p, []).append(i)
    path, node = [], -1
    while len(path) < len(truth):
        node = next((i for i in kids.get(node, []) if draft.tokens[i] == truth[len(path)]), None)
        if node is None:
            break
        path.append(node)
    return path


def feed_top(d: Drafter, tokens: list[int]) -> None:
    if d.wants_top and tokens:
        top = np.array([row(t, d.wants_top) for t in tokens], dtype=np.int64).reshape(len(tokens), d.wants_top)
        probs = np.full(top.shape, 1.0 / d.wants_top, dtype=np.float16)
        d.observe_top(np.asarray(tokens, dtype=np.int64), top, probs)


def simulate(d: Drafter, prompt: list[int], truth: list[int], budget: int, probe: bool = False) -> list[Draft]:
    """Drive ``d`` as the decoding loop does until ``truth`` is committed; the drafts it proposed.

    ``probe``: also call ``propose`` with other budgets (and ``match_length``) before each real
    propose, and once more with the same budget after it; the contract says this changes nothing.
    """
    d.reset(prompt)
    feed_top(d, prompt[:-1])
    context, drafts, pos = list(prompt), [], 0
    wants_top = d.wants_top
    while pos < len(truth):
        if budget > 0:  # the loop skips propose when no budget is left
            if probe:  # the smallest and a larger budget: memories as unlike the real one as can be
                d.propose(1)
                d.propose(budget + 3)
                check_match_length(d, context)
            draft = d.propose(budget)
            if probe:
                assert same(draft, d.propose(budget)), "a second propose with the same budget differs"
        else:
            draft = EMPTY_DRAFT
        check_wellformed(draft, budget, None if wants_top else context, runs=d.name not in NOT_RUNS)
        drafts.append(draft)
        path = accepted_nodes(draft, truth[pos:])[: len(truth) - pos - 1]  # the target adds one token
        committed = truth[pos : pos + len(path) + 1]
        last = context[-1]
        d.extend(committed)
        context += committed
        d.observe(draft, len(path))
        # the forward's inputs: the rejected nodes first, then the last token and the accepted nodes
        on_path = set(path)
        rejected = [t for i, t in enumerate(draft.tokens.tolist()) if i not in on_path]
        feed_top(d, rejected + [last] + committed[:-1])
        assert d.wants_top == wants_top, "wants_top changed during the sequence"
        pos += len(committed)
    return drafts


prompts = st.lists(symbols, min_size=1, max_size=30)
# copies of earlier stretches (lookup drafters then get drafts accepted, and feedback matters)
# mixed with the target's own ids (what recycling's rows predict)
pieces = st.lists(st.tuples(st.integers(0, 100), st.integers(0, 8)), min_size=1, max_size=10)


@settings(max_examples=40, deadline=None)
@given(prompt=prompts, piece=pieces, budget=budgets)
def test_extra_proposes_change_no_later_draft(make, prompt, piece, budget):
    """With feedback in play: a run with extra propose calls proposes what a plain run does."""
    truth = truth_from(prompt, piece)
    plain = simulate(make(), prompt, truth, budget)
    probed = simulate(make(), prompt, truth, budget, probe=True)
    assert len(plain) == len(probed)
    for step, (a, b) in enumerate(zip(plain, probed)):
        assert same(a, b), f"step {step}: {a} != {b}"


@settings(max_examples=20, deadline=None)
@given(first=prompts, first_pieces=pieces, prompt=prompts, piece=pieces, budget=budgets)
def test_reset_forgets_feedback_too(make, first, first_pieces, prompt, piece, budget):
    """After a whole sequence of feedback, reset behaves as a fresh drafter."""
    reused = make()
    simulate(reused, first, truth_from(first, first_pieces), budget)
    truth = truth_from(prompt, piece)
    for step, (a, b) in enumerate(zip(simulate(reused, prompt, truth, budget), simulate(make(), prompt, truth, budget))):
        assert same(a, b), f"step {step}: {a} != {b}"


def test_default_observe_and_observe_top_do_nothing():
    class Plain(Drafter):
        def propose(self, budget):
            return EMPTY_DRAFT

    d = Plain()
    d.reset([1, 2])
    d.observe(EMPTY_DRAFT, 0)
    d.observe_top(np.array([1]), np.zeros((1, 0), dtype=np.int64), np.zeros((1, 0), dtype=np.float16))
    assert d.context == [1, 2] and d.match_length() is None and d.wants_top == 0 and not d.uses_setting


# ---------------------------------------------------------------- declared capabilities


def test_wants_top_is_a_fixed_non_negative_int(make):
    d = make()
    assert isinstance(d.wants_top, int) and d.wants_top >= 0
    before = d.wants_top
    d.reset([1, 2, 1])
    d.propose(4)
    d.extend([2])
    d.observe(EMPTY_DRAFT, 0)
    assert d.wants_top == before


def test_class_wants_top_is_what_the_default_instance_wants(name):
    """Tools read the class value without building a drafter: it must describe ``create(name)``."""
    if name in FACTORIES:
        pytest.skip("needs constructor arguments: no default instance")
    if name not in CASES or not built(name):
        pytest.skip(f"{name} cannot be built here")
    cls = lookup.get(name)
    assert isinstance(cls.wants_top, int) and cls.wants_top >= 0
    assert lookup.create(name).wants_top == cls.wants_top


def test_wants_top_of_a_wrapper_is_its_base_s():
    assert lookup.create("adaptive").wants_top == 0 and lookup.create("adaptive", base="recycling").wants_top == 8
    assert lookup.create("recycling", width=2).wants_top == 2


@pytest.mark.parametrize("spec", ["adaptive", "adaptive:base=recycling", "adaptive:base='recycling':base_params={'width': 3}",
                                  "recycling:width=2", "recycling:base=voting:base_params={}", "adaptive:history=true", "voting:tree=true"])
def test_a_parsed_spec_knows_what_its_drafter_wants_and_is_made_of_without_building_it(spec):
    parsed = lookup.parse_drafter(spec)
    built = parsed.build(reference_setting())
    assert parsed.wants_top == built.wants_top
    assert {c for c in parsed.classes()} == {type(d) for d in built.wrapped()}


def test_every_registered_spec_knows_its_parts(name):
    """The same for every registered drafter at its defaults (the classes behind code keys)."""
    if name in FACTORIES or name not in CASES or not built(name):
        pytest.skip(f"{name} cannot be built with defaults here")
    parsed = lookup.parse_drafter(name)
    d = parsed.build(reference_setting())
    assert parsed.wants_top == d.wants_top and set(parsed.classes()) == {type(w) for w in d.wrapped()}


def test_uses_setting_exactly_when_the_constructor_takes_a_setting(name):
    cls = lookup.get(name)
    assert isinstance(cls.uses_setting, bool)
    assert cls.uses_setting == ("setting" in inspect.signature(cls).parameters)
    if cls.uses_setting and name not in FACTORIES:
        for profile in (None, CostProfile.flat(64), CPU_SMOLLM2):
            d = lookup.create(name, setting=reference_setting(profile))
            d.reset([1, 2, 1])
            check_wellformed(d.propose(4), 4, [1, 2, 1])


def bool_parameters(name: str) -> list[str]:
    """Constructor parameters of a registered drafter whose default is a bool."""
    signature = inspect.signature(lookup.get(name))
    return [p.name for p in signature.parameters.values() if isinstance(p.default, bool)]


def test_bool_parameters_are_found():
    assert "tree" in bool_parameters("voting") and "fallback" in bool_parameters("suffix-automaton")


@pytest.mark.parametrize("value", ["yes", "false", 1, None])
def test_bool_parameters_refuse_other_values(name, value):
    """``tree="false"`` is truthy: it must be refused, naming the parameter, not switch tree mode on."""
    for param in bool_parameters(name):
        with pytest.raises((TypeError, ValueError), match=param):
            lookup.create(name, **{param: value})


# -- the evidence hook: what a drafter's index knows of its draft (lookup.base.Evidence) ------------------
def reports_evidence(d: Drafter) -> bool:
    """Whether the drafter's class declares the hook (overrides :meth:`Drafter.evidence`)."""
    return type(d).evidence is not Drafter.evidence


def check_agreement(agreement, n: int, context: list[int]) -> None:
    if agreement is None:
        return
    assert isinstance(agreement, lookup.base.Agreement)
    assert isinstance(agreement.match_length, int) and 0 <= agreement.match_length <= len(context)
    for counts in (agreement.support, agreement.agree):
        assert isinstance(counts, np.ndarray) and counts.dtype == np.int64 and counts.shape == (n,)
    assert (agreement.agree >= 0).all() and (agreement.agree <= agreement.support).all()


@settings(max_examples=30, deadline=None)
@given(prompt=token_lists, steps=st.lists(st.lists(symbols, min_size=1, max_size=3), max_size=6), budget=budgets)
def test_evidence_is_a_wellformed_query_of_the_last_draft(make, prompt, steps, budget):
    """A drafter that declares the hook reports, for the draft it just proposed, an Evidence with a
    source of ``SOURCES``, a match no longer than the context and, for a chain, per-node counts of
    its occurrences (``agree <= support``); asking changes no later draft. A drafter that does not
    declare it reports None."""
    for probed, quiet, context in twins(make, prompt, steps):
        draft = probed.propose(budget)
        evidence = probed.evidence(draft)
        if not reports_evidence(probed):
            assert evidence is None
            continue
        if evidence is None:
            continue
        assert isinstance(evidence, lookup.base.Evidence)
        assert evidence.source in lookup.base.SOURCES
        assert evidence.match_length is None or (isinstance(evidence.match_length, int)
                                                 and 0 <= evidence.match_length <= len(context))
        assert isinstance(evidence.second_index, bool)
        if draft.is_chain:
            check_agreement(evidence.own, len(draft), context)
            check_agreement(evidence.other, len(draft), context)
        assert same(probed.propose(budget), quiet.propose(budget))  # a query: nothing changed


def test_the_default_drafter_of_our_index_reports_evidence():
    """The hook is not dead code: the default base of ``adaptive`` declares it and reports counts."""
    d = lookup.create("suffix-automaton", occurrences=8, fallback=False)
    d.reset([1, 2, 3, 4, 1, 2, 3, 5, 1, 2])
    draft = d.propose(4)
    evidence = d.evidence(draft)
    assert reports_evidence(d) and len(draft) and evidence is not None
    assert evidence.match_length == 2 and evidence.own is not None and evidence.own.support[0] >= 1


def test_fitted_on_names_a_benchmark_exactly_when_the_drafter_reads_a_fit(make):
    """``fitted_on()`` is None, or the hash of the benchmark of the fit the drafter reads, and then its
    constructor takes ``fits`` (the board hands the fold's fit there when it cross-fits)."""
    d = make()
    fitted = d.fitted_on()
    assert fitted is None or (isinstance(fitted, str) and fitted)
    if fitted is not None:
        assert "fits" in inspect.signature(type(d)).parameters


def test_adaptive_reads_the_shipped_fit_unless_no_model_reads_one():
    from pldcore.fits import default_fits

    assert lookup.create("adaptive").fitted_on() == default_fits().benchmark
    assert lookup.create("adaptive", first_token_model=False, chain_model=False).fitted_on() is None
    assert lookup.create("adaptive", base="voting").fitted_on() is None  # no evidence: no model reads a fit


# -- the vocabulary hook (Drafter.wants_vocab / set_vocab) -------------------------------------------------------
def test_the_vocabulary_hook_is_off_by_default():
    class Plain(Drafter):
        def propose(self, budget):
            return EMPTY_DRAFT

    d = Plain()
    assert d.wants_vocab() is False
    d.set_vocab(("a", "b"))  # nothing to hand down: nothing happens
    d.reset([1, 2])
    assert d.wants_vocab() is False and d.context == [1, 2]


def test_our_drafters_ask_for_no_vocabulary():
    assert not any(lookup.create(name).wants_vocab() for name in lookup.builtin_names())


def test_a_drafter_that_asks_for_the_vocabulary_asks_once_and_drafts_the_same_contract(make):
    d = make()
    assert isinstance(d.wants_vocab(), bool)
    if d.wants_vocab():
        d.set_vocab(tuple(f"<{i}>" for i in range(64)))
        assert d.wants_vocab() is False
    d.reset([1, 2, 1, 2, 1])
    check_wellformed(d.propose(4), 4, [1, 2, 1, 2, 1], runs=False)


def test_a_drafter_that_plans_is_never_built_without_a_setting():
    with pytest.raises(TypeError, match="plans by its setting"):
        lookup.parse_drafter("adaptive").build(None)
    assert lookup.parse_drafter("suffix-automaton").build(None).propose(4) is not None
    with pytest.raises(lookup.PLDError, match="setting is not a parameter"):
        lookup.parse_drafter("adaptive:setting=1")
