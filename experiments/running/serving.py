"""Who serves each request of a benchmark: a fresh drafter per request, or one drafter for a stream.

    for trace_set, case, setting, drafter in serve_traces(sets, method.make, setting):  # a fresh drafter per case
    for served in serve_traces(sets, method.make, setting, stream=True):  # one drafter, in the benchmark's order
    for case, drafter in serve(cases, make, stream=stream):      # any requests (a live comparison's)

Per request, each case gets a drafter of its own, made for the setting it is priced in, so nothing
one case teaches a drafter reaches another. As a stream (``--stream``), one drafter,
made once, serves every case in the benchmark's order (:func:`experiments.benchmarks.traces.in_order`)
with ``reset`` starting each request, as a server answering a stream of requests would: a drafter
that keeps a history across requests learns from earlier cases only, never the current case's
future. Every loop over a benchmark (replay, explain, the acceptance fits, the live comparison, the
sandboxed evaluation) takes its drafters from here, so the two settings mean the same everywhere.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence, TypeVar

from experiments.benchmarks.traces import TraceCase, TraceSet, in_order
from lookup.base import Drafter, hand_vocab
from pldcore.setting import Setting

R = TypeVar("R")  # a request: a trace case, a live comparison's case
D = TypeVar("D")  # what serves it: a drafter (or a sandbox holding one, or one drafter per method)


def serve(requests: Iterable[R], make: Callable[[R], D], *, stream: bool = False,
          needed: Callable[[R], bool] | None = None) -> Iterator[tuple[R, D]]:
    """Each request of ``requests``, in their order, with what serves it.

    Per request: ``make(request)`` for each, made as it comes up, and only for the requests that
    ``needed`` accepts (the others are skipped: a caller's stored rows answer them). As a
    ``stream``: ``make(first request)``, made once, serves every request, ``needed`` or not: what
    the drafter knows at a case is what every earlier case left it.
    """
    shared: list[D] = []  # the stream's one server, once made
    for request in requests:
        if stream:
            if not shared:
                shared.append(make(request))
            yield request, shared[0]
        elif needed is None or needed(request):
            yield request, make(request)


class Served(NamedTuple):
    """One case of a benchmark, the setting it is priced in, and the drafter that serves it."""

    trace_set: TraceSet
    case: TraceCase
    setting: Setting
    drafter: Any  # what ``make`` returned (a NamedTuple is generic only from Python 3.11)


def serve_traces(sets: Sequence[TraceSet], make: Callable[[Setting], D], setting: Setting, *, stream: bool = False,
                 needed: Callable[[TraceCase], bool] | None = None) -> Iterator[Served]:
    """The cases of ``sets`` with the drafter that serves each (:func:`serve`), all in ``setting``
    (resolved by the caller: :func:`experiments.benchmarks.traces.traces_setting`).

    Per request: the sets in the order given, and a fresh ``make(setting)`` for each case ``needed``
    accepts. As a ``stream``: the sets in the benchmark's order, every case served by one
    ``make(setting)``.
    """
    ordered = in_order(sets) if stream else list(sets)

    def make_for(request: tuple[TraceSet, TraceCase]) -> D:
        made = make(setting)
        if isinstance(made, Drafter):  # a sandbox hands them to its entry itself
            hand_vocab(made, lambda: request[0].vocab)  # the benchmark's strings, to a drafter that asks
        return made

    requests = ((trace_set, case) for trace_set in ordered for case in trace_set.cases)
    wanted = None if needed is None else (lambda request: needed(request[1]))
    for (trace_set, case), drafter in serve(requests, make_for, stream=stream, needed=wanted):
        yield Served(trace_set, case, setting, drafter)
