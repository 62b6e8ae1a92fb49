"""A transformers causal LM as a :class:`~decoding.target.Target`: forward with a KV cache, crop on rejection.

Token trees (:meth:`ModelTarget.score_tree`) go through the same forward with a custom 4D
attention mask (``[1, 1, q, cache + q]``, 0 where visible and the dtype's minimum elsewhere: an
additive float mask works for both ``sdpa`` and ``eager`` attention, which transformers passes
through untouched) and position ids by depth. After the walk, :meth:`ModelTarget.keep_path`
gathers the accepted inputs' keys and values into place (``index_select`` on the sequence
dimension of every layer) and crops the rest. Whether a model honours all that is checked once
per target with a tiny tree against the chain path (:meth:`ModelTarget.tree_support`).

Sliding-window models (Mistral, Gemma 2/3, ...) get transformers' rolling cache layers
(``DynamicSlidingWindowLayer``: only the last ``window - 1`` keys and values), which cannot be
cropped once the window is full unless they record the past. So after the prefill the cache is
told to record it (``activate_past_recording``, what transformers' own assisted generation does):
a forward then keeps all its new entries until :meth:`ModelTarget.keep` crops the rejected ones,
and that crop (``crop(0)`` when all were accepted) rolls every sliding layer back to its window.
The model still builds its own sliding-window mask from the cache, exactly as in ``generate``.
Token trees stay refused there: a rolling layer holds no absolute positions to gather a path in.
"""

from __future__ import annotations

import inspect
import time
from typing import Sequence

import numpy as np
import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from decoding.devices import synchronize
from decoding.target import Scores, Target, TopRows, top_rows
from decoding.tree import TreeLayout
from decoding.vocab import vocab_strings
from lookup.errors import PLDError

#: a tree forward may differ from the chain path by float noise, never by this share of the
#: difference that seeing a sibling makes (what a model that ignores the 4D mask would show)
TREE_PROBE_TOLERANCE = 0.05


class ModelTarget(Target):
    """Wraps a transformers model and tokenizer; holds the KV cache of the current sequence.

    The cache lives here, never on the model object, so one model can serve many targets.
    """

    def __init__(self, model, tokenizer, name: str = "model") -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.device = next(model.parameters()).device
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.eos_token_ids = frozenset(_eos_ids(model, tokenizer))
        self.max_length = getattr(model.config, "max_position_embeddings", None)
        self._cache: DynamicCache | None = None
        self._rolling = False  # the cache has layers that must be cropped (rolled back) after every forward
        self._cached = 0  # tokens in the cache
        self._pending = 0  # tokens appended by the last score(), not yet kept or dropped
        # transformers 5.x renamed `past_key_values` to `cache`; use whichever this model takes
        params = inspect.signature(model.forward).parameters
        self._cache_kwarg = "cache" if "cache" in params else "past_key_values"
        # older transformers call it num_logits_to_keep; some models take neither
        self._last_logits_kwarg = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None)
        self._tree_problem: str | None = None  # why trees cannot be verified ("" = they can); None = not probed

    # -- the Target interface -------------------------------------------------------------
    @torch.inference_mode()
    def start(self, prompt_ids: Sequence[int], top_k: int = 0) -> TopRows | None:
        self._cache = DynamicCache(config=self.model.config)
        self._cached = self._pending = 0
        head = list(prompt_ids)[:-1]
        if not head:  # a one-token prompt has nothing to prefill
            self._record_past()
            return top_rows(torch.zeros(0, self.vocab_size), top_k) if top_k else None
        # the prefill's logits are thrown away unless asked for: skip the LM head for all but one row
        logits = self._forward(np.asarray(head, dtype=np.int64), all_logits=top_k > 0)
        self._cached, self._pending = len(head), 0
        self._record_past()
        return top_rows(logits, top_k) if top_k else None

    @torch.inference_mode()
    def score(self, tokens: np.ndarray) -> Scores:
        if self._cache is None:
            raise RuntimeError("call start() before score()")
        if self._pending:  # the previous step's keep() was skipped: drop the unverified tail
            self.keep(0)
        synchronize(self.device)
        t0 = time.perf_counter()
        logits = self._forward(tokens)  # [n, V]
        argmax = logits.argmax(dim=-1).cpu().numpy()  # .cpu() synchronises too
        seconds = time.perf_counter() - t0
        self._pending = len(tokens)
        return Scores(argmax=argmax, logits=logits, seconds=seconds)

    def keep(self, n: int) -> None:
        if not 0 <= n <= self._pending:
            raise ValueError(f"keep({n}) but only {self._pending} tokens were scored")
        self._cached += n
        self._pending = 0
        dropped = self._cache.get_seq_length() - self._cached
        # a negative crop removes tokens, in every transformers version we support; crop(0) rolls
        # sliding-window layers back to their window (only asked where such layers record the past:
        # in old versions crop(0) would empty the cache)
        if dropped or self._rolling:
            self._cache.crop(-dropped)

    @torch.inference_mode()
    def score_tree(self, tokens: np.ndarray, parents: np.ndarray) -> Scores:
        if self._cache is None:
            raise RuntimeError("call start() before score_tree()")
        self.tree_support(raise_error=True)  # once per target, before the clock starts
        if self._pending:
            self.keep(0)
        layout = TreeLayout.of(parents)
        synchronize(self.device)
        t0 = time.perf_counter()
        logits = self._forward(tokens, layout)  # [n+1, V]
        argmax = logits.argmax(dim=-1).cpu().numpy()
        seconds = time.perf_counter() - t0
        self._pending = len(tokens)
        return Scores(argmax=argmax, logits=logits, seconds=seconds)

    @torch.inference_mode()
    def keep_path(self, inputs: np.ndarray) -> None:
        inputs = np.asarray(inputs, dtype=np.int64)
        n = len(inputs)
        if n < 1 or inputs[0] != 0 or (np.diff(inputs) <= 0).any() or inputs[-1] >= self._pending:
            raise ValueError(f"keep_path({inputs.tolist()}) is not a path of the {self._pending} inputs scored")
        if inputs[-1] != n - 1:  # not a prefix: move the path's entries into place first
            start = self._cached
            index = torch.as_tensor(inputs[1:] + start, device=self.device)  # [n-1]
            for layer in self._cache.layers:
                # the path only moves entries backwards (inputs[j] >= j), and index_select copies
                # before the slice is written, so no entry is overwritten before it is read
                layer.keys[:, :, start + 1 : start + n] = layer.keys.index_select(2, index)
                layer.values[:, :, start + 1 : start + n] = layer.values.index_select(2, index)
        self.keep(n)

    def tree_support(self, raise_error: bool = False) -> bool:
        """Whether this model verifies token trees exactly (probed once per target with a few tiny forwards).

        The probe runs a 3-node tree with 4D mask and depth positions on a scratch cache, keeps a
        non-prefix path, and compares the logits with chain forwards. A model whose attention
        ignores custom 4D masks (e.g. flash-attention kernels) or whose cache is not a plain
        ``DynamicCache`` (sliding-window or linear layers) fails with the reason.
        """
        if self._tree_problem is None:
            self._tree_problem = _probe_trees(self)
        if self._tree_problem and raise_error:
            raise PLDError(self._tree_problem)
        return not self._tree_problem

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)

    def vocab(self) -> Sequence[str] | None:
        # decoded once per tokenizer, and only when a drafter asks (decoding.vocab)
        return None if self.tokenizer is None else vocab_strings(self.tokenizer, self.vocab_size)

    # -- helpers ---------------------------------------------------------------------------
    def _record_past(self) -> None:
        """After the prefill: make sliding-window (rolling) cache layers keep a forward's new
        entries until :meth:`keep` crops them, so a rejected draft can be rolled back. Not before
        the prefill: a rolling layer would then hold the whole prompt (transformers' note on it)."""
        rolling = [layer for layer in self._cache.layers if hasattr(layer, "record_past")]
        self._rolling = bool(rolling) and hasattr(self._cache, "activate_past_recording")
        if self._rolling:
            self._cache.activate_past_recording()

    def _forward(self, tokens: np.ndarray, tree: TreeLayout | None = None, all_logits: bool = True) -> torch.Tensor:
        """Run the model over ``tokens`` ([n]) appended to the cache; returns logits [n, V]
        (``all_logits=False``: [1, V], the last row only, where the model supports it).

        With ``tree``, input ``i`` sits at position ``cache + depth(i)`` and sees the cache and
        its ancestors only (a 4D additive mask); without, the inputs are a chain.
        """
        ids = torch.as_tensor(tokens, dtype=torch.long, device=self.device).unsqueeze(0)  # [1, n]
        positions = torch.arange(self._cached, self._cached + ids.shape[1], device=self.device)  # [n]
        extra = {}
        if tree is not None:
            positions = torch.as_tensor(tree.depths + self._cached, device=self.device)  # [n]
            extra["attention_mask"] = tree_mask(tree, self._cached, self.model.dtype, self.device)
        out = self.model(
            input_ids=ids,
            **{self._cache_kwarg: self._cache},
            cache_position=positions,
            position_ids=positions.unsqueeze(0),
            use_cache=True,
            **extra,
            **({} if all_logits or not self._last_logits_kwarg else {self._last_logits_kwarg: 1}),
        )
        return out.logits[0].float()

    def chat_ids(self, messages: str | list[dict], system: str | None = None) -> list[int]:
        """Token ids of a chat prompt, ready for the assistant's answer.

        ``messages`` is a user message or a list of ``{"role", "content"}`` dicts.
        """
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        if system is not None:
            messages = [{"role": "system", "content": system}, *messages]
        if getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            if hasattr(ids, "keys"):  # some versions return a BatchEncoding
                ids = ids["input_ids"]
            return [int(t) for t in ids]
        # no template: a plain transcript is the best we can do
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "
        return self.tokenizer(text)["input_ids"]

    def __repr__(self) -> str:
        return f"ModelTarget({self.name!r}, device={self.device}, dtype={self.model.dtype})"


def tree_mask(tree: TreeLayout, cached: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Additive attention mask of a tree forward after ``cached`` tokens: [1, 1, n, cached + n],
    0 where input ``i`` may attend (the whole cache, its ancestors, itself), the dtype's minimum elsewhere."""
    n = len(tree)
    if not dtype.is_floating_point:
        dtype = torch.float32
    mask = torch.zeros(1, 1, n, cached + n, dtype=dtype, device=device)
    hidden = torch.as_tensor(~tree.visible(), device=device)  # [n, n]
    mask[0, 0, :, cached:].masked_fill_(hidden, torch.finfo(dtype).min)
    return mask


@torch.inference_mode()
def _probe_trees(target: ModelTarget) -> str:
    """Why ``target`` cannot verify trees exactly ("" when it can); runs on a scratch cache."""
    who = f"{target.name} ({type(target.model).__name__}, attention {getattr(target.model.config, '_attn_implementation', '?')})"
    cache = DynamicCache(config=target.model.config)
    odd = [type(layer).__name__ for layer in cache.layers if type(layer) is not DynamicLayer]
    if odd:
        window = getattr(target.model.config.get_text_config(decoder=True), "sliding_window", None)
        why = f" (sliding-window attention, window {window})" if "Sliding" in odd[0] and window else ""
        return (f"{who} cannot verify token trees: its cache has {odd[0]} layers{why}, and only plain "
                f"DynamicCache layers can keep a tree path; use a drafter that proposes chains")
    V = target.vocab_size
    a, b, x, y, z, w = (int(t) % V for t in (11, 12, 13, 14, 15, 16))
    scratch = ModelTarget(target.model, target.tokenizer, target.name)  # same model, its own cache
    scratch._tree_problem = ""  # the probe itself must not recurse

    def chain(seq: list[int]) -> torch.Tensor:  # logits after the last token of [a, *seq]
        scratch.start([a, *seq])
        return scratch.score(np.asarray(seq[-1:], dtype=np.int64)).logits[-1]

    try:
        good_y, good_z = chain([b, y]), chain([b, x, z])
        wrong_y = chain([b, x, y])  # what y would see if the mask were ignored
        scratch.start([a, b])
        # inputs: b (root), x and y its children, z a child of x
        tree = scratch.score_tree(np.asarray([b, x, y, z]), np.asarray([-1, -1, 0])).logits
        scratch.keep_path(np.asarray([0, 1, 3]))  # keep b, x, z: a path that is not a prefix
        after = scratch.score(np.asarray([w])).logits[-1]
        good_after = chain([b, x, z, w])
    except Exception as exc:  # noqa: BLE001 - any failure means "no trees", said clearly
        return f"{who} cannot verify token trees: a tree forward failed ({type(exc).__name__}: {exc})"
    sep = float((good_y - wrong_y).abs().max())
    err = max(float((tree[2] - good_y).abs().max()), float((tree[3] - good_z).abs().max()),
              float((after - good_after).abs().max()))
    if not err <= TREE_PROBE_TOLERANCE * sep:
        return (f"{who} cannot verify token trees: with a custom 4D attention mask its logits differ from the chain "
                f"path by {err:.3g} (a sibling's influence is {sep:.3g}); it may ignore 4D masks — try "
                f"attn_implementation='sdpa' or 'eager'")
    return ""


def _eos_ids(model, tokenizer) -> set[int]:
    """EOS ids from both the generation config and the tokenizer (they can disagree)."""
    ids: set[int] = set()
    for source in (getattr(model, "generation_config", None), model.config, tokenizer):
        eos = getattr(source, "eos_token_id", None)
        if eos is None:
            continue
        ids.update([eos] if isinstance(eos, int) else eos)
    return {int(i) for i in ids}
