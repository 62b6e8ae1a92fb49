from __future__ import annotations

from importlib import metadata

import pytest

import lookup
from lookup import registry
from lookup.base import EMPTY_DRAFT, Drafter


def test_builtins_are_registered():
    assert {"plain", "unfold"} <= set(lookup.available())


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


def test_a_misspelt_parameter_is_one_line_with_the_close_names():
    with pytest.raises(TypeError) as info:
        lookup.create("suffix-automaton", max_token=8)
    message = str(info.value)
    assert message.startswith("drafter 'suffix-automaton': unknown parameter 'max_token'; did you mean 'max_tokens'")
    assert "available: " in message and "min_match" in message and "\n" not in message
    with pytest.raises(TypeError, match=r"^drafter 'none': unknown parameter 'x'; available: \(none\)$"):
        lookup.create("none", x=1)


def test_a_value_of_the_wrong_type_names_the_parameter_its_type_and_default():
    # the constructor itself fails with "'<' not supported between instances of 'str' and 'int'"
    with pytest.raises(TypeError) as info:
        lookup.create("suffix-automaton", max_tokens="eight")
    assert str(info.value) == ("drafter 'suffix-automaton': max_tokens must be int, e.g. max_tokens=16 (the default); "
                               "got 'eight'")
    with pytest.raises(TypeError, match=r"num_pred_tokens must be int, e.g. num_pred_tokens=10 \(the default\); got \[3\]"):
        lookup.create("unfold", num_pred_tokens=[3])


TYPED = """
from lookup.base import EMPTY_DRAFT, Drafter


class Typed(Drafter):
    # annotations as objects (this source has no ``from __future__``), a quoted one, an untyped number
    def __init__(self, width: int | None = None, scale=2.0, label: "str" = "x", **_ignored):
        super().__init__()
        self.width = 0 if width is None else width + 1  # a str width fails here: "can only concatenate"
        self.scale = scale * 1.5 - 1  # and a str scale here
        self.label = label + "!"

    def propose(self, budget):
        return EMPTY_DRAFT
"""


def test_type_hints_and_defaults_judge_a_failing_value_and_extra_keywords_pass_through():
    namespace: dict = {}
    exec(compile(TYPED, "typed.py", "exec"), namespace)
    registry._REGISTRY["typed-test"] = namespace["Typed"]
    try:
        assert lookup.create("typed-test", width=3, anything=1).width == 4  # **_ignored: any keyword is taken
        with pytest.raises(TypeError, match=r"^drafter 'typed-test': label must be str, e.g. label='x'"):
            lookup.create("typed-test", label=5)
        with pytest.raises(TypeError, match=r"^drafter 'typed-test': width must be int \| None, e.g. width=None"):
            lookup.create("typed-test", width="3")
        with pytest.raises(TypeError, match=r"scale must be float, e.g. scale=2.0 \(the default\); got 'big'"):
            lookup.create("typed-test", scale="big")
    finally:
        registry._REGISTRY.pop("typed-test", None)


def test_a_failure_the_signature_cannot_explain_keeps_its_own_message():
    with pytest.raises(TypeError, match=r"^drafter 'adaptive': base must be a drafter name or instance"):
        lookup.create("adaptive", base=None)


def test_the_plain_drafter_is_plain_and_none_is_its_unlisted_alias():
    """``none`` parses as Python's None in a spec's value (``adaptive:base=none``): the drafter is named
    ``plain``; ``none`` still creates it, and is not listed (nothing is compared or scored twice)."""
    from lookup.specs import parse_spec

    assert type(lookup.create("none")) is type(lookup.create("plain")) and lookup.create("none").name == "plain"
    assert "plain" in lookup.available() and "none" not in lookup.available()
    assert "none" not in lookup.builtin_names() and lookup.canonical("none") == "plain"
    assert parse_spec("adaptive:base=plain")[1] == {"base": "plain"}
    assert lookup.create("adaptive", base="plain").propose(4).tokens.tolist() == []
    with pytest.raises(TypeError, match="base=plain"):
        lookup.create("adaptive", base=None)
