"""decoding.integrations.hf: our loop inside transformers' generate() gives generate's own output."""

from __future__ import annotations

import pytest
import torch
from toys import tiny_llama
from transformers import StoppingCriteria, StoppingCriteriaList
from transformers.generation.utils import GenerateDecoderOnlyOutput

import lookup
from decoding.integrations import hf
from pldcore.errors import PLDError

PROMPT = [5, 9, 11, 5, 9, 11, 30, 5, 9, 11, 30, 2, 5, 9, 11]


@pytest.fixture(scope="module")
def model():
    return tiny_llama(vocab_size=48, seed=3, eos_token_id=47).model


def plain(model, ids, **kwargs):
    return model.generate(torch.tensor([ids]), do_sample=False, **kwargs)[0].tolist()


@pytest.mark.parametrize("drafter", lookup.available())
def test_every_drafter_gives_plain_greedy_output(model, drafter):
    ids = torch.tensor([PROMPT])
    ours = model.generate(ids, custom_generate=hf.generate, drafter=drafter, max_new_tokens=40, do_sample=False)
    assert ours[0].tolist() == plain(model, PROMPT, max_new_tokens=40)


def test_specs_files_and_instances_draft_too(model, tmp_path):
    ids = torch.tensor([PROMPT])
    reference = plain(model, PROMPT, max_new_tokens=30)
    for drafter in ("suffix-automaton:max_tokens=4", "voting:tree=True", lookup.create("unfold")):
        ours = model.generate(ids, custom_generate=hf.generate, drafter=drafter, max_new_tokens=30, do_sample=False)
        assert ours[0].tolist() == reference, drafter


def test_a_left_padded_batch_runs_row_by_row(model):
    short = PROMPT[4:]
    ids = torch.tensor([PROMPT, [0] * 4 + short])
    mask = torch.tensor([[1] * len(PROMPT), [0] * 4 + [1] * len(short)])
    ours = model.generate(ids, attention_mask=mask, custom_generate=hf.generate, drafter="suffix-automaton",
                          max_new_tokens=20, do_sample=False, pad_token_id=0)
    assert ours.shape == (2, len(PROMPT) + 20)
    assert ours[0].tolist() == plain(model, PROMPT, max_new_tokens=20)
    assert ours[1, len(PROMPT):].tolist() == plain(model, short, max_new_tokens=20)[len(short):]
    assert ours[1, :len(PROMPT)].tolist() == ids[1].tolist()  # the padded prompt, as given


def test_a_row_that_finishes_early_is_padded_like_generate_pads_it(model):
    reference = plain(model, PROMPT, max_new_tokens=30)
    stop = reference[len(PROMPT) + 3]  # a token generated early: make it the EOS
    ours = model.generate(torch.tensor([PROMPT, PROMPT]), custom_generate=hf.generate, max_new_tokens=30,
                          do_sample=False, eos_token_id=stop, pad_token_id=1)
    theirs = model.generate(torch.tensor([PROMPT, PROMPT]), max_new_tokens=30, do_sample=False, eos_token_id=stop,
                            pad_token_id=1)
    assert ours.tolist() == theirs.tolist()


class StopAt(StoppingCriteria):
    def __init__(self, token: int):
        self.token = token

    def __call__(self, input_ids, scores, **kwargs):
        return input_ids[:, -1] == self.token


def test_stopping_criteria_end_the_output_where_generate_ends_it(model):
    reference = plain(model, PROMPT, max_new_tokens=30)
    token = reference[len(PROMPT) + 5]
    criteria = StoppingCriteriaList([StopAt(token)])
    ours = model.generate(torch.tensor([PROMPT]), custom_generate=hf.generate, stopping_criteria=criteria,
                          max_new_tokens=30, do_sample=False)
    theirs = model.generate(torch.tensor([PROMPT]), stopping_criteria=criteria, max_new_tokens=30, do_sample=False)
    assert ours.tolist() == theirs.tolist() and len(ours[0]) < len(PROMPT) + 30


def test_max_length_and_return_dict(model):
    out = model.generate(torch.tensor([PROMPT]), custom_generate=hf.generate, max_length=len(PROMPT) + 7,
                         do_sample=False, return_dict_in_generate=True)
    assert isinstance(out, GenerateDecoderOnlyOutput)
    assert out.sequences[0].tolist() == plain(model, PROMPT, max_new_tokens=7)


def test_sampling_runs_and_a_seed_repeats_it(model):
    def sample(seed):
        return model.generate(torch.tensor([PROMPT]), custom_generate=hf.generate, do_sample=True, temperature=0.8,
                              top_k=20, top_p=0.9, max_new_tokens=25, seed=seed)[0].tolist()

    a, b = sample(1), sample(1)
    assert a == b and len(a) == len(PROMPT) + 25 and all(0 <= t < 48 for t in a)
    assert a[: len(PROMPT)] == PROMPT


@pytest.mark.parametrize("kwargs,match", [
    (dict(repetition_penalty=1.3), "RepetitionPenaltyLogitsProcessor"),
    (dict(return_dict_in_generate=True, output_scores=True), "output_scores"),
    (dict(num_beams=2), "beam search"),
    (dict(drafter="no-such-drafter"), "did you mean|unknown drafter"),
    (dict(drafter="voting:tree=maybe"), "tree must be True or False"),
    (dict(drafter="adaptive:history=true"), "pass an instance"),  # a spec is built anew: it would keep nothing
])
def test_what_cannot_be_honoured_is_one_line(model, kwargs, match):
    with pytest.raises(PLDError, match=match):
        model.generate(torch.tensor([PROMPT]), custom_generate=hf.generate, max_new_tokens=5, do_sample=False,
                       **kwargs)


def test_an_instance_with_a_history_keeps_it_across_rows_and_calls(model):
    drafter = lookup.create("suffix-automaton", history=True)
    ids = torch.tensor([PROMPT, PROMPT])
    first = model.generate(ids, custom_generate=hf.generate, drafter=drafter, max_new_tokens=12, do_sample=False)
    assert drafter.history.requests == 1  # the first row's output, added when the second row began
    again = model.generate(ids[:1], custom_generate=hf.generate, drafter=drafter, max_new_tokens=12, do_sample=False)
    assert drafter.history.requests == 2
    assert again[0].tolist() == first[0].tolist() == plain(model, PROMPT, max_new_tokens=12)


def test_right_padding_is_refused(model):
    ids = torch.tensor([PROMPT, PROMPT[:-2] + [0, 0]])
    mask = torch.tensor([[1] * len(PROMPT), [1] * (len(PROMPT) - 2) + [0, 0]])
    with pytest.raises(PLDError, match="pad on the left"):
        model.generate(ids, attention_mask=mask, custom_generate=hf.generate, max_new_tokens=5, do_sample=False,
                       pad_token_id=0)


# `make test-slow` (CI): test_every_drafter_gives_plain_greedy_output runs every drafter through the same
# generate() on a tiny Llama, and the embedded model's greedy identity is test_lossless_model.py's
@pytest.mark.model
@pytest.mark.slow
def test_every_drafter_on_the_embedded_model_equals_plain_greedy(embedded):
    ids = torch.tensor([embedded.chat_ids("Repeat exactly: the cat sat on the mat, and the cat sat on the mat.")])
    reference = embedded.model.generate(ids, max_new_tokens=32, do_sample=False)[0].tolist()
    for drafter in lookup.available():
        ours = embedded.model.generate(ids, custom_generate=hf.generate, drafter=drafter, max_new_tokens=32,
                                       do_sample=False)
        assert ours[0].tolist() == reference, drafter


def test_transformers_top_k_50_is_the_one_difference_from_decoding_generate():
    """transformers' generation config samples with top_k=50 unless told otherwise; decoding.generate's
    top_k defaults to 0 (the whole distribution). With top_k the same both ways, one seed gives the
    same tokens (README "Sampling"); with each one's default they differ on a vocabulary over 50."""
    import decoding

    target = tiny_llama(vocab_size=256, seed=4, sharpen=1.0)
    ids = torch.tensor([PROMPT])

    def hf_tokens(**kwargs):
        out = target.model.generate(ids, custom_generate=hf.generate, drafter="suffix-automaton", do_sample=True,
                                    temperature=0.7, seed=1, max_new_tokens=30, **kwargs)
        return out[0, len(PROMPT):].tolist()

    def ours(**kwargs):
        return decoding.generate(target, PROMPT, "suffix-automaton", max_new_tokens=30, temperature=0.7, seed=1,
                                 **kwargs).tokens

    assert hf_tokens() == ours(top_k=50)
    assert hf_tokens(top_k=0) == ours()
    assert hf_tokens() != ours()  # the defaults differ: say top_k to compare the two
