"""store.py: rows round-trip through the JSONL file; a crash's cut line costs only itself; a row of
another version raises instead of showing as "-"; rows are reused only while their code is unchanged."""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_rows import case_results, case_row  # tests/experiments/running is on sys.path under pytest

import lookup
from experiments.running import store as store_module
from experiments.running.store import ResultStore, code_key, reusable
from pldcore.cost import CostProfile
from pldcore.errors import PLDError


def three_rows() -> list:
    return [case_row(case=f"code-edit/{i:03d}", method=m, code=f"key-{m}")
            for i, m in enumerate(("hf-greedy", "unfold", "voting"))]


# -- append / read --------------------------------------------------------------------------------
def test_append_then_read_back(tmp_path):
    store = ResultStore(tmp_path / "deep" / "er" / "results.jsonl")  # folders are made on first append
    assert list(store.rows()) == []  # no file yet: no rows, no error
    rows = three_rows()
    store.append(rows[0])
    for row in rows[1:]:
        store.append(row)
    assert list(store.rows()) == rows
    lines = store.path.read_bytes().split(b"\n")
    assert len(lines) == 4 and lines[-1] == b""  # one line per row, each ended


@settings(max_examples=40, deadline=None)  # every append fsyncs: disk time, not ours
@given(st.lists(case_results, max_size=4))
def test_any_rows_round_trip(rows):
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(Path(tmp) / "r.jsonl")
        append_all(store, rows)
        assert list(store.rows()) == rows


def test_blank_lines_are_skipped(tmp_path):
    a, b, _ = three_rows()
    path = tmp_path / "r.jsonl"
    path.write_text("\n" + json.dumps(a.to_json()) + "\n\n   \n" + json.dumps(b.to_json()) + "\n")
    assert list(ResultStore(path).rows()) == [a, b]


@settings(max_examples=40, deadline=None)
@given(cut=st.integers(1, 10_000))
def test_a_cut_last_line_does_not_swallow_the_next_row(cut):
    a, b, c = three_rows()
    text = json.dumps(b.to_json())
    partial = text[:cut % len(text)] or text[:1]  # any proper prefix of a row: what a crash leaves
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(Path(tmp) / "r.jsonl")
        store.append(a)
        with store.path.open("a") as f:
            f.write(partial)  # no newline: the process died mid-write
        assert list(store.rows()) == [a]  # the cut line alone is skipped
        store.append(c)
        assert list(store.rows()) == [a, c]
        assert store.path.read_text().splitlines() == [json.dumps(a.to_json()), partial, json.dumps(c.to_json())]


def test_a_whole_last_line_without_newline_is_kept(tmp_path):
    a, b, c = three_rows()
    store = ResultStore(tmp_path / "r.jsonl")
    store.path.write_text(json.dumps(a.to_json()) + "\n" + json.dumps(b.to_json()))  # complete, unterminated
    store.append(c)
    assert list(store.rows()) == [a, b, c]


def test_an_empty_file_takes_rows(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    store.path.touch()
    store.append(three_rows()[0])
    assert store.path.read_text().count("\n") == 1 and not store.path.read_text().startswith("\n")


@pytest.mark.parametrize("line,field", [
    ('{"case": "code-edit/000", "method": "unfold"}', "category"),  # a JSON object, but not a row
    (None, "est_speedup"),  # a row of an older version: a field this version no longer has
])
def test_a_json_line_that_is_not_a_row_raises(tmp_path, line, field):
    a = three_rows()[0]
    if line is None:
        line = json.dumps({**a.to_json(), "est_speedup": 2.0})
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(a.to_json()) + "\n" + line + "\n")
    with pytest.raises(PLDError, match=rf"r\.jsonl:2 .*{field}"):
        list(ResultStore(path).rows())


def append_all(store: ResultStore, rows) -> None:
    for row in rows:
        store.append(row)


# -- reusable -------------------------------------------------------------------------------------
def test_reusable_keeps_rows_whose_code_is_current(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    append_all(store, [
        case_row(case="c/0", method="unfold", code="k-unfold"),
        case_row(case="c/1", method="unfold", code="k-old"),  # made before unfold's code changed
        case_row(case="c/0", method="voting", code="k-voting"),
        case_row(case="c/0", method="gone", code="k-gone"),  # a method not in this comparison
    ])
    kept = reusable(store, False, {"unfold": "k-unfold", "voting": "k-voting-new", "none": "k-none"})
    assert list(kept) == [("c/0", "unfold")]
    assert kept[("c/0", "unfold")].code == "k-unfold"
    everything = reusable(store, False, {"unfold": "k-unfold", "voting": "k-voting", "gone": "k-gone"})
    assert set(everything) == {("c/0", "unfold"), ("c/0", "voting"), ("c/0", "gone")}


def test_reusable_fresh_keeps_nothing_and_moves_the_old_file_aside(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    store.append(case_row(method="unfold", code="k"))
    before = store.path.read_bytes()
    assert reusable(store, True, {"unfold": "k"}) == {}
    assert not store.path.exists()  # the new run starts a file of its own ...
    [aside] = tmp_path.glob("r.*.jsonl")
    assert aside.read_bytes() == before  # ... and nothing is lost
    store.append(case_row(method="unfold", code="k"))
    assert reusable(store, True, {"unfold": "k"}) == {}
    assert len(list(tmp_path.glob("r.*.jsonl"))) == 2  # a second --fresh in the same second: no clash


def test_reusable_skips_rows_of_another_version_that_readers_refuse(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    store.append(case_row(case="c/0", method="unfold", code="k"))
    with store.path.open("a") as f:
        f.write('{"tau": 1.0}\n')  # a row of an older layout: stale whatever its code
    assert list(reusable(store, False, {"unfold": "k"})) == [("c/0", "unfold")]
    with pytest.raises(PLDError):  # a reader that shows rows still fails loudly
        list(store.rows())


def test_reusable_keeps_the_latest_row_of_a_case(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    append_all(store, [case_row(case="c/0", method="unfold", code="k", new_tokens=n) for n in (1, 2)])
    assert reusable(store, False, {"unfold": "k"})[("c/0", "unfold")].new_tokens == 2


# -- code_key -------------------------------------------------------------------------------------
def test_code_key_is_stable_and_follows_the_profile():
    key = code_key()
    assert key == code_key() and len(key) == 16 and int(key, 16) >= 0
    flat, slower = CostProfile.flat(64), CostProfile.flat(64, seconds=2.0)
    assert code_key(profile=flat) == code_key(profile=CostProfile.flat(64))
    assert len({key, code_key(profile=flat), code_key(profile=slower)}) == 3


def test_code_key_of_a_built_in_drafter_is_the_packages_key():
    # lookup/ is hashed whole: naming one of its classes adds nothing (and a built-in type is no file)
    assert code_key(lookup.get("unfold")) == code_key() == code_key(int)


PLUGIN = '''
import lookup


class Plugin(lookup.Drafter):
    def propose(self, budget):
        return lookup.Draft(tokens=__import__("numpy").zeros({n}, dtype="int64"))
'''


def import_file(name: str, path: Path, monkeypatch):
    """Import ``path`` as module ``name`` the way an installed plug-in is: registered in sys.modules."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def test_code_key_follows_a_plugin_file_outside_the_repo(tmp_path, monkeypatch):
    path = tmp_path / "my_drafter.py"
    assert not path.resolve().is_relative_to(store_module.ROOT)
    path.write_text(textwrap.dedent(PLUGIN.format(n=0)))
    before = import_file("pld_test_plugin_v1", path, monkeypatch).Plugin
    key_before = code_key(before)
    assert key_before == code_key(before) and key_before != code_key()
    path.write_text(textwrap.dedent(PLUGIN.format(n=1)) + "\n# edited\n")
    after = import_file("pld_test_plugin_v2", path, monkeypatch).Plugin
    assert code_key(after) != key_before
    assert code_key(after, profile=CostProfile.flat(64)) != code_key(after)


@pytest.fixture
def checkout_with_venv(tmp_path, monkeypatch):
    """A checkout at tmp_path/repo whose virtual environment lives inside it (as `make` sets up .venv)."""
    root = tmp_path / "repo"
    site = root / ".venv" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(store_module, "ROOT", root)
    store_module._package_digest.cache_clear()  # digests of the fake checkout, and of the real one after
    yield site
    store_module._package_digest.cache_clear()


def test_code_key_follows_a_plugin_installed_in_the_checkouts_venv(checkout_with_venv, monkeypatch):
    path = checkout_with_venv / "pld_venv_plugin.py"
    path.write_text(textwrap.dedent(PLUGIN.format(n=0)))
    key_before = code_key(import_file("pld_venv_plugin_v1", path, monkeypatch).Plugin)
    path.write_text(textwrap.dedent(PLUGIN.format(n=1)) + "\n# edited\n")
    assert code_key(import_file("pld_venv_plugin_v2", path, monkeypatch).Plugin) != key_before


def test_code_key_follows_the_file_of_a_wrapped_drafter(tmp_path):
    import lookup

    path = tmp_path / "inner_drafter.py"
    source = ("from lookup import Draft, Drafter\n\n\nclass Inner(Drafter):\n"
              "    def propose(self, budget):\n        return Draft(self.context[-1:][:budget])\n")
    path.write_text(source)
    before = code_key(lookup.create("adaptive", base=str(path)))
    assert code_key(lookup.create("adaptive", base=str(path))) == before
    path.write_text(source + "\n# edited\n")
    assert code_key(lookup.create("adaptive", base=str(path))) != before


def test_code_key_follows_the_data_that_ships_with_the_code(tmp_path, monkeypatch):
    """A refit acceptance fit (pldcore/fits/*.json) drafts otherwise: rows made with the old fit
    are not reused."""
    for package in store_module.CODE_PACKAGES:
        (tmp_path / package).mkdir(parents=True)
        (tmp_path / package / "code.py").write_text("x = 1\n")
    fit = tmp_path / "lookup" / "acceptance" / "fits" / "model.hash.json"
    fit.parent.mkdir(parents=True)
    fit.write_text('{"intercept": 1.0}\n')
    monkeypatch.setattr(store_module, "ROOT", tmp_path)
    store_module._package_digest.cache_clear()
    try:
        before = code_key()
        fit.write_text('{"intercept": 2.0}\n')
        store_module._package_digest.cache_clear()
        assert code_key() != before
    finally:
        store_module._package_digest.cache_clear()
