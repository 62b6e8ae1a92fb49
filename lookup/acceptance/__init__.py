"""Acceptance: what a drafter knows of a draft, what that says of its acceptance, and what to send.

* evidence: :class:`lookup.base.Evidence`, which any drafter reports through the contract's
  :meth:`lookup.base.Drafter.evidence` hook;
* the learner (:class:`AcceptanceRates`): P(node at depth d accepted | the ones before) per
  match-length bucket (:func:`match_bucket`, the one bucketing), decayed and smoothed towards a
  prior; ``adaptive``'s model, ``recycling`` and the vLLM proposer's batch rule all learn with it;
* the model (:class:`AcceptanceModel`): priors, decayed rates and fitted models
  (:mod:`~lookup.acceptance.first_token`, :mod:`~lookup.acceptance.later_nodes`) turn evidence into
  per-node probabilities; the fits are data (:mod:`~pldcore.fits`);
* the planner (:class:`Planner`): how many nodes to send under a cost profile.

``adaptive`` is a thin drafter over the three; analysis code (hindsight, the fit collector,
explain) talks to them, never to a drafter's internals.
"""

from lookup.acceptance import first_token, later_nodes
from lookup.acceptance.learner import BUCKET_EDGES, BUCKETS, UNKNOWN_MATCH, AcceptanceRates, match_bucket
from lookup.acceptance.model import PRIORS, WITH_HISTORY, AcceptanceModel, Inputs, Priors, Row, first_token_inputs
from lookup.acceptance.planner import (COST_REFRESH, Planner, best_cut, chain_path_probs, forward_costs,
                                       plan_chain, warm_up)
from lookup.acceptance.rates import DecayedRate, smoothed_rate

__all__ = ["AcceptanceModel", "AcceptanceRates", "BUCKETS", "BUCKET_EDGES", "COST_REFRESH", "DecayedRate", "Inputs",
           "PRIORS", "Planner", "Priors", "Row", "UNKNOWN_MATCH", "WITH_HISTORY", "best_cut", "first_token_inputs",
           "chain_path_probs", "forward_costs", "match_bucket", "plan_chain", "smoothed_rate", "warm_up"]
