"""Finding 5 of the third red team, for the base package's readers: a fit file (``adaptive:fits=F``)
and a cost profile (``--profile F``) are checked where they are read, and a bad one is one line
(a PLDError), never a traceback, a MemoryError, or a run that silently drafts nothing."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import lookup
from lookup.acceptance import first_token, later_nodes
from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.errors import PLDError
from pldcore.fits import FEATURES, Fits, default_fits
from pldcore.hardware import PROFILES, profile_from, read_profile


def shipped_fit() -> dict:
    return json.loads(default_fits().to_json())


def test_the_feature_counts_are_the_models_own():
    assert FEATURES == {"first": len(first_token.FEATURES), "later": len(later_nodes.FEATURES)}


def fit_with(**change) -> dict:
    data = shipped_fit()
    data["first"]["context"].update(change)
    return data


@pytest.mark.parametrize("data, says", [
    (fit_with(coefficients=[float("nan")] * FEATURES["first"]), "finite numbers"),
    (fit_with(intercept=float("inf")), "finite numbers"),
    (fit_with(coefficients=[0.1] * 3), "has 3"),
    (fit_with(coefficients="0.1"), "has str"),
    (fit_with(coefficients=[True] * FEATURES["first"]), "finite numbers"),
])
def test_a_fit_that_cannot_be_used_is_refused_where_it_is_read(tmp_path, data, says):
    path = tmp_path / "fits.json"
    path.write_text(json.dumps(data))  # json writes NaN and Infinity, as the red team's file held them
    for read in (lambda: Fits.load(path), lambda: Fits.from_dict(data),
                 lambda: lookup.create("adaptive", fits=str(path))):
        with pytest.raises(PLDError, match=says) as exc:
            read()
        assert "\n" not in str(exc.value)


def test_fit_files_too_big_too_deep_or_not_files_are_one_line(tmp_path):
    big = tmp_path / "big.json"
    big.write_text(json.dumps(fit_with(coefficients=[0.1] * 3_000_000)))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    for path, says in ((big, "over 1 MiB"), (deep, "nested deeper than 64"), (zero, "not a regular file")):
        with pytest.raises(PLDError, match=says):
            Fits.load(path)


def profile_dict(**change) -> dict:
    return {**json.loads(CPU_SMOLLM2.to_json()), **change}


@pytest.mark.parametrize("change, says", [
    ({"seconds": [-0.03] + list(CPU_SMOLLM2.seconds[1:])}, "positive finite"),
    ({"seconds": [math.nan] * len(CPU_SMOLLM2.sizes)}, "positive finite"),
    ({"seconds": [0.0] * len(CPU_SMOLLM2.sizes)}, "positive finite"),
    ({"seconds": list(CPU_SMOLLM2.seconds[::-1])}, "falls"),
    ({"grid": [list(row) for row in CPU_SMOLLM2.grid[::-1]]}, "column 0 falls"),
    ({"prefill": [1.0, 0.5, 2.0, 3.0]}, "falls"),
    ({"sizes": [1.5] + list(CPU_SMOLLM2.sizes[1:])}, "integers"),
])
def test_a_profile_that_cannot_price_a_run_is_refused(tmp_path, change, says):
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile_dict(**change)))
    for read in (lambda: read_profile(path, "--profile"), lambda: profile_from(str(path), "--profile")):
        with pytest.raises(PLDError, match=says) as exc:
            read()
        assert str(exc.value).startswith("--profile: ") and "\n" not in str(exc.value)


def test_profile_files_too_big_or_not_files_are_one_line(tmp_path):
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    big = tmp_path / "big.json"
    big.write_text(json.dumps(profile_dict(host="x" * (2 << 20))))
    for path, says in ((zero, "not a regular file"), (big, "over 1 MiB"), (tmp_path / "none.json", "no file")):
        with pytest.raises(PLDError, match=says):
            read_profile(path, "--profile")


def test_every_profile_we_ship_or_measure_passes_the_check(tmp_path):
    for name, profile in PROFILES.items():
        assert CostProfile.from_dict(json.loads(profile.to_json())) == profile, name
    measured = CostProfile((1, 2, 4), (0.01, 0.01, 0.02), contexts=(64, 128), grid=((0.01, 0.01, 0.02),) * 2)
    assert CostProfile.from_dict(json.loads(measured.to_json())) == measured  # flat stretches are fine
    assert np.isfinite(read_profile(_saved(tmp_path, CPU_SMOLLM2)).relative(8))


def _saved(tmp_path, profile: CostProfile):
    path = tmp_path / "ok.json"
    profile.save(path)
    return path
