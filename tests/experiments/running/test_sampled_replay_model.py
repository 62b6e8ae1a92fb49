"""The sampled-replay claim on the embedded model: record plain sampling at temperature 1.0, then
decode live with a chain drafter and a tree drafter with each case's seed. Each commits exactly the
trace's tokens, or parts from it only at a sampling boundary within float error (reported with its
margin); up to that point the live run's steps (drafted, accepted) are the replay's, so the live tau
is the replay's. Slow (a minute or two on a 2-core CPU): ``make test-slow``.
"""

from __future__ import annotations

import pytest

import decoding
import lookup
from decoding.lossless import SAMPLING_MARGIN, compare_outputs
from experiments.benchmarks.tasks import load_task
from experiments.benchmarks.traces import load_trace_sets, traces_setting
from experiments.running.record import record
from experiments.running.replay import replay_case
from pldcore.hardware import profile_named
from pldcore.setting import Regime

pytestmark = [pytest.mark.model, pytest.mark.slow]

REGIME = Regime(1.0)
TOKENS = 64
#: a chain drafter and a tree drafter (recycling plans under the setting: built alike for both runs,
#: on the flat GPU profile, where it drafts wide trees)
SPECS = ("suffix-automaton", "recycling")


def counting_trees(drafter: lookup.Drafter, trees: list[int]) -> lookup.Drafter:
    """``drafter``, counting into ``trees`` the drafts it proposes that are not chains."""
    propose = drafter.propose

    def counted(budget):
        draft = propose(budget)
        trees.append(not draft.is_chain)
        return draft

    drafter.propose = counted
    return drafter


def test_live_sampling_commits_the_trace_and_steps_as_its_replay(embedded, one_thread, tmp_path):
    for task in ("summarization", "code-edit", "doc-qa"):
        record(embedded, task, load_task(task, 1), TOKENS, tmp_path, regime=REGIME, seed=5)
    sets = load_trace_sets(tmp_path)
    setting = traces_setting(sets)
    assert setting.regime == REGIME
    boundaries, trees = [], []
    for case in (c for s in sets for c in s.cases):
        for spec in SPECS:
            where = setting if spec != "recycling" else setting.with_profile(profile_named("flat"))
            drafter = counting_trees(lookup.parse_drafter(spec).build(where), trees)
            live = decoding.generate(embedded, case.prompt, drafter, TOKENS, temperature=REGIME.temperature,
                                     seed=case.seed, draft_budget=63)
            replayed = replay_case(case, lookup.parse_drafter(spec).build(where), where.profile, draft_budget=63)
            assert replayed.tokens == case.output
            diff = compare_outputs(embedded, case.prompt, live.tokens, case.output, case.regime, case.seed)
            if diff is not None:  # allowed only where the uniform sat within float error of an edge
                assert diff.is_numeric, f"{case.case} {spec}: {diff}"
                boundaries.append((case.case, spec, diff.margin))
            end = len(case.output) if diff is None else diff.position
            prompt = len(case.prompt)

            def before(out):  # the steps whose committed tokens all lie before the first difference
                return [(s.drafted, s.accepted) for s in out.stats.steps if s.context - prompt + s.committed <= end]

            assert before(live) == before(replayed)
            assert before(live) and before(live)[0] == before(replayed)[0]
    for case, spec, margin in boundaries:  # the note's figures come from the wider check; here, say them
        print(f"boundary divergence: {case} {spec} at margin {margin:.2e} (<= {SAMPLING_MARGIN:g})")
    assert sum(trees) > 0  # trees were verified, not chains only
