"""Drafter specs: splitting outside brackets and quotes, values, and name:key=value."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lookup
from pldcore.errors import PLDError
from lookup.params import annotation_kinds, type_problem
from lookup.specs import parse_list, parse_spec, parse_value, split_top_level

SEPARATORS = [":", ",", "="]
PLAIN = "abcxyz019_.- +"  # no separator, bracket or quote


plain = st.text(alphabet=PLAIN, max_size=6)


def guarded(sep: str) -> st.SearchStrategy[str]:
    """Text that may hold ``sep``: inside one bracket pair or one pair of quotes, or a Python
    string literal of any text (brackets, quotes and backslashes escaped as repr writes them)."""
    inner = st.text(alphabet=PLAIN + sep, max_size=6)
    literal = st.text(alphabet=PLAIN + sep + "'\"\\()[]{}", max_size=6).map(repr)
    return st.one_of(literal, *[inner.map(lambda s, o=o, c=c: o + s + c) for o, c in ("()", "[]", "{}", "''", '""')])


@st.composite
def pieces_and_separator(draw):
    sep = draw(st.sampled_from(SEPARATORS))
    atom = st.one_of(plain, guarded(sep))
    pieces = draw(st.lists(st.lists(atom, max_size=3).map("".join), min_size=1, max_size=6))
    return pieces, sep


@settings(max_examples=300, deadline=None)
@given(pieces_and_separator())
def test_split_top_level_round_trips_a_join(case):
    pieces, sep = case
    assert split_top_level(sep.join(pieces), sep) == pieces


@pytest.mark.parametrize(
    "text, sep, want",
    [
        ("a:b={'x':1}", ":", ["a", "b={'x':1}"]),
        ('a:"b:c":d', ":", ["a", '"b:c"', "d"]),
        ("x:(1,2):[3:4]", ":", ["x", "(1,2)", "[3:4]"]),
        ("a:[{'k': ('v:w',)}]:b", ":", ["a", "[{'k': ('v:w',)}]", "b"]),
        ("'it''s:x'", ":", ["'it''s:x'"]),  # two quoted strings back to back
        ("\"a'b\":c", ":", ["\"a'b\"", "c"]),  # the other kind of quote inside a string
        ("'a\\'b:c':d", ":", ["'a\\'b:c'", "d"]),  # an escaped quote does not close the string
        ("'a\\\\':d", ":", ["'a\\\\'", "d"]),  # an escaped backslash does not escape the quote
        ("", ":", [""]),
        (":", ":", ["", ""]),
        ("a::b", ":", ["a", "", "b"]),
    ],
)
def test_split_top_level_examples(text, sep, want):
    assert split_top_level(text, sep) == want


@pytest.mark.parametrize(
    "text, want",
    [
        ("a, b,c", ["a", "b", "c"]),
        ("a,, b , ", ["a", "b"]),
        ("", []),
        ("voting:decay=(0.5,1),none", ["voting:decay=(0.5,1)", "none"]),
        ("'a,b',c", ["'a,b'", "c"]),
        ("x={'p': [1, 2]}, y", ["x={'p': [1, 2]}", "y"]),
    ],
)
def test_parse_list(text, want):
    assert parse_list(text) == want


@pytest.mark.parametrize(
    "text, want",
    [
        ("3", 3),
        ("-2.5", -2.5),
        ("(2, 2)", (2, 2)),
        ("'voting'", "voting"),
        ("True", True),
        ("true", True),
        ("TRUE", True),
        ("false", False),
        ("False", False),
        ("fAlSe", False),
        ("None", None),
        ("none", None),
        ("null", None),
        ("NULL", None),
        ("'none'", "none"),  # quoted: the drafter named "none"
        ("'false'", "false"),
        ("{'tree': false, 'decay': null}", {"tree": False, "decay": None}),
        ("[true, 1]", [True, 1]),
        ("voting", "voting"),
        ("suffix-automaton", "suffix-automaton"),
        ("truex", "truex"),
        ("a b", "a b"),
        (" 8 ", 8),
        ("", ""),
        ("{[1]: 2}", "{[1]: 2}"),  # parses, but is no value: stays text
        ("f(x)", "f(x)"),
    ],
)
def test_parse_value(text, want):
    got = parse_value(text)
    assert got == want and type(got) is type(want)


@settings(max_examples=200, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
))
def test_parse_value_reads_back_every_repr(value):
    assert parse_value(repr(value)) == value


def test_parse_spec_examples():
    assert parse_spec("voting") == ("voting", {})
    assert parse_spec("voting:tree=false:max_tokens=8") == ("voting", {"tree": False, "max_tokens": 8})
    assert parse_spec("adaptive:base='voting':base_params={'tree':True,'min_match':1}") == (
        "adaptive", {"base": "voting", "base_params": {"tree": True, "min_match": 1}})
    assert parse_spec("adaptive:base=voting") == ("adaptive", {"base": "voting"})
    assert parse_spec("adaptive:base='peer:vllm-ngram'") == ("adaptive", {"base": "peer:vllm-ngram"})
    assert parse_spec("suffix-automaton:length_rule=(2, 1):occurrence=earliest") == (
        "suffix-automaton", {"length_rule": (2, 1), "occurrence": "earliest"})
    assert parse_spec(" voting : tree = true ") == ("voting", {"tree": True})


@pytest.mark.parametrize(
    "spec, message",
    [
        ("voting:tree", "bad parameter 'tree' in 'voting:tree': write name:key=value"),
        ("voting:=3", "bad parameter '=3' in 'voting:=3': write name:key=value"),
        ("voting:", "bad parameter '' in 'voting:': write name:key=value"),
        ("voting:max-tokens=3", "bad parameter 'max-tokens=3'"),
        ("", "no name in ''"),
        (":tree=true", "no name in ':tree=true'"),
        ("voting:tree=true:tree=false", "parameter 'tree' given twice"),
        ("adaptive:base=peer:vllm-ngram", "quote a value that holds a colon: base='peer:vllm-ngram'"),
    ],
)
def test_parse_spec_refuses_malformed_specs(spec, message):
    with pytest.raises(PLDError) as info:
        parse_spec(spec)
    assert message in str(info.value)


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=10)
keys = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
values = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)  # repr(inf) is no literal | st.text(max_size=6) | st.tuples(st.integers(), st.integers())


@settings(max_examples=200, deadline=None)
@given(names, st.dictionaries(keys, values, max_size=4))
def test_parse_spec_reads_back_a_written_spec(name, params):
    spec = ":".join([name, *(f"{k}={v!r}" for k, v in params.items())])
    assert parse_spec(spec) == (name, params)


def test_a_parsed_false_turns_tree_mode_off():
    name, params = parse_spec("voting:tree=false")
    assert lookup.create(name, **params).tree is False
    name, params = parse_spec("voting:tree=yes")
    with pytest.raises(TypeError, match="tree"):
        lookup.create(name, **params)


# -- a spec's mistakes are one line with a suggestion (lookup.create, lookup.params) ----------------------
def spec_error(spec: str) -> str:
    name, params = parse_spec(spec)
    with pytest.raises(TypeError) as info:
        lookup.create(name, **params)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_value_of_the_wrong_type_names_parameter_type_default_and_value():
    assert spec_error("suffix-automaton:max_tokens=eight") == (
        "drafter 'suffix-automaton': max_tokens must be int, e.g. max_tokens=16 (the default); got 'eight'")
    assert "max_tokens must be int" in spec_error("suffix-automaton:max_tokens=8.0")
    assert "max_tokens must be int" in spec_error("suffix-automaton:max_tokens=true")  # a bool is no count
    # caught before the constructor runs: this one was taken silently, to fail in the first propose
    assert "history_tokens must be int" in spec_error("suffix-automaton:history_tokens=many")
    assert "length_rule must be Callable[[int], int] | tuple[float, float] | None" in spec_error(
        "suffix-automaton:length_rule=[2, 2]")


def test_a_misspelt_key_suggests_the_close_names():
    message = spec_error("suffix-automaton:max_token=8")
    assert message.startswith("drafter 'suffix-automaton': unknown parameter 'max_token'; did you mean 'max_tokens'")


def test_values_of_the_right_kind_pass():
    lookup.create("adaptive", prior_strength=2)  # an int where a float is asked
    lookup.create("suffix-automaton", max_tokens=np.int64(8), length_rule=None, history=np.bool_(False))
    lookup.create("suffix-automaton", length_rule=lambda m: m)  # a callable
    lookup.create("peer:hf-prompt-lookup", eos_token_id=[2, 3])


def int_parameters(name: str) -> list[str]:
    return [p.name for p in inspect.signature(lookup.get(name)).parameters.values()
            if annotation_kinds(str(p.annotation)) in (["int"], ["int", "None"])]


@pytest.mark.parametrize("name", lookup.available())
def test_every_drafter_refuses_a_word_for_a_count_naming_the_parameter(name):
    for key in int_parameters(name):
        with pytest.raises(TypeError, match=rf"^drafter '{re.escape(name)}': {key} must be int"):
            lookup.create(name, **{key: "eight"})


def test_int_parameters_are_found():
    assert {"max_tokens", "history_tokens", "min_match"} <= set(int_parameters("suffix-automaton"))


@pytest.mark.parametrize(
    "annotation, kinds",
    [
        ("int", ["int"]),
        ("int | None", ["int", "None"]),
        ("'float'", ["float"]),
        ("Optional[int]", ["int", "None"]),
        ("typing.Union[int, str]", ["int", "str"]),
        ("dict[str, int | None] | None", ["dict", "None"]),
        ("Callable[[int], int] | tuple[float, float] | None", ["Callable", "tuple", "None"]),
        ("Occurrence | str", None),  # a type of its own: only the constructor can judge
        ("CostProfile | str | None", None),
    ],
)
def test_annotation_kinds(annotation, kinds):
    assert annotation_kinds(annotation) == kinds


def test_type_problem_passes_the_default_and_judges_untyped_numbers_only_when_asked():
    def f(a: int = None, b=2.0, c="x"):  # noqa: RUF013  a default of another type than its annotation
        pass

    a, b, c = inspect.signature(f).parameters.values()
    assert type_problem("a", None, a) is None
    assert type_problem("a", "1", a) == "a must be int, e.g. a=None (the default); got '1'"
    assert type_problem("b", "big", b) is None
    assert type_problem("b", "big", b, untyped=True) == "b must be float, e.g. b=2.0 (the default); got 'big'"
    assert type_problem("c", 5, c, untyped=True) is None  # an untyped string promises nothing
