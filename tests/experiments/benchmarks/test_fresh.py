"""Fresh-case generators: one per suite, determinism in the seed, the shipped suites' groups, sane prompts, huge
spaces."""

from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.benchmarks import prompts as registry
from experiments.benchmarks.fresh import FRESH_VERSION, TASKS, fresh_prompts, space_size
from experiments.benchmarks.prompts import FreshGenerator, fresh_generator
from experiments.benchmarks.suites import code_edit, mt_bench, summarization
from experiments.benchmarks.suites.code_edit import HumanEvalFunction, humaneval_records
from experiments.benchmarks.tasks import Prompt, available_tasks, group_of, load_task, prompts_digest, register_task
from pldcore.errors import PLDError

REPO = Path(__file__).resolve().parents[3]
seeds = st.integers(min_value=-(2**63), max_value=2**63)


def _cases(p: Prompt) -> list[tuple[str, int]]:
    """(case id, turn) per turn, as ``experiments.running.cases.conversation_cases`` names them."""
    return [(p.id if len(p.turns) == 1 else f"{p.id}#{turn}", turn) for turn in range(1, len(p.turns) + 1)]


def _groups(prompts) -> set[str]:
    return {group_of(p.category, case, turn) for p in prompts for case, turn in _cases(p)}


def _all(drawn: dict[str, list[Prompt]]) -> list[Prompt]:
    return [p for task in TASKS for p in drawn.get(task, [])]


@pytest.fixture(scope="module")
def many() -> dict[str, list[Prompt]]:
    """Ten prompts per task for each of six seeds."""
    out: dict[str, list[Prompt]] = {t: [] for t in TASKS}
    for seed in (0, 1, 2, 7, 2024, -5):
        for task, prompts in fresh_prompts(seed, 10).items():
            out[task] += prompts
    return out


# --------------------------------------------------------------------------- one generator per suite


@pytest.mark.parametrize("task", available_tasks())
def test_every_registered_suite_has_a_fresh_generator(task):
    # A suite without one would have no fresh cases on the board: its module must register one.
    assert isinstance(fresh_generator(task), FreshGenerator), task
    assert task in TASKS


def _toy(rng, ident: str) -> Prompt:
    return Prompt(ident, "toy", (f"say {rng.randrange(10**9)}",))


def test_a_suite_gets_fresh_cases_from_its_own_generator_and_one_without_is_named(monkeypatch):
    monkeypatch.setattr(registry, "_TASKS", dict(registry._TASKS))
    register_task("toy", fresh=FreshGenerator(_toy, lambda: 10**9))(lambda: [])
    drawn = fresh_prompts(4, 2)
    assert list(drawn) == sorted(drawn) and "toy" in drawn
    assert [p.id for p in drawn["toy"]] == ["fresh-4/toy/000", "fresh-4/toy/001"]
    assert drawn["toy"] == fresh_prompts(4, {"toy": 2})["toy"] and space_size("toy") == 10**9

    register_task("plain")(lambda: [])  # no generator: the board cannot stand fresh cases in for it
    with pytest.raises(PLDError, match="'plain' has no fresh-prompt generator"):
        fresh_prompts(4, 1)
    with pytest.raises(PLDError, match="'plain'"):
        space_size("plain")
    assert fresh_prompts(4, {"toy": 1}) == {"toy": drawn["toy"][:1]}  # the others still draw


# --------------------------------------------------------------------------- determinism


@settings(max_examples=10, deadline=None)
@given(seeds)
def test_same_seed_same_prompts(seed):
    a, b = fresh_prompts(seed, 2), fresh_prompts(seed, 2)
    assert prompts_digest(_all(a)) == prompts_digest(_all(b))
    assert [p.meta for p in _all(a)] == [p.meta for p in _all(b)]


@settings(max_examples=10, deadline=None)
@given(seeds, seeds)
def test_different_seeds_different_prompts(s1, s2):
    if s1 == s2:
        return
    a, b = fresh_prompts(s1, 1), fresh_prompts(s2, 1)
    for task in TASKS:
        assert a[task][0].turns != b[task][0].turns, task


def test_same_prompts_in_another_process():
    code = ("from experiments.benchmarks.fresh import fresh_prompts, TASKS;"
            "from experiments.benchmarks.prompts import prompts_digest;"
            "d = fresh_prompts(31337, 3); print(prompts_digest([p for t in TASKS for p in d[t]]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    here = fresh_prompts(31337, 3)
    assert out.stdout.strip() == prompts_digest(_all(here))


def test_a_prompt_depends_on_its_index_only():
    small, large = fresh_prompts(5, 2), fresh_prompts(5, 4)
    for task in TASKS:
        assert small[task] == large[task][:2]
    assert fresh_prompts(5, {"doc-qa": 1}) == {"doc-qa": small["doc-qa"][:1]}


def test_version_is_recorded_text():
    assert isinstance(FRESH_VERSION, str) and FRESH_VERSION


# --------------------------------------------------------------------------- shape and groups


def test_ids_categories_and_turns(many):
    for task, prompts in many.items():
        for p in prompts:
            assert isinstance(p, Prompt) and p.category == task
            assert re.fullmatch(rf"fresh--?\d+/{re.escape(task)}/\d{{3}}", p.id), p.id
            assert "#" not in p.id
            assert len(p.turns) == (2 if task == "mt-bench" else 1)
            assert all(t.strip() for t in p.turns)
            json.dumps(p.meta)  # meta is JSON-ready, as trace files store it


def test_groups_are_the_shipped_benchmarks(many):
    from experiments.benchmarks.traces import load_trace_sets

    shipped = {group_of(c.category, c.case, c.turn) for s in load_trace_sets() for c in s.cases}
    assert _groups(_all(many)) == shipped
    for task in TASKS:  # per task too: the same groups as the suite of the same name
        assert _groups(many[task]) == _groups(load_task(task))


def test_lengths_are_like_the_suites(many):
    bands = {"summarization": [(1550, 6400)], "doc-qa": [(1200, 6000)], "code-edit": [(250, 3200)],
             "mt-bench": [(60, 2000), (30, 400)]}
    for task, prompts in many.items():
        for p in prompts:
            for text, (lo, hi) in zip(p.turns, bands[task]):
                assert lo <= len(text) <= hi, (p.id, len(text))


def test_no_fresh_prompt_is_a_shipped_one(many):
    shipped = {p.turns for task in TASKS for p in load_task(task)}
    shipped_turns = {t for turns in shipped for t in turns}
    for p in _all(many):
        assert p.turns not in shipped
        assert p.turns[0] not in shipped_turns, p.id
    # Nor is any summarization instruction one of the suite's, though a few compositions are.
    suite_instructions = {p.turns[0].split("\n\n", 1)[0] for p in load_task("summarization")}
    assert not suite_instructions & {p.meta["instruction"] for p in many["summarization"]}


def test_summarization_redraws_the_suites_instructions(monkeypatch):
    # Force every composition to be a suite instruction for the first draw: the generator draws again.
    calls = iter([("Summarize the following documentation", "", " in one paragraph", "", "", "")])
    real = summarization._sum_instruction
    monkeypatch.setattr(summarization, "_sum_instruction", lambda pieces: real(next(calls, pieces)))
    p = fresh_prompts(3, {"summarization": 1})["summarization"][0]
    assert p.meta["instruction"] not in set(summarization.SUMMARY_INSTRUCTIONS)


def test_no_duplicates_within_a_draw(many):
    texts = [p.turns for p in _all(many)]
    assert len(set(texts)) == len(texts)


def test_per_task_validation():
    assert fresh_prompts(1, 0) == {t: [] for t in TASKS}
    assert list(fresh_prompts(1, {"mt-bench": 1, "code-edit": 2})) == ["code-edit", "mt-bench"]
    for bad in (-1, 1.5, True, {"nope": 1}, {"doc-qa": -2}):
        with pytest.raises(PLDError):
            fresh_prompts(1, bad)
    with pytest.raises(PLDError):
        fresh_prompts("1", 1)
    with pytest.raises(PLDError):
        space_size("nope")


# --------------------------------------------------------------------------- the generators


def test_summarization_is_a_verbatim_window(many):
    from pydoc_data.topics import topics

    for p in many["summarization"]:
        instruction, passage = p.turns[0].split("\n\n", 1)
        assert instruction == p.meta["instruction"]
        assert 1500 <= len(passage) <= 6000
        start = p.meta["start"]
        assert topics[p.meta["topic"]][start : start + len(passage)] == passage
    assert len({p.meta["topic"] for p in many["summarization"]}) >= 10


def test_doc_qa_question_is_about_the_answer_document(many):
    from pydoc_data.topics import topics

    norm = lambda text: " ".join(text.split())  # noqa: E731
    kinds = set()
    for p in many["doc-qa"]:
        (text,) = p.turns
        assert len(text) <= 6000
        docs = [topics[topic][a:b] for topic, a, b in p.meta["documents"]]
        assert 2 <= len(docs) <= 4
        assert all(norm(d) in norm(text) for d in docs)
        answer = docs[p.meta["answer_document"] - 1]
        span = norm(p.meta["answer_span"])
        assert span in norm(answer)
        if p.meta["clean"]:
            assert not any(span in norm(d) for d in docs if d is not answer), p.id
        assert len({topic for topic, _, _ in p.meta["documents"]} & {p.meta["topic"]}) == 1
        assert sum(topic == p.meta["topic"] for topic, _, _ in p.meta["documents"]) == 1
        kinds.add(p.meta["question_kind"])
    assert len(kinds) >= 3, kinds


def _code(p: Prompt) -> str:
    return re.search(r"```python\n(.*)\n```$", p.turns[0], re.S).group(1)


def _names(code: str) -> set[str]:
    return {t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.NAME}


def test_code_edit_renames_are_consistent(many):
    originals = {f.task_id: f for f in map(HumanEvalFunction.parse, humaneval_records())}
    for p in many["code-edit"]:
        code = _code(p)
        tree = ast.parse(code)  # still Python
        old, new = p.meta["original_entry_point"], p.meta["entry_point"]
        assert old != new and p.meta["renamed"][old] == new
        assert old not in _names(code), "the old entry point is gone from the code"
        fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == new)
        original, renamed = originals[p.meta["source"]], p.meta["renamed"]
        assert [a.arg for a in fn.args.args] == [renamed.get(a, a) for a in original.params]
        assert len(set(renamed.values())) == len(renamed), "no two names become one"
        # The syntax tree is the original's with the names mapped (strings aside).
        assert code_edit._blank_strings(code) == code_edit._renamed_tree(original.code, old, renamed)
        assert f"`{new}`" in p.turns[0].split("```python", 1)[0]


def test_rename_keeps_attributes_and_reports_keyword_uses():
    code = ('def helper(n):\n    return n\n\n\n'
            'def target(n, items):\n    """>>> target(3, [])"""\n'
            '    # target(n) is called by name\n    items.n = n  # an attribute named like the parameter\n'
            '    return helper(n) + target(n - 1, items.n)\n')
    out = code_edit._rename(code, "target", {"target": "solve_values", "n": "count"})
    assert "def helper(n):\n    return n" in out, "a parameter of another function is left alone"
    assert ">>> solve_values(3, [])" in out and "# solve_values(n)" in out
    assert "items.n = count" in out and "solve_values(count - 1, items.n)" in out
    assert code_edit._consistent(code, "target", {"target": "solve_values", "n": "count"})
    keyword_use = "def f(n):\n    return f(n=n - 1) if n else 0\n"
    assert not code_edit._consistent(keyword_use, "f", {"f": "g", "n": "m"}), "a keyword argument is caught"


def test_no_template_spells_the_suites_instruction():
    # space_size counts the suite's phrasing and the templates as different texts.
    functions = [f.fn for f in code_edit._functions()]
    for edit in code_edit.EDITS:
        fn = next(f for f in functions if edit.applies(f))
        suite = edit.instruction(fn)
        for template in code_edit._PHRASINGS[edit.name]:
            pattern = re.sub(r"\\\{\w+\\\}", "(.+)", re.escape(template))
            assert not re.fullmatch(pattern, suite), (edit.name, template)


def test_every_humaneval_function_can_be_drawn():
    functions = code_edit._functions()
    assert len(functions) == 164
    assert sum(bool(f.params) for f in functions) >= 160, "nearly every parameter renames cleanly"


def test_mt_bench_has_a_question_and_a_follow_up(many):
    categories = {p.meta["category"] for p in many["mt-bench"]}
    assert len(categories) >= 6
    for p in many["mt-bench"]:
        first, second = p.turns
        assert "{" not in first.replace("{}", "") or p.meta["category"] == "extraction", first
        assert first != second


def test_mt_bench_templates_fill_every_slot():
    domains = mt_bench._domains()
    for firsts, follow_ups in mt_bench._MT_TEMPLATES.values():
        assert len(firsts) >= 3 and len(follow_ups) >= 3
        for template in (*firsts, *follow_ups):
            assert set(mt_bench._SLOT.findall(template)) <= set(domains), template


# --------------------------------------------------------------------------- space sizes


@pytest.mark.parametrize("task", TASKS)
def test_space_is_huge(task):
    assert space_size(task) > 10**10
