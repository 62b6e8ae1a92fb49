"""Constructor parameter checks."""

from __future__ import annotations

import numpy as np
import pytest

import lookup
from lookup.params import require_bool, with_history
from pldcore.setting import reference_setting


def test_require_bool_passes_bools():
    assert require_bool("tree", True) is True and require_bool("tree", False) is False
    assert require_bool("tree", np.bool_(True)) is True


@pytest.mark.parametrize("value", ["false", "yes", "", 0, 1, None, 1.0, [True]])
def test_require_bool_names_the_parameter(value):
    with pytest.raises(TypeError, match=r"^tree must be True or False, got "):
        require_bool("tree", value)


def test_with_history_adds_it_to_a_named_base_only_when_on():
    params = {"max_tokens": 8}
    assert with_history("suffix-automaton", params, True) == {"max_tokens": 8, "history": True}
    assert with_history("suffix-automaton", params, False) == params
    assert with_history(object(), params, False) == params and params == {"max_tokens": 8}  # a copy


@pytest.mark.parametrize("wrapper", ["adaptive", "recycling"])
def test_every_wrapper_refuses_a_history_for_a_base_given_as_an_instance(wrapper):
    base = lookup.create("suffix-automaton")
    with pytest.raises(ValueError, match="by name"):
        lookup.create(wrapper, base=base, history=True, setting=reference_setting())
    with pytest.raises(TypeError, match="history must be True or False"):
        lookup.create(wrapper, history="yes", setting=reference_setting())
