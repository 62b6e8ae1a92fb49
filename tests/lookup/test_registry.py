from __future__ import annotations

from importlib import metadata

import pytest

import lookup
from lookup import registry
from lookup.base import EMPTY_DRAFT, Drafter


def test_builtins_are_registered():
    assert {"none", "unfold"} <= set(lookup.available())


def test_unknown_name_lists_close_names():
    with pytest.raises(lookup.UnknownDrafterError, match=r"did you mean 'unfold'"):
        lookup.create("unfod")
    with pytest.raises(lookup.PLDError, match="available: "):
        lookup.create("zzzzzz")


def test_unknown_name_message():
    msg = lookup.unknown_name("drafter", "unfodl", ["unfold", "voting", "adaptive", "unfold"])
    assert msg == "unknown drafter 'unfodl'; did you mean 'unfold'? available: adaptive, unfold, voting"
    assert lookup.unknown_name("task", "zzzz", ["code", "chat"]) == "unknown task 'zzzz'; available: chat, code"
    assert lookup.unknown_name("entry point", "x", []) == "unknown entry point 'x'; available: (none)"
    # the closest first
    assert "did you mean 'suffix-tree', 'suffix-automaton'? " in lookup.unknown_name("drafter", "suffix", ["suffix-automaton", "suffix-tree"])


def test_unknown_drafter_error_is_the_shared_message():
    with pytest.raises(lookup.UnknownDrafterError) as info:
        lookup.get("unfodl")
    assert str(info.value) == lookup.unknown_name("drafter", "unfodl", lookup.available())


def test_bad_params_name_the_drafter():
    with pytest.raises(TypeError, match="'unfold'"):
        lookup.create("unfold", no_such_param=1)


def test_register_rejects_non_drafters_and_name_clashes():
    with pytest.raises(TypeError):
        lookup.register("not-a-drafter")(int)

    class Other(Drafter):
        def propose(self, budget):
            return EMPTY_DRAFT

    with pytest.raises(ValueError, match="already taken"):
        lookup.register("unfold")(Other)


def test_entry_point_plugins_are_found(monkeypatch):
    class Plugin(Drafter):
        def propose(self, budget):
            return EMPTY_DRAFT

    class FakeEntryPoint:
        name = "plugin-test"

        def load(self):
            return Plugin

    real = metadata.entry_points
    monkeypatch.setattr(
        registry.metadata,
        "entry_points",
        lambda group=None, **kw: [FakeEntryPoint()] if group == registry.ENTRY_POINT_GROUP else real(group=group, **kw),
    )
    try:
        assert "plugin-test" in lookup.available()
        assert isinstance(lookup.create("plugin-test"), Plugin)
    finally:
        registry._REGISTRY.pop("plugin-test", None)
