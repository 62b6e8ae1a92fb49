"""Trace storage: file names, reading a file cut by a crash, and the folder's profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.benchmarks.traces import (TraceCase, append_case, load_trace_sets, read_cases, task_of,
                                           trace_file)
from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.errors import PLDError


def case(name: str, output: list[int]) -> TraceCase:
    prompt = [1, 2, 3, sum(map(ord, name))]  # one prompt per case: a benchmark holds each prompt once
    return TraceCase(name, "c", 1, prompt, output, [0.01] * len(output), "toy", 1 << 12, [0], 8)


@pytest.mark.parametrize("task", ["summarization", "doc-nq", "n-gram-nn-n5", "x"])
def test_the_task_name_survives_its_file_name(task):
    assert task_of(trace_file(Path("/t"), task, 128)) == task


@pytest.mark.parametrize("name", ["doc.jsonl.gz", "doc-n.jsonl.gz", "doc-n12.jsonl", "-n12.jsonl.gz"])
def test_a_file_that_is_not_a_trace_is_named_in_the_error(name):
    with pytest.raises(PLDError, match="not a trace file name"):
        task_of(Path(name))


def test_sets_by_task_with_the_folders_profile_or_the_reference(tmp_path):
    append_case(trace_file(tmp_path, "doc-nq", 8), case("doc-nq/0", [4, 5]))
    append_case(trace_file(tmp_path, "code", 8), case("code/0", [6]))
    [code, doc] = load_trace_sets(tmp_path)
    assert [c.case for c in code.cases] == ["code/0"] and code.cases[0].top is None
    assert (code.task, doc.task) == ("code", "doc-nq")
    assert doc.profile is CPU_SMOLLM2 and doc.tokens == 2
    CostProfile.flat(8, seconds=0.5, name="mine").save(tmp_path / "profile.json")
    assert load_trace_sets(tmp_path)[0].profile.model == "mine"


def test_a_member_cut_by_a_crash_is_dropped_and_the_rest_kept(tmp_path):
    path = trace_file(tmp_path, "t", 8)
    append_case(path, case("t/0", [4]))
    append_case(path, case("t/1", [5]))
    path.write_bytes(path.read_bytes()[:-7])  # the second gzip member loses its tail
    assert [c.case for c in read_cases(path)] == ["t/0"]
    append_case(path, case("t/2", [6]))  # a resumed recording: the cut member must not hide it
    assert [c.case for c in read_cases(path)] == ["t/0", "t/2"]


def test_an_empty_or_missing_folder_is_a_one_line_error(tmp_path):
    with pytest.raises(PLDError, match="no traces in"):
        load_trace_sets(tmp_path / "missing")
    with pytest.raises(PLDError, match="no trace files"):
        load_trace_sets(tmp_path)


def test_top_k_rows_survive_the_file(tmp_path):
    import numpy as np

    from decoding.target import TopRows

    rows = TopRows(np.arange(40).reshape(5, 8) * 1000, (np.arange(40).reshape(5, 8) / 64).astype(np.float16))
    stored = case("t/0", [4, 5])
    stored.vocab_size = 1 << 17  # ids past uint16: stored wider
    stored.top = rows
    append_case(trace_file(tmp_path, "t", 8), stored)
    [back] = read_cases(trace_file(tmp_path, "t", 8))
    assert np.array_equal(back.top.ids, rows.ids) and np.array_equal(back.top.probs, rows.probs)
    assert back.top.ids.dtype == np.int64 and back.top.probs.dtype == np.float16
