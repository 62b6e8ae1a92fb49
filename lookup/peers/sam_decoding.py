"""``peer:sam-decoding``: SAM-Decoding's dynamic suffix automaton ("SAM alone"), ported.

Follows hyx1999/SAM-Decoding at commit 18c41f055b424fa3fa0bac41a8953d34cea1ed77:
``samd_sam_only/sam/dyn_sam.py`` (``DynSAM``) as ``samd_sam_only/draft.py`` (``DraftModel``) and
``samd_sam_only/samd_model.py`` drive it, with ``SamdConfig``'s defaults (``max_predicts=60``,
``alpha=4.0``). The repository has no licence file, so no code is copied: this is a port.

How SAM-Decoding drafts: an online suffix automaton holds every committed token *but the last*
(the token the model has just produced, its "start token"); each state remembers the end of its
earliest occurrence (``min_endpos``). ``lookup(start_token)`` extends the running match (the
longest suffix of the sequence that occurs in the automaton) by the start token; the draft is
what followed the earliest occurrence of that match, ``min(max_predicts, 1 + int(alpha * match))``
nodes counting the start token, so up to ``max_predicts - 1`` tokens, never reaching past the
tokens the automaton holds (the start token itself is not in it).

Left out: the static automaton over a corpus (``StaticSAM``, built offline from a dataset; it
drafts a tree when its match beats the dynamic one by ``len_bias``), and the auxiliary drafters
of full SAM-Decoding (Token Recycling, EAGLE). Without a corpus the dynamic automaton always wins.
``tests/lookup/peers/test_sam_decoding.py`` compares with ``DynSAM`` itself when its source is at
hand, and with outputs recorded from it otherwise.
"""

from __future__ import annotations

from typing import Sequence

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.registry import register


class DynSAM:
    """SAM-Decoding's ``DynSAM``: an online suffix automaton with each state's earliest end position.

    ``tokens`` holds the indexed tokens (0-based; ``DynSAM.input_ids`` is ``[-1] + tokens``), states
    are parallel lists. ``cur_index``/``cur_length``: the running match after the last token added.
    """

    def __init__(self) -> None:
        self.next: list[dict[int, int]] = [{}]  # state -> {token: state}
        self.link: list[int] = [-1]
        self.length: list[int] = [0]
        self.min_endpos: list[int] = [0]  # 1-based end of the earliest occurrence
        self.tokens: list[int] = []
        self.last = 0
        self.cur_index = 0
        self.cur_length = 0

    def _add_state(self, token: int) -> None:
        """``DynSAM.add_state``: the textbook online construction; a clone copies its source's state."""
        nxt, link, length, endpos = self.next, self.link, self.length, self.min_endpos
        max_length = len(self.tokens) + 1
        cur = len(nxt)
        nxt.append({})
        link.append(-1)
        length.append(max_length)
        endpos.append(max_length)
        p = self.last
        while p != -1 and token not in nxt[p]:
            nxt[p][token] = cur
            p = link[p]
        if p == -1:
            link[cur] = 0
        else:
            q = nxt[p][token]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = len(nxt)
                nxt.append(dict(nxt[q]))
                link.append(link[q])
                length.append(length[p] + 1)
                endpos.append(endpos[q])
                while p != -1 and nxt[p].get(token) == q:
                    nxt[p][token] = clone
                    p = link[p]
                link[q] = link[cur] = clone
        self.last = cur

    def transfer_state(self, index: int, length: int, token: int) -> tuple[int, int]:
        """``DynSAM.transfer_state``: the match ``(state, length)`` extended by ``token``."""
        nxt, link = self.next, self.link
        while index != 0 and token not in nxt[index]:
            index = link[index]
            length = self.length[index]
        if token in nxt[index]:
            return nxt[index][token], length + 1
        return 0, 0

    def add_tokens(self, tokens: Sequence[int]) -> None:
        """``DynSAM.add_tokens``: advance the running match by each token, then index it."""
        for token in tokens:
            self.cur_index, self.cur_length = self.transfer_state(self.cur_index, self.cur_length, token)
            self._add_state(token)
            self.tokens.append(token)

    def lookup(self, token: int) -> tuple[int, int]:
        """``DynSAM.lookup``: the running match extended by ``token`` (which is not indexed)."""
        return self.transfer_state(self.cur_index, self.cur_length, token)

    def gen_draft(self, index: int, match_length: int, max_predicts: int, alpha: float) -> list[int]:
        """``DynSAM.gen_draft`` without its leading start token: what followed the earliest occurrence."""
        n = min(max_predicts, 1 + int(match_length * alpha))
        endpos = self.min_endpos[index]
        return self.tokens[endpos : endpos + n - 1]


@register("peer:sam-decoding")
class SamDecoding(Drafter):
    """SAM-Decoding without auxiliary drafters: the earliest occurrence of the longest match, a
    chain of ``min(max_predicts, 1 + int(alpha * match)) - 1`` tokens.

    Args:
        max_predicts: most nodes per draft counting the start token (``SamdConfig``: 60).
        alpha: draft nodes per matched token (``SamdConfig``: 4.0).
    """

    def __init__(self, max_predicts: int = 60, alpha: float = 4.0):
        super().__init__()
        if max_predicts < 1 or alpha < 0:
            raise ValueError("max_predicts must be >= 1 and alpha >= 0")
        self.max_predicts = max_predicts
        self.alpha = float(alpha)
        self.sam = DynSAM()
        self.start_token: int | None = None  # the last committed token: not in the automaton yet

    def reset(self, prompt: Sequence[int]) -> None:
        self.sam = DynSAM()
        self.start_token = None
        self.extend(prompt)

    def extend(self, tokens: Sequence[int]) -> None:
        if len(tokens) == 0:
            return
        pending = [int(t) for t in tokens]
        if self.start_token is not None:
            pending.insert(0, self.start_token)
        self.sam.add_tokens(pending[:-1])
        self.start_token = pending[-1]

    def propose(self, budget: int) -> Draft:
        if budget <= 0 or self.start_token is None:
            return EMPTY_DRAFT
        index, match_length = self.sam.lookup(self.start_token)
        draft = self.sam.gen_draft(index, match_length, self.max_predicts, self.alpha)[:budget]
        return Draft(draft) if draft else EMPTY_DRAFT

    def params(self) -> dict:
        return {"max_predicts": self.max_predicts, "alpha": self.alpha}
