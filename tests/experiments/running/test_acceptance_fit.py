"""Fitting adaptive's models of acceptance on traces: rows as adaptive sees them, held-out scores, the command."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from experiments.benchmarks.traces import TraceCase, TraceSet, append_case
from experiments.benchmarks.traces import benchmark_hash, load_trace_sets, regime_folder, shipped_benchmarks
from experiments.running import acceptance_fit
from experiments.running.acceptance_fit import FEATURES, _Collector, collect, fit, fits_of, held_out
from lookup.acceptance import WITH_HISTORY, first_token, later_nodes
from pldcore.setting import Regime, reference_setting
from pldcore.fits import Fits
from pldcore import fits as fits_module
from lookup.base import SOURCES, Agreement, Draft, Drafter, Evidence
from pldcore.cost import CPU_SMOLLM2
from lookup.drafters.adaptive import AdaptiveDrafter


def toy_cases(n: int, seed: int = 0) -> list[TraceCase]:
    rng = np.random.default_rng(seed)
    motif = rng.integers(0, 6, 12).tolist()
    cases = []
    for i in range(n):
        # repeats of a motif with noise: matches that agree, and some that do not
        seq = [t if rng.random() > 0.2 else int(rng.integers(0, 6)) for _ in range(8) for t in motif]
        cases.append(TraceCase(f"toy/{i}", "toy", 1, seq[:24], seq[24:], [], "toy", 16, [], len(seq) - 24))
    return cases


def test_the_rows_are_adaptives_drafts_with_their_outcome():
    cases = toy_cases(4)
    data = collect([TraceSet(Path("toy.jsonl.gz"), "toy", cases, CPU_SMOLLM2)])
    # a fit per key of each model's FITS: the first node has one more, for drafts from the context
    # while a history is kept
    assert list(data) == [*SOURCES, WITH_HISTORY]
    assert all(set(data[source]) == set(FEATURES) for source in SOURCES) and set(data[WITH_HISTORY]) == {"first"}
    # served as a stream, later cases copy the motif from earlier ones: drafts from the history
    history = data["history"]
    assert len(history["first"].y) > 10 and sorted(set(history["first"].case.tolist())) == [1, 2, 3]
    assert history["later"].x.shape == (len(history["later"].y), len(later_nodes.FEATURES))
    first, later = data["context"]["first"], data["context"]["later"]
    assert first.x.shape == (len(first.y), len(first_token.FEATURES)) and len(first.y) > 50
    assert later.x.shape == (len(later.y), len(later_nodes.FEATURES)) and len(later.y) > 50
    for rows in (first, later):
        assert set(np.unique(rows.y)) == {0.0, 1.0} and rows.own.shape == rows.y.shape
        assert np.all((0 < rows.own) & (rows.own < 1))
        assert sorted(set(rows.case.tolist())) == [0, 1, 2, 3]
    log_match, estimate, occurrences, share = first.x[:, :4].T
    assert np.all(log_match >= np.log(2)) and np.all(estimate == first.own)
    assert np.all((1 <= occurrences) & (occurrences <= 8)) and np.all((0 <= share) & (share <= 1))
    # what the context says is read for drafts from the history only
    assert not first.x[:, 4:].any() and not later.x[:, 6:].any()
    assert history["first"].x[:, 4].any() and history["later"].x[:, 6:].any()
    # drafts from the context in the stream read what the history says (the cases after the first)
    kept = data[WITH_HISTORY]["first"]
    assert kept.x.shape == (len(kept.y), len(first_token.FEATURES)) and len(kept.y) > 10
    assert kept.x[:, 4].any() and not kept.x[kept.case == 0, 4:].any()
    # a later node is judged only where every node before it was accepted, at depths from 1
    log_deep, log_depth, support, share, _, alone = later.x[:, :6].T
    assert np.all(log_depth >= np.log(2) - 1e-12) and np.all(log_deep > log_depth)
    assert np.all((0 <= share) & (share <= 1)) and np.all(alone == (support == 1))
    for rows, module in ((first, first_token), (later, later_nodes)):
        coefficients, intercept = fit(rows)
        assert coefficients.shape == (len(module.FEATURES),) and np.isfinite(intercept)
        checks = held_out(rows)
        assert [c["fitted on"] for c in checks] == ["even cases", "odd cases"]
        assert sum(c["rows"] for c in checks) == len(rows.y)
        assert all(c["model"] is None or 0.0 <= c["model"] <= 1.0 for c in checks)


class _Unanimous(Drafter):
    """Drafts [7, 8, 9, 10] after a 3-token match whose 4 occurrences all continue so."""

    name = "unanimous-test"

    def propose(self, budget):
        return Draft([7, 8, 9, 10][:budget])

    def match_length(self):
        return 3

    second_index = False
    other = None

    def evidence(self, draft):
        n = len(draft)
        return Evidence("context", 3, Agreement(3, np.full(n, 4, dtype=np.int64), np.full(n, 4, dtype=np.int64)),
                        self.other(n) if self.other else None, self.second_index)


def test_later_rows_follow_each_chain_until_its_first_miss():
    """A chain judged against the trace [7, 8, 5, 10]: one first-node row (accepted), then later rows
    for nodes 1 (accepted) and 2 (rejected); node 3, after the miss, is not judged."""
    drafter = _Collector(AdaptiveDrafter(setting=reference_setting(), base=_Unanimous(), first_token_model=False, chain_model=False),
                         [1, 2, 3, 7, 8, 5, 10])
    drafter.reset([1, 2, 3])
    drafter.propose(32)
    assert set(drafter.rows) == {("context", "first"), ("context", "later")}
    first, later = drafter.rows[("context", "first")], drafter.rows[("context", "later")]
    assert [(x.tolist(), y) for x, y, _ in first] == [([np.log(4), first[0][2], 4.0, 1.0, 0, 0, 0, 0], 1.0)]
    assert [y for _, y, _ in later] == [1.0, 0.0]
    assert [x.tolist() for x, _, _ in later] == later_nodes.features(3, np.full(4, 4), np.full(4, 4))[:2].tolist()


class _UnanimousWithHistory(_Unanimous):
    """The same draft from the context, with a history whose 5-token match (2 occurrences) agrees."""

    second_index = True

    @staticmethod
    def other(n):
        return Agreement(5, np.full(n, 2, dtype=np.int64), np.full(n, 2, dtype=np.int64))


def test_the_stream_pass_collects_only_the_fits_it_is_given():
    """In the stream, a draft from the context gives rows for the first node's fit with a history (reading
    what the history says) and none for the context's own fits, which come from the per-request pass."""
    inner = AdaptiveDrafter(setting=reference_setting(), base=_UnanimousWithHistory(), first_token_model=False, chain_model=False)
    drafter = _Collector(inner, [1, 2, 3, 7, 8, 5, 10], {"history", WITH_HISTORY})
    drafter.reset([1, 2, 3])
    drafter.propose(32)
    assert set(drafter.rows) == {(WITH_HISTORY, "first")}
    [(x, y, _)] = drafter.rows[(WITH_HISTORY, "first")]
    assert y == 1.0 and x[4:].tolist() == pytest.approx([2.0, 1.0, 0.0, np.log(6)])
    per_request = _Collector(inner, [1, 2, 3, 7, 8, 5, 10], "context")  # one fit, named alone
    per_request.reset([1, 2, 3])
    per_request.propose(32)
    assert set(per_request.rows) == {("context", "later")}  # the first node is the other fit's, with a history


def test_the_fit_command_prints_a_fit_writes_it_and_refuses_too_little(tmp_path, capsys):
    from experiments import traces

    for case in toy_cases(4, seed=1):
        append_case(tmp_path / "toy-n4.jsonl.gz", case)
    assert traces.main(["fit-acceptance", "--traces", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("AUC on the half of the cases the model was not fitted on") == 5
    assert "drafts from the context while a history is kept" in out and "even cases" in out
    assert "the later nodes model, drafts from the history (the cases served as one stream)" in out
    assert "not yet in" in out and "--write writes it" in out
    path = tmp_path / "fit.json"
    assert traces.main(["fit-acceptance", "--traces", str(tmp_path), "--write", str(path)]) == 0
    assert f"wrote: {path}" in capsys.readouterr().out
    fits = Fits.load(path)
    assert fits.model == tmp_path.name and set(fits.first) == {*SOURCES, WITH_HISTORY} and set(fits.later) == set(SOURCES)
    assert traces.main(["fit-acceptance", "--traces", str(tmp_path), "--write", str(path)]) == 0
    assert "unchanged" in capsys.readouterr().out
    # adaptive reads a fit file by path
    drafter = AdaptiveDrafter(setting=reference_setting(), fits=str(path))
    assert drafter.fits.first["context"][1] == fits.first["context"][1] and str(path.name) in drafter.params()["fits"]
    assert traces.main(["fit-first-token", "--traces", str(tmp_path)]) == 0  # the former name
    empty = tmp_path / "empty"
    empty.mkdir()
    append_case(empty / "x-n1.jsonl.gz", TraceCase("x/0", "x", 1, [1, 2], [3, 4], [], "toy", 16, [], 2))
    assert traces.main(["fit-acceptance", "--traces", str(empty)]) == 2
    assert "too few drafts" in capsys.readouterr().err


@pytest.mark.parametrize("path", fits_module.shipped(), ids=lambda p: p.name.split(".")[0])
def test_each_shipped_fit_is_the_fit_of_its_models_shipped_benchmark_byte_for_byte(path):
    """Refitting on a model's shipped benchmark, with today's priors and collecting drafter, writes its
    shipped file again: a change of either (or of the benchmark) that leaves the fit stale fails here. Rerun
    ``python experiments/traces.py fit-acceptance --benchmark MODEL --write`` and commit the file it writes."""
    shipped = fits_module.Fits.load(path)
    assert shipped.model in shipped_benchmarks(), f"{path.name}: a fit of a model without a shipped benchmark"
    # a sampled regime's fit: the model's sampled benchmark of that regime (data/<model>/<regime>/)
    regime = Regime.from_name(shipped.regime)
    sets = load_trace_sets(regime_folder(shipped_benchmarks()[shipped.model], regime))
    assert shipped.benchmark == benchmark_hash(sets), "the shipped fit was made on another benchmark"
    assert shipped.settings == acceptance_fit.settings(), "the priors or the collecting drafter changed since the fit"
    fits = fits_of(collect(sets), acceptance_fit.model_of(sets), benchmark_hash(sets), regime)
    assert shipped.path.name == fits_module.file_name(fits.model, fits.benchmark)
    assert fits.to_json() == shipped.path.read_text()
