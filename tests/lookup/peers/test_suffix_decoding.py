"""``peer:suffix-decoding`` against ArcticInference's own suffix tree (C++, compiled here) and its own
``SuffixDecodingCache`` (``cache.py``, run on top of it), driven as vLLM's ``suffix`` proposer does."""

from __future__ import annotations

import itertools
import random
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lookup
from lookup.peers.suffix_tree import SuffixTree
from peer_originals import ORIGINALS, Process, chain_or_tree, random_scenarios, run_batch, run_port

PEER = "peer:suffix-decoding"
ORIGINAL = ("arctic-inference 0.3.0 csrc/suffix_decoding/suffix_tree.cc and suffix_decoding/cache.py, "
            "driven as vllm 0.32.0 vllm/v1/spec_decode/suffix_decoding.py")
DEFAULTS = {"num_speculative_tokens": None, "max_tree_depth": 24, "max_spec_factor": 1.0, "max_spec_offset": 0.0,
            "min_token_prob": 0.1, "use_tree_spec": False, "history": False, "max_cached_requests": 10000}
PARAMS = [{}, {"history": True}, {"use_tree_spec": True}, {"max_tree_depth": 6, "num_speculative_tokens": 4},
          {"history": True, "max_cached_requests": 2, "max_tree_depth": 8},
          {"max_spec_factor": 0.7, "max_spec_offset": 1.0, "min_token_prob": 0.3, "use_tree_spec": True, "history": True}]


# -- the original SuffixDecodingCache (cache.py, vendored) on the original C++ tree, through the harness

def native_module(process: Process) -> types.ModuleType:
    """A stand-in for ``arctic_inference.suffix_decoding._C`` whose trees live in the harness."""
    ids = itertools.count()

    class Draft:
        def __init__(self, line: str):
            head, parents, probs, tail = line.split("|")
            self.token_ids = [int(x) for x in head.split()[1:]]
            self.parents = [int(x) for x in parents.split()]
            self.probs = [float.fromhex(x) for x in probs.split()]
            score, match_len = tail.split()
            self.score, self.match_len = float.fromhex(score), int(match_len)

    class SuffixTree:
        def __init__(self, max_depth: int):
            self.id = next(ids)
            process.send(f"N {self.id} {max_depth}")

        def extend(self, seq_id, tokens):
            tokens = list(tokens)
            process.send(f"X {self.id} {seq_id} {len(tokens)} {' '.join(map(str, tokens))}")

        def remove(self, seq_id):
            process.send(f"D {self.id} {seq_id}")

        def speculate(self, context, max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob, use_tree_spec):
            context = list(context)
            return Draft(process.ask(f"S {self.id} {len(context)} {' '.join(map(str, context))} {max_spec_tokens} "
                                     f"{max_spec_factor!r} {max_spec_offset!r} {min_token_prob!r} {int(use_tree_spec)}"))

        extend_ndarray = extend
        speculate_ndarray = speculate

    module = types.ModuleType("arctic_inference.suffix_decoding._C")
    module.SuffixTree, module.Draft = SuffixTree, Draft
    return module


def original_cache_class(process: Process) -> type:
    """The vendored ``cache.py``'s ``SuffixDecodingCache``, importing the stand-in native module."""
    names = ["arctic_inference", "arctic_inference.suffix_decoding", "arctic_inference.suffix_decoding._C",
             "original_arctic_cache"]
    saved = {name: sys.modules.get(name) for name in names}
    cache = types.ModuleType(names[3])
    sys.modules.update({names[0]: types.ModuleType(names[0]), names[1]: types.ModuleType(names[1]),
                        names[2]: native_module(process), names[3]: cache})  # dataclasses look their module up
    try:
        exec(compile((ORIGINALS / "arctic_inference" / "cache.py").read_text(), "cache.py", "exec"), cache.__dict__)
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return cache.SuffixDecodingCache


def original_drafts(cache_class: type, case: dict) -> list:
    """vLLM's ``SuffixDecodingProposer`` logic over the original cache, along the scenario."""
    p = {**DEFAULTS, **case["params"]}
    depth = p["max_tree_depth"]
    num_spec = p["num_speculative_tokens"] or depth
    cache = cache_class(max_tree_depth=depth, max_cached_requests=p["max_cached_requests"] if p["history"] else 0)
    request, context, drafts = None, [], []
    for op, arg in case["ops"]:
        if op == "reset":
            if request is not None:
                cache.stop_request(request)
            request = 0 if request is None else request + 1
            cache.start_request(request, list(arg))
            context = list(arg)
        elif op == "extend":
            cache.add_active_response(request, list(arg))
            context += arg
        else:
            pattern = context[max(0, len(context) - depth):]
            draft = cache.speculate(request, pattern, max_spec_tokens=min(num_spec, arg),
                                    max_spec_factor=p["max_spec_factor"], max_spec_offset=p["max_spec_offset"],
                                    min_token_prob=p["min_token_prob"], use_tree_spec=p["use_tree_spec"])
            drafts.append(chain_or_tree(draft.token_ids, list(draft.parents)) if draft.token_ids else ([], None))
    return drafts


def make_cases(seed: int, count: int) -> list[dict]:
    params = itertools.cycle(PARAMS)
    return [{"params": next(params), "ops": ops} for ops in random_scenarios(seed, count, resets=0.15)]


def all_original_drafts(binary: Path, cases: list[dict]) -> list[list]:
    process = Process(binary)
    try:
        cache_class = original_cache_class(process)
        return [original_drafts(cache_class, case) for case in cases]
    finally:
        process.close()


def test_port_equals_original(original_binary):
    cases = make_cases(seed=40, count=150)
    for case, expected in zip(cases, all_original_drafts(original_binary("arctic_inference"), cases)):
        got = run_port(lambda: lookup.create(PEER, **case["params"]), case["ops"])
        assert got == expected, case


def test_port_equals_recorded_original(golden, original_binary):
    def record() -> list[dict]:
        cases = make_cases(seed=9, count=48)
        drafts = all_original_drafts(original_binary("arctic_inference"), cases)
        return [{**case, "drafts": d} for case, d in zip(cases, drafts)]

    for case in golden(PEER, ORIGINAL, record):
        assert run_port(lambda: lookup.create(PEER, **case["params"]), case["ops"]) == case["drafts"], case


# -- the tree alone: appends, removals, speculation with every option, probabilities to the bit

def tree_session(rng: random.Random) -> tuple[list[str], list[tuple]]:
    """Random operations on one tree: the harness commands, and what our port answers to each query."""
    depth = rng.choice([1, 2, 3, 5, 8, 24])
    alphabet = rng.choice([2, 3, 5, 30])
    ours, commands, answers = SuffixTree(depth), [f"N 0 {depth}"], []
    live: list[int] = []
    for seq in itertools.count():
        if len(commands) > 40:
            break
        r = rng.random()
        if r < 0.5 or not live:
            seq_id = rng.choice(live) if live and rng.random() < 0.7 else seq
            if seq_id not in live:
                live.append(seq_id)
            tokens = [rng.randint(0, alphabet) for _ in range(rng.randint(1, 12))]
            ours.extend(seq_id, tokens)
            commands.append(f"X 0 {seq_id} {len(tokens)} {' '.join(map(str, tokens))}")
        elif r < 0.6:
            seq_id = live.pop(rng.randrange(len(live)))
            ours.remove(seq_id)
            commands.append(f"D 0 {seq_id}")
        else:
            context = [rng.randint(0, alphabet) for _ in range(rng.randint(0, 30))]
            args = (rng.choice([1, 4, 24]), rng.choice([1.0, 0.5, 2.0, 0.7]), rng.choice([0.0, 1.0, 0.5]),
                    rng.choice([0.1, 0.0, 0.3]), rng.random() < 0.5)
            d = ours.speculate(context, *args)
            answers.append((d.token_ids, d.parents, [float(q) for q in d.probs], float(d.score), d.match_len))
            commands.append(f"S 0 {len(context)} {' '.join(map(str, context))} {args[0]} {args[1]!r} {args[2]!r} "
                            f"{args[3]!r} {int(args[4])}")
        assert ours.check_integrity() == ""
    return commands, answers


def test_tree_equals_original_tree(original_binary):
    binary = original_binary("arctic_inference")
    rng = random.Random(41)
    for _ in range(120):
        commands, answers = tree_session(rng)
        for line, ours in zip(run_batch(binary, commands), answers, strict=True):
            head, parents, probs, tail = line.split("|")
            score, match_len = tail.split()
            theirs = ([int(x) for x in head.split()[1:]], [int(x) for x in parents.split()],
                      [float.fromhex(x) for x in probs.split()], float.fromhex(score), int(match_len))
            assert ours == theirs, commands


@settings(max_examples=80, deadline=None)
@given(seqs=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=25), min_size=1, max_size=4),
       depth=st.integers(1, 10), drop=st.lists(st.integers(0, 3), max_size=3))
def test_counts_equal_brute_force_after_appends_and_removals(seqs, depth, drop):
    """Every node counts the (depth-truncated) suffixes through it, siblings by decreasing count."""
    tree = SuffixTree(depth)
    for seq_id, seq in enumerate(seqs):
        for token in seq:
            tree.append(seq_id, token)
            assert tree.check_integrity() == ""
    for seq_id in sorted(set(drop)):
        if seq_id < len(seqs):
            tree.remove(seq_id)
            assert tree.check_integrity() == ""


def test_the_real_arctic_inference_when_installed():
    native = pytest.importorskip("arctic_inference.suffix_decoding._C", reason="arctic-inference is not installed")
    rng = random.Random(42)
    for _ in range(30):
        ours, theirs = SuffixTree(8), native.SuffixTree(8)
        for seq_id in range(3):
            tokens = [rng.randint(0, 4) for _ in range(rng.randint(1, 30))]
            ours.extend(seq_id, tokens)
            theirs.extend(seq_id, tokens)
        context = [rng.randint(0, 4) for _ in range(10)]
        a, b = ours.speculate(context, 8, 1.0, 0.0, 0.1, False), theirs.speculate(context, 8, 1.0, 0.0, 0.1, False)
        assert (a.token_ids, a.parents, a.match_len) == (list(b.token_ids), list(b.parents), b.match_len)


# -- worked examples -------------------------------------------------------------------------------

def test_frequency_decides_and_probability_stops_the_path():
    d = lookup.create(PEER)
    # after (1, 2): 3 twice, 4 once, the end once (p(3) = 2/4); after (1, 2, 3): 5 always. A match
    # of 2 tokens allows 2 tokens: [3, 5] scores 0.5 + 0.5; the longer matches only occur at the end
    d.reset([1, 2, 3, 5, 1, 2, 3, 5, 1, 2, 4, 1, 2])
    assert d.propose(8).tokens.tolist() == [3, 5]
    strict = lookup.create(PEER, min_token_prob=0.9)
    strict.reset([1, 2, 3, 1, 2, 4, 1, 2])
    assert strict.propose(8).tokens.tolist() == []  # 3 and 4 each have probability 1/2


def test_history_drafts_from_earlier_responses():
    d = lookup.create(PEER, history=True)
    d.reset([100])
    d.extend([7, 8, 9, 10, 11])  # the response of the first request
    d.reset([200, 7, 8])
    assert d.propose(8).tokens.tolist() == [9, 10]  # 2 matched tokens allow 2
    fresh = lookup.create(PEER)
    fresh.reset([200, 7, 8])
    assert fresh.propose(8).tokens.tolist() == []
