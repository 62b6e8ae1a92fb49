"""A tiny GGUF file written by the tests themselves: a 2-layer llama with random weights and a
byte-level BPE tokenizer, small enough to write and convert in a second or two."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _byte_symbols() -> list[str]:
    """GPT-2's printable stand-in for each byte (its byte-level BPE alphabet)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return [out[b] for b in range(256)]


def write_tiny_gguf(path: str | Path, arch: str = "llama", seed: int = 0, hidden: int = 32, layers: int = 2) -> Path:
    """Write a tiny random-weight model of ``arch`` as GGUF (float32 tensors) to ``path``."""
    import gguf

    path = Path(path)
    rng = np.random.default_rng(seed)
    symbols = _byte_symbols()
    merges = ["Ġ t", "h e", "Ġt he", "i n", "e r"]
    tokens = symbols + [m.replace(" ", "") for m in merges] + ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab, heads, kv_heads, ffn = len(tokens), 4, 2, 2 * hidden
    head_dim = hidden // heads
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name("tiny-test-model")
    w.add_context_length(256)
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([1] * (vocab - 3) + [3, 3, 3])
    w.add_token_merges(merges)
    w.add_bos_token_id(vocab - 3)
    w.add_eos_token_id(vocab - 1)
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

    def tensor(name: str, *shape: int) -> None:
        scale = 1.0 if len(shape) == 1 else 1.0 / np.sqrt(shape[-1])
        value = np.ones(shape, np.float32) if len(shape) == 1 else rng.normal(0, scale, shape).astype(np.float32)
        w.add_tensor(name, value)

    tensor("token_embd.weight", vocab, hidden)
    for i in range(layers):
        tensor(f"blk.{i}.attn_norm.weight", hidden)
        tensor(f"blk.{i}.attn_q.weight", hidden, hidden)
        tensor(f"blk.{i}.attn_k.weight", kv_heads * head_dim, hidden)
        tensor(f"blk.{i}.attn_v.weight", kv_heads * head_dim, hidden)
        tensor(f"blk.{i}.attn_output.weight", hidden, hidden)
        tensor(f"blk.{i}.ffn_norm.weight", hidden)
        tensor(f"blk.{i}.ffn_gate.weight", ffn, hidden)
        tensor(f"blk.{i}.ffn_up.weight", ffn, hidden)
        tensor(f"blk.{i}.ffn_down.weight", hidden, ffn)
    tensor("output_norm.weight", hidden)
    tensor("output.weight", vocab, hidden)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
