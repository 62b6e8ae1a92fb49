"""The vocabulary's strings beside the traces (``vocab.json.gz``): written, read once and bounded, and
shipped with the benchmark, equal to what the embedded model's tokenizer gives."""

from __future__ import annotations

import gzip
import json

import pytest

from experiments.benchmarks.traces import (MAX_VOCAB_TEXT, VOCAB_FILE, load_trace_sets, read_vocab, shipped_folder,
                                           write_vocab)
from pldcore.errors import PLDError


def test_written_strings_read_back_and_are_read_once(tmp_path):
    strings = ["<|endoftext|>", " the", ".", "\n", "é", "\ufffd"]
    path = write_vocab(tmp_path, strings, "toy")
    assert path.name == VOCAB_FILE
    assert read_vocab(tmp_path) == tuple(strings)
    assert read_vocab(tmp_path) is read_vocab(tmp_path)
    assert write_vocab(tmp_path, strings, "toy").read_bytes() == path.read_bytes()  # no time stamp inside


def test_a_folder_without_the_file_has_no_strings(tmp_path):
    assert read_vocab(tmp_path) is None


@pytest.mark.parametrize("content, why", [
    (b"not gzip", "is not a readable vocabulary file"),
    (gzip.compress(b"[1, 2]"), "no list of strings"),
    (gzip.compress(json.dumps({"strings": ["a", 3]}).encode()), "no list of strings"),
    (gzip.compress(b"[" * 100 + b"]" * 100), "nested deeper"),
    (gzip.compress(b" " * (MAX_VOCAB_TEXT + 10)), "over"),
], ids=["not-gzip", "a-list", "not-all-strings", "too-deep", "a-gzip-bomb"])
def test_a_bad_file_is_refused_with_one_line(tmp_path, content, why):
    (tmp_path / VOCAB_FILE).write_bytes(content)
    with pytest.raises(PLDError, match=why) as info:
        read_vocab(tmp_path)
    assert "\n" not in str(info.value)


def test_the_shipped_benchmark_carries_the_strings_of_its_vocabulary():
    sets = load_trace_sets(shipped_folder())
    strings = sets[0].vocab
    assert strings is not None and all(s.vocab is strings for s in sets)
    assert len(strings) == max(c.vocab_size for s in sets for c in s.cases) == 49152
    assert strings[:3] == ("<|endoftext|>", "<|im_start|>", "<|im_end|>") and strings[28:31] == (",", "-", ".")


@pytest.mark.model
def test_the_shipped_strings_are_the_embedded_tokenizer_s(embedded):
    assert read_vocab(shipped_folder()) == embedded.vocab()


def test_a_recording_writes_the_model_s_strings_beside_its_traces(tmp_path, monkeypatch):
    import decoding
    from toys import IdTokenizer, tiny_llama

    from experiments import traces
    from pldcore.cost import CostProfile

    class CharTokenizer(IdTokenizer):  # text to ids, for the prompt; ids print as <id>
        def __call__(self, text: str) -> dict:
            return {"input_ids": [ord(c) % 48 for c in text]}

    target = tiny_llama(vocab_size=48, seed=5)
    target.tokenizer = CharTokenizer()
    monkeypatch.setattr(decoding, "load_model", lambda *a, **k: target)
    monkeypatch.setattr(traces, "cost_profile", lambda *a, **k: CostProfile.flat(8, seconds=0.01))
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question_id": 1, "category": "qa", "turns": ["Why?"]}) + "\n")
    out = tmp_path / "traces"
    assert traces.main(["record", "--questions", str(questions), "--out", str(out), "--max-new-tokens", "4"]) == 0
    assert read_vocab(out) == target.vocab() == tuple(f"<{i}>" for i in range(48))
    assert load_trace_sets(out)[0].vocab == read_vocab(out)
