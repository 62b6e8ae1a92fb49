"""chain_rates.py: a copied chain's nodes checked at every position, against hand-made cases."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from experiments import chain_rates
from experiments.benchmarks.traces import TraceCase, append_case, trace_file


def cases(*pairs):
    return [SimpleNamespace(cases=[SimpleNamespace(prompt=p, output=o) for p, o in pairs])]


def test_an_answer_that_copies_its_prompt_is_right_at_every_node_checked():
    prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    checks, hits = chain_rates.chain_checks(cases((prompt + [1, 2], [3, 4, 5, 6, 7])), depth=8)
    assert checks.sum() > 0 and np.array_equal(checks, hits)
    # position 0: the match [1, 2] (2 tokens) copies 3..; it is cut to the 5 tokens left
    two = int(np.searchsorted(chain_rates.EDGES, 2, side="right")) - 1
    assert checks[two].tolist() == [1, 1, 1, 1, 1, 0, 0, 0]


def test_a_wrong_node_is_checked_and_ends_the_chain():
    # [1, 2] was followed by 3, 4; the answer goes 3, 9: node 0 right, node 1 checked and wrong
    checks, hits = chain_rates.chain_checks(cases(([1, 2, 3, 4, 0, 1, 2], [3, 9])), depth=4)
    row = int(np.searchsorted(chain_rates.EDGES, 2, side="right")) - 1
    assert checks[row].tolist() == [1, 1, 0, 0] and hits[row].tolist() == [1, 0, 0, 0]


def test_the_command_prints_a_table_and_a_missing_folder_is_one_line(tmp_path: Path, capsys):
    for i in range(2):
        append_case(trace_file(tmp_path, "mine", 8), TraceCase(f"mine/{i}", "mine", 1, [1, 2 + i, 5, 6],
                                                               [5, 6, 5, 6, 1, 2, 3, 4], [0.01] * 8, "toy", 16, [0], 8))
    assert chain_rates.main(["--traces", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "d=0" in out and "share" in out
    assert chain_rates.main(["--traces", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no such folder" in err and err.count("\n") == 1
