"""experiments/gpu_check.py: its small run on this CPU, with numba, wandb, matplotlib and gguf blocked
(a bare GPU machine may lack them), writes the JSON docs/gpu-check.md describes; its pieces (the
drafter at a fixed acceptance, the logit recorder, the rule of what is identical, the budget) alone.

tqdm is not blocked: transformers itself imports it, so it is wherever transformers is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import decoding
from decoding.families import FAMILIES, PROMPTS, tiny_family
from decoding.reference import hf_generate
from experiments import gpu_check
from pldcore.cost import CostProfile

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ("numba", "wandb", "matplotlib", "gguf")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """(the process, its JSON) of ``gpu_check.py --small`` on the CPU, the optional packages blocked."""
    folder = tmp_path_factory.mktemp("gpu_check")
    (folder / "sitecustomize.py").write_text(f"import sys\nfor name in {BLOCKED!r}:\n    sys.modules[name] = None\n")
    out = folder / "check.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)]), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(ROOT / "experiments" / "gpu_check.py"), "--small", "--device", "cpu",
                           "--out", str(out)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads(out.read_text())


def test_small_run_needs_no_optional_package_and_says_where_it_wrote(small_run):
    proc, report = small_run
    assert report["machine"]["numba"] is False  # lookup's contract came without its drafters
    assert report["small"] is True and report["schema"] == gpu_check.SCHEMA
    assert proc.stdout.strip().splitlines()[-1].startswith("wrote ") and proc.stdout.strip().endswith("check.json")
    assert not report["errors"]
    assert {name: part["status"] for name, part in report["parts"].items()} == dict.fromkeys(
        ("verifier", "overhead", "profiles"), "done")


def test_profiles_load_as_cost_profiles_on_the_planned_grid(small_run):
    _, report = small_run
    plan = gpu_check.SMALL
    assert set(report["parts"]["profiles"]["models"]) == set(gpu_check.MODELS)
    for name, entry in report["parts"]["profiles"]["models"].items():
        profile = CostProfile.from_json(json.dumps(entry["profile"]))
        assert profile.sizes == plan.sizes and profile.contexts == plan.contexts
        assert len(profile.prefill) == len(plan.contexts) and all(t > 0 for row in profile.grid for t in row)
        assert name in profile.model and "bfloat16" in profile.model and profile.spread is not None
        assert entry["parameters"] > 0 and entry["repeats"] == plan.repeats


def test_verifier_covers_every_family_and_fp32_is_identical(small_run):
    _, report = small_run
    part = report["parts"]["verifier"]
    runs = part["runs"]
    assert {r["family"] for r in runs} == set(FAMILIES)
    assert {r["dtype"] for r in runs} == {"fp32", "bf16"}
    drafters = {(r["family"], r["drafter"]) for r in runs}
    for family in FAMILIES:  # every family verifies trees, the sliding-window ones included
        assert (family, "tree-2-of-3") in drafters
        assert part["tree_support"][family] == {"fp32": True, "bf16": True}
    fp32 = part["summary"]["fp32"]
    assert fp32["identity_rate"] == 1.0 and fp32["mismatch"] == 0 and fp32["max_noise_relative"] < 1e-4
    bf16 = part["summary"]["bf16"]
    assert bf16["mismatch"] == 0 and bf16["identical"] + bf16["rounding"] == bf16["runs"]
    for r in runs:  # every run both drafted and accepted, except plain decoding's
        assert (r["drafted"] > 0 and r["accepted"] > 0) == (r["drafter"] != "none"), r


def test_overhead_runs_at_the_fixed_acceptance(small_run):
    _, report = small_run
    runs = report["parts"]["overhead"]["runs"]
    assert [(r["draft"], r["accept"]) for r in runs] == list(gpu_check.OVERHEAD_SETTINGS)
    for r in runs:
        assert r["forward_us"] > 0 and r["loop_us"] >= 0 and r["step_us"] >= r["forward_us"]
    assert runs[1]["acceptance"] == pytest.approx(0.5, abs=0.05)  # 4 of 8 each step (the last ones cut short)
    for entry in report["parts"]["profiles"]["models"].values():
        assert [(r["draft"], r["accept"]) for r in entry["overhead"]] == list(gpu_check.OVERHEAD_SETTINGS)


@pytest.mark.parametrize("tree", [False, True])
def test_truth_drafter_accepts_what_it_is_told_and_the_recorder_keeps_each_tokens_row(tree):
    target = tiny_family("llama")
    prompt = PROMPTS[0]
    generated = hf_generate(target, prompt, 30, with_logits=True)
    assert generated.logits.argmax(dim=-1).tolist() == generated.tokens  # the rows generate chose from
    reference = generated.tokens
    recorder = gpu_check.LogitRecorder(target)
    drafter = gpu_check.TruthDrafter(prompt + reference, target.vocab_size, length=3, accept=2, tree=tree)
    out = decoding.generate(recorder, prompt, drafter, 30)
    assert out.tokens == reference
    whole = [s for s in out.stats.steps if s.drafted == (6 if tree else 3)]  # near the end the budget cuts drafts
    assert len(whole) >= len(out.stats.steps) - 3 and all(s.accepted == 2 for s in whole)
    rows = recorder.logits()
    assert rows.shape == (30, target.vocab_size)
    assert rows.argmax(dim=-1).tolist() == out.tokens  # row i chose token i


def _logits(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32)


def test_the_rule_of_identity():
    """Identical: the same tokens. Rounding: the first divergence's top-2 margin is within twice the
    largest noise of that model and dtype where tokens agreed. Otherwise a mismatch."""
    ref = _logits([[5.0, 1.0, 0.0], [0.0, 4.0, 3.9], [2.0, 0.0, 0.0]])
    same = gpu_check.compare_run([0, 1, 0], ref + 0.06, [0, 1, 0], ref)
    assert same["identical"] and same["divergence"] is None and same["noise"] == pytest.approx(0.06)
    assert same["matched"] == 3 and same["scale"] == 5.0
    # a near tie (margin 0.1) swapped at position 1, after an agreeing position 0
    tie = gpu_check.compare_run([0, 2, 0], _logits([[5.0, 1.0, 0.0], [0.0, 3.9, 4.0], [2, 0, 0]]), [0, 1, 0], ref)
    assert not tie["identical"] and tie["matched"] == 1 and tie["noise"] == 0.0
    assert tie["divergence"] == dict(position=1, reference=1, ours=2, margin=pytest.approx(0.1),
                                     gap=pytest.approx(0.1), delta=pytest.approx(0.1))
    # the same kind of swap where the reference was sure (margin 4): no rounding does that
    sure = gpu_check.compare_run([2], _logits([[0.0, 1.0, 6.0]]), [0], _logits([[5.0, 1.0, 0.0]]))
    runs = [dict(family="f", dtype="bf16", **same), dict(family="f", dtype="bf16", **tie),
            dict(family="f", dtype="fp32", **tie), dict(family="g", dtype="bf16", **sure)]
    gpu_check.add_verdicts(runs)
    # model f in bf16 saw noise 0.06 where tokens agreed: a 0.1 margin is within 2 x 0.06; in fp32 it saw none
    assert [r["verdict"] for r in runs] == ["identical", "rounding", "mismatch", "mismatch"]
    assert [r["model_noise"] for r in runs] == [pytest.approx(0.06), pytest.approx(0.06), 0.0, 0.0]


def test_a_spent_budget_cuts_every_part_and_still_writes_the_json(tmp_path, capsys):
    out = tmp_path / "cut.json"
    # 5 s of the budget are kept back for writing: half a second is left for the parts
    assert gpu_check.main(["--small", "--device", "cpu", "--budget-s", str(gpu_check.RESERVE_S + 0.5),
                           "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["parts"]["verifier"]["status"] == "cut" and report["parts"]["verifier"]["runs"]
    assert report["parts"]["profiles"]["status"] in ("cut", "skipped")
    assert report["parts"]["overhead"]["status"] in ("cut", "skipped")
    assert report["elapsed_s"] < 60
    assert f"wrote {out}" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--budget-s", "0"], "--budget-s must be a positive number of seconds"),
    (["--out", "/no/such/folder/x.json"], "folder /no/such/folder does not exist"),
    (["--device", "tpu9"], "device 'tpu9' is not"),
])
def test_user_mistakes_are_one_line(args, message, capsys):
    assert gpu_check.main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
