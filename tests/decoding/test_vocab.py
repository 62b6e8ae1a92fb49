"""The vocabulary's strings reach a drafter that asks for them, once, wherever decoding builds or runs
drafters with a tokenizer at hand: the loop (from the target), transformers' generate (``vocab=``) and
the vLLM proposer (the engine's tokenizer)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import punctuation_drafter
import torch
from punctuation_drafter import StopAtPunctuation
from toys import IdTokenizer, tiny_llama

import decoding
from decoding.integrations import hf
from decoding.integrations.vllm import DrafterProposer, engine_vocab
from decoding.vocab import vocab_strings

PROMPT = [5, 9, 11, 5, 9, 11, 30, 5, 9, 11, 30, 2, 5, 9, 11]


class Recorder(StopAtPunctuation):
    """The toy, remembering what it was handed."""

    def set_vocab(self, strings):
        super().set_vocab(strings)
        self.strings = strings


@pytest.fixture(scope="module")
def target():
    return tiny_llama(vocab_size=48, seed=3, eos_token_id=47)


def test_vocab_strings_decode_each_id_alone_and_are_kept_per_tokenizer():
    tokenizer = IdTokenizer()
    strings = vocab_strings(tokenizer, 5)
    assert strings == ("<0>", "<1>", "<2>", "<3>", "<4>")
    assert vocab_strings(tokenizer, 5) is strings  # decoded once
    assert len(vocab_strings(tokenizer, 7)) == 7


def test_the_loop_hands_the_target_s_strings_once(target):
    d = Recorder()
    decoding.generate(target, PROMPT, d, max_new_tokens=8)
    assert d.handed == 1 and d.strings == tuple(f"<{i}>" for i in range(48)) == target.vocab()
    decoding.generate(target, PROMPT, d, max_new_tokens=8)  # the same drafter again: it has them
    assert d.handed == 1


def test_a_target_without_a_tokenizer_hands_nothing(target):
    bare = type(target)(target.model, None)
    d = Recorder()
    out = decoding.generate(bare, PROMPT, d, max_new_tokens=8)
    assert bare.vocab() is None and d.handed == 0 and d.wants_vocab() and len(out.tokens) == 8


def test_transformers_generate_hands_the_vocab_argument(target):
    ids = torch.tensor([PROMPT])
    d = Recorder()
    strings = tuple(f"t{i}" for i in range(48))
    ours = target.model.generate(ids, custom_generate=hf.generate, drafter=d, vocab=strings, max_new_tokens=10,
                                 do_sample=False)
    assert d.handed == 1 and d.strings == strings
    assert ours[0].tolist() == target.model.generate(ids, do_sample=False, max_new_tokens=10)[0].tolist()


def test_the_vllm_proposer_hands_every_request_s_drafter_the_strings_it_was_given():
    strings = tuple("." if i % 5 == 0 else f"w{i}" for i in range(64))
    proposer = DrafterProposer(drafter=punctuation_drafter.__file__, num_speculative_tokens=4, batch_rule=False,
                               vocab=strings)
    rows = [[1, 2, 3, 10, 4, 1, 2, 3], [7, 8, 9, 7, 8]]
    ids = np.zeros((2, 16), dtype=np.int32)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
    out = proposer.propose([r[-1:] for r in rows], np.array([len(r) for r in rows]), ids)
    assert [r.drafter.handed for r in proposer.kept] == [1, 1]
    assert out[0] == [10]  # "w3" is followed by id 10, a ".": the draft ends there


def test_an_engine_without_a_readable_tokenizer_gives_no_strings():
    assert engine_vocab(None) is None
    with pytest.warns(UserWarning, match="no vocabulary strings"):
        assert engine_vocab(SimpleNamespace(model_config=SimpleNamespace(tokenizer="/nonexistent/tokenizer"))) is None


@pytest.mark.model
def test_the_engine_s_tokenizer_gives_the_embedded_model_s_strings(embedded):
    from decoding.loading import embedded_checkpoint

    config = SimpleNamespace(model_config=SimpleNamespace(tokenizer=str(embedded_checkpoint()), trust_remote_code=False))
    strings = engine_vocab(config)
    assert strings == embedded.vocab() and len(strings) == 49152
    assert strings[28:31] == (",", "-", ".") and strings[2] == "<|im_end|>"
