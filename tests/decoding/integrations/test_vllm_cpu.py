"""The mend of vLLM 0.32's CPU fault under sampling (decoding/integrations/vllm_cpu.py): our
``expand_batch_to_tokens`` against a brute-force spread, floats and integers, with the replaced
value; and the probe that decides whether vLLM's own needs replacing. (That the mend, in a real
engine, gets sampled drafts accepted: tests/integrations/test_vllm_engine.py.)"""

from __future__ import annotations

import sys

import torch
from hypothesis import given
from hypothesis import strategies as st

from decoding.integrations.vllm_cpu import _expand_is_right, expand_batch_to_tokens, mend_cpu_expand

requests = st.lists(st.tuples(st.integers(-1, 3), st.integers(0, 4)), min_size=1, max_size=6)


def spread(values, counts, replace_from, replace_to):
    out = []
    for v, n in zip(values, counts):
        out += [replace_to if v == replace_from else v] * n
    return out


@given(requests, st.sampled_from([torch.float32, torch.int64]))
def test_each_value_spreads_over_its_requests_tokens(reqs, dtype):
    values, counts = [v for v, _ in reqs], [n for _, n in reqs]
    cu = torch.tensor(counts, dtype=torch.int32).cumsum(0).to(torch.int32)
    got = expand_batch_to_tokens(torch.tensor(values, dtype=dtype), cu, sum(counts), replace_from=-1, replace_to=1)
    assert got.dtype == dtype and got.tolist() == spread(values, counts, -1, 1)


def test_the_probe_tells_a_kernel_that_writes_nothing_from_a_right_one():
    def writes_nothing(x, cu, num_tokens, replace_from=0, replace_to=0):  # vLLM 0.32's CPU kernel on floats
        return torch.full((num_tokens,), -7.0)

    def cannot_run(*args, **kwargs):
        raise TypeError("Cannot inspect kernel parameters")

    assert _expand_is_right(expand_batch_to_tokens)
    assert not _expand_is_right(writes_nothing) and not _expand_is_right(cannot_run)


def test_without_vllm_nothing_is_mended(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm.platforms", None)  # as where vLLM is not installed: its import fails
    assert mend_cpu_expand() is False
