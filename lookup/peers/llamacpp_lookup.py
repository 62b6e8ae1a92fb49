"""``peer:llamacpp-lookup``: llama.cpp's n-gram cache lookup (``llama-lookup``), ported.

Follows ``common/ngram-cache.cpp`` and ``common/ngram-cache.h`` of ggml-org/llama.cpp (commit
5c5f166e8ba011eb880ebec21497d39e85a91b04; the functions have not changed since the cache moved to
``common_`` names) and how ``examples/lookup/lookup.cpp`` drives them:

* a *context* cache maps every n-gram of the sequence (n = ``ngram_min``..``ngram_max``, 1..4)
  to the counts of the tokens that followed it, updated as tokens are committed;
* to draft, starting from the last committed token, try the n-grams ending at the draft's end,
  longest first: take the most frequent next token if the n-gram was seen often enough and that
  token is frequent enough (the "lax" thresholds: sample size 2, 2, 1, 1 and share 66, 50, 50,
  50 % for n = 1..4); if no n-gram qualifies, try the *dynamic* cache (n-grams of earlier
  generations, "strict" thresholds 4, 3, 2, 2 and 75, 66, 66, 66 %); append and repeat, up to
  ``n_draft`` tokens (``common_params_speculative.n_max``, 16 by default).

Ties between equally frequent tokens go to the first in ``std::unordered_map`` order, which
:class:`lookup.peers.std_int_map.StdIntMap` reproduces (libstdc++), so drafts equal the
original's token for token (``tests/lookup/peers/test_llamacpp_lookup.py`` compiles the original
and compares). A chain built this way need not occur in the context as a whole: each token only
follows some n-gram of what precedes it.

Cross-request history (``history=True``): llama.cpp keeps the dynamic cache in a file
(``--lookup-cache-dynamic``): at the end of a run it merges the context cache into it and saves
it, and the next run loads it. Here ``reset`` starts a new request and merges the same way. Saving
and loading re-inserts each entry's tokens in the order they were written, which changes how ties
would break; the port leaves that out, since no draft can see it: the dynamic cache is read with
the strict thresholds only, whose shares (66 % or more) admit a single most frequent token, and
with no static cache every token weighs the same. (Re-inserting every entry of a cache that grows
with each request was most of this port's time with a history.) Default off: per request.

Left out: the static cache (``--lookup-cache-static``, n-gram statistics of a large corpus made
offline by ``llama-lookup-create``) validates drafts; we have no corpus, and llama.cpp's default
is none.
"""

from __future__ import annotations

from typing import Sequence

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.params import require_bool
from lookup.peers.std_int_map import StdIntMap
from lookup.registry import register

NGRAM_MIN, NGRAM_MAX, NGRAM_STATIC = 1, 4, 2  # LLAMA_NGRAM_MIN, LLAMA_NGRAM_MAX, LLAMA_NGRAM_STATIC
# If sample size or percentage are below these thresholds the draft is aborted early (index: n - ngram_min)
MIN_SAMPLE_LAX = (2, 2, 1, 1)
MIN_PERCENT_LAX = (66, 50, 50, 50)
MIN_SAMPLE_STRICT = (4, 3, 2, 2)
MIN_PERCENT_STRICT = (75, 66, 66, 66)

#: n-gram (a tuple of 1..4 ids) -> counts of the tokens that followed it (common_ngram_cache)
NgramCache = dict[tuple[int, ...], StdIntMap]
_EMPTY_PART = StdIntMap()


def cache_update(cache: NgramCache, ngram_min: int, ngram_max: int, inp: Sequence[int], nnew: int) -> None:
    """``common_ngram_cache_update``: count the n-grams ending before each of the last ``nnew`` tokens."""
    size = len(inp)
    for n in range(ngram_min, ngram_max + 1):
        for i in range(max(size - nnew, n), size):
            key = tuple(inp[i - n : i])
            part = cache.get(key)
            if part is None:
                cache[key] = StdIntMap.single(inp[i], 1)
            else:
                part.add(inp[i], 1)


def _try_draft_static(nc_static: NgramCache, ngram_static: tuple[int, ...]) -> int | None:
    """The first ``try_draft``: a token from the static cache alone (lax thresholds of n = 2)."""
    part = nc_static.get(ngram_static)
    if part is None:
        return None
    max_count = total = 0
    max_token = None
    for token, count in part.items():
        if count > max_count:
            max_token, max_count = token, count
        total += count
    if total < MIN_SAMPLE_LAX[NGRAM_STATIC - 1] or 100 * max_count < MIN_PERCENT_LAX[NGRAM_STATIC - 1] * total:
        return None
    return max_token


def _try_draft(nc_primary: NgramCache, ngrams: list[tuple[int, ...]], part_static: StdIntMap,
               min_sample: tuple[int, ...], min_percent: tuple[int, ...]) -> int | None:
    """The second ``try_draft``: the longest qualifying n-gram of the primary cache, weighted by
    the static counts (1 when the static cache has none)."""
    for i in range(len(ngrams) - 1, -1, -1):
        part = nc_primary.get(ngrams[i])
        if part is None:
            continue
        max_primary = max_static = total = 0
        max_token = None
        for token, count in part.items():
            static = 100 * part_static[token] if token in part_static else 1
            if count * static > max_primary * max_static:
                max_token, max_primary, max_static = token, count, static
            total += count
        if total < min_sample[i] or 100 * max_primary < min_percent[i] * total:
            continue
        return max_token
    return None


def cache_draft(inp: Sequence[int], draft: list[int], n_draft: int, ngram_min: int, ngram_max: int,
                nc_context: NgramCache, nc_dynamic: NgramCache, nc_static: NgramCache) -> None:
    """``common_ngram_cache_draft``: append up to ``n_draft`` tokens to ``draft``, which holds the
    last token of ``inp`` on entry."""
    size = len(inp)
    if size < NGRAM_STATIC:
        return

    def token_at(i: int) -> int:  # the combined, speculative sequence inp + draft[1:]
        return inp[i] if i < size else draft[1 + i - size]

    while len(draft) - 1 < n_draft:
        end = size + len(draft) - 1
        ngram_static = tuple(token_at(j) for j in range(end - NGRAM_STATIC, end))
        part_static = nc_static.get(ngram_static, _EMPTY_PART)
        ngrams = [tuple(token_at(j) for j in range(end - n, end)) for n in range(ngram_min, ngram_max + 1)]
        token = _try_draft(nc_context, ngrams, part_static, MIN_SAMPLE_LAX, MIN_PERCENT_LAX)
        if token is None:
            token = _try_draft(nc_dynamic, ngrams, part_static, MIN_SAMPLE_STRICT, MIN_PERCENT_STRICT)
        if token is None:
            token = _try_draft_static(nc_static, ngram_static)
        if token is None:
            break
        draft.append(token)


def cache_merge(target: NgramCache, add: NgramCache) -> None:
    """``common_ngram_cache_merge``: add the counts of ``add`` to ``target``."""
    for key, part in add.items():
        merged = target.get(key)
        if merged is None:
            target[key] = part.copy()
            continue
        for token, count in part.items():
            merged.add(token, count)


@register("peer:llamacpp-lookup")
class LlamaCppLookup(Drafter):
    """llama.cpp's ``llama-lookup`` drafting: n-gram statistics of the context (and, with
    ``history``, of earlier requests), a chain of up to ``n_draft`` tokens.

    Args:
        n_draft: most tokens per draft (``--draft-max``; llama.cpp's default 16).
        ngram_min, ngram_max: n-gram sizes, within 1..4 (LLAMA_NGRAM_MIN, LLAMA_NGRAM_MAX).
        history: keep the dynamic cache across ``reset`` (a new request merges the previous one's
            context cache into it, as a run of ``llama-lookup -lcd FILE`` does). Default off.
    """

    def __init__(self, n_draft: int = 16, ngram_min: int = NGRAM_MIN, ngram_max: int = NGRAM_MAX,
                 history: bool = False):
        super().__init__()
        if n_draft < 1:
            raise ValueError("n_draft must be >= 1")
        if not NGRAM_MIN <= ngram_min <= ngram_max <= NGRAM_MAX:
            raise ValueError(f"need {NGRAM_MIN} <= ngram_min <= ngram_max <= {NGRAM_MAX}")
        self.n_draft = n_draft
        self.ngram_min = ngram_min
        self.ngram_max = ngram_max
        self.history = require_bool("history", history)
        self._nc_context: NgramCache = {}
        self._nc_dynamic: NgramCache = {}  # earlier requests' n-grams; stays empty without history
        self._nc_static: NgramCache = {}  # no corpus: always empty
        self._in_request = False

    def reset(self, prompt: Sequence[int]) -> None:
        if self.history and self._in_request:  # the previous run ends: its n-grams join the dynamic cache
            cache_merge(self._nc_dynamic, self._nc_context)
        self._in_request = True
        self.context = [int(t) for t in prompt]
        self._nc_context = {}
        cache_update(self._nc_context, self.ngram_min, self.ngram_max, self.context, len(self.context))

    def extend(self, tokens: Sequence[int]) -> None:
        if len(tokens) == 0:
            return
        self.context.extend(int(t) for t in tokens)
        cache_update(self._nc_context, self.ngram_min, self.ngram_max, self.context, len(tokens))

    def propose(self, budget: int) -> Draft:
        n_draft = min(self.n_draft, budget)
        if n_draft <= 0 or not self.context:
            return EMPTY_DRAFT
        draft = [self.context[-1]]
        cache_draft(self.context, draft, n_draft, self.ngram_min, self.ngram_max,
                    self._nc_context, self._nc_dynamic, self._nc_static)
        return Draft(draft[1:]) if len(draft) > 1 else EMPTY_DRAFT

    def keeps_history(self) -> bool:
        return self.history

    def params(self) -> dict:
        return {"n_draft": self.n_draft, "ngram_min": self.ngram_min, "ngram_max": self.ngram_max,
                "history": self.history}
