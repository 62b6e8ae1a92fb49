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
none is a new request. vLLM verifies chains: a tree draft is cut to its first root-to-leaf path,
and to ``num_speculative_tokens``: that is the row's *offered* draft. ``observe`` gets how much of
it the row's new tokens confirm.

The batch rule: drafting less as the batch grows. Verifying is not free: one forward verifies
every row's last token and draft, and its time grows with the rows and with the draft tokens. Model
a step as costing ``fixed + per_row * rows + nodes``, in units of one draft token's cost. Each step
the proposer estimates, for every node of every offered draft, ``p`` = P(the node and all before it
are accepted), and sends the nodes that maximise the batch's expected tokens per unit of cost::

    (rows + sum of the sent nodes' p) / (fixed + per_row * rows + sent nodes)

(taking nodes in order of ``p``, so each row sends a prefix of its draft: :func:`batch_cut`). A node
is worth sending from ``p`` of about ``rows / (fixed + per_row * rows)``, which grows with the batch
towards ``1 / per_row``: an engine whose rows are dear next to draft tokens keeps drafting likely
nodes at any batch; one whose rows are nearly free (a GPU below its compute bound: ``per_row`` near
1) drafts only near-certain nodes in a big batch.

The prices come from the engine's own steps (:class:`~decoding.integrations.step_costs.StepCosts`):
the time from one ``propose`` call to the next is one step, which decoded that call's rows and
verified the nodes the previous call sent them (steps with a prefill or a new request in them are
left out). The fit starts from ``BatchRule.fixed_tokens`` and ``BatchRule.row_tokens``, a hand fit
for our 2-core CPU, which also settles what the steps do not tell apart (a step's fixed cost from a
row's, in a steady batch); ``learn_costs`` 0 keeps the hand fit alone.

``p`` is the product of acceptance rates by depth, for the draft's match-length bucket: drafts copied
after a 1-token match are accepted far less often than drafts after an 8-token one (the buckets are
:func:`lookup.acceptance.match_bucket`'s, the one bucketing ``adaptive`` and ``recycling`` use too,
from the drafter's :meth:`~lookup.base.Drafter.match_length`; a drafter that reports none has all
its drafts in one bucket). The rates are learnt with :class:`lookup.acceptance.AcceptanceRates`
from every request (decayed) and, per request, from its own committed tokens on top of those (a
request's learner takes every request's as its prior; requests of one regime share one table, as a
sampled token is accepted far less often than a greedy one). Each offered draft is judged against the tokens
committed after it, once they decide it, so the nodes the rule withheld are judged too (greedy
decoding commits the same tokens whatever was sent; a sampled token equals a withheld node with the
probability vLLM would have accepted it with) and a row that drafted nothing still learns.
Configure it with ``additional_config={"pld_lab": {"batch_rule": {...}}}`` (``BatchRule``'s
fields), or ``"batch_rule": false`` to send every offered draft whole.

History: with a drafter spec that keeps a history of earlier requests (``history=true``, in a
:class:`lookup.indexes.history.History`: ``suffix-automaton`` and ``adaptive``), every request's drafter
shares one: each follows its own request through it (a cursor), and a request's output (its tokens
after its first row's prompt) joins it once no row has continued the request for
``KEEP_ABSENT_STEPS`` steps (steps are ``propose`` calls: an idle engine adds nothing). A history of another kind (the peers') is refused when the engine starts.

Sampling: each request's drafter is built for the request's own regime (its temperature, top-k and
top-p: the acceptance fit of that regime, where one is shipped, else the model's greedy fit, as
:func:`pldcore.fits.fits_for` falls back) when the proposer can read vLLM's input batch: vLLM 0.32
hands a custom proposer no sampling parameters, so a worker extension links them
(:class:`decoding.integrations.vllm_sampling.SamplingLink`); unlinked, every drafter is built for
greedy decoding (:attr:`DrafterProposer.regime_source` says which). A request's regime is read once,
when its drafter is built.

This module imports no vLLM: the proposer is plain Python over numpy arrays, and the drafter is
chosen without code: ``additional_config={"pld_lab": {"drafter": SPEC}}``, else the environment
variable ``PLD_LAB_DRAFTER``, else ``DEFAULT_DRAFTER``. SPEC is a name, a ``name:key=value`` spec or a
``.py`` drafter file.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Sequence

import numpy as np

from decoding.integrations.drafters import asks_for_history, drafter_spec, history_of, share_history
from decoding.integrations.step_costs import StepCosts, step_profile
from decoding.integrations.vllm_cpu import mend_cpu_expand
from decoding.integrations.vllm_sampling import LINKED, UNLINKED, ReadsSampling, SamplingSource, batch_row_regime
from decoding.vocab import vocab_strings
from lookup.acceptance import BUCKETS, AcceptanceRates, match_bucket
from lookup.base import EMPTY_TOKENS, Draft, Drafter, hand_vocab
from pldcore.errors import PLDError
from pldcore.setting import GREEDY, Regime, Setting, model_key

#: the drafter spec when none is configured. Not ``lookup.DEFAULT_DRAFTER`` (``adaptive``), for
#: measured reasons (the vLLM benchmark and the proposer's timings in docs/integrations.md;
#: docs/choosing-a-drafter.md): through this proposer neither gave vLLM more throughput at every
#: batch size, and ``suffix-automaton`` costs the proposer less than half the time per row; and here
#: the batch rule, not ``adaptive``'s batch-1 cost profile, decides how much of a draft to send.
DEFAULT_DRAFTER = "suffix-automaton"
ENV_VAR = "PLD_LAB_DRAFTER"
#: drafters kept for requests absent from a step (preempted, or finished: forgotten after this many)
KEEP_ABSENT_STEPS = 8
#: the batch rule's starting cost model, a hand fit for vLLM 0.32 on our 2-core CPU (SmolLM2-135M,
#: fp32), in units of one draft token (~1 ms): a step ~22, each row ~5. Fitted from plain decoding
#: and from drafts that are never accepted (5 a row), at batch 4 and 16; the engine's own steps
#: refine it as it runs (:class:`~decoding.integrations.step_costs.StepCosts`).
FIXED_TOKENS = 22.0
ROW_TOKENS = 5.0
#: weight an observation keeps in the rates every request shares, per later observation of any request
SHARED_DECAY = 0.995


@dataclass(frozen=True)
class BatchRule:
    """How much of the offered drafts a step sends, given the batch (see the module docstring)."""

    #: a step's fixed cost, in draft tokens (``c0 / c_draft`` of ``cost = c0 + c_row * rows + c_draft * nodes``)
    fixed_tokens: float = FIXED_TOKENS
    #: one row's cost in a step (its own token and per-request work), in draft tokens (``c_row / c_draft``)
    row_tokens: float = ROW_TOKENS
    #: P(first node accepted) before a request has any feedback
    prior_first: float = 0.5
    #: P(node accepted | the nodes before it accepted), for the later nodes, before any feedback
    prior_later: float = 0.7
    #: how many observations the prior is worth
    strength: float = 2.0
    #: weight an observation keeps per step of its request (recent steps weigh more)
    decay: float = 0.95
    #: 1: price rows and nodes by the engine's own steps (:class:`StepCosts`, starting from
    #: ``fixed_tokens`` and ``row_tokens``); 0: by ``fixed_tokens`` and ``row_tokens`` alone
    learn_costs: float = 1.0
    #: how many steps ``fixed_tokens`` and ``row_tokens`` are worth in that fit
    cost_strength: float = 5.0

    def __post_init__(self) -> None:
        if not (self.fixed_tokens >= 0 and self.row_tokens > 0):
            raise PLDError(f"batch_rule: fixed_tokens must be >= 0 and row_tokens > 0, "
                           f"got {self.fixed_tokens!r}, {self.row_tokens!r}")
        if not (0 < self.prior_first < 1 and 0 < self.prior_later < 1):
            raise PLDError(f"batch_rule: priors must be in (0, 1), got {self.prior_first!r}, {self.prior_later!r}")
        if self.learn_costs not in (0, 1) or not self.cost_strength > 0:
            raise PLDError(f"batch_rule: learn_costs must be 0 or 1 (false or true) and cost_strength > 0, "
                           f"got {self.learn_costs!r}, {self.cost_strength!r}")
        if not (self.strength > 0 and 0 < self.decay <= 1):
            raise PLDError(f"batch_rule: strength must be > 0 and decay in (0, 1], "
                           f"got {self.strength!r}, {self.decay!r}")

    @classmethod
    def from_setting(cls, value: Any) -> "BatchRule | None":
        """The rule for a ``batch_rule`` setting: absent (None) or true -> the default rule, false ->
        None (every offered draft is sent whole), a dict -> the default with those fields, a rule as it is."""
        if isinstance(value, BatchRule):
            return value
        if value is None or value is True:
            return cls()
        if value is False:
            return None
        if not isinstance(value, dict):
            raise PLDError(f"batch_rule must be true, false or a dict of {cls._names()}, got {value!r}")
        unknown = sorted(set(value) - set(cls._names()))
        if unknown:
            raise PLDError(f"batch_rule: unknown setting(s) {unknown}; known: {cls._names()}")
        try:
            return cls(**{k: float(v) for k, v in value.items()})
        except (TypeError, ValueError):
            raise PLDError(f"batch_rule: every setting is a number, got {value!r}") from None

    @classmethod
    def _names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def shared_rates(self, k: int) -> AcceptanceRates:
        """The acceptance rates every request learns into, by match-length bucket and depth (0..k-1),
        at the rule's priors; an observation weighs :data:`SHARED_DECAY` less per later one."""
        prior = np.full((BUCKETS, k), self.prior_later)  # [B, k]
        prior[:, 0] = self.prior_first
        return AcceptanceRates(prior, self.strength, SHARED_DECAY)

    def request_rates(self, shared: AcceptanceRates) -> AcceptanceRates:
        """One request's acceptance rates, smoothed towards ``shared`` (:meth:`shared_rates`); an
        observation weighs ``decay`` less per later one of the request."""
        return AcceptanceRates(shared, self.strength, self.decay)


def batch_cut(path_probs: Sequence[np.ndarray], fixed_tokens: float, row_tokens: float) -> list[int]:
    """How many leading nodes of each row's offered draft to send this step.

    Args:
        path_probs: per decoding row, P(node j and every node before it accepted) for each node of
            its offered draft, non-increasing along the draft (empty: no draft).  # each [d_i]
        fixed_tokens: a step's fixed cost, in draft tokens.
        row_tokens: one row's cost in a step, in draft tokens.

    Returns:
        per row, the count ``n_i`` of nodes sent: the set of nodes, taken in order of decreasing
        probability, that maximises ``(rows + sum p) / (fixed_tokens + row_tokens * rows + nodes)``;
        the smallest such set on ties. Each row's nodes are a prefix of its draft.
    """
    rows = len(path_probs)
    lengths = [len(p) for p in path_probs]
    if not sum(lengths):
        return [0] * rows
    probs = np.concatenate([np.asarray(p, dtype=np.float64) for p in path_probs])  # [n]
    owner = np.repeat(np.arange(rows), lengths)  # [n] row of each node
    depth = np.concatenate([np.arange(n) for n in lengths])  # [n] its place in the row's draft
    order = np.lexsort((depth, -probs))  # likeliest first; a row's shallower node first on ties
    gained = rows + np.concatenate([[0.0], np.cumsum(probs[order])])  # [n+1] expected tokens, m nodes sent
    cost = fixed_tokens + row_tokens * rows + np.arange(len(probs) + 1)  # [n+1]
    m = int(np.argmax(gained / cost))
    return np.bincount(owner[order[:m]], minlength=rows).tolist()


def confirmed(draft: np.ndarray, new: np.ndarray) -> int:
    """How many leading nodes of ``draft`` ([d]) the committed tokens ``new`` ([m]) confirm (<= min(d, m))."""
    return int(np.argmin(np.append(draft[: len(new)] == new[: len(draft)], False)))


@dataclass
class _Request:
    """One request's drafter, what it has seen, and (with a batch rule) its acceptance rates."""

    drafter: Drafter
    tokens: np.ndarray  # [n] int64: every token the drafter has been given
    #: [B, k] this request's P(node accepted | nodes before it accepted), by match-length bucket and
    #: depth; its prior (``rates.parent``) is the same, learnt from every request of its regime, the
    #: proposer's one table for that regime (None: no batch rule)
    rates: AcceptanceRates | None = None
    offered: np.ndarray = field(default_factory=lambda: EMPTY_TOKENS)  # [d] int64: the last offered draft
    offered_bucket: int = 0  # its match-length bucket
    #: offered drafts the committed tokens have not yet decided: (tokens seen when offered, the draft, its bucket)
    pending: list[tuple[int, np.ndarray, int]] = field(default_factory=list)
    absent: int = 0  # steps since a row last matched it
    prompt: int = 0  # tokens of its first row that came before its output
    regime: Regime = GREEDY  # how vLLM samples its tokens, as its drafter was built for

    def extends(self, row: np.ndarray) -> bool:
        """Whether ``row`` ([m] token ids) continues the tokens this request has seen."""
        n = len(self.tokens)
        return len(row) >= n and np.array_equal(row[:n], self.tokens)

    def advance(self, row: np.ndarray) -> None:
        """Feed the drafter the row's new tokens, then what they say of the last offered draft."""
        new = row[len(self.tokens):]
        if len(new):
            self.drafter.extend(new.tolist())
            # Nodes past the committed tokens stay unknown: the drafter hears them as missed, as a
            # loop that cut its draft there would tell it.
            self.drafter.observe(Draft(self.offered), confirmed(self.offered, new))
            self.tokens = row.copy()
            self.learn()

    def offer(self, draft: np.ndarray) -> None:
        """``draft`` ([d] int64) is this step's offered draft; with a rule, it waits to be judged."""
        self.offered = draft
        if self.rates is not None and len(draft):
            self.offered_bucket = match_bucket(self.drafter.match_length())
            self.pending.append((len(self.tokens), draft, self.offered_bucket))

    def learn(self) -> None:
        """Judge each pending draft once the committed tokens decide it: nodes up to the first miss
        (or all) were checked, the ones before it hit. Under greedy decoding the committed tokens do
        not depend on what was sent, so a node the rule withheld is judged as if it had been sent;
        under sampling a withheld node is judged by whether the sampled token equals it, which has
        the probability it would have been accepted with (vLLM accepts a draft token sent without
        probabilities with the target's probability of it)."""
        if self.rates is None:
            return
        undecided = []
        for start, draft, bucket in self.pending:
            ahead = self.tokens[start: start + len(draft)]
            hits = confirmed(draft, ahead)
            if hits == len(ahead) < len(draft):  # right so far, but the tokens stop short
                undecided.append((start, draft, bucket))
                continue
            for rates in (self.rates, self.rates.parent):
                rates.age()
                rates.learn_prefix((bucket,), min(hits + 1, len(draft)), hits)
        self.pending = undecided

    def path_probs(self) -> np.ndarray:
        """P(node j of the offered draft and every node before it accepted).  # [d]"""
        if self.rates is None or not len(self.offered):
            return np.zeros(len(self.offered))
        return np.cumprod(self.rates.estimate((self.offered_bucket,))[: len(self.offered)])


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


def _settings(vllm_config: Any) -> dict:
    """``additional_config["pld_lab"]`` (empty when absent)."""
    extra = getattr(vllm_config, "additional_config", None) or {}
    ours = extra.get("pld_lab") if isinstance(extra, dict) else None
    return ours if isinstance(ours, dict) else {}


def configured_drafter(vllm_config: Any) -> str:
    """The drafter spec from ``additional_config["pld_lab"]["drafter"]``, the environment, or the default."""
    return _settings(vllm_config).get("drafter") or os.environ.get(ENV_VAR) or DEFAULT_DRAFTER


def configured_rule(vllm_config: Any) -> BatchRule | None:
    """The batch rule from ``additional_config["pld_lab"]["batch_rule"]`` (:meth:`BatchRule.from_setting`)."""
    return BatchRule.from_setting(_settings(vllm_config).get("batch_rule"))


def engine_vocab(vllm_config: Any) -> tuple[str, ...] | None:
    """The vocabulary's strings of the tokenizer vLLM serves with (``model_config.tokenizer``), or None
    when the config names none or transformers cannot load it (the drafter then goes without)."""
    model_config = getattr(vllm_config, "model_config", None)
    path = getattr(model_config, "tokenizer", None)
    if not path:
        return None
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(
            path, trust_remote_code=bool(getattr(model_config, "trust_remote_code", False)))
    except (OSError, ValueError) as exc:
        import warnings

        warnings.warn(f"no vocabulary strings for the drafter: cannot load the tokenizer {path!r} ({exc})",
                      stacklevel=2)
        return None
    return vocab_strings(tokenizer)


class DrafterProposer(ReadsSampling):
    """A vLLM custom proposer running a pld-lab drafter per request (see the module docstring).

    ``drafter`` and ``batch_rule`` override the settings in ``vllm_config`` (``batch_rule`` takes the
    same values as the ``batch_rule`` setting; None: the setting, else the default rule).
    """

    def __init__(self, vllm_config: Any = None, drafter: str | None = None,
                 num_speculative_tokens: int | None = None, batch_rule: BatchRule | bool | dict | None = None,
                 vocab: Sequence[str] | None = None, clock: Callable[[], float] = time.perf_counter) -> None:
        if vllm_config is not None:  # built by vLLM, in its worker: mend its CPU fault under sampling (vllm_cpu.py)
            mend_cpu_expand()
        self.spec = drafter or configured_drafter(vllm_config)
        # the vocabulary's strings, for a drafter that asks for them: ``vocab``, else read from the
        # engine's tokenizer when the first drafter asks (:meth:`vocab`)
        self._vllm_config, self._vocab, self._vocab_read = vllm_config, vocab, vocab is not None
        self.drafter_spec = drafter_spec(self.spec)  # a bad spec fails when the engine starts
        #: the served model, as fits name it: whose acceptance fit a drafter that plans reads
        self.model = str(getattr(getattr(vllm_config, "model_config", None), "model", None) or "?")
        self.k = self._speculative_tokens(vllm_config, num_speculative_tokens)
        self.rule = configured_rule(vllm_config) if batch_rule is None else BatchRule.from_setting(batch_rule)
        #: the engine's step costs, fitted from the intervals between calls (None: the rule's own)
        self.costs = (StepCosts(self.rule.fixed_tokens, self.rule.row_tokens, self.rule.cost_strength)
                      if self.rule is not None and self.rule.learn_costs else None)
        probe = self.drafter_spec.build(self.setting(1))
        #: with ``history=true``, the history every request's drafter shares (finished requests' outputs)
        self.history = history_of(probe) if asks_for_history(probe) else None
        if asks_for_history(probe) and self.history is None:
            raise PLDError(f"{self.spec}: its history cannot be shared by the requests vLLM serves side by side "
                           "(only lookup.indexes.history.History can, as suffix-automaton and adaptive keep it); "
                           "drop history=true")
        self.kept: list[_Request] = []  # the requests seen lately
        self.by_slot: dict[int, _Request] = {}  # batch row -> its request, at the last step
        self.resets = 0  # new requests recognised (drafters built)
        #: acceptance rates learnt from every request of a regime (by its name): a new request's starting point
        self.shared: dict[str, AcceptanceRates] = {}
        self.clock = clock
        #: the last call's start and the nodes it sent each request (by id), for the step that verifies them
        self._last_call: tuple[float, dict[int, int]] | None = None
        #: vLLM's input batch, where the worker linked it (:meth:`read_sampling_from`): the rows' regimes
        self._sampling: SamplingSource | None = None
        self.regime_source = UNLINKED  # where a new request's regime comes from, in words
        self.built: dict[str, int] = {}  # drafters built for requests, by their regime's name

    def read_sampling_from(self, input_batch: SamplingSource) -> None:
        """Build each new request's drafter for the regime ``input_batch()`` (vLLM's ``InputBatch``,
        whose rows are ``propose``'s rows) gives its row, from now on."""
        self._sampling, self.regime_source = input_batch, LINKED

    @staticmethod
    def _speculative_tokens(vllm_config: Any, k: int | None) -> int:
        if k is None:
            k = getattr(getattr(vllm_config, "speculative_config", None), "num_speculative_tokens", None)
        if not isinstance(k, int) or k < 1:
            raise PLDError(f"num_speculative_tokens must be an integer >= 1, got {k!r}")
        return k

    def setting(self, batch: int, regime: Regime = GREEDY) -> Setting:
        """Where a request's drafter runs: the served model, in the request's ``regime`` (its fit, or
        the model's greedy fit where that regime has none: :meth:`Setting.of`), at ``batch`` rows,
        priced by the step prices the engine's steps taught so far
        (:func:`~decoding.integrations.step_costs.step_profile`; the batch rule's hand fit before
        they say, or without a rule)."""
        learnt = self.costs.tokens() if self.costs is not None else None
        rule = self.rule or BatchRule()
        fixed, row = learnt if learnt is not None else (rule.fixed_tokens, rule.row_tokens)
        return Setting.of(self.model, step_profile(fixed, row, batch, model_key(self.model)), regime, batch,
                          profile_source="the engine's step prices" if learnt is not None else "the batch rule's hand fit")

    def load_model(self, *args, **kwargs) -> None:
        """vLLM's hook for loading a draft model: a lookup drafter has none."""

    def vocab(self) -> Sequence[str] | None:
        """The vocabulary's strings (:mod:`decoding.vocab`) from the engine's tokenizer, read once;
        None when there is none to read."""
        if not self._vocab_read:
            self._vocab_read = True
            self._vocab = engine_vocab(self._vllm_config)
        return self._vocab

    def propose(self, sampled_token_ids: Sequence[Sequence[int]], num_tokens_no_spec: np.ndarray,
                token_ids_cpu: np.ndarray, slot_mappings: Any = None, **kwargs) -> list[list[int]]:
        """One list of at most ``num_speculative_tokens`` draft ids per batch row (may be empty)."""
        now = self.clock()
        slots: dict[int, _Request] = {}
        resets, prefill = self.resets, False
        for i, sampled in enumerate(sampled_token_ids):
            if not len(sampled):  # a row still in (chunked) prefill samples nothing: nothing to draft
                prefill = True
                continue
            row = np.asarray(token_ids_cpu[i, : int(num_tokens_no_spec[i])], dtype=np.int64)
            request = slots[i] = self._request_of(row, i, slots.values())
            request.advance(row)
            request.offer(first_chain(request.drafter.propose(self.k))[: self.k])
        requests = list(slots.values())
        if self.costs is not None and self._last_call is not None and not prefill and self.resets == resets:
            # the step since the last call decoded these rows and verified what that call sent them
            # (a step with a prefill in it, or a new request's, costs more than its rows and nodes)
            start, sent = self._last_call
            self.costs.add(len(requests), sum(sent.get(id(r), 0) for r in requests), now - start)
        out: list[list[int]] = [[] for _ in sampled_token_ids]
        counts = self._sent(requests)
        for (i, request), n in zip(slots.items(), counts):
            out[i] = request.offered[:n].tolist()
        self._last_call = (now, {id(r): n for r, n in zip(requests, counts)})
        self._age(slots)
        return out

    def _sent(self, requests: list[_Request]) -> list[int]:
        """How many nodes of each decoding row's offered draft go to verification (the batch rule)."""
        if self.rule is None:
            return [len(r.offered) for r in requests]
        learnt = self.costs.tokens() if self.costs is not None else None
        fixed, row = learnt if learnt is not None else (self.rule.fixed_tokens, self.rule.row_tokens)
        return batch_cut([r.path_probs() for r in requests], fixed, row)

    def regime_of(self, slot: int) -> Regime:
        """How vLLM samples the request in batch row ``slot``: from its input batch where the worker
        linked it (:meth:`read_sampling_from`), else greedy (:data:`~decoding.integrations.vllm_sampling.UNLINKED`)."""
        return GREEDY if self._sampling is None else batch_row_regime(self._sampling(), slot)

    def shared_rates(self, regime: Regime) -> AcceptanceRates:
        """The acceptance rates every request of ``regime`` learns into (made at the rule's priors
        when its first request comes); requires a batch rule."""
        if regime.name not in self.shared:
            self.shared[regime.name] = self.rule.shared_rates(self.k)
        return self.shared[regime.name]

    def _request_of(self, row: np.ndarray, slot: int, taken) -> _Request:
        """The kept request ``row`` continues (the one last seen in this row first), else a new one,
        its drafter built for the row's regime."""
        last = self.by_slot.get(slot)
        for request in ([last] if last is not None else []) + self.kept:
            if all(request is not t for t in taken) and request.extends(row):
                return request
        regime = self.regime_of(slot)
        drafter = self.drafter_spec.build(self.setting(max(len(taken) + 1, len(self.by_slot)), regime))
        hand_vocab(drafter, self.vocab)
        if self.history is not None:
            share_history(drafter, self.history)
        drafter.reset(row.tolist())
        rates = self.rule.request_rates(self.shared_rates(regime)) if self.rule is not None else None
        # its first row is the prompt and the first token sampled: the output starts there
        self.kept.append(_Request(drafter, row.copy(), rates, prompt=max(len(row) - 1, 0), regime=regime))
        self.resets += 1
        self.built[regime.name] = self.built.get(regime.name, 0) + 1
        return self.kept[-1]

    def _age(self, slots: dict[int, _Request]) -> None:
        """Forget requests no row has continued for KEEP_ABSENT_STEPS steps (they finished); with a
        shared history, their outputs join it then."""
        seen = {id(r) for r in slots.values()}
        for request in self.kept:
            request.absent = 0 if id(request) in seen else request.absent + 1
            if request.absent == KEEP_ABSENT_STEPS and self.history is not None:
                # done (or preempted: if it comes back, it is a new request whose prompt holds this)
                self.history.add(request.tokens[request.prompt:])
        self.kept = [r for r in self.kept if r.absent < KEEP_ABSENT_STEPS]
        self.by_slot = slots
