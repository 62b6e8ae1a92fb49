"""Plain decoding of several prompts at once (decoding/batch_decode.py) against one prompt at a time
through the loop (decoding.generate with a drafter that drafts nothing and keeps the top-k rows), on
the tiny models of every family: prompts longer and shorter than their sliding windows (8) and a
one-token one, greedy and sampled, side by side in one padded batch and split over several."""

from __future__ import annotations

import numpy as np
import pytest

import decoding
from decoding.batch_decode import BatchJob, decode_batch
from decoding.families import FAMILIES, PROMPTS, tiny_family
from experiments.running.record import TopRecorder
from pldcore.errors import PLDError

NEW = 12
K = 4
#: every prompt greedy, and sampled with a seed of its own; the first prompt sampled twice (one prefill)
JOBS = ([BatchJob(p) for p in PROMPTS] + [BatchJob(p, temperature=1.0, seed=10 + i) for i, p in enumerate(PROMPTS)]
        + [BatchJob(PROMPTS[0], temperature=0.7, top_p=0.9, seed=99)])


def one_at_a_time(target, job: BatchJob, new: int = NEW):
    recorder = TopRecorder(K)
    out = decoding.generate(target, job.prompt, recorder, new, temperature=job.temperature, top_k=job.top_k,
                            top_p=job.top_p, seed=job.seed)
    return out, recorder.rows()


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("batch", [len(JOBS), 3])
def test_side_by_side_decodes_what_one_at_a_time_does(family, batch):
    target = tiny_family(family)
    got = decode_batch(target, JOBS, NEW, rows_k=K, batch=batch)
    assert len(got) == len(JOBS)
    for job, out in zip(JOBS, got):
        ref, rows = one_at_a_time(target, job)
        assert out.tokens == ref.tokens, (family, job)
        assert out.stop_reason == ref.stop_reason == "length"
        assert out.rows.ids.shape == rows.ids.shape == (len(job.prompt) - 1 + NEW, K)
        assert np.array_equal(out.rows.ids, rows.ids)
        assert np.abs(out.rows.probs.astype(np.float64) - rows.probs.astype(np.float64)).max() <= 2e-3


def test_a_row_that_reaches_eos_leaves_the_batch_and_the_others_go_on():
    target = tiny_family("gemma3")
    jobs = [BatchJob(PROMPTS[0]), BatchJob(PROMPTS[1]), BatchJob(PROMPTS[2], temperature=1.0, seed=3)]
    stop = one_at_a_time(target, jobs[0])[0].tokens[4]  # the first prompt's fifth token ends it
    target.eos_token_ids = frozenset({stop})
    got = decode_batch(target, jobs, NEW, rows_k=K)
    for job, out in zip(jobs, got):
        ref, rows = one_at_a_time(target, job)
        assert out.tokens == ref.tokens and out.stop_reason == ref.stop_reason
        assert np.array_equal(out.rows.ids, rows.ids)
    assert got[0].stop_reason == "eos" and len(got[0].tokens) <= 5


def test_without_rows_and_bad_input():
    target = tiny_family("llama")
    out, = decode_batch(target, [BatchJob(PROMPTS[0])], 5)
    assert out.rows is None and out.tokens == one_at_a_time(target, BatchJob(PROMPTS[0]), 5)[0].tokens
    with pytest.raises(PLDError, match="rows_k must be"):
        decode_batch(target, [BatchJob(PROMPTS[0])], 5, rows_k=99)
    with pytest.raises(PLDError, match="batch must be"):
        decode_batch(target, [BatchJob(PROMPTS[0])], 5, batch=0)
    with pytest.raises(PLDError, match="max_new_tokens"):
        decode_batch(target, [BatchJob(PROMPTS[0])], 0)
    with pytest.raises(PLDError, match="temperature"):
        decode_batch(target, [BatchJob(PROMPTS[0], temperature=-1.0)], 5)
    with pytest.raises(PLDError, match="model target"):
        decode_batch(object(), [BatchJob(PROMPTS[0])], 5)
