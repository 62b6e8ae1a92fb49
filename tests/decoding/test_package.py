"""The package's import surface: ``import decoding`` stays free of transformers, and the lazy
names (PEP 562) behave like ordinary imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import decoding

ROOT = Path(__file__).resolve().parents[2]

#: modules that must not need transformers to import: the loop, replay on traces, cost estimates
LIGHT = ["decoding", "decoding.generate", "decoding.inputs", "decoding.devices", "decoding.target",
         "decoding.trace_target", "decoding.cost", "decoding.loading", "decoding.sampling",
         "decoding.acceptance", "decoding.tree", "decoding.reference", "decoding.lossless"]

PROBE = """
import importlib, json, sys
from decoding.generate import generate
import decoding
for name in {light!r}:
    importlib.import_module(name)
from decoding.cost import estimated_times
from decoding.generate import StepRecord
from pldcore.cost import CPU_SMOLLM2
estimated_times([StepRecord(10, 3, 2, 3, 0.0, 0.0)], CPU_SMOLLM2)
before = "transformers" in sys.modules
decoding.cache_dir(), decoding.default_device()
after_light_names = "transformers" in sys.modules
from decoding import ModelTarget
print(json.dumps(dict(before=before, after_light_names=after_light_names,
                      generate_is_function=callable(decoding.generate) and not hasattr(decoding.generate, "__path__")
                      and type(decoding.generate).__name__ == "function",
                      after_model_target="transformers" in sys.modules)))
"""


def test_import_decoding_does_not_import_transformers():
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(light=LIGHT)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == dict(before=False, after_light_names=False, generate_is_function=True, after_model_target=True)


def test_lazy_names_are_the_real_objects():
    from decoding import ModelTarget, cache_dir, default_device, load_model
    from decoding.devices import default_device as devices_default
    from decoding.loading import cache_dir as loading_cache_dir
    from decoding.loading import load_model as loading_load_model
    from decoding.model_target import ModelTarget as RealModelTarget

    assert ModelTarget is RealModelTarget and decoding.ModelTarget is RealModelTarget
    assert load_model is loading_load_model and decoding.load_model is loading_load_model
    assert cache_dir is loading_cache_dir and default_device is devices_default


def test_generate_is_the_function_even_after_importing_its_module():
    import decoding.generate  # the submodule shares the function's name
    from decoding.generate import generate

    assert decoding.generate is generate and callable(decoding.generate)


def test_dir_lists_every_public_name_and_unknown_names_raise():
    assert set(decoding.__all__) <= set(dir(decoding))
    for name in decoding.__all__:
        assert getattr(decoding, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'load_modle'"):
        decoding.load_modle  # noqa: B018
