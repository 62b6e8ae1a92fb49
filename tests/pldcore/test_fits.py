"""Fit files: what they hold, how they read back, and which one a model gets."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lookup.acceptance import AcceptanceModel
from pldcore.fits import Fits, default_fits, fits_for
from pldcore import fits as fits_module
from pldcore.errors import PLDError


def test_the_shipped_fit_reads_back_to_the_same_text():
    shipped = default_fits()
    assert shipped.model == fits_module.DEFAULT_MODEL and shipped.path.parent == fits_module.FOLDER
    assert Fits.from_json(shipped.to_json()).to_json() == shipped.path.read_text()
    assert set(shipped.first) == {"context", "history", "context, with a history"}
    assert all(len(c) == 8 for c, _ in shipped.first.values()) and all(len(c) == 10 for c, _ in shipped.later.values())


def test_a_model_without_a_fit_gets_the_embedded_models():
    assert fits_for("SmolLM2-135M-Instruct (reference)") is default_fits()
    assert fits_for("google/gemma-3-270m") is default_fits()


def test_a_fit_of_another_model_is_found_by_its_name(tmp_path, monkeypatch):
    other = Fits("Other-Model", "0123456789abcdef", {}, {"context": (np.zeros(8), -1.0)}, {}, {})
    embedded = default_fits()
    monkeypatch.setattr(fits_module, "FOLDER", tmp_path)
    other.save(tmp_path / fits_module.file_name(other.model, other.benchmark))
    embedded.save(tmp_path / embedded.path.name)
    assert fits_for("Other-Model").model == "Other-Model"
    assert fits_for("Other-Model (measured here)").model == fits_module.DEFAULT_MODEL  # exact names only
    assert fits_for("SmolLM2-135M-Instruct").model == fits_module.DEFAULT_MODEL


def test_a_fit_is_chosen_by_model_and_regime(tmp_path, monkeypatch):
    greedy = Fits("Other-Model", "0123456789abcdef", {}, {"context": (np.zeros(8), -1.0)}, {}, {})
    sampled = Fits("Other-Model", "0123456789abcdef", {}, {"context": (np.ones(8), -1.0)}, {}, {}, regime="t1")
    embedded = default_fits()
    monkeypatch.setattr(fits_module, "FOLDER", tmp_path)
    greedy.save(tmp_path / "a.json")
    sampled.save(tmp_path / "b.json")
    embedded.save(tmp_path / embedded.path.name)
    assert fits_for("Other-Model", "t1").regime == "t1" and fits_for("Other-Model").regime == "greedy"
    assert fits_for("Other-Model", "t0.7").regime == "greedy"  # no fit of that regime: the model's greedy one
    assert Fits.load(tmp_path / "b.json").regime == "t1" and '"regime"' not in greedy.to_json()


def test_coefficients_are_rounded_so_that_a_refit_writes_the_same_file():
    fits = Fits("m", "b", {"k": 1}, {"context": (np.array([0.12345, -0.00001]), 1.23456)}, {}, {})
    data = json.loads(fits.to_json())
    assert data["first"]["context"] == {"coefficients": [0.123, 0.0], "intercept": 1.235}
    assert '"coefficients": [0.123, 0.0]' in fits.to_json()  # one line per list


@pytest.mark.parametrize("text, says", [("{", "not a fit file"), ('{"format": 99}', "fit format 99"),
                                        ('{"format": 1, "model": "m"}', "not a fit file"),
                                        ('[1, 2]', "not a fit file")])
def test_a_bad_fit_file_is_one_line(tmp_path, text, says):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(PLDError, match=says):
        Fits.load(path)
    with pytest.raises(PLDError, match="cannot read the fits"):
        Fits.load(tmp_path / "missing.json")


def test_a_fit_file_without_a_fit_leaves_those_nodes_to_the_statistics():
    from lookup.base import Agreement, Evidence

    sparse = Fits("m", "b", {}, {}, {}, {})
    model = AcceptanceModel(max_tokens=4, fits=sparse)
    evidence = Evidence("context", 3, Agreement(3, np.array([4, 3, 3]), np.array([3, 3, 3])))
    row = model.row("context", 3)
    assert model.chain(row, evidence, 3).tolist() == model.rates(row)[:3].tolist()
