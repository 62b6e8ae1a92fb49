"""transformers' generate() plans a drafter for the model it runs on: its cached (or measured) cost
profile on its device, or a named one, never the embedded model's CPU profile by default."""

from __future__ import annotations

import torch
from toys import tiny_llama

from decoding import setting as setting_module
from decoding.integrations import hf
from pldcore.cost import CostProfile
from pldcore.hardware import profile_named

#: a prompt whose continuation the tiny model's drafts often miss: what to send then depends on the profile
PROMPT = [26, 28, 4, 18, 34, 33, 27, 21, 32, 24, 39, 15] * 3
#: forwards over up to 64 tokens cost as much as one (a large GPU), with a context axis as a
#: measurement has: what a cached measurement of a big-GPU model looks like
CHEAP_WIDE = CostProfile((1, 64, 65), (0.02, 0.02, 0.04), model="tiny-llama", device="cuda:0",
                         contexts=(128, 2048), grid=((0.02, 0.02, 0.04), (0.02, 0.02, 0.04)))


def drafted(model, monkeypatch, **kwargs) -> tuple[int, list]:
    """Draft nodes verified over one call of generate() with ``adaptive``, through the integration's own
    path (the setting it resolves, the drafter it builds), and the drafters it built."""
    runs, built = [], []
    real = hf.speculative_generate

    def spy(target, prompt, drafter, *args, **kw):
        built.append(drafter)
        out = real(target, prompt, drafter, *args, **kw)
        runs.append(out.stats.drafted)
        return out

    monkeypatch.setattr(hf, "speculative_generate", spy)
    model.generate(torch.tensor([PROMPT]), custom_generate=hf.generate, drafter="adaptive", max_new_tokens=48,
                   do_sample=False, **kwargs)
    return sum(runs), built


def test_a_model_s_cached_profile_is_what_its_drafts_are_planned_under(monkeypatch, tmp_path, capsys):
    model = tiny_llama(vocab_size=48, seed=3, eos_token_id=47).model
    # no profile of this model cached: the stand-in for a measurement (conftest) is the CPU profile
    cpu_nodes, (cpu_drafter,) = drafted(model, monkeypatch)
    assert cpu_drafter.setting.profile.device == "cpu (2 cores)"
    # a cached measurement of this model on its device: cheap wide forwards
    cached = tmp_path / "tiny.json"
    CHEAP_WIDE.save(cached)
    monkeypatch.setattr(setting_module, "profile_path", lambda target: cached)
    gpu_nodes, (gpu_drafter,) = drafted(model, monkeypatch)
    assert gpu_drafter.setting.profile == CHEAP_WIDE and gpu_drafter.setting.model == "LlamaForCausalLM"
    assert gpu_nodes > cpu_nodes > 0  # the same drafter drafts longer where wide forwards are cheap
    assert "planned under measured on cpu, cached in" in capsys.readouterr().err  # said in one line


def test_a_named_profile_wins_over_the_cached_one(monkeypatch):
    model = tiny_llama(vocab_size=48, seed=3, eos_token_id=47).model
    _, (drafter,) = drafted(model, monkeypatch, profile="h100-8b")
    assert drafter.setting.profile == profile_named("h100-8b")
    assert drafter.setting.profile_source == "named h100-8b"


def test_a_drafter_that_plans_nothing_needs_no_profile(monkeypatch, capsys):
    model = tiny_llama(vocab_size=48, seed=3, eos_token_id=47).model
    monkeypatch.setattr(setting_module, "cost_profile", lambda target, **kw: (_ for _ in ()).throw(AssertionError))
    model.generate(torch.tensor([PROMPT]), custom_generate=hf.generate, drafter="suffix-automaton", max_new_tokens=8,
                   do_sample=False)
    assert "planned under" not in capsys.readouterr().err  # nothing resolved, nothing said
