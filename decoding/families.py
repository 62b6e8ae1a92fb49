"""Tiny random-weight models of the main Hugging Face decoder families, built from configs (no download).

The verifier's family checks (``tests/decoding/test_families.py``) and the GPU check
(``experiments/gpu_check.py``) build the same models from here, and decode the same
:data:`PROMPTS`: each family's own config knobs in :data:`FAMILIES`, the sizes filled in by
:func:`tiny_family`. transformers is imported when a
model is built, not with this module.
"""

from __future__ import annotations

from typing import Sequence

import torch

from decoding.model_target import ModelTarget

#: the families :func:`tiny_family` builds: name -> (config class, model class, config kwargs).
#: Sizes are filled in by tiny_family; these are each family's own knobs (sliding windows of 8,
#: shorter than the tests' prompts, so rolling sliding-window cache layers are exercised).
FAMILIES: dict[str, tuple[str, str, dict]] = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 8}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 8}),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM",
               {"head_dim": 8, "sliding_window": 8, "final_logit_softcapping": None,
                "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]}),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM",
               {"head_dim": 8, "sliding_window": 8, "final_logit_softcapping": None,
                "layer_types": ["sliding_attention", "sliding_attention", "full_attention"]}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {}),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {}),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {}),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", {}),
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM",
                  {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                   "shared_expert_intermediate_size": 32}),
}


#: repetitive prompts for the family checks: drafts get accepted and rejected. The first two are
#: longer than the sliding windows (8); the third is shorter and the output crosses it; the last is
#: a single token.
PROMPTS: list[list[int]] = [
    [3, 17, 5, 3, 17, 5, 9, 3, 17, 5, 3, 17, 8, 3, 17, 22, 41, 3, 17, 5, 9, 3, 17],
    [7, 1, 2, 7, 1, 2, 30, 31, 7, 1, 2, 30, 31, 7, 1, 50, 7, 1, 2, 30, 31, 32, 7, 1, 2, 30, 31, 7, 1, 2, 30],
    [11, 12, 11, 12, 11],
    [4],
]


class IdTokenizer:
    """Enough of a tokenizer for a model without one: ids print as ``<id>``."""

    eos_token_id: int | None = None
    chat_template = None

    def __init__(self, eos_token_id: int | None = None) -> None:
        self.eos_token_id = eos_token_id

    def decode(self, ids: Sequence[int], **_) -> str:
        return "".join(f"<{int(i)}>" for i in ids)


def family_config(family: str, vocab_size: int = 64, layers: int = 3, hidden: int = 32, heads: int = 4,
                  max_positions: int = 256, **overrides):
    """The transformers config of a tiny ``family`` model (one of :data:`FAMILIES`): ``layers``
    layers of width ``hidden``, an untied LM head, no special tokens; ``overrides`` replace config
    fields (e.g. ``sliding_window``). Raises KeyError for a family not in :data:`FAMILIES`."""
    import transformers

    config_name, _, own = FAMILIES[family]
    if family == "gpt2":
        sizes = dict(n_embd=hidden, n_layer=layers, n_head=heads, n_inner=2 * hidden, n_positions=max_positions)
    else:
        sizes = dict(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                     num_attention_heads=heads, max_position_embeddings=max_positions)
        if family != "gpt_neox":
            sizes["num_key_value_heads"] = max(1, heads // 2)
    return getattr(transformers, config_name)(
        vocab_size=vocab_size, bos_token_id=None, eos_token_id=None, pad_token_id=None,
        tie_word_embeddings=False, **sizes, **{**own, **overrides})


def tiny_family(family: str, vocab_size: int = 64, seed: int = 0, layers: int = 3, hidden: int = 32,
                heads: int = 4, max_positions: int = 256, sharpen: float = 8.0,
                device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32, **overrides) -> ModelTarget:
    """A random-weight model of one of the :data:`FAMILIES` (:func:`family_config`), as a target on
    ``device`` in ``dtype``. ``sharpen`` scales its (untied) LM head: a random init is close to
    uniform, and sharper logits make greedy paths distinct. The weights depend on ``seed`` only
    (drawn in float32 on the CPU, then moved), so every device and dtype gets the same model."""
    import transformers

    config = family_config(family, vocab_size, layers, hidden, heads, max_positions, **overrides)
    torch.manual_seed(seed)
    model = getattr(transformers, FAMILIES[family][1])(config).eval()
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(sharpen)
    model.generation_config.eos_token_id = None
    model = model.to(device=device, dtype=dtype)
    return ModelTarget(model, IdTokenizer(), name=f"tiny-{family}")
