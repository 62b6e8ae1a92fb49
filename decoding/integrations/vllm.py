"""Any pld-lab drafter as a vLLM speculative proposer (``speculative_config`` method ``custom_class``).

    LLM(model=..., speculative_config={"method": "custom_class",
                                       "model": "decoding.integrations.vllm.DrafterProposer",
                                       "num_speculative_tokens": 5},
        additional_config={"pld_lab": {"drafter": "suffix-automaton"}})

vLLM builds ``DrafterProposer(vllm_config)`` and, every step, calls ``propose`` with the batch's
token ids: row ``i`` holds ``token_ids_cpu[i, :num_tokens_no_spec[i]]``. It gives no request id,
and rows move as requests finish and join, so each row's request is recognised by its tokens: a
row that extends the tokens a kept drafter has seen is that drafter's request (it is extended by
the new tokens only, so a step costs microseconds, not a rebuild of the index); a row that extends
none is a new request. vLLM verifies chains: a tree draft is cut to its first root-to-leaf path.
``observe`` gets how much of the row's last draft its new tokens confirm.

This module imports no vLLM: the proposer is plain Python over numpy arrays, and the drafter is
chosen without code: ``additional_config={"pld_lab": {"drafter": SPEC}}``, else the environment
variable ``PLD_LAB_DRAFTER``, else ``DEFAULT_DRAFTER``. SPEC is a name, a ``name:key=value`` spec or a
``.py`` drafter file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from decoding.integrations.drafters import make_drafter
from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.errors import PLDError

DEFAULT_DRAFTER = "suffix-automaton"
ENV_VAR = "PLD_LAB_DRAFTER"
#: drafters kept for requests absent from a step (preempted, or finished: forgotten after this many)
KEEP_ABSENT_STEPS = 8


@dataclass
class _Request:
    """One request's drafter and what it has seen."""

    drafter: Drafter
    tokens: np.ndarray  # [n] int64: every token the drafter has been given
    last_draft: Draft = field(default_factory=lambda: EMPTY_DRAFT)
    absent: int = 0  # steps since a row last matched it

    def extends(self, row: np.ndarray) -> bool:
        """Whether ``row`` ([m] token ids) continues the tokens this request has seen."""
        n = len(self.tokens)
        return len(row) >= n and np.array_equal(row[:n], self.tokens)

    def advance(self, row: np.ndarray) -> None:
        """Feed the drafter the row's new tokens, then what they say of the last draft."""
        new = row[len(self.tokens):]
        if len(new):
            self.drafter.extend(new.tolist())
            draft = self.last_draft.tokens
            accepted = int(np.argmin(np.append(draft[: len(new)] == new[: len(draft)], False)))
            self.drafter.observe(self.last_draft, accepted)
            self.tokens = row.copy()


def first_chain(draft: Draft) -> np.ndarray:
    """The draft's tokens along its first root-to-leaf path (a chain as it is).  # [d] int64"""
    if draft.parents is None:
        return draft.tokens
    path, parent = [], -1
    for node, p in enumerate(draft.parents):
        if p == parent:  # the first child of the node last taken (parents come before children)
            path.append(node)
            parent = node
    return draft.tokens[path]


def configured_drafter(vllm_config: Any) -> str:
    """The drafter spec from ``additional_config["pld_lab"]["drafter"]``, the environment, or the default."""
    extra = getattr(vllm_config, "additional_config", None) or {}
    spec = (extra.get("pld_lab") or {}).get("drafter") if isinstance(extra, dict) else None
    return spec or os.environ.get(ENV_VAR) or DEFAULT_DRAFTER


class DrafterProposer:
    """A vLLM custom proposer running a pld-lab drafter per request (see the module docstring)."""

    def __init__(self, vllm_config: Any = None, drafter: str | None = None,
                 num_speculative_tokens: int | None = None) -> None:
        self.spec = drafter or configured_drafter(vllm_config)
        make_drafter(self.spec)  # a bad spec fails when the engine starts, not at the first step
        k = num_speculative_tokens
        if k is None:
            k = getattr(getattr(vllm_config, "speculative_config", None), "num_speculative_tokens", None)
        if not isinstance(k, int) or k < 1:
            raise PLDError(f"num_speculative_tokens must be an integer >= 1, got {k!r}")
        self.k = k
        self.kept: list[_Request] = []  # the requests seen lately
        self.by_slot: dict[int, _Request] = {}  # batch row -> its request, at the last step
        self.resets = 0  # new requests recognised (drafters built)

    def load_model(self, *args, **kwargs) -> None:
        """vLLM's hook for loading a draft model: a lookup drafter has none."""

    def propose(self, sampled_token_ids: Sequence[Sequence[int]], num_tokens_no_spec: np.ndarray,
                token_ids_cpu: np.ndarray, slot_mappings: Any = None, **kwargs) -> list[list[int]]:
        """One list of at most ``num_speculative_tokens`` draft ids per batch row (may be empty)."""
        out: list[list[int]] = []
        slots: dict[int, _Request] = {}
        for i, sampled in enumerate(sampled_token_ids):
            if not len(sampled):  # a row still in (chunked) prefill samples nothing: nothing to draft
                out.append([])
                continue
            row = np.asarray(token_ids_cpu[i, : int(num_tokens_no_spec[i])], dtype=np.int64)
            request = slots[i] = self._request_of(row, i, slots.values())
            request.advance(row)
            request.last_draft = Draft(first_chain(request.drafter.propose(self.k))[: self.k])
            out.append(request.last_draft.tokens.tolist())
        self._age(slots)
        return out

    def _request_of(self, row: np.ndarray, slot: int, taken) -> _Request:
        """The kept request ``row`` continues (the one last seen in this row first), else a new one."""
        last = self.by_slot.get(slot)
        for request in ([last] if last is not None else []) + self.kept:
            if all(request is not t for t in taken) and request.extends(row):
                return request
        drafter = make_drafter(self.spec)
        drafter.reset(row.tolist())
        self.kept.append(_Request(drafter, row.copy()))
        self.resets += 1
        return self.kept[-1]

    def _age(self, slots: dict[int, _Request]) -> None:
        """Forget requests no row has continued for KEEP_ABSENT_STEPS steps (they finished)."""
        seen = {id(r) for r in slots.values()}
        for request in self.kept:
            request.absent = 0 if id(request) in seen else request.absent + 1
        self.kept = [r for r in self.kept if r.absent < KEEP_ABSENT_STEPS]
        self.by_slot = slots
