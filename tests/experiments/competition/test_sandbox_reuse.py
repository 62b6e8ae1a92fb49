"""One sandbox serves every run of an entry (``sandbox.Sandboxes``): each run in its own setting, each
case still in a process of its own, nothing of one run in the next, and a sandbox that disqualified
its entry never serves again."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from toys_competition import QUICK, make_trace_folder

from experiments.benchmarks.traces import load_trace_sets
from experiments.competition.sandbox import Sandboxes, Submission, evaluate
from pldcore.hardware import profile_named

#: drafts as long as the resets its process has seen (at most 4): a process that served an earlier run
#: would draft longer at the first case; refuses a setting other than a flat profile where asked
COUNTING = '''
from lookup.base import Draft, Drafter

RESETS = [0]


class Counting(Drafter):
    uses_setting = True

    def __init__(self, setting, flat_only=False):
        super().__init__()
        if flat_only and setting.profile.cost(64) != setting.profile.cost(1):
            raise ValueError("planned for a flat profile only")
        self.first = True

    def reset(self, prompt):
        RESETS[0] += 1
        self.first = True
        try:
            open("/etc/shadow").close()  # refused, once per case: counted by the run it happened in
        except OSError:
            pass

    def propose(self, budget):
        if not self.first:
            return Draft()
        self.first = False
        return Draft([3] * min(RESETS[0], 4, budget))
'''


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    return load_trace_sets(make_trace_folder(tmp_path_factory.mktemp("reuse") / "toy", seed=5, cases=1))


@pytest.fixture()
def counting(tmp_path) -> Path:
    path = tmp_path / "counting.py"
    path.write_text(textwrap.dedent(COUNTING))
    return path


def first_drafts(ev) -> list[int]:
    return [out.stats.steps[0].drafted for _, _, out in ev.cases]


def zygotes(boxes: Sandboxes) -> set[int]:
    return {box._zpid for box in boxes._kept.values()}


def test_later_runs_are_served_by_the_first_run_s_sandbox_each_case_in_a_new_process(sets, counting):
    cases = sum(len(s.cases) for s in sets)
    assert cases >= 2
    with Sandboxes() as boxes:
        first = evaluate(Submission.file(counting), sets, QUICK, boxes=boxes)
        assert first.ok, first.reason
        started = zygotes(boxes)
        again = evaluate(Submission.file(counting), sets, QUICK, profile=profile_named("flat"), draft_budget=63,
                         boxes=boxes)
        assert again.ok, again.reason
        assert zygotes(boxes) == started and len(started) == 1  # the same sandbox served both runs
        # one process per case: each case's first draft is that of a new process (its warm-up run's
        # reset, then the case's), in either run
        assert first_drafts(first) == first_drafts(again) == [2] * cases
        # the refusals of a run are that run's (each process's warm-up reset's and its case's), none carried over
        assert first.usage["refused_count"] == again.usage["refused_count"] == 2 * cases
        stream = evaluate(Submission.file(counting), sets, QUICK, stream=True, boxes=boxes)  # another key: its own
        assert stream.ok and first_drafts(stream) == [min(i, 4) for i in range(2, cases + 2)]
        replay = evaluate(Submission.file(counting), sets, QUICK, stream=True, boxes=boxes)
        assert started < zygotes(boxes) and len(zygotes(boxes)) == 2
        assert first_drafts(replay) == first_drafts(stream)  # a stream's history ends with its run


def test_each_run_builds_its_drafter_for_its_own_setting_and_a_disqualified_sandbox_is_closed(sets, counting):
    entry = Submission.file(counting, params={"flat_only": True})
    with Sandboxes() as boxes:
        flat = evaluate(entry, sets, QUICK, profile=profile_named("flat"), draft_budget=63, boxes=boxes)
        assert flat.ok, flat.reason
        started = zygotes(boxes)
        cpu = evaluate(entry, sets, QUICK, boxes=boxes)  # the benchmark's own profile, in the same sandbox
        assert not cpu.ok and "planned for a flat profile only" in cpu.reason
        assert zygotes(boxes) == set()  # closed, not kept
        after = evaluate(entry, sets, QUICK, profile=profile_named("flat"), draft_budget=63, boxes=boxes)
        assert after.ok and zygotes(boxes).isdisjoint(started)  # a new one


@pytest.mark.parametrize("name", ["adaptive", "recycling"])
def test_a_built_in_drafts_the_same_in_a_kept_sandbox_as_in_a_new_one(sets, name):
    tracks = [dict(), dict(profile=profile_named("h100-8b"), draft_budget=63, batch=32)]
    with Sandboxes() as boxes:
        kept = [evaluate(Submission.builtin(name), sets, QUICK, boxes=boxes, **t) for t in tracks]
    new = [evaluate(Submission.builtin(name), sets, QUICK, **t) for t in tracks]
    for a, b in zip(kept, new):
        assert a.ok and b.ok, (a.reason, b.reason)
        assert [o.tokens for _, _, o in a.cases] == [o.tokens for _, _, o in b.cases]
        assert [[(s.drafted, s.accepted) for s in o.stats.steps] for _, _, o in a.cases] == \
               [[(s.drafted, s.accepted) for s in o.stats.steps] for _, _, o in b.cases]

