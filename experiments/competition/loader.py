"""Board entries read from the untrusted file into typed values (:mod:`.records`), once.

    entries = load_entries(data["entries"], where="leaderboard/board.json", benchmark=bench)
    entry = entry_of(record)                      # one JSON object of the file (or one just made)
    benchmark, name = key_of(record)              # what identifies a record, for the board's writers

The board file is data anyone may have edited. The rule, in one place:

* an entry that is not a JSON object, or whose ``score`` is there but is not a finite number, is
  refused: a :class:`PLDError` of one line names the file and the entry (every view sorts by
  that score, so there is nothing to show without it);
* any other field that is not what it should be reads as missing: a number that is not a finite
  number is None (shown as "-"), a mapping that is not an object is empty, a breakdown
  (``oracle_gap``) with any group that is not whole is None. The views never see the difference
  between a field the file lacks and one it holds in the wrong shape.

Texts stay as the file holds them (as str): each view escapes them for itself (``text.py``).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from experiments.competition.records import (DISQUALIFIED, OK, Attempt, Entry, GroupScores, Scores, Source,
                                             Verify)
from experiments.competition.text import clean
from experiments.running.explain import PARTS, Loss
from pldcore.errors import PLDError
from pldcore.params import check_params


# -- fields --------------------------------------------------------------------------------------------
def number(value: Any) -> float | None:
    """A finite JSON number as a float; None for anything else (a string, a bool, NaN, a missing field)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _text(value: Any) -> str | None:
    return None if value is None else value if isinstance(value, str) else str(value)


def _object(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _groups(value: Any) -> dict[str, GroupScores]:
    """Per task group: a group whose numbers are not an object keeps its column, with no numbers."""
    return {str(name): GroupScores(**{k: number(g.get(k)) for k in _GROUP_FIELDS}) if isinstance(g, dict)
            else GroupScores() for name, g in _object(value).items()}


_GROUP_FIELDS = ("est_speedup", "tau", "est_speedup_gpu", "est_speedup_cost_aware", "est_speedup_topk")
_SCORE_FIELDS = ("score", "score_gpu", "tau", "drafter_us_per_step", "beyond_share", "score_cost_aware",
                 "score_topk")


def scores_of(value: Mapping, status: str | None = OK) -> Scores:
    """The :class:`Scores` of a JSON object (an entry, a track, a cross-fitted run); ``status``: the
    status where the object names none (a track or a cross-fitted run is scored unless it says not)."""
    return Scores(status=_text(value.get("status", status)) or "", reason=_text(value.get("reason")),
                  groups=_groups(value.get("groups")), **{k: number(value.get(k)) for k in _SCORE_FIELDS})


def _tracks(value: Any) -> dict[str, Scores]:
    """Per GPU track, in the file's order; a track that is not an object is listed, not scored."""
    return {str(name): scores_of(t) if isinstance(t, dict) else Scores(status=DISQUALIFIED)
            for name, t in _object(value).items()}


def source_of(value: Any) -> Source:
    source = _object(value)
    return Source(**{k: _text(source.get(k)) for k in ("kind", "name", "sha256", "display")})


def _params(value: Any) -> dict:
    """An entry's parameters where they are within what a spec can hold (``pldcore.params``), else
    none: a hand-edited file's payload is neither shown nor run again (``entries.submission_of``
    checks the file's own value and refuses it)."""
    try:
        return check_params(value)
    except PLDError:
        return {}


def _verify(value: Any) -> Verify | None:
    if not isinstance(value, dict) or not value:
        return None
    identical = value.get("identical")
    return Verify(speedup=number(value.get("speedup")), identical=identical if isinstance(identical, bool) else None,
                  model=_text(value.get("model", "?")), prompts=value.get("prompts", "?"),
                  max_new_tokens=value.get("max_new_tokens", "?"),
                  failed=_text(value.get("failed")), skipped=_text(value.get("skipped")))


def _loss(value: Any) -> Loss | None:
    """One group's breakdown, or None unless it is whole: every field a finite number, every part there."""
    if not isinstance(value, dict) or not set(value) <= _LOSS_FIELDS or not isinstance(value.get("parts"), dict):
        return None
    parts = {p: number(value["parts"].get(p)) for p in PARTS}
    fields = {k: number(value[k]) for k in ("plain", "oracle", "run", "cases") if k in value}
    auc = value.get("first_token_auc")
    if any(v is None for v in (*parts.values(), *fields.values())) or (auc is not None and number(auc) is None):
        return None
    return Loss(**fields, parts=parts, first_token_auc=number(auc))


_LOSS_FIELDS = {"plain", "oracle", "run", "parts", "cases", "first_token_auc"}


def _oracle_gap(value: Any) -> dict[str, Loss] | None:
    if not isinstance(value, dict) or not value:
        return None
    losses = {str(group): _loss(loss) for group, loss in value.items()}
    return None if any(loss is None for loss in losses.values()) else losses


def _attempts(value: Any) -> tuple[Attempt, ...]:
    return tuple(Attempt(time=_text(a.get("time")), status=_text(a.get("status")), score=number(a.get("score")),
                         reason=_text(a.get("reason")), params=_params(a.get("params")),
                         source=source_of(a.get("source")), record=a)
                 for a in (value if isinstance(value, list) else []) if isinstance(a, dict))


# -- the board's other fields ----------------------------------------------------------------------------
#: what each field of a benchmark's description (``benchmarks[hash]``, ``scoring.benchmark_info``) and of
#: a fresh link (``fresh[hash]``, ``entries.link_fresh``) may hold: a type, ``{str: T}`` (a mapping of
#: names to T), ``[T]`` (a list of T) or a nested object of such fields
_NUMBER = float  # a finite number (int or float, never a bool)
_FRESH = {"seed": int, "per_task": int, "version": str, "python": str, "space": {str: int}}
_PROFILE = {"model": str, "device": str, "forward_ms_1": _NUMBER, "flat_up_to": int, "relative": {str: _NUMBER}}
BENCHMARK_FIELDS = {
    "hash": str, "folder": str, "public": bool, "name": str, "default": bool, "tasks": {str: int}, "cases": int,
    "tokens": int, "model": [str], "cpu_profile": _PROFILE, "gpu_profile": _PROFILE,
    "tracks": {str: {"model": str, "device": str, "forward_ms_1": _NUMBER, "draft_budget": int}}, "fresh": _FRESH,
}
LINK_FIELDS = {"hash": str, "cases": int, "tasks": {str: int}, "time": str, **_FRESH}


def typed(value: Any, shape: Any) -> Any:
    """``value`` as ``shape`` says it may be (see :data:`BENCHMARK_FIELDS`), or None: a field of the
    wrong type reads as missing, as an entry's do; an object keeps the fields it does not describe."""
    if isinstance(shape, dict) and list(shape) == [str]:  # a mapping of names to shape[str]
        if not isinstance(value, dict):
            return None
        return {k: v for k, item in value.items() if isinstance(k, str) and (v := typed(item, shape[str])) is not None}
    if isinstance(shape, dict):  # an object of known fields
        if not isinstance(value, dict):
            return None
        known = {k: typed(value[k], sub) for k, sub in shape.items() if k in value}
        return {**{k: v for k, v in value.items() if k not in shape}, **{k: v for k, v in known.items() if v is not None}}
    if isinstance(shape, list):
        return [v for item in value if (v := typed(item, shape[0])) is not None] if isinstance(value, list) else None
    if shape is _NUMBER:
        return number(value)
    if shape is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    return value if isinstance(value, shape) else None


def board_of(data: Any, where: str = "the board") -> dict:
    """The board file's content with every field typed (:func:`typed`), read once where the file is
    read: ``benchmarks`` (hash -> description), ``fresh`` (public hash -> link; a link without its
    hash is dropped), ``seeds`` (ints), ``owners`` (kept as found: :mod:`.owners` reads it) and
    ``entries`` (a list of objects: each typed by :func:`entry_of` where it is used). A file that is
    not an object, or whose ``entries`` is not a list of objects, is no board: one line."""
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list) \
            or not all(isinstance(e, dict) for e in data["entries"]):
        raise PLDError(f"{clean(where, 200)} is not a board file")
    board = dict(data)
    board["benchmarks"] = typed(data.get("benchmarks"), {str: BENCHMARK_FIELDS}) or {}
    links = typed(data.get("fresh"), {str: LINK_FIELDS})
    if links is not None or "fresh" in data:
        board["fresh"] = {k: link for k, link in (links or {}).items() if "hash" in link}
    if "seeds" in data:
        board["seeds"] = typed(data.get("seeds"), [int]) or []
    return board


# -- entries -------------------------------------------------------------------------------------------
def key_of(record: Any) -> tuple[str | None, str | None]:
    """(benchmark, name) of a record of the board file, None where it has no such string: what the
    board's writers match records by."""
    record = _object(record)
    bench, name = record.get("benchmark"), record.get("name")
    return (bench if isinstance(bench, str) else None), (name if isinstance(name, str) else None)


def entry_of(record: Any, where: str = "the board") -> Entry:
    """The typed :class:`Entry` of one record of the board file (see the module's rule); ``where``
    names the file in the one-line error."""
    if not isinstance(record, dict):
        raise PLDError(f"{clean(where, 200)} is not a board file: an entry is not a JSON object")
    name = _text(record.get("name")) or ""
    if "score" in record and record["score"] is not None and number(record["score"]) is None:
        bench = clean(record.get("benchmark"), 64)
        raise PLDError(f"{clean(where, 200)} is not a board file: the score of entry {clean(name, 48)!r}"
                       f" of benchmark {bench} is not a number")
    count = number(record.get("refused_count"))
    refused = record.get("refused")
    return Entry(
        name=name, kind=_text(record.get("kind")) or "?", benchmark=key_of(record)[0],
        public=scores_of(record, status=None),
        tracks=_tracks(record.get("tracks")),
        cross_fitted=scores_of(record["cross_fitted"]) if isinstance(record.get("cross_fitted"), dict) else None,
        source=source_of(record.get("source")), params=_params(record.get("params")),
        code=_text(record.get("code")), stream=bool(record.get("stream")),
        refused=tuple(_text(r) or "" for r in refused) if isinstance(refused, list) else (),
        refused_count=int(count) if count is not None else 0,
        isolation=_text(record.get("isolation")), full_isolation=bool(record.get("full_isolation")),
        reset_ms_per_case=number(record.get("reset_ms_per_case")), eval_s=number(record.get("eval_s")),
        verify=_verify(record.get("verify")), oracle_gap=_oracle_gap(record.get("oracle_gap")),
        attempts=_attempts(record.get("attempts")), time=_text(record.get("time")), record=record)


def load_entries(records: Iterable[Any], where: str = "the board", benchmark: str | None = None) -> list[Entry]:
    """The typed entries of the board file's ``entries`` list (of ``benchmark`` only, when given)."""
    return [entry_of(r, where) for r in records if benchmark is None or key_of(r)[0] == benchmark]
