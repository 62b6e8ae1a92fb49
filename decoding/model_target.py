"""A transformers causal LM as a :class:`~decoding.target.Target`: forward with a KV cache, crop on rejection.

Token trees (:meth:`ModelTarget.score_tree`) go through the same forward with custom 4D attention
masks (additive float masks, 0 where visible and the dtype's minimum elsewhere: they work for both
``sdpa`` and ``eager`` attention, which transformers passes through untouched) and position ids by
depth. After the walk, :meth:`ModelTarget.keep_path` gathers the accepted inputs' keys and values
into place (``index_select`` on the sequence dimension of every layer) and crops the rest. Whether
a model honours all that is checked once per target with tiny trees against the chain path
(:meth:`ModelTarget.tree_support`).

Sliding-window models (Mistral, Gemma 2/3, ...) get transformers' rolling cache layers
(``DynamicSlidingWindowLayer``: only the last ``window - 1`` keys and values), which cannot be
cropped once the window is full unless they record the past. So after the prefill the cache is
told to record it (``activate_past_recording``, what transformers' own assisted generation does):
a forward then keeps all its new entries until :meth:`ModelTarget.keep` crops the rejected ones,
and that crop (``crop(0)`` when all were accepted) rolls every sliding layer back to its window.
Chains let the model build its own sliding-window mask from the cache, exactly as in ``generate``.

Trees use the same rolling cache. A rolling layer holds the last ``window - 1`` positions, which is
all a query at the root's position or deeper can see, and during a forward the new entries are its
last ``n``, so a path is gathered there as in a plain layer. What a tree needs on top is one mask
per kind of layer (:func:`tree_mask`): full-attention layers see the whole cache; sliding layers
see only keys at positions ``> query position - window`` (transformers' rule) among their held
entries. A model with both kinds gets them as a dict keyed by layer type (``{"full_attention": m1,
"sliding_attention": m2}``, what Gemma 2/3 read); one with a single kind gets the tensor.
"""

from __future__ import annotations

import inspect
import time
from typing import Sequence

import numpy as np
import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

from decoding.devices import synchronize
from decoding.target import Scores, Target, TopRows, top_rows
from decoding.tree import TreeLayout
from decoding.vocab import vocab_strings
from pldcore.errors import PLDError

try:  # transformers' own rule for the attention type of each layer, which sizes the cache layers (5.x)
    from transformers.cache_utils import get_layer_types_and_kwargs
except ImportError:  # older versions: the config's list, else one type from its window
    get_layer_types_and_kwargs = None

#: a tree forward may differ from the chain path by float noise, never by this share of the
#: difference that seeing a sibling makes (what a model that ignores the 4D mask would show)
TREE_PROBE_TOLERANCE = 0.05
#: the probe's context outgrows a sliding window up to this size, so a wrong window rule shows in its
#: logits; a wider window is probed on a short context (same code, checked on the tiny families)
PROBE_MAX_WINDOW = 1024
#: the cache layer each layer type must have for trees: (layer class, whether the sliding rule applies)
TREE_LAYERS: dict[str, tuple[type, bool]] = {
    "full_attention": (DynamicLayer, False),
    "sliding_attention": (DynamicSlidingWindowLayer, True),
}
#: prefill rows turned into top ids at a time: a softmax over all [P, V] logits at once would double
#: their memory (1 GB more for 1,000 tokens of a 262k vocabulary)
TOP_ROWS_BLOCK = 128


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
        self._layer_types: list[str] | None = None  # each layer's attention type, read at the first tree

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
        return _top_rows_in_blocks(logits, top_k) if top_k else None

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

    @property
    def cache_kwarg(self) -> str:
        """The keyword this model's forward takes its cache by (``cache`` in transformers 5.x, else
        ``past_key_values``)."""
        return self._cache_kwarg

    def detach_cache(self) -> DynamicCache:
        """Hand over the current sequence's cache (after :meth:`start`: the prompt's head); the target
        forgets it, and :meth:`start` begins another. For decoding several sequences at once
        (:mod:`decoding.batch_decode`)."""
        if self._cache is None:
            raise RuntimeError("call start() before detach_cache()")
        cache, self._cache = self._cache, None
        self._cached = self._pending = 0
        return cache

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
            for layer in self._cache.layers:
                if not layer.is_initialized:  # a layer that stores nothing (KV sharing)
                    continue
                # the scored inputs are every layer's last `pending` entries: at the cache length in a
                # plain layer, after the (at most window - 1) held ones in a rolling layer
                start = layer.keys.shape[-2] - self._pending
                index = torch.as_tensor(inputs[1:] + start, device=layer.keys.device)  # [n-1]
                # the path only moves entries backwards (inputs[j] >= j), and index_select copies
                # before the slice is written, so no entry is overwritten before it is read
                layer.keys[:, :, start + 1 : start + n] = layer.keys.index_select(2, index)
                layer.values[:, :, start + 1 : start + n] = layer.values.index_select(2, index)
        self.keep(n)

    def tree_support(self, raise_error: bool = False) -> bool:
        """Whether this model verifies token trees exactly (probed once per target with a few small forwards).

        The probe runs a 3-node tree with 4D masks and depth positions on a scratch cache whose
        context is longer than the model's sliding window (up to :data:`PROBE_MAX_WINDOW`), keeps a
        non-prefix path, and compares the logits with chain forwards. A model whose attention
        ignores custom 4D masks (e.g. flash-attention kernels), applies its window differently, or
        whose cache has layers other than plain and sliding-window ones (chunked, linear) fails
        with the reason.
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
            extra["attention_mask"] = self._tree_masks(tree)
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

    def _tree_masks(self, tree: TreeLayout) -> torch.Tensor | dict[str, torch.Tensor]:
        """The attention masks of a tree forward over the current cache: one :func:`tree_mask`
        ([1, 1, n, held + n]) per layer type, as a dict keyed by type when the model has several,
        else the tensor. Raises PLDError for a cache layer trees cannot use (see :data:`TREE_LAYERS`)."""
        if self._layer_types is None:
            self._layer_types = _layer_types(self.model)
        kinds: dict[str, tuple[int, int | None]] = {}  # layer type -> (entries held, window)
        for kind, layer in zip(self._layer_types, self._cache.layers):
            cls, sliding = TREE_LAYERS.get(kind, (None, False))
            if type(layer) is not cls:
                raise PLDError(f"its cache has {type(layer).__name__} layers for {kind!r} attention")
            stored = layer.keys.shape[-2] if layer.is_initialized else 0
            window = layer.sliding_window if sliding else None
            # a rolling layer hands attention at most its last window - 1 held entries (its update)
            held = min(stored, window - 1) if sliding else stored
            if kinds.setdefault(kind, (held, window)) != (held, window):
                raise PLDError(f"its {kind!r} layers hold different lengths ({kinds[kind][0]} and {held})")
        dtype = self.model.dtype
        masks = {kind: tree_mask(tree, self._cached, dtype, self.device, held, window)
                 for kind, (held, window) in kinds.items()}
        # a model with one kind of layer reads one tensor (Mistral's sliding layers, Llama's full ones)
        return next(iter(masks.values())) if len(masks) == 1 else masks

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


def tree_mask(tree: TreeLayout, cached: int, dtype: torch.dtype, device: torch.device,
              held: int | None = None, window: int | None = None) -> torch.Tensor:
    """Additive attention mask of a tree forward after ``cached`` tokens: [1, 1, n, held + n].

    The keys are the cache's last ``held`` entries (positions ``cached - held`` .. ``cached - 1``;
    default all ``cached``), then the ``n`` inputs (position ``cached + depth``). Input ``i`` may
    attend to the cache, its ancestors and itself (0), nothing else (the dtype's minimum); with a
    sliding ``window``, only to keys at positions ``> its position - window``, transformers' rule
    (``masking_utils.sliding_window_overlay``), applied to the inputs' depth positions too.
    """
    n = len(tree)
    held = cached if held is None else held
    if not dtype.is_floating_point:
        dtype = torch.float32
    visible = torch.ones(n, held + n, dtype=torch.bool, device=device)
    visible[:, held:] = torch.as_tensor(tree.visible(), device=device)  # [n, n]
    if window is not None:
        depths = torch.as_tensor(tree.depths, device=device) + cached  # [n]
        keys = torch.cat([torch.arange(cached - held, cached, device=device), depths])  # [held + n]
        visible &= keys[None, :] > depths[:, None] - window
    mask = torch.zeros(1, 1, n, held + n, dtype=dtype, device=device)
    mask[0, 0].masked_fill_(~visible, torch.finfo(dtype).min)
    return mask


def _top_rows_in_blocks(logits: torch.Tensor, k: int) -> TopRows:
    """:func:`~decoding.target.top_rows` of ``logits`` [P, V], :data:`TOP_ROWS_BLOCK` rows at a time
    (each row's softmax and top-k are its own, so the result is the same)."""
    if len(logits) <= TOP_ROWS_BLOCK:
        return top_rows(logits, k)
    return TopRows.joined([top_rows(logits[i : i + TOP_ROWS_BLOCK], k) for i in range(0, len(logits), TOP_ROWS_BLOCK)])


def _layer_types(model) -> list[str]:
    """Each decoder layer's attention type, as transformers sizes the cache layers from it
    (``sliding_attention`` where a layer has a window, else ``full_attention``, unless the config
    lists them)."""
    config = model.config.get_text_config(decoder=True)
    if get_layer_types_and_kwargs is not None:
        return list(get_layer_types_and_kwargs(config)[0])
    sliding = getattr(config, "sliding_window", None) is not None
    return list(getattr(config, "layer_types", None)
                or ["sliding_attention" if sliding else "full_attention"] * config.num_hidden_layers)


@torch.inference_mode()
def _probe_trees(target: ModelTarget) -> str:
    """Why ``target`` cannot verify trees exactly ("" when it can); runs on a scratch cache.

    One prefill of a context longer than the model's sliding window (when it has one, up to
    :data:`PROBE_MAX_WINDOW`), then chain forwards and a tree forward from it: the tree's deepest
    inputs sit where the window has moved past the oldest held keys, so a wrong window rule shows.
    """
    who = f"{target.name} ({type(target.model).__name__}, attention {getattr(target.model.config, '_attn_implementation', '?')})"
    cache = DynamicCache(config=target.model.config)
    kinds = _layer_types(target.model)
    odd = next(((kind, layer) for kind, layer in zip(kinds, cache.layers)
                if type(layer) is not TREE_LAYERS.get(kind, (None,))[0]), None)
    if odd is not None:
        kind, layer = odd
        return (f"{who} cannot verify token trees: its {kind!r} layers cache in {type(layer).__name__}, and trees "
                f"need full or sliding-window attention layers (cached in DynamicLayer, DynamicSlidingWindowLayer); "
                f"use a drafter that proposes chains")
    V = target.vocab_size
    a, b, x, y, z, w = (int(t) % V for t in (11, 12, 13, 14, 15, 16))
    windows = [layer.sliding_window for layer in cache.layers if isinstance(layer, DynamicSlidingWindowLayer)]
    window = max([wd for wd in windows if wd <= PROBE_MAX_WINDOW], default=0)
    # a context past the window (the rolling layers full and trimmed), made of spread-out ids
    context = [a] + [(17 + 7919 * i) % V for i in range(window + 3 if window else 0)]
    scratch = ModelTarget(target.model, target.tokenizer, target.name)  # same model, its own cache
    scratch._tree_problem = ""  # the probe itself must not recurse

    def chain(seq: list[int]) -> torch.Tensor:  # [V] logits after the last token of context + [b, *seq]
        # score() drops the previous unverified forward first, so every chain starts from the context
        return scratch.score(np.asarray([b, *seq], dtype=np.int64)).logits[-1]

    try:
        scratch.start([*context, b])
        good_y, good_z, wrong_y = chain([y]), chain([x, z]), chain([x, y])  # wrong_y: if the mask were ignored
        good_after = chain([x, z, w])
        # inputs: b (root), x and y its children, z a child of x
        tree = scratch.score_tree(np.asarray([b, x, y, z]), np.asarray([-1, -1, 0])).logits
        scratch.keep_path(np.asarray([0, 1, 3]))  # keep b, x, z: a path that is not a prefix
        after = scratch.score(np.asarray([w])).logits[-1]
    except Exception as exc:  # noqa: BLE001 - any failure means "no trees", said clearly
        return f"{who} cannot verify token trees: a tree forward failed ({type(exc).__name__}: {exc})"
    sep = float((good_y - wrong_y).abs().max())
    err = max(float((tree[2] - good_y).abs().max()), float((tree[3] - good_z).abs().max()),
              float((after - good_after).abs().max()))
    if not err <= TREE_PROBE_TOLERANCE * sep:
        how = f" and a sliding window of {window}" if window else ""
        return (f"{who} cannot verify token trees: with custom 4D attention masks{how} its logits differ from "
                f"the chain path by {err:.3g} (a sibling's influence is {sep:.3g}); it may ignore 4D masks — try "
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
