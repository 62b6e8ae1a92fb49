"""The speculative decoding loop: propose, verify, accept, extend.

One loop serves live models and recorded traces, greedy and sampled decoding and every
drafter, so that a number measured on one is comparable with a number measured on another.
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np

from decoding.acceptance import accept_greedy, accept_greedy_tree
from decoding.inputs import Request, TokenIds, check_request
from decoding.target import Scores, Target
from lookup.base import EMPTY_DRAFT, Draft, Drafter, hand_vocab
from pldcore.cost import CostProfile
from pldcore.errors import PLDError

#: tokens of text checked around each new token for a stop string
STOP_WINDOW = 64
#: the most draft nodes a step may send unless told otherwise: a forward over the draft and the token
#: before it then covers at most 64 tokens, the longest run the board's oracle copies in one step
#: (``experiments/running/oracle.py``). Every track allows as much (``experiments/running/tracks.py``);
#: a drafter that plans by cost (``adaptive``) sends fewer where its hardware prices long drafts high
DRAFT_BUDGET = 63


class DrafterBug(PLDError):
    """A drafter's bug, found by the loop: one line naming the drafter and the step; whoever knows
    the case (a comparison, a replay) names it too (:meth:`in_case`)."""

    case: str | None = None

    def in_case(self, case: str) -> "DrafterBug":
        """The same error, its line starting with the case it happened in (once)."""
        if self.case is not None:
            return self
        named = copy.copy(self)
        named.args = (f"case {case}: {self.args[0]}", *self.args[1:])
        named.case = case
        named.__cause__ = self.__cause__
        return named


class DraftError(DrafterBug):
    """A drafter returned something the verifier cannot use."""


class DrafterFailed(DrafterBug):
    """A drafter's own code raised: the line names the drafter, the call, the step and where in its
    file; the drafter's exception is the ``__cause__`` (``PLD_LAB_TRACEBACK=1`` prints it under a CLI:
    :func:`experiments.cli.guarded`)."""

    @classmethod
    def of(cls, who: str, call: str, step: int, context: int, exc: BaseException) -> "DrafterFailed":
        where = _drafter_frame(exc)
        return cls(f"{who} raised {type(exc).__name__} in {call} at step {step} ({context} tokens of context)"
                         + (f" at {where}" if where else "")
                         + f": {str(exc)[:200]} (PLD_LAB_TRACEBACK=1 shows the traceback)")


def _drafter_frame(exc: BaseException) -> str:
    """``file.py:LINE`` of the innermost frame of ``exc`` outside pld-lab's own packages (the
    drafter's file), or of the innermost frame when all are ours; "" without a traceback."""
    import os
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    theirs = [f for f in frames if not os.path.abspath(f.filename).startswith(ours + os.sep)] or frames
    return f"{os.path.basename(theirs[-1].filename)}:{theirs[-1].lineno}"


def _who(drafter: Drafter) -> str:
    return f"drafter {drafter.name!r} ({type(drafter).__name__})"


@dataclass(slots=True)
class StepRecord:
    """One target forward."""

    context: int  # committed tokens (prompt + generated) before the step
    drafted: int  # draft nodes verified
    accepted: int  # draft nodes accepted
    committed: int  # tokens committed by the step (accepted + 1, fewer when it hit a stop)
    drafter_s: float  # propose + extend + observe
    forward_s: float  # the target forward


@dataclass
class Stats:
    """Counters and timings of one generation. ``tau`` = new tokens per target forward."""

    new_tokens: int = 0
    forwards: int = 0
    drafted: int = 0
    accepted: int = 0
    drafter_s: float = 0.0
    forward_s: float = 0.0
    prefill_s: float = 0.0
    top_rows: int = 0  # top ids per read token handed to the drafter (0: none; the prefill then skips the LM head)
    #: steps whose draft carried its probabilities (``Draft.probs``): sampled, their outcome depends on
    #: the drafter's own draws, so the output is plain sampling's in distribution, not token for token
    stochastic_steps: int = 0
    wall_s: float = 0.0
    steps: list[StepRecord] = field(default_factory=list)

    @property
    def tau(self) -> float:
        return self.new_tokens / self.forwards if self.forwards else 0.0

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.wall_s if self.wall_s else 0.0

    def summary(self) -> dict:
        """Scalar metrics (JSON-ready), without the per-step records."""
        out = {k: v for k, v in asdict(self).items() if k != "steps"}
        out.update(tau=self.tau, acceptance_rate=self.acceptance_rate, tokens_per_s=self.tokens_per_s)
        return out


@dataclass
class GenerationResult:
    tokens: list[int]  # generated ids (the prompt excluded; EOS included when it stopped there)
    stats: Stats
    stop_reason: str  # "eos", "length" or "stop_string"
    seed: int | None = None  # the seed sampling used (drawn at random when none was given); None = greedy


AcceptRule = Callable[[Draft, Scores], "tuple[int, int]"]
"""``rule(chain, scores) -> (accepted, next_token)``; ``rule.tree(tree, scores) -> (nodes [a], next_token)``."""


class GreedyRule:
    """Greedy acceptance: the target's argmax decides, for chains and for trees."""

    def __call__(self, draft: Draft, scores: Scores) -> tuple[int, int]:
        return accept_greedy(draft.tokens, scores.argmax)

    def tree(self, draft: Draft, scores: Scores) -> tuple[np.ndarray, int]:
        return accept_greedy_tree(draft.tokens, draft.parents, scores.argmax)


greedy_rule = GreedyRule()


def generate(
    target: Target,
    prompt_ids: TokenIds,
    drafter: Drafter | str,
    max_new_tokens: int = 128,
    *,
    temperature: float = 0.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = None,
    draft_budget: int = DRAFT_BUDGET,
    stop_strings: str | Sequence[str] = (),
    eos_token_ids: TokenIds | None = None,
    record_steps: bool = True,
    profile: str | CostProfile | None = None,
) -> GenerationResult:
    """Generate up to ``max_new_tokens`` after ``prompt_ids``, speculating with ``drafter``.

    ``temperature=0`` is greedy: the output is token-identical to plain greedy decoding
    whatever the drafter proposes. ``temperature>0`` samples from the target's distribution
    after temperature, top-k and top-p (as transformers' warpers apply them), exactly, with
    one generator seeded by ``seed``; random numbers belong to output positions, so the same
    seed gives the same tokens for every deterministic (lookup) drafter, ``none`` included.
    ``top_k=0`` keeps every token; transformers' ``generate(do_sample=True)`` applies ``top_k=50``
    unless told otherwise, so give ``top_k=50`` here to get its tokens through our hook with one seed.
    ``draft_budget`` caps the nodes a drafter may propose per step (a chain's tokens, a tree's
    nodes); the loop never lets a draft run past ``max_new_tokens``. A tree draft is verified in
    one forward (see :mod:`decoding.tree`) and commits its accepted root-to-node path; a tree that
    is a single chain is verified as that chain.

    ``prompt_ids`` are integer ids ([P], P >= 1: a list, a numpy array or a torch tensor, or
    [1, P] as a tokenizer returns them); ``stop_strings`` is one string or several;
    ``eos_token_ids`` (default: the target's) one id or several. Bad input (a float id, a
    ``max_new_tokens`` that is not an integer >= 1, a drafter that is not a
    :class:`~lookup.base.Drafter`, ...) raises :class:`~pldcore.errors.PLDError` before the first
    forward; see :mod:`decoding.inputs`. A drafter that wants the vocabulary's strings
    (:meth:`~lookup.base.Drafter.wants_vocab`) is handed the target's (:meth:`Target.vocab`) first.

    ``drafter`` is a drafter, or a spec (``"adaptive:history=true"``) built here for this target's
    setting (:func:`decoding.setting.target_setting`: its model, its cost profile on its device, or
    ``profile``, a named profile or a file, and this call's regime). ``profile`` applies only to a spec:
    a drafter given as an instance was built for its own setting.
    """
    if isinstance(drafter, str):
        drafter = _built_for(target, drafter, profile, temperature, top_k, top_p)
    elif profile is not None:
        raise PLDError("profile= applies to a drafter given as a spec; an instance was built for its own setting "
                       "(lookup.parse_drafter(spec).build(setting))")
    request = check_request(target, prompt_ids, drafter, max_new_tokens, draft_budget, temperature, top_k, top_p,
                            stop_strings, eos_token_ids)
    prompt, max_new_tokens, draft_budget = request.prompt, request.max_new_tokens, request.draft_budget
    eos, stop_strings = request.eos, request.stop_strings
    # a drafter that asks for the vocabulary's strings gets the target's, once (and untimed, as its
    # construction is): a drafter reused across calls has them already and asks no more
    hand_vocab(drafter, target.vocab)
    accept = acceptance_rule(target, request, seed)
    stats = Stats()
    t_start = time.perf_counter()

    # (not the sampling top_k: how many of the target's top ids per token the drafter reads)
    rows_k = stats.top_rows = drafter.wants_top
    prompt_top = target.start(prompt, top_k=rows_k) if rows_k else target.start(prompt)
    stats.prefill_s = time.perf_counter() - t_start
    calling = [""]  # the drafter call under way: an exception raised in it is the drafter's (DrafterFailed)
    generated: list[int] = []
    try:
        calling[0] = "reset"
        t0 = time.perf_counter()
        drafter.reset(prompt)
        if prompt_top is not None:
            calling[0] = "observe_top"
            drafter.observe_top(np.asarray(prompt[:-1], dtype=np.int64), prompt_top.ids, prompt_top.probs)
        stats.drafter_s += time.perf_counter() - t0
        calling[0] = ""
        return _loop(target, drafter, accept, prompt, generated, stats, max_new_tokens, draft_budget, eos,
                     stop_strings, rows_k, record_steps, t_start, calling)
    except (PLDError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - named and re-raised: the drafter's own code failed
        if not calling[0]:  # the target's or ours: as it was
            raise
        raise DrafterFailed.of(_who(drafter), calling[0], stats.forwards + 1, len(prompt) + len(generated), exc) from exc


def _loop(target, drafter, accept, prompt, generated, stats, max_new_tokens, draft_budget, eos, stop_strings,
          rows_k, record_steps, t_start, calling: list[str]) -> GenerationResult:
    """The steps of :func:`generate` after the drafter's reset, until a stop; ``calling[0]`` names
    the drafter call under way ("" between them)."""
    last = prompt[-1]
    stop_reason = "length"
    while len(generated) < max_new_tokens:
        remaining = max_new_tokens - len(generated)
        # -- propose: never more than the tokens left after the target's own next one
        t0 = time.perf_counter()
        budget = min(draft_budget, remaining - 1)
        calling[0] = "propose"
        draft = drafter.propose(budget) if budget > 0 else EMPTY_DRAFT
        calling[0] = ""
        drafter_s = time.perf_counter() - t0
        _check_draft(draft, budget, target.vocab_size, drafter, stats.forwards + 1)
        if draft.probs is not None and getattr(target, "deterministic_drafts_only", False):
            raise DraftError(f"drafter {drafter.name!r} drafts with probabilities (Draft.probs): a recorded sampled "
                             "run replays deterministic drafts only, whose outcome does not depend on them; "
                             "measure it live (compare.py --temperature T without --replay)")
        # -- verify and accept: one forward over the last committed token plus the draft
        scores, kept, next_token = _verify(target, accept, draft, last)
        accepted = len(kept) - 1
        new = [*draft.tokens[kept[1:] - 1].tolist(), next_token]
        new, stop_reason = _apply_stops(new, generated, eos, stop_strings, target)
        # -- extend
        t0 = time.perf_counter()
        calling[0] = "extend"
        drafter.extend(new)
        calling[0] = "observe"
        drafter.observe(draft, accepted)
        calling[0] = ""
        if rows_k:
            # what the target expected after each committed input: the sequence's own rows, never
            # a rejected draft node's (a recorded trace cannot hold those, and replay must hand a
            # drafter exactly what the live loop does) and never the newest token's (not yet read)
            committed = kept[: len(new)]
            top = target.committed_top(scores, committed, rows_k)
            if top is not None:
                inputs = np.concatenate([[last], draft.tokens])
                calling[0] = "observe_top"
                drafter.observe_top(inputs[committed], top.ids, top.probs)
                calling[0] = ""
        drafter_s += time.perf_counter() - t0

        generated.extend(new)
        last = new[-1]
        stats.forwards += 1
        stats.drafted += len(draft)
        stats.accepted += accepted
        stats.stochastic_steps += draft.probs is not None
        stats.drafter_s += drafter_s
        stats.forward_s += scores.seconds
        if record_steps:
            stats.steps.append(
                StepRecord(len(prompt) + len(generated) - len(new), len(draft), accepted, len(new), drafter_s, scores.seconds)
            )
        if stop_reason != "length":
            break
    stats.new_tokens = len(generated)
    stats.wall_s = time.perf_counter() - t_start
    return GenerationResult(tokens=generated, stats=stats, stop_reason=stop_reason, seed=getattr(accept, "seed", None))


def _verify(target: Target, accept: AcceptRule, draft: Draft, last: int) -> tuple[Scores, np.ndarray, int]:
    """Score ``[last] + draft`` in one forward, apply the rule, keep the accepted inputs in the
    target's cache. Returns (scores, the inputs kept [a+1]: 0 (``last``) then the accepted draft
    nodes + 1, the target's next token)."""
    inputs = np.empty(len(draft) + 1, dtype=np.int64)
    inputs[0] = last
    inputs[1:] = draft.tokens
    if draft.is_chain:
        scores = target.score(inputs)
        accepted, next_token = accept(draft, scores)
        target.keep(1 + accepted)
        return scores, np.arange(accepted + 1), next_token
    scores = target.score_tree(inputs, draft.parents)
    nodes, next_token = accept.tree(draft, scores)
    kept = np.concatenate([[0], nodes + 1]).astype(np.int64)  # input 0 is the last committed token
    target.keep_path(kept)
    return scores, kept, next_token


def acceptance_rule(target: Target, request: Request, seed: int | None) -> AcceptRule:
    """The rule a generation of ``request`` (checked: :func:`decoding.inputs.check_request`) accepts
    by: greedy at temperature 0, else sampling with one generator seeded by ``seed``."""
    if request.temperature == 0:
        return greedy_rule
    from decoding.sampling import sampling_rule  # torch-heavy; greedy runs never need it

    return sampling_rule(request.temperature, request.top_k, request.top_p, seed, target.device)


def _built_for(target: Target, spec: str, profile, temperature: float, top_k: int, top_p: float) -> Drafter:
    """The drafter of ``spec``, built for ``target``'s setting in this call's regime."""
    from decoding.setting import target_setting  # the cost profile's cache and measurement: only for a spec
    from lookup.specs import parse_drafter
    from pldcore.setting import Regime

    parsed = parse_drafter(spec)
    if not parsed.uses_setting:  # it plans nothing: no profile to resolve (nor to measure)
        return parsed.build(None)
    regime = Regime(float(temperature), int(top_k), float(top_p)) if temperature else Regime()
    return parsed.build(target_setting(target, profile, regime))


def _check_draft(draft: Draft, budget: int, vocab_size: int, drafter: Drafter, step: int = 1) -> None:
    """A drafter bug must fail loudly and name the drafter and the step, never corrupt the output.
    A propose that changes the drafter's state is named as that, where it is the likelier cause
    (:func:`_changes_itself`)."""
    problem = _draft_problem(draft, budget, vocab_size)
    if problem:
        changed = _changes_itself(drafter, budget)
        if changed:
            raise DraftError(f"{_who(drafter)}: propose changes what the drafter knows ({changed}); only extend "
                             f"may (docs/writing-a-drafter.md). Seen at step {step}, where it {problem}")
        raise DraftError(f"{_who(drafter)} {problem} at step {step}")


def _draft_problem(draft, budget: int, vocab_size: int) -> str:
    """What makes ``draft`` unusable ("" for nothing), as the end of a sentence naming its drafter."""
    if not isinstance(draft, Draft):
        return f"returned {type(draft).__name__}, not a Draft"
    if len(draft) > budget:
        return f"proposed {len(draft)} tokens with a budget of {budget}"
    if len(draft) and (draft.tokens.min() < 0 or draft.tokens.max() >= vocab_size):
        return f"proposed ids outside the vocabulary [0, {vocab_size})"
    problem = draft.problem()
    if problem:
        return f"proposed a malformed tree: {problem}"
    if draft.probs is not None and draft.probs.shape[1] != vocab_size:
        return f"gave draft probabilities over {draft.probs.shape[1]} ids, the vocabulary has {vocab_size}"
    return ""


def _changes_itself(drafter: Drafter, budget: int) -> str:
    """Whether ``propose`` changes the drafter (asked only once a draft is found unusable: the run
    ends anyway): two more calls with nothing extended between must give one draft. Returns what
    was seen ("" when they agree, or when asking fails)."""
    try:
        first, second = drafter.propose(max(budget, 1)), drafter.propose(max(budget, 1))
        same = isinstance(first, Draft) and isinstance(second, Draft) and np.array_equal(first.tokens, second.tokens) \
            and (first.parents is None) == (second.parents is None) \
            and (first.parents is None or np.array_equal(first.parents, second.parents))
    except Exception:  # noqa: BLE001 - a diagnosis only: the unusable draft is reported either way
        return ""
    if same:
        return ""
    shown = [d.tokens.tolist()[:8] if isinstance(d, Draft) else type(d).__name__ for d in (first, second)]
    return f"two calls of propose({max(budget, 1)}) with nothing extended between gave {shown[0]}, then {shown[1]}"


def _apply_stops(
    new: list[int], generated: list[int], eos: frozenset[int], stop_strings: Sequence[str], target: Target
) -> tuple[list[int], str]:
    """Cut ``new`` after the first EOS or completed stop string; returns (tokens kept, stop reason)."""
    for i, tok in enumerate(new):
        if tok in eos:
            return new[: i + 1], "eos"
        if stop_strings:
            window = (generated + new[: i + 1])[-STOP_WINDOW:]
            text = target.decode(window)
            if any(s in text for s in stop_strings):
                return new[: i + 1], "stop_string"
    return new, "length"
