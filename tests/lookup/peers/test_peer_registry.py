"""The peers in the registry: names, specs, the list of our own drafters, light imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import lookup
import lookup.peers
from lookup.specs import parse_spec
from pldcore.errors import PLDError

PEERS = ["peer:hf-prompt-lookup", "peer:llamacpp-lookup", "peer:sam-decoding", "peer:sglang-ngram",
         "peer:suffix-decoding", "peer:vllm-ngram"]
#: the peers that can keep what they learnt across requests, with the parameter that turns it on
WITH_HISTORY = ["peer:llamacpp-lookup", "peer:sglang-ngram", "peer:suffix-decoding"]


def test_the_peers_are_registered_and_listed_apart_from_ours():
    assert lookup.peers.names() == PEERS
    assert set(PEERS) <= set(lookup.available()) and not set(PEERS) & set(lookup.available(peers=False))
    assert not set(PEERS) & set(lookup.builtin_names())
    assert {"unfold", "adaptive"} <= set(lookup.builtin_names())
    for name in PEERS:
        assert lookup.get(name).name == name
        assert lookup.get(name).wants_top == 0  # none reads the target's top ids


def test_specs_keep_the_peer_prefix_in_the_name():
    assert parse_spec("peer:vllm-ngram:prompt_lookup_max=3") == ("peer:vllm-ngram", {"prompt_lookup_max": 3})
    assert parse_spec("peer:sglang-ngram") == ("peer:sglang-ngram", {})
    assert parse_spec(" peer : llamacpp-lookup : history=true ") == ("peer:llamacpp-lookup", {"history": True})
    assert parse_spec("unfold:max_ngram_size=2") == ("unfold", {"max_ngram_size": 2})
    for bad in ("peer", "peer:", "peer:history=true"):
        with pytest.raises(PLDError, match="no name after 'peer:'"):
            parse_spec(bad)
    name, params = parse_spec("peer:vllm-ngram:prompt_lookup_max=3")
    assert lookup.create(name, **params).max_n == 3


def test_unknown_peer_names_suggest_close_ones():
    with pytest.raises(lookup.UnknownDrafterError, match="did you mean 'peer:vllm-ngram'"):
        lookup.create("peer:vlm-ngram")


@pytest.mark.parametrize("name", WITH_HISTORY)
def test_history_is_off_by_default_and_a_bool(name):
    assert lookup.create(name).params()["history"] is False
    assert lookup.create(name, history=True).params()["history"] is True
    with pytest.raises(TypeError, match="history"):
        lookup.create(name, history="yes")


@pytest.mark.parametrize("name", WITH_HISTORY)
def test_history_outlives_reset_and_only_with_history(name):
    """A later request drafts from an earlier one only when history is on."""
    earlier, later = [50, 51, 52, 53, 54, 55, 56, 57] * 3, [60, 61, 50, 51, 52]
    drafts = {}
    for history in (False, True):
        d = lookup.create(name, history=history)
        d.reset([1, 2])
        for token in earlier:  # one token a step: what a request's output looks like
            d.extend([token])
        d.reset(later)
        d.extend([53])
        drafts[history] = d.propose(4).tokens.tolist()
    assert drafts[True][:1] == [54]
    assert drafts[False] == []


def test_importing_the_peers_loads_neither_torch_nor_transformers():
    code = textwrap.dedent("""
        import sys, lookup, lookup.peers
        print('torch' in sys.modules, 'transformers' in sys.modules, len(lookup.peers.names()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "False", "6"], out.stderr
