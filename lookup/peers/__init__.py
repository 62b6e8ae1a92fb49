"""The peers: other systems' own lookup functions, as drafters named ``peer:...``.

Each module follows one peer's code at a stated release (its docstring names the files) with the
peer's default settings, and is tested against the original (``tests/lookup/peers``); what each
one does and how it was checked is in ``docs/peers.md``.

=========================  ==============================================================
``peer:hf-prompt-lookup``  transformers' ``PromptLookupCandidateGenerator`` (its own code)
``peer:vllm-ngram``        vLLM's ``ngram`` proposer (its numba kernel, ported)
``peer:llamacpp-lookup``   llama.cpp's n-gram cache (``llama-lookup``), ported
``peer:sglang-ngram``      SGLang's ``NGRAM`` trie, ported; drafts trees
``peer:suffix-decoding``   SuffixDecoding (ArcticInference, vLLM ``suffix``), ported
``peer:sam-decoding``      SAM-Decoding's dynamic suffix automaton, ported
=========================  ==============================================================

Peers are not among :func:`lookup.builtin_names` (those are ours); :func:`names` lists them.
The registry imports a peer's module when its name is first asked for
(``lookup.registry.BUILTINS``); none loads torch or transformers (the transformers peer imports them
when it is built).
"""

from __future__ import annotations

from lookup.registry import PEER_PREFIX, trusted_names


def names() -> list[str]:
    """The peers' lookup functions ported here (``peer:...``), sorted; a plug-in that names itself
    ``peer:...`` is not one of them (and is not imported to find out)."""
    return [name for name in trusted_names() if name.startswith(PEER_PREFIX)]
