"""The bound on parameters from outside (pldcore.params): what a spec holds passes unchanged, and
anything deeper, bigger or of another type is one PLDError, never a RecursionError or a hang."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pldcore.errors import PLDError
from pldcore.params import MAX_PARAMS_BYTES, MAX_PARAMS_DEPTH, check_params

scalars = st.none() | st.booleans() | st.integers(-2**63 + 1, 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=20)
names = st.text(min_size=1, max_size=16)


def nested(depth: int):
    """Values whose lists and objects nest at most ``depth`` levels."""
    if depth == 0:
        return scalars
    inner = nested(depth - 1)
    return scalars | st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3)


def depth_of(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


@given(st.dictionaries(names, nested(MAX_PARAMS_DEPTH - 1), max_size=4))
def test_what_a_spec_holds_passes_unchanged(params):
    if len(json.dumps(params, separators=(",", ":")).encode()) > MAX_PARAMS_BYTES:
        with pytest.raises(PLDError, match="bytes"):
            check_params(params)
        return
    assert check_params(params) is params


@given(st.dictionaries(names, nested(MAX_PARAMS_DEPTH + 2), min_size=1, max_size=3))
def test_deeper_than_the_bound_is_refused_in_one_line(params):
    deep = 1 + max(depth_of(v) for v in params.values())
    small = len(json.dumps(params, separators=(",", ":")).encode()) <= MAX_PARAMS_BYTES
    if deep <= MAX_PARAMS_DEPTH and small:
        assert check_params(params) is params
    else:
        with pytest.raises(PLDError) as exc:
            check_params(params, "--params")
        assert str(exc.value).startswith("--params") and "\n" not in str(exc.value)


def test_the_red_team_s_parameters_are_refused():
    for depth in (60, 200_000):  # 60: what bricked the board; 200k: past Python's stack
        value: object = 1
        for _ in range(depth):
            value = [value]
        with pytest.raises(PLDError, match=f"nested deeper than {MAX_PARAMS_DEPTH}"):
            check_params({"x": value})
    with pytest.raises(PLDError, match="bytes"):
        check_params({"x": list(range(3_000_000))})
    with pytest.raises(PLDError, match="bytes"):
        check_params({"x": "a" * (MAX_PARAMS_BYTES + 1)})
    for bad in (float("nan"), float("inf"), 2**70, b"raw", object(), {1, 2}):
        with pytest.raises(PLDError):
            check_params({"x": bad})
    with pytest.raises(PLDError, match="name"):
        check_params({1: 2})
    with pytest.raises(PLDError, match="object"):
        check_params([1, 2])
    assert check_params({"ngrams": (3, 2), "cap": 8, "mode": "tree", "on": True, "w": None})
