"""The board's figures in README.md and docs/*.md, rendered from ``leaderboard/board.json``.

    regions = find_regions(text, "README.md")             # the marked regions of one file
    changed = update_files(board, root, check=True)       # (file, region) pairs that differ from the board

A region is whatever lies between two marker comments, each on a line of its own::

    <!-- figures:board -->
    (rendered text)
    <!-- /figures:board -->

and :data:`REGIONS` names what each region shows; the prose around it is left alone.
``python experiments/leaderboard.py figures`` rewrites the regions of README.md and docs/*.md
(not docs/notes/: dated notes keep the figures measured then) and names those that changed;
``--check`` writes nothing and names each region that differs from the board (the figures test
runs it on the checkout, so a board rebuilt without its figures fails it).

The board file is data, not trusted: it is read by :class:`~experiments.competition.board.Board`
(size, depth and shape checked) and shown as every view shows it
(:func:`~experiments.competition.entries.shown_entries`: ranked by fresh cases where there are
some); every number is formatted here from a JSON number (anything else shows as ``-``) and every
text goes through :func:`~experiments.competition.text.markdown`, as in LEADERBOARD.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from decoding.loading import EMBEDDED_NAME
from experiments.benchmarks.paths import ROOT
from experiments.competition.board import Board, atomic_write
from experiments.competition.entries import shown_entries
from experiments.competition.ranking import (best_in_group, board_scores, ranked, split_peers, track_names,
                                             track_ranking, track_scores)
from experiments.competition.records import PEER_KIND, Entry, GroupScores, Scores
from experiments.competition.render import cross_fitted
from experiments.competition.text import clean
from experiments.competition.text import markdown as md
from experiments.reporting.summary import oracle_gain
from experiments.reporting.tables import render
from experiments.running.explain import PARTS, Loss
from pldcore.errors import PLDError
from pldcore.names import unknown_name

#: our entries whose per-group figures docs/oracle-gap.md shows
ADAPTIVE = ("adaptive", "adaptive:history=true")
#: the marker comments: ``<!-- figures:NAME -->`` opens a region, ``<!-- /figures:NAME -->`` closes it
MARKER = re.compile(r"^[ \t]*<!--[ \t]*(/?)figures:([^ \t>]*)[ \t]*-->[ \t]*$", re.M)
#: the rendered text of a region is never longer than this (a hostile board holds names, not pages)
REGION_CHARS = 20_000


# -- numbers and names, as the views show them ------------------------------------------------------------
def _num(value) -> float | None:
    """A finite JSON number, else None (a string, a bool, NaN or a missing field shows as "-")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _x(value) -> str:
    v = _num(value)
    return "-" if v is None else f"{v:.3f}x"


def _pct(value) -> str:
    v = _num(value)
    return "-" if v is None else f"{100 * v + 0.0:.0f}%".replace("-0%", "0%")


def _name(entry: Entry | None) -> str:
    return md(entry.name if entry is not None else None, 48) or "-"


def _group(scores: Scores | None, group: str) -> GroupScores:
    """Task group ``group`` of ``scores`` (an entry's public ones, a track's, a cross-fitted run's);
    no numbers where it has none."""
    return scores.groups[group] if scores is not None and group in scores.groups else GroupScores()


def _board_score(entry: Entry | None) -> float | None:
    """The score ``entry`` ranks by (fresh where linked): what the '#' column orders."""
    return board_scores(entry).score if entry is not None else None


def _speedup_and_share(speedup, oracle) -> str:
    s = _num(speedup)
    if s is None:
        return "-"
    share = oracle_gain(s, _num(oracle))
    return f"{_x(s)} ({_pct(share)})" if share is not None else _x(s)


# -- what the regions read --------------------------------------------------------------------------------
@dataclass(frozen=True)
class View:
    """The board's public benchmark as every view shows it: entries ranked by their fresh scores
    where fresh cases are linked (their public ones beside them), and its info."""

    entries: list[Entry]
    info: dict
    #: the board's other public benchmarks (a second model's), each as its own view
    others: tuple["View", ...] = ()

    @property
    def fresh(self) -> bool:
        return isinstance(self.info.get("fresh_link"), dict)

    @property
    def oracle(self) -> Entry | None:
        return ranked(self.entries).oracle

    def ranking(self, pool: Sequence[Entry] | None = None) -> list[Entry]:
        """The entries that scored (of ``pool``, default all), best first."""
        return ranked(self.entries if pool is None else pool).ranked

    def ours(self) -> list[Entry]:
        return self.ranking(split_peers(self.entries)[0])

    def peers(self) -> list[Entry]:
        return self.ranking(split_peers(self.entries)[1])

    @staticmethod
    def public(entry: Entry | None) -> float | None:
        """An entry's score on the public benchmark (beside its fresh one, where fresh scores rank)."""
        return entry.public.score if entry is not None else None

    def named(self, name: str) -> Entry | None:
        return next((e for e in self.ranking() if e.name == name), None)

    def groups(self) -> list[str]:
        return sorted({g for e in self.entries for g in e.public.groups})


def public_benchmarks(data: dict, entries: Sequence[Entry]) -> list[str]:
    """The public benchmarks of the board (``data``, its ``entries`` typed: a fresh benchmark is
    shown through the public one it is linked to), the default (the embedded model's) first, then
    the newest."""
    links = data.get("fresh") if isinstance(data.get("fresh"), dict) else {}
    fresh = {link.get("hash") for link in links.values() if isinstance(link, dict)}
    newest: dict[str, str] = {}
    for e in entries:
        if e.benchmark is not None and e.benchmark not in fresh:
            newest[e.benchmark] = max(newest.get(e.benchmark, ""), e.time or "")
    if not newest:
        raise PLDError("the board holds no entries; run `python experiments/leaderboard.py build`")
    infos = {b: info if isinstance(info := data["benchmarks"].get(b), dict) else {} for b in newest}
    public = [b for b in newest if infos[b].get("public") is True] or list(newest)

    def default(b: str) -> bool:  # boards built before benchmarks had names: the embedded model's
        models = infos[b].get("model")
        return infos[b].get("default") is True or ("default" not in infos[b] and isinstance(models, list)
                                                   and EMBEDDED_NAME in models)
    return sorted(public, key=lambda b: (default(b), newest[b], b), reverse=True)


def public_benchmark(data: dict, entries: Sequence[Entry]) -> str:
    """The benchmark the figures show: :func:`public_benchmarks`' first."""
    return public_benchmarks(data, entries)[0]


def load_view(board: Board) -> View:
    """The view of ``board``'s public benchmark; one-line errors for a missing, empty or malformed board."""
    if not board.path.is_file():
        raise PLDError(f"no board file at {clean(board.path)}; run `python experiments/leaderboard.py build`")
    views = []
    for bench in public_benchmarks(board.load(), board.entries()):  # every entry validated here, once
        entries, info = shown_entries(board, bench)
        views.append(View(entries, info))
    return View(views[0].entries, views[0].info, tuple(views[1:]))


# -- the regions ------------------------------------------------------------------------------------------
def _caption(view: View) -> str:
    info = view.info
    cases = _num(info.get("cases"))
    text = (f"From the board (`leaderboard/board.json`): benchmark {md(info.get('hash'), 64)}"
            + (f", {cases:.0f} public cases" if cases is not None else ""))
    link = info.get("fresh_link")
    if isinstance(link, dict):
        n = _num(link.get("cases"))
        text += (f"; ranked by {f'{n:.0f} ' if n is not None else ''}fresh cases made at the build of "
                 f"{md(str(link.get('time') or '?')[:10], 20)} (seed {md(link.get('seed'), 24)})")
    return text + ". Estimated speedup over plain greedy decoding under the benchmark's CPU cost profile."


def region_board(view: View) -> str:
    """The board, our entries and the peers together: rank, scores, and the share of the oracle's gain.
    An entry whose numbers were fitted on the benchmark shows its cross-fitted public score beside
    the in-sample one."""
    oracle = view.oracle
    entries = view.ranking()
    cross = any((c := cross_fitted(e)) is not None and c.score is not None for e in entries)
    scores = ["fresh CPU (ranks)", "public CPU"] if view.fresh else ["CPU"]
    headers = ["#", "entry", "kind", *scores, *(["public CPU, cross-fitted"] if cross else []),
               "of oracle gain" + (" (fresh)" if view.fresh else "")]

    def row(rank: str, e: Entry, kind: str) -> list[str]:
        cells = [rank, _name(e), kind, _x(_board_score(e))]
        if view.fresh:
            cells.append(_x(e.public.score))
        if cross:
            cells.append(_x((cross_fitted(e) or Scores()).score))
        gain = 1.0 if e is oracle else oracle_gain(_board_score(e), _board_score(oracle))
        return cells + [_pct(gain)]

    rows = [row("-", oracle, "ceiling")] if oracle else []
    rows += [row(str(i), e, md(e.kind, 20)) for i, e in enumerate(entries, 1)]
    return _caption(view) + "\n\n" + render(headers, rows, markdown=True)


def _group_table(view: View, columns: Sequence[tuple[str, Callable[[str], Entry | None], bool]],
                 overall: Sequence[Entry | None], ratio: str | None = None) -> str:
    """Per task group: the oracle, then each column's entry (chosen per group) with its speedup and
    share of the oracle's gain in that group (and its name, where the column says so), and its
    cross-fitted figures where it has them; the last row is the public score (geometric mean over
    groups) of ``overall``'s entries. ``ratio``: a last column, the first column's speedup over the
    second's."""
    oracle = view.oracle
    groups = view.groups()
    cross = [any(_group(cross_fitted(pick(g)), g).est_speedup is not None for g in groups)
             for _, pick, _ in columns]
    headers = ["group", "oracle"]
    for (title, _, _), c in zip(columns, cross):
        headers += [title] + ([f"{title}, cross-fitted"] if c else [])
    rows = []
    for g in [*groups, None]:  # None: the public score over all groups
        picked = [pick(g) for _, pick, _ in columns] if g is not None else list(overall)
        speed = (lambda e: _group(e.public, g).est_speedup) if g is not None else view.public  # noqa: E731
        cross_speed = ((lambda e: _group(cross_fitted(e), g).est_speedup) if g is not None  # noqa: E731
                       else (lambda e: (cross_fitted(e) or Scores()).score))
        o = speed(oracle) if oracle else None
        cells = [md(g, 60) if g is not None else "all (geo mean)", _x(o)]
        for e, c, (_, _, named) in zip(picked, cross, columns):
            s = speed(e) if e is not None else None
            shown = _speedup_and_share(s, o)
            cells.append("-" if _num(s) is None else f"{_name(e)} {shown}" if named else shown)
            if c:
                cells.append(_speedup_and_share(cross_speed(e), o) if e is not None else "-")
        if ratio:
            a, b = (_num(speed(e)) if e is not None else None for e in picked[:2])
            cells.append(f"{a / b:.2f}" if a and b else "-")
        rows.append(cells)
    return render(headers + ([ratio] if ratio else []), rows, markdown=True)


def _best_public(view: View, pool: Sequence[Entry]) -> Entry | None:
    scored = [(s, e) for e in pool if (s := _num(view.public(e))) is not None]
    return max(scored, key=lambda t: t[0])[1] if scored else None


def region_peers_by_group(view: View) -> str:
    """Per task group of the public benchmark: our best entry against the best peer, each with its
    share of the oracle's gain in that group."""
    ours, peers = view.ours(), view.peers()
    table = _group_table(view, [("our best", lambda g: best_in_group(ours, g), True),
                                ("best peer", lambda g: best_in_group(peers, g), True)],
                         [_best_public(view, ours), _best_public(view, peers)], ratio="ours / peer")
    return ("Per task group of the public benchmark, our best entry against the best peer: estimated speedup (CPU "
            "profile) and the share of the oracle's gain in that group; the last row is the public score.\n\n" + table)


def region_adaptive_groups(view: View) -> str:
    """Per task group of the public benchmark: ``adaptive`` and ``adaptive:history=true`` beside the
    oracle and the best peer of each group."""
    peers = view.peers()
    columns = [(f"`{name}`", lambda g, n=name: view.named(n), False) for name in ADAPTIVE]
    columns.append(("best peer", lambda g: best_in_group(peers, g), True))
    return _group_table(view, columns, [view.named(n) for n in ADAPTIVE] + [_best_public(view, peers)])


def region_oracle_gap(view: View) -> str:
    """Where ``adaptive``, ``adaptive:history=true`` and the best peer lose time against the
    cost-aware oracle, pooled over the public benchmark's cases (the board's ``oracle_gap``)."""
    peers = view.peers()
    shown = [view.named(n) for n in ADAPTIVE] + peers[:1]
    rows = []
    for e in shown:
        if e is None:
            continue
        pooled = _pooled_gap(e.oracle_gap)
        if pooled is None:
            rows.append([_name(e), *["-"] * (4 + len(PARTS))])
            continue
        plain, oracle, run, parts = pooled
        gap = run - oracle
        rows.append([_name(e), _x(plain / run), _x(plain / oracle), _pct(oracle_gain(plain / run, plain / oracle)),
                     *(_pct(parts[p] / gap) if gap > 0 else "-" for p in PARTS)])
    headers = ["entry", "speedup", "cost-aware oracle", "of gain", *PARTS]
    return render(headers, rows, markdown=True)


def _pooled_gap(gap: Mapping[str, Loss] | None) -> tuple[float, float, float, dict[str, float]] | None:
    """(plain, oracle, run seconds, seconds per part) summed over an entry's groups, or None where it
    has no breakdown (the loader keeps only whole ones) or the times are not positive."""
    if not gap:
        return None
    plain = sum(loss.plain for loss in gap.values())
    oracle = sum(loss.oracle for loss in gap.values())
    run = sum(loss.run for loss in gap.values())
    parts = {p: sum(loss.parts[p] for loss in gap.values()) for p in PARTS}
    return (plain, oracle, run, parts) if plain > 0 and oracle > 0 and run > 0 else None


def region_fresh_vs_public(view: View) -> str:
    """Every ranked entry on the public benchmark and on the fresh cases of the board's build."""
    if not view.fresh:
        return "The board links no fresh cases (it was built with `--fresh 0`)."
    link = view.info["fresh_link"]
    oracle = view.oracle
    rows = []
    for e in ([oracle] if oracle else []) + view.ranking():
        public, fresh = e.public.score, _board_score(e)
        rows.append([_name(e), _x(public), _x(fresh), f"{public / fresh:.3f}" if public and fresh else "-"])
    return render(["entry", "public", f"fresh (seed {md(link.get('seed'), 24)})", "public / fresh"], rows,
                  markdown=True)


def region_beyond(view: View) -> str:
    """The baselines' and peers' shares of accepted tokens beyond any run of their context (the
    ``beyond`` flag's measure), largest first: the public benchmark and the fresh cases."""
    pool = [e for e in view.ranking() if e.kind in ("baseline", PEER_KIND)]

    def share(e: Entry) -> float | None:
        both = [e.public.beyond_share, e.fresh.beyond_share if view.fresh and e.fresh is not None else None]
        return max([s for s in both if s is not None], default=None)

    shares = sorted(((s, e) for e in pool if (s := share(e)) is not None), key=lambda t: (-t[0], t[1].name))
    if not shares:
        return "No baseline or peer on the board reports its share of tokens beyond its context."
    top = [f"{_name(e)} {100 * s:.1f}%" for s, e in shares[:3]]
    under = sum(1 for s, _ in shares if s < 0.01)
    return (f"On the board (the larger of its public and fresh shares): {', '.join(top)}; "
            f"{under} of the {len(shares)} baselines and peers stay under 1%.")


#: region name -> what renders it
def region_gpu_tracks(view: View) -> str:
    """Per shipped benchmark and track but the CPU one (public cases): the oracle, the bound that also
    knows the top-k, our best entry and the best peer, each with its score and share of the track's
    oracle gain, and our best's lowest group (the board's ``## Tracks`` tables hold every entry)."""
    rows = []
    for v in (view, *view.others):
        oracle = v.oracle
        for track in track_names(v.entries):
            bound = (track_scores(oracle, track) if oracle is not None else None) or Scores()
            ranking = track_ranking(v.entries, track)
            ours = next((e for e in ranking if not e.is_peer), None)
            peer = next((e for e in ranking if e.is_peer), None)
            groups = sorted(bound.groups)

            def cell(e: Entry | None, track: str = track, bound: Scores = bound) -> str:
                scores = track_scores(e, track) if e is not None else None
                if scores is None:
                    return "-"
                return f"{_name(e)} {_speedup_and_share(scores.score, bound.score)}"

            worst = None
            if ours is not None and groups:
                shares = {g: oracle_gain(_group(track_scores(ours, track), g).est_speedup,
                                         bound.groups[g].est_speedup) for g in groups}
                known = {g: value for g, value in shares.items() if value is not None}
                worst = min(known.items(), key=lambda kv: kv[1]) if known else None
            rows.append([_model_of(v), md(track, 40), _x(bound.score), _x(bound.score_topk), cell(ours), cell(peer),
                         f"{md(worst[0], 60)} {_pct(worst[1])}" if worst else "-"])
    if not rows:
        return "The board has no tracks yet: `python experiments/leaderboard.py build` scores them."
    table = render(["model", "track", "oracle", "oracle + top-k", "our best", "best peer", "our best's lowest group"],
                   rows, markdown=True)
    return ("Per model and track (`docs/competition.md`: every entry replayed planning and priced under the track's"
            " profile, in its regime and batch; public cases): estimated speedup and the share of the track's oracle"
            " gain.\n\n" + table)


#: the tracks of a setting other than greedy decoding of one request at a time, as the per-group
#: tables of ``figures:setting-tracks`` show them
SETTING_TRACKS = ("cpu-t1", "h100-8b-t1", "h100-8b-b32", "h100-8b-b128")


def _best_on_track(pool: Sequence[Entry], track: str, group: str | None) -> Entry | None:
    """The entry of ``pool`` with the highest estimated speedup on ``track``, in task group ``group``
    (None: its score over all groups); the later name on a tie, as :func:`best_in_group`."""
    def speed(e: Entry) -> float | None:
        scores = track_scores(e, track)
        return None if scores is None else _num(scores.score if group is None else _group(scores, group).est_speedup)

    scored = [(v, e.name, i) for i, e in enumerate(pool) if (v := speed(e))]
    return pool[max(scored)[2]] if scored else None


def region_setting_tracks(view: View) -> str:
    """Per shipped benchmark and track of :data:`SETTING_TRACKS` (sampling at temperature 1, batches of
    32 and 128 on the H100), per task group (public cases): the track's oracle, our best entry there
    and the best peer, each with its share of the track's oracle gain, and ours over the peer's."""
    parts = []
    for v in (view, *view.others):
        ours, peers = split_peers([e for e in v.entries if not e.is_oracle])
        for track in [t for t in SETTING_TRACKS if t in track_names(v.entries)]:
            bound = track_scores(v.oracle, track) if v.oracle is not None else None
            if bound is None:
                continue
            rows = []
            for g in [*sorted(bound.groups), None]:
                o = bound.score if g is None else _group(bound, g).est_speedup
                picked = [_best_on_track(pool, track, g) for pool in (ours, peers)]
                speeds = [None if e is None else (track_scores(e, track).score if g is None
                                                  else _group(track_scores(e, track), g).est_speedup) for e in picked]
                cells = [md(g, 60) if g is not None else "all (geo mean)", _x(o)]
                cells += ["-" if _num(s) is None else f"{_name(e)} {_speedup_and_share(s, o)}"
                          for e, s in zip(picked, speeds)]
                a, b = (_num(s) for s in speeds)
                rows.append(cells + [f"{a / b:.2f}" if a and b else "-"])
            table = render(["group", "oracle", "our best", "best peer", "ours / peer"], rows, markdown=True)
            about = (v.info.get("tracks") or {}).get(track) or {}
            parts.append(f"**{_model_of(v)}, track {md(track, 40)}** ({md(about.get('regime', 'greedy'), 80)}"
                         + (f", a batch of {about['batch']}" if isinstance(about.get("batch"), int)
                            and about["batch"] > 1 else "") + ", public cases)\n\n" + table)
    if not parts:
        return "The board has no sampled or batch tracks yet: `python experiments/leaderboard.py build` scores them."
    return ("Per model, track and task group (`docs/competition.md`): the track's oracle, our best entry and the best "
            "peer there, estimated speedup over plain decoding in the track's setting and the share of the track's "
            "oracle gain.\n\n" + "\n\n".join(parts))


def _model_of(view: View) -> str:
    name, models = view.info.get("name"), view.info.get("model")
    return md(name if isinstance(name, str) else models[0] if isinstance(models, list) and models else "?", 48)


def region_benchmarks(view: View) -> str:
    """Each public benchmark's ranking side by side (one per model): per entry, its rank, score and
    share of the oracle's gain on each (CPU track, ranked by fresh cases where linked); rows in the
    default benchmark's order."""
    views = (view, *view.others)
    order: list[str] = []
    for v in views:
        order += [e.name for e in v.ranking() if e.name not in order]
    headers, oracles = ["entry"], []
    for v in views:
        headers += [f"{_model_of(v)}: #", "score", "of oracle gain"]
        oracles.append(v.oracle)
    rows = [["oracle (ceiling)", *(c for o in oracles for c in ("-", _x(_board_score(o)), "100%"))]]
    for name in order:
        cells = [md(name, 48)]
        for v, o in zip(views, oracles):
            ranking = v.ranking()
            place = next((i for i, e in enumerate(ranking, 1) if e.name == name), None)
            e = ranking[place - 1] if place else None
            kind = " (peer)" if e is not None and e.is_peer else ""
            cells += [f"{place}{kind}" if place else "-", _x(_board_score(e)),
                      _pct(oracle_gain(_board_score(e), _board_score(o))) if e else "-"]
        rows.append(cells)
    caption = ("From the board (`leaderboard/board.json`), each shipped benchmark side by side: "
               + "; ".join(f"{_model_of(v)} {md(v.info.get('hash'), 64)}, "
                           + (f"ranked by {_num((v.info.get('fresh_link') or {}).get('cases')) or 0:.0f} fresh cases"
                              if v.fresh else f"{_num(v.info.get('cases')) or 0:.0f} public cases")
                           for v in views)
               + ". Estimated speedup over plain greedy decoding under each benchmark's own CPU profile; the "
                 "peers rank with our entries here.")
    return caption + "\n\n" + render(headers, rows, markdown=True)


def region_benchmark_groups(view: View) -> str:
    """Per benchmark and task group (public cases): the oracle, our best entry and the best peer,
    with their shares of the oracle's gain."""
    parts = []
    for v in (view, *view.others):
        ours, peers = v.ours(), v.peers()
        table = _group_table(v, [("our best", lambda g, o=ours: best_in_group(o, g), True),
                                 ("best peer", lambda g, p=peers: best_in_group(p, g), True)],
                             [_best_public(v, ours), _best_public(v, peers)], ratio="ours / peer")
        parts.append(f"**{_model_of(v)}** (benchmark {md(v.info.get('hash'), 64)}, public cases)\n\n{table}")
    return "\n\n".join(parts)


REGIONS: dict[str, Callable[[View], str]] = {
    "benchmarks": region_benchmarks,
    "benchmark-groups": region_benchmark_groups,
    "board": region_board,
    "peers-by-group": region_peers_by_group,
    "adaptive-groups": region_adaptive_groups,
    "oracle-gap": region_oracle_gap,
    "fresh-vs-public": region_fresh_vs_public,
    "beyond": region_beyond,
    "gpu-tracks": region_gpu_tracks,
    "setting-tracks": region_setting_tracks,
}


# -- the files --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Region:
    name: str
    start: int  # where its text begins: just after the opening marker's line
    end: int  # where its text ends: the start of the closing marker's line


def documents(root: Path = ROOT) -> list[Path]:
    """The files whose regions are rendered: README.md and docs/*.md (not docs/notes/)."""
    files = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    return [f for f in files if f.is_file()]


def find_regions(text: str, where: str) -> list[Region]:
    """The regions of ``text`` (a file named ``where`` in errors), in order. A region must close
    before the next opens, with its own name; an unknown name is refused, with the close ones."""
    regions, open_ = [], None
    for m in MARKER.finditer(text):
        closing, name = m.group(1) == "/", m.group(2)
        line = text.count("\n", 0, m.start()) + 1
        if name not in REGIONS:
            raise PLDError(f"{where}:{line}: " + unknown_name("figures region", clean(name, 48), REGIONS))
        if not closing:
            if open_ is not None:
                raise PLDError(f"{where}:{line}: figures:{name} opens inside figures:{open_[0]}; close that first")
            open_ = (name, m.end() + 1, line)
        else:
            if open_ is None or open_[0] != name:
                inside = f" (figures:{open_[0]} is open)" if open_ else ""
                raise PLDError(f"{where}:{line}: /figures:{name} closes no open region{inside}")
            regions.append(Region(name, min(open_[1], m.start()), m.start()))
            open_ = None
    if open_ is not None:
        raise PLDError(f"{where}:{open_[2]}: figures:{open_[0]} is never closed (<!-- /figures:{open_[0]} -->)")
    return regions


def render_region(name: str, view: View) -> str:
    """The text of region ``name`` (ending with a newline), from the board ``view``."""
    if name not in REGIONS:
        raise PLDError(unknown_name("figures region", clean(name, 48), REGIONS))
    return REGIONS[name](view)[:REGION_CHARS].rstrip("\n") + "\n"


def updated(text: str, view: View, where: str) -> tuple[str, list[str]]:
    """``text`` with every region rendered from ``view``, and the names of the regions that changed."""
    out, changed, at = [], [], 0
    for region in find_regions(text, where):
        new = render_region(region.name, view)
        out += [text[at:region.start], new]
        if text[region.start:region.end] != new:
            changed.append(region.name)
        at = region.end
    out.append(text[at:])
    return "".join(out), changed


def update_files(board: Board, root: Path = ROOT, check: bool = False) -> list[tuple[str, str]]:
    """Render every region of README.md and docs/*.md under ``root`` from ``board``: (file, region)
    for each region that differed. With ``check`` nothing is written; without it, every file is
    rendered before any is written, so a malformed marker anywhere leaves every file as it was."""
    view = load_view(board)
    root = Path(root)
    differ, writes = [], []
    for path in documents(root):
        where = path.relative_to(root).as_posix()
        new, changed = updated(path.read_text(encoding="utf-8"), view, where)
        differ += [(where, name) for name in changed]
        if changed:
            writes.append((path, new))
    if not check:
        for path, new in writes:
            atomic_write(path, new)
    return differ


def count_regions(root: Path = ROOT) -> int:
    """How many regions README.md and docs/*.md under ``root`` hold (each file's markers checked)."""
    return sum(len(find_regions(p.read_text(encoding="utf-8"), p.relative_to(root).as_posix()))
               for p in documents(Path(root)))
