"""Views of the board: terminal text, LEADERBOARD.md, leaderboard.json, a static index.html, W&B.

Every view is computed from the entries of one benchmark (``Board.entries(hash)``); none holds
data of its own, so rebuilding them is always safe. Every text an entry carries goes through the
view's escaping (``text.py``): cleaned for the terminal, escaped for Markdown and for HTML, whatever
the board file holds.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Callable, Sequence

from experiments.competition.board import ORACLE, atomic_write, now
from experiments.competition.ranking import (board_scores, best_in_group, public_standing, ranked, split_peers,
                                             track_names, track_ranking, track_scores)
from experiments.competition.records import PENDING, Attempt, Entry, GroupScores, Scores
from experiments.competition.text import clean, html_text, portable_refusal
from experiments.competition.text import markdown as md
from experiments.reporting import wandb_log
from experiments.reporting.summary import oracle_gain
from experiments.reporting.tables import loss_table, render

DOCS_LINK = "../docs/competition.md"
#: entries drawn in the plot, besides the oracle
PLOT_TOP = 9


#: what a sampled track (``-t1``) replays, said under the tracks
SAMPLED_NOTE = (" A sampled track (cpu-t1, h100-8b-t1) replays the benchmark's traces sampled at temperature 1.0"
                " (top-p 1.0, each case its own seed), where any drafter that proposes fixed drafts commits exactly"
                " those tokens; its oracle is the oracle of those traces.")
#: what a batch track (``-b<B>``) prices, said under the tracks
BATCH_NOTE = (" A batch track (h100-8b-b32, h100-8b-b128) is a server running that many requests at once"
              " (weights read once a step, each request's cache and FLOPs its own: docs/hardware.md); each"
              " request's drafter time counts batch / 8 times in a step, as a server drafts its batch over 8 threads.")


def _x(value) -> str:
    return f"{value:.3f}x" if isinstance(value, (int, float)) else "-"


def _f(value, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "-"


def _gain(entry: Entry, oracle: Entry | None) -> float | None:
    """The share of the oracle's gain over plain decoding that ``entry`` reaches (CPU scores)."""
    return oracle_gain(board_scores(entry).score, board_scores(oracle).score if oracle else None)


def _notes(entry: Entry) -> str:
    bits = [f"FLAG {flag}" for flag in entry.flags or ()]
    if entry.stream:
        bits.append("stream: one drafter serves the cases in order, keeping what it learns")
    if entry.refused_count:
        bits.append(f"{entry.refused_count} operations refused")
    if not entry.is_oracle and not entry.full_isolation:
        bits.append(f"isolation: {entry.isolation or 'unknown'} (not full)")
    reset = entry.reset_ms_per_case
    if reset is not None and reset >= 1:
        bits.append(f"reset {reset:.0f} ms/case")
    verify = entry.verify
    if verify is not None and verify.speedup is not None:
        bits.append(f"live {verify.speedup:.2f}x, {'identical' if verify.identical else 'NOT identical'}")
    return "; ".join(bits)


def best_against_peers(entries: Sequence[Entry], esc: Callable[[object], str] = clean) -> tuple[list[str], list[list]]:
    """Per task group: our best entry (baselines and submissions) and the best peer, by estimated
    speedup (CPU profile), and the ratio of the two."""
    ours, peers = (ranked(pool).ranked for pool in split_peers(entries))
    rows = []
    for g in groups_of(ours + peers):
        a, b = (best_in_group(pool, g) for pool in (ours, peers))
        a, an = (a.public.groups[g].est_speedup, a.name) if a else (None, None)
        b, bn = (b.public.groups[g].est_speedup, b.name) if b else (None, None)
        rows.append([esc(g), f"{esc(an)} {_x(a)}" if an else "-", f"{esc(bn)} {_x(b)}" if bn else "-",
                     f"{a / b:.2f}" if a and b else "-"])
    return ["group", "our best", "best peer", "ours / peer"], rows


def groups_of(entries: Sequence[Entry]) -> list[str]:
    return sorted({g for e in entries for g in e.public.groups})


def main_headers(fresh: bool) -> list[str]:
    """The board's columns; ``fresh``: fresh cases rank it, and each column says its basis."""
    return ["#", "entry", "kind", *(["fresh CPU (ranks)", "public CPU"] if fresh else ["est. speedup CPU"]),
            "public CPU cross-fitted" if fresh else "CPU cross-fitted",
            "public GPU (flat track)" if fresh else "est. speedup GPU (flat track)",
            *(["tau (public)", "of oracle gain (fresh)", "drafter µs/step (sandbox CPU, public)"] if fresh
              else ["tau", "of oracle gain", "drafter µs/step (sandbox CPU)"]),
            "notes"]


#: what each column of the board holds, in every view that shows it (Markdown and HTML); a column's
#: basis (fresh or public cases) is in its name
COLUMNS = {
    "#": "the rank (the oracle is a ceiling, not ranked)",
    "entry": "the entry's name; `:history=true` entries serve the cases as one stream",
    "kind": "baseline (ours), peer (another system's lookup function, `docs/peers.md`), submission, ceiling",
    "fresh CPU (ranks)": "what the board ranks by: the geometric mean over task groups of the estimated speedup over "
                         "plain greedy decoding under the benchmark's CPU profile, on the fresh cases made at the build",
    "public CPU": "the same, on the public benchmark's cases (anyone can read their answers)",
    "est. speedup CPU": "what the board ranks by: the geometric mean over task groups of the estimated speedup over "
                        "plain greedy decoding under the benchmark's CPU profile",
    "public CPU cross-fitted": "an entry fitted on the public cases, scored on them again with each half's fit made "
                               "on the other half only (`docs/competition.md`); - for the others",
    "CPU cross-fitted": "an entry fitted on these cases, scored on them again with each half's fit made on the other "
                        "half only (`docs/competition.md`); - for the others",
    "public GPU (flat track)": "the entry replayed again planning for the flat GPU profile and priced under it "
                               "(## Tracks), on the public cases",
    "est. speedup GPU (flat track)": "the entry replayed again planning for the flat GPU profile and priced under it "
                                     "(## Tracks)",
    "tau (public)": "new tokens per target forward on the public cases (1.0 = plain decoding)",
    "tau": "new tokens per target forward (1.0 = plain decoding)",
    "of oracle gain (fresh)": "(score - 1) / (oracle - 1), fresh cases",
    "of oracle gain": "(score - 1) / (oracle - 1)",
    "drafter µs/step (sandbox CPU, public)": "the sandboxed process's CPU time per step as the parent measured it, "
                                             "its handling of each request included (`plain`'s figure is that "
                                             "handling alone; `compare.py` shows the in-process wall time, less)",
    "drafter µs/step (sandbox CPU)": "the sandboxed process's CPU time per step as the parent measured it, its "
                                     "handling of each request included (`plain`'s figure is that handling alone; "
                                     "`compare.py` shows the in-process wall time, less)",
    "notes": "flags, a stream, refused operations, partial isolation, a slow reset, a live check",
}


def ranked_by(entries: Sequence[Entry]) -> str:
    """The sentence that says what the board ranks by and which cases each figure is of."""
    fresh = has_fresh(entries)
    return ("Ranked by the geometric mean over task groups of the **estimated speedup** over plain greedy decoding"
            " under the CPU profile (forward cost by tokens verified, plus the drafter's own CPU time, reset"
            " included, as the parent measured it)" + (
                ", on the **fresh cases** made at the build: prompts drawn from a seed at the build, so nobody"
                " could know their answers. Every other figure (*public ...* columns, the tables per group, the GPU"
                " tracks) is of the **public** benchmark's cases, which anyone can read: an entry that remembers"
                " them scores higher there than on the fresh ones" if fresh else "") + ".")


def main_rows(entries: Sequence[Entry], esc: Callable[[object], str] = clean) -> tuple[list[str], list[list], list[Entry]]:
    """(headers, rows of display strings, the entries in row order): the oracle, then the ranking.
    ``esc`` makes an entry's texts safe for the view (the numbers are ours)."""
    oracle, ok, _ = ranked(entries)
    fresh = has_fresh(entries)
    headers = main_headers(fresh)
    public = (lambda e: [_x(e.public.score)]) if fresh else (lambda e: [])
    # one column, one basis: the GPU column is of the public cases (as the GPU tracks' tables), fresh or not
    gpu = (lambda e: e.public.score_gpu) if fresh else (lambda e: board_scores(e).score_gpu)
    rows, order = [], []
    if oracle:
        shown = board_scores(oracle)
        aware = shown.score_cost_aware
        note = "knows the answer, drafts exactly the accepted run" + (
            f"; cost-aware: {_x(aware)} CPU" + (" on the fresh cases" if fresh else "") if aware else "")
        rows.append(["-", ORACLE, "ceiling", _x(shown.score), *public(oracle), "-", _x(gpu(oracle)),
                     _f(oracle.public.tau), "100%", "-", note])
        order.append(oracle)
    for rank, e in enumerate(ok, 1):
        gain = _gain(e, oracle)
        shown = board_scores(e)
        rows.append([str(rank), esc(e.name), esc(e.kind), _x(shown.score), *public(e),
                     cross_fitted_cell(e), _x(gpu(e)), _f(e.public.tau),
                     "-" if gain is None else f"{100 * gain:.0f}%".replace("-0%", "0%"),
                     _f(e.public.drafter_us_per_step, 0), esc(_notes(e))])
        order.append(e)
    return headers, rows, order


def track_rows(entries: Sequence[Entry], track: str,
               esc: Callable[[object], str] = clean) -> tuple[list[str], list[list]]:
    """(headers, rows) of one GPU track: the oracle, then every entry by its score there, with its
    share of that track's oracle gain overall and per task group."""
    oracle_entry = ranked(entries).oracle
    oracle = track_scores(oracle_entry, track) if oracle_entry is not None else None
    groups = sorted(oracle.groups) if oracle else []

    def cells(scores: Scores) -> list[str]:
        out = []
        for g in groups:
            mine = scores.groups[g].est_speedup if g in scores.groups else None
            gain = oracle_gain(mine, oracle.groups[g].est_speedup)
            out.append("-" if mine is None else f"{_x(mine)} ({'-' if gain is None else f'{100 * gain:.0f}%'})")
        return out

    def share(value) -> str:
        return "-" if value is None else f"{100 * value:.0f}%"

    topk = oracle.score_topk if oracle else None
    headers = ["#", "entry", "kind", "est. speedup", "of oracle gain", "of top-k bound gain",
               *[f"{g} (of oracle gain)" for g in groups]]
    rows = [["-", ORACLE, "ceiling", _x(oracle.score), "100%", share(oracle_gain(oracle.score, topk)),
             *cells(oracle)]] if oracle else []
    if topk is not None:
        topk_cells = [_x(oracle.groups[g].est_speedup_topk) for g in groups]
        rows.append(["-", "oracle + top-k", "bound", _x(topk), "-", "100%", *topk_cells])
    for rank, e in enumerate(track_ranking(entries, track), 1):
        scores = track_scores(e, track)
        rows.append([str(rank), esc(e.name), esc(e.kind), _x(scores.score),
                     share(oracle_gain(scores.score, oracle.score if oracle else None)),
                     share(oracle_gain(scores.score, topk)), *cells(scores)])
    return headers, rows


def track_setting(about: dict) -> str:
    """What a track's heading adds to its profile: its regime where it samples, its batch where it serves
    more than one request (from the benchmark's ``tracks`` description; nothing for a greedy batch-1 one)."""
    regime, batch = about.get("regime"), about.get("batch")
    said = [f"sampled at {regime}" if isinstance(regime, str) and regime != "greedy" else "",
            f"a batch of {batch}" if isinstance(batch, int) and not isinstance(batch, bool) and batch > 1 else ""]
    return "".join(f", {s}" for s in said if s)


def track_lines(entries: Sequence[Entry], info: dict, esc: Callable[[object], str] = clean,
                markdown: bool = False, only: str | None = None) -> list[str]:
    """The GPU tracks (or track ``only``), one table each, with the profile behind it and which
    entry to pick there."""
    lines: list[str] = []
    profiles = info.get("tracks") or {}
    for track in [t for t in track_names(entries) if only is None or t == only]:
        ours = [e for e in track_ranking(entries, track) if not e.is_peer]
        about = profiles.get(track) or {}
        model = str(about.get("model", "?")).removeprefix(f"{track}: ")  # a named idealisation names itself
        device = "" if about.get("device") in (None, "ideal") else f" on {esc(about['device'])}"
        lines += ["", f"{'### ' if markdown else ''}track {esc(track)}: {esc(model)}{device},"
                  f" one-token forward {_f(about.get('forward_ms_1'), 1)} ms,"
                  f" drafts of up to {esc(about.get('draft_budget', '?'))} nodes{esc(track_setting(about))}",
                  "", render(*track_rows(entries, track, esc), markdown=markdown)]
        if ours:
            lines += ["", f"pick on this track: {esc(ours[0].name)}"
                      f" ({_x(track_scores(ours[0], track).score)})"]
    return lines


def cross_fitted(entry: Entry | None) -> Scores | None:
    """An entry's cross-fitted scores (for an entry whose numbers were fitted on the public cases:
    ``cross_fit.py``) where they were scored (not disqualified), else None."""
    cross = entry.cross_fitted if entry is not None else None
    return cross if cross is not None and cross.ok else None


def cross_fitted_cell(entry: Entry) -> str:
    """The public score of an entry whose numbers were fitted on the public cases, cross-fitted
    (each half of the cases with a fit made on the other half: ``cross_fit.py``); "-" for the
    others, whose public score is out of sample already."""
    if entry.cross_fitted is None:
        return "-"
    cross = cross_fitted(entry)
    return _x(cross.score) if cross is not None else "disqualified"


def has_fresh(entries: Sequence[Entry]) -> bool:
    """Whether the entries carry fresh scores (``flags.with_fresh``): the views rank by them."""
    return any(e.fresh is not None for e in entries)


def split_pending(dq: Sequence[Entry]) -> tuple[list[Entry], list[Entry]]:
    """(disqualified, pending): an entry scored on the public cases only waits for the next build."""
    pending = [e for e in dq if board_scores(e).status == PENDING]
    return [e for e in dq if board_scores(e).status != PENDING], pending


def group_rows(entries: Sequence[Entry], esc: Callable[[object], str] = clean) -> tuple[list[str], list[list]]:
    """Per task group: estimated speedup (CPU) and tau, for the oracle and every ranked entry."""
    oracle, ok, _ = ranked(entries)
    groups = groups_of(entries)
    rows = []
    for e in ([oracle] if oracle else []) + ok:
        cells = []
        for g in groups:
            s = e.public.groups[g] if g in e.public.groups else None
            cells.append(f"{_x(s.est_speedup)} τ{_f(s.tau)}" if s is not None else "-")
        rows.append([esc(e.name), *cells])
    return ["entry", *[esc(g) for g in groups]], rows


def _benchmark_lines(info: dict) -> list[str]:
    cpu = info.get("cpu_profile") or {}
    gpu = info.get("gpu_profile") or {}
    tasks = ", ".join(f"{t} ({n})" for t, n in (info.get("tasks") or {}).items())
    rel = cpu.get("relative") or {}
    rel_text = ", ".join(f"{n}: {r:.2f}x" for n, r in rel.items())
    return [
        f"benchmark {info.get('hash', '?')}: {info.get('cases', '?')} cases, {info.get('tokens', 0):,} tokens"
        f" ({', '.join(info.get('model') or []) or '?'}); traces {info.get('folder', '?')}",
        f"tasks: {tasks}" if tasks else "",
        f"CPU profile: {cpu.get('model', '?')} on {cpu.get('device', '?')}, one-token forward "
        f"{_f(cpu.get('forward_ms_1'), 1)} ms; relative cost by tokens verified {rel_text}" if cpu else "",
        f"GPU profile: {gpu.get('model', '?')}, {_f(gpu.get('forward_ms_1'), 0)} ms per forward" if gpu else "",
        _fresh_line(info.get("fresh_link")),
    ]


def _fresh_line(link) -> str:
    """How the fresh cases that rank the board were made (so anyone can make them again)."""
    if not isinstance(link, dict):
        return ""
    return (f"ranked by fresh cases made at the build: seed {link.get('seed', '?')}, generator v{link.get('version', '?')}"
            f" (Python {link.get('python', '?')}), {link.get('cases', '?')} cases, benchmark {link.get('hash', '?')}"
            f"; public scores beside them. Make them again: `python experiments/leaderboard.py check-fresh`")


def text_board(entries: Sequence[Entry], info: dict, track: str | None = None) -> str:
    """What ``show`` prints (every text cleaned: no control character reaches the terminal); with a GPU
    ``track``, that track's ranking instead."""
    if track is not None:
        return "\n".join([clean(line, 1000) for line in _benchmark_lines(info) if line]
                         + track_lines(entries, info, clean, markdown=False, only=track))
    entries, peers = split_peers(entries)
    _, _, dq = ranked(entries)
    headers, rows, _ = main_rows(entries)
    gh, grows = group_rows(entries)
    parts = [clean(line, 1000) for line in _benchmark_lines(info) if line]
    where = " (public benchmark)" if has_fresh(entries) else ""
    parts += ["", render(headers, rows), "", f"estimated speedup (CPU profile) and tau per task group{where}:",
              render(gh, grows)]
    dq, pending = split_pending(dq)
    if pending:
        parts += ["", "not scored on fresh cases yet (public score only, not ranked):"]
        for e in pending:
            place = public_standing(entries, e.name)
            parts.append(f"  {clean(e.name, 48)}: public {_x(e.public.score)}"
                         + (f" (#{place[0]} of {place[1]} by public score)" if place else "")
                         + (f"; {clean('; '.join(e.flags), 300)}" if e.flags else ""))
    if dq:
        parts += ["", "disqualified:"] + [f"  {clean(e.name, 48)}: {clean(board_scores(e).reason, 500)}" for e in dq]
    if ranked(peers).ranked:
        ph, prows, _ = main_rows(peers)
        parts += ["", "the peers (other systems' lookup functions, replayed on the same traces):", render(ph, prows),
                  "", "per task group, our best against the best peer:", render(*best_against_peers(entries + peers))]
    return "\n".join(parts)


def entry_details(entry: Entry, oracle: Sequence[Entry], info: dict) -> str:
    """What ``show NAME`` prints: the entry beside the oracle, per group, and where it loses time
    against the cost-aware oracle (the parts add up to the gap; ``traces.py explain`` for any drafter)."""
    parts = [text_board([*oracle, entry], info)]
    cross = cross_fitted(entry)
    if cross is not None and cross.groups:
        own = entry.public.groups
        rows = [[clean(g, 60), _x(own[g].est_speedup if g in own else None), _x(s.est_speedup)]
                for g, s in cross.groups.items()]
        parts += ["", f"{clean(entry.name, 48)} cross-fitted (each half of the public cases with a fit made on "
                      "the other half; docs/acceptance.md):", render(["group", "in sample", "cross-fitted"], rows)]
    if entry.attempts:
        parts += ["", f"submissions of {clean(entry.name, 48)}, oldest first (a resubmission never replaces "
                      "a better entry of its name: the board keeps the best):"] + [
            "  " + attempt_line(a, entry) for a in entry.attempts]
    if entry.oracle_gap:  # None where the file's breakdown is not whole (recorded before it, or edited by hand)
        losses = {clean(group, 60): loss for group, loss in entry.oracle_gap.items()}
        parts += ["", f"where {clean(entry.name, 48)} loses time against the cost-aware oracle "
                      "(share of its gap, decoding phase):", loss_table(losses)]
    return "\n".join(parts)


def attempt_line(attempt: Attempt, entry: Entry) -> str:
    """One submission an entry lists (``board.attempt_of``), cleaned: when, its score or why it
    failed, its parameters and file; "(on the board)" for the one the entry is."""
    what = (f"{_x(attempt.score)} CPU (public)" if attempt.status == "ok"
            else f"disqualified -- {clean(attempt.reason, 300)}")
    given = ":".join(f"{clean(k, 40)}={clean(repr(v), 40)}" for k, v in list(attempt.params.items())[:8])
    file = attempt.source.display or attempt.source.name
    sha = attempt.source.sha256 or ""
    bits = [clean(attempt.time, 40), what, *([f"--params {given}"] if given else []),
            *([f"{clean(file, 80)}" + (f" ({clean(sha[:12], 12)})" if sha else "")] if file else [])]
    here = attempt.time is not None and attempt.time == entry.time
    return "; ".join(bits) + ("  (on the board)" if here else "")


def markdown(entries: Sequence[Entry], info: dict) -> str:
    """LEADERBOARD.md."""
    everything = entries
    entries, peers = split_peers(entries)
    _, ok, dq = ranked(entries)
    headers, rows, _ = main_rows(entries, md)
    gh, grows = group_rows(entries, md)
    second = info.get("default") is False and isinstance(info.get("name"), str)  # views in leaderboard/<name>/
    title = f" on {md(info['name'], 64)}" if second else ""
    lines = [
        f"# pld-lab leaderboard: the best lookup function{title}",
        "",
        "Generated by `python experiments/leaderboard.py build` on " + now() + ". Rules, scoring and how to"
        f" submit: [docs/competition.md]({'../' + DOCS_LINK if second else DOCS_LINK}).",
        "",
        *[f"- {md(line, 1000)}" for line in _benchmark_lines(info) if line],
        "",
        ranked_by(entries),
        "",
        render(headers, rows, markdown=True),
        "",
        "Columns:",
        "",
        *[f"- *{h}*: {COLUMNS[h]}" for h in headers],
        "",
        "## Per task group",
        "",
        "Estimated speedup (CPU profile) and tau (tokens per target forward)"
        + (" on the public benchmark's cases." if has_fresh(entries) else "."),
        "",
        render(gh, grows, markdown=True),
    ]
    if ranked(peers).ranked:
        ph, prows, _ = main_rows(peers, md)
        pgh, pgrows = group_rows(peers, md)
        lines += ["", "## The peers", "",
                  "Other systems' lookup functions (`docs/peers.md`), each with its own default settings, replayed"
                  " through the same loop on the same traces and priced the same way. *of oracle gain* is against the"
                  " same oracle.", "", render(ph, prows, markdown=True), "", render(pgh, pgrows, markdown=True),
                  "", "Per task group, our best entry against the best peer (estimated speedup, CPU profile):", "",
                  render(*best_against_peers(everything, md), markdown=True)]
    if track_names(everything):
        lines += ["", "## Tracks", "",
                  "Each entry replayed again per track, its cost-aware drafters planning under the track's profile"
                  " (`docs/hardware.md`) with drafts of up to 63 nodes, and priced under it;"
                  " the oracle's runs are priced the same way. Ours and the peers in one ranking; *of oracle gain*"
                  " per track and group."
                  + (" On the public benchmark's cases." if has_fresh(entries) else "") + SAMPLED_NOTE + BATCH_NOTE,
                  *track_lines(everything, info, md, markdown=True)]
    dq, pending = split_pending(dq)
    if pending:
        lines += ["", "## Not scored on fresh cases yet", "", "Submitted since the last build: public score only, not"
                  " ranked (the next build scores them on its fresh cases).", "",
                  render(["entry", "kind", "public CPU", "notes"],
                         [[md(e.name, 48), md(e.kind, 20), _x(e.public.score), md(_notes(e), 500)]
                          for e in pending], markdown=True)]
    if dq:
        lines += ["", "## Disqualified", "", render(["entry", "kind", "reason"],
                                                    [[md(e.name, 48), md(e.kind, 20),
                                                      md(board_scores(e).reason, 500)] for e in dq], markdown=True)]
    refused = [e for e in ok + dq if e.refused_count]
    if refused:
        lines += ["", "## Refused operations", "",
                  "What the sandbox refused (a PermissionError inside the submission; the entry is scored on what it"
                  " drafted):", ""]
        for e in refused:
            shown = "; ".join(md(portable_refusal(r), 200) for r in e.refused[:8])
            lines.append(f"- **{md(e.name, 48)}** ({md(e.refused_count, 20)}): {shown}")
    verified = [e for e in ok if e.verify is not None]
    if verified:
        lines += ["", "## Verified live", "", render(
            ["entry", "model", "prompts", "new tokens", "measured speedup", "identical to greedy"],
            [[md(e.name, 48), md(e.verify.model, 80), md(e.verify.prompts, 20), md(e.verify.max_new_tokens, 20),
              _x(e.verify.speedup), {True: "yes", False: "NO", None: "-"}[e.verify.identical]]
             for e in verified], markdown=True)]
    return "\n".join(lines) + "\n"


def board_json(entries: Sequence[Entry], info: dict) -> dict:
    """leaderboard.json: the same numbers as the tables, machine-readable. Beside the board's scores
    (fresh where linked) and flags, an entry republishes the board file's own fields (cleaned where
    they are text)."""
    oracle, ok, dq = ranked(entries)
    keep = ("name", "kind", "score", "score_gpu", "score_public", "score_gpu_public", "cross_fitted", "tracks", "flags",
            "stream",
            "beyond_share",
            "tau", "drafter_us_per_step", "rt_us_per_step", "reset_ms_per_case",
            "groups", "source", "params", "refused_count", "refused", "isolation", "full_isolation", "eval_s", "verify",
            "time", "git_sha")
    texts = {"name": 48, "kind": 20, "isolation": 80}

    def slim(e: Entry) -> dict:
        record, shown = e.record, board_scores(e)
        ours = {"score": shown.score, "score_gpu": shown.score_gpu}
        if e.fresh is not None:  # fresh scores rank: the public ones beside them
            ours.update(score_public=e.public.score, score_gpu_public=e.public.score_gpu)
        else:
            ours = {k: v for k, v in ours.items() if k in record}
        if e.flags is not None:
            ours["flags"] = list(e.flags)
        out = {k: ours[k] if k in ours else record[k] for k in keep if k in ours or k in record}
        out.update({k: clean(record[k], n) for k, n in texts.items() if k in record})
        if "refused" in record:
            out["refused"] = [clean(portable_refusal(r), 200) for r in e.refused[:20]]
        return out

    def on_track(e: Entry | None, track: str) -> float | None:
        scores = track_scores(e, track) if e is not None else None
        return scores.score if scores is not None else None

    return {
        "benchmark": info, "generated": now(),
        "oracle": slim(oracle) if oracle else None,
        "ranking": [{"rank": i, **slim(e), "of_oracle_gain": _gain(e, oracle)} for i, e in enumerate(ok, 1)],
        "tracks": {track: [{"rank": i, "name": clean(e.name, 48), "kind": clean(e.kind, 20),
                            "score": on_track(e, track), "of_oracle_gain": oracle_gain(on_track(e, track),
                                                                                       on_track(oracle, track))}
                           for i, e in enumerate(track_ranking(entries, track), 1)]
                   for track in track_names(entries)},
        "disqualified": [{**{k: v for k, v in slim(e).items() if k in ("name", "kind", "refused", "source", "isolation")},
                          "reason": clean(board_scores(e).reason, 500)} for e in dq],
    }


# -- the plot -----------------------------------------------------------------------------------------------
def plot_png(entries: Sequence[Entry]) -> bytes | None:
    """Grouped bars: estimated speedup per task group (and the geo-mean), CPU and GPU profiles, of the
    oracle and the top :data:`PLOT_TOP` entries (``reporting.plots.grouped_bars_png`` draws them), every
    bar of the public cases (the groups are theirs; fresh scores rank the entries shown)."""
    from experiments.reporting.plots import Bars, grouped_bars_png  # matplotlib: only when a page is written

    oracle, ok, _ = ranked(entries)
    shown = ([oracle] if oracle else []) + ok[:PLOT_TOP]
    groups = groups_of(shown)
    if not shown or not groups:
        return None

    def values(e: Entry, gpu: bool) -> list[float]:
        mine = [e.public.groups[g] if g in e.public.groups else GroupScores() for g in groups]
        per_group = [g.est_speedup_gpu if gpu else g.est_speedup for g in mine]
        overall = e.public.score_gpu if gpu else e.public.score  # one basis: the groups' own cases, public
        return [v or 0.0 for v in (*per_group, overall)]

    series = [Bars(e.name, [values(e, False), values(e, True)], reference=e is oracle) for e in shown]
    titles = [f"Estimated speedup by task group, public cases -- {title}"
              for title in ("CPU profile (traces' own)", "large-GPU profile (flat track)")]
    return grouped_bars_png(series, [*groups, "geo-mean"], titles)


# -- index.html -----------------------------------------------------------------------------------------------
#: sorting: a click sorts by the column, its first click in the column's own first direction (``data-first``:
#: rank and names ascending, figures descending), the next the other way; an arrow says which; cells with no
#: figure ("-") sort last either way, figures before words
SORT_JS = """
document.querySelectorAll("table.sortable").forEach(table => {
  const heads = [...table.tHead.rows[0].cells];
  const key = (row, i) => {
    const c = row.cells[i], v = (c.dataset.v ?? c.textContent).trim();
    if (v === "" || v === "-") return null;
    const n = parseFloat(v);
    return isNaN(n) ? v.toLowerCase() : n;
  };
  heads.forEach((th, i) => th.addEventListener("click", () => {
    const now = th.getAttribute("aria-sort");
    const dir = now ? (now === "ascending" ? "descending" : "ascending")
                    : (th.dataset.first === "asc" ? "ascending" : "descending");
    heads.forEach(h => h.removeAttribute("aria-sort"));
    th.setAttribute("aria-sort", dir);
    const sign = dir === "ascending" ? 1 : -1, body = table.tBodies[0];
    [...body.rows].sort((a, b) => {
      const x = key(a, i), y = key(b, i);
      if (x === null || y === null) return (x === null) - (y === null);
      if (typeof x !== typeof y) return typeof x === "number" ? -1 : 1;
      return (x > y ? 1 : x < y ? -1 : 0) * sign;
    }).forEach(r => body.appendChild(r));
  }));
});
"""

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 14px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th { background: #f3f3f3; cursor: pointer; user-select: none; }
th::after { content: " \\2195"; color: #bbb; }
th[aria-sort=ascending]::after { content: " \\25B2"; color: #222; }
th[aria-sort=descending]::after { content: " \\25BC"; color: #222; }
td:nth-child(2), td:nth-child(3), td:last-child { text-align: left; }
tr.oracle td { background: #f7f7f0; font-style: italic; }
tr.baseline td:nth-child(3) { color: #777; }
dt { font-weight: bold; margin-top: .4em; }
code { font-size: 12px; }
"""


def _inline(text: str) -> str:
    """Our own sentences (never an entry's text) from the Markdown's inline marks to HTML: `code`,
    **bold**, *emphasis*, [links](url)."""
    import html
    import re

    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"\*([^*]+)\*", r"<em>\1</em>", out)
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', out)


def _table(headers: Sequence[str], rows: Sequence[Sequence], values: Sequence[Sequence] | None = None,
           classes: Sequence[str] | None = None, notes: dict | None = None, first_asc: int = 3) -> str:
    """A sortable table of display strings (escaped here); ``values``: each cell's sort value (a
    number) where its text is not one; ``notes``: a column's definition, shown on hover; the first
    ``first_asc`` columns (rank, names) sort ascending on a first click."""
    def head(i: int, h: str) -> str:
        title = f' title="{html_text(notes[h], 1000)}"' if notes and h in notes else ""
        return f'<th data-first="{"asc" if i < first_asc else "desc"}"{title}>{html_text(h)}</th>'

    def cell(text, value) -> str:
        attr = f' data-v="{value:.6g}"' if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
        return f"<td{attr}>{html_text(text, 1000)}</td>"

    body = []
    for r, row in enumerate(rows):
        vals = values[r] if values is not None else [None] * len(row)
        cls = f' class="{html_text(classes[r], 20)}"' if classes is not None else ""
        body.append(f"<tr{cls}>" + "".join(cell(t, v) for t, v in zip(row, vals, strict=True)) + "</tr>")
    return (f'<table class="sortable"><thead><tr>{"".join(head(i, h) for i, h in enumerate(headers))}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def page(entries: Sequence[Entry], info: dict, png: bytes | None) -> str:
    """index.html: one static file, no external resources; what LEADERBOARD.md says, in HTML: what
    ranks and on which cases, every column defined, the tables per group, the peers, the GPU tracks."""
    oracle, _, dq = ranked(entries)
    dq = split_pending(dq)[0] + split_pending(dq)[1]
    headers, rows, order = main_rows(entries)
    fresh = has_fresh(entries)
    docs = ("../" + DOCS_LINK) if info.get("default") is False and isinstance(info.get("name"), str) else DOCS_LINK

    def sort_values(e: Entry) -> list:
        cross = cross_fitted(e)
        return [-1 if e is oracle else None, None, None, board_scores(e).score, *([e.public.score] if fresh else []),
                cross.score if cross is not None else None,
                e.public.score_gpu if fresh else board_scores(e).score_gpu, e.public.tau,
                _gain(e, oracle) if e is not oracle else 1.0, e.public.drafter_us_per_step, None]

    values = []
    for e, row in zip(order, rows):
        v = sort_values(e)
        v[0] = -1 if e is oracle else int(row[0])
        values.append(v)
    classes = ["oracle" if e is oracle else e.kind for e in order]
    gh, grows = group_rows(entries)
    columns = "".join(f"<dt>{html_text(h)}</dt><dd>{_inline(COLUMNS[h])}</dd>" for h in headers)
    info_lines = "".join(f"<li>{_inline(html_safe(line))}</li>" for line in _benchmark_lines(info) if line)
    dq_html = "".join(f"<li><b>{html_text(e.name, 48)}</b>: {html_text(board_scores(e).reason, 500)}</li>" for e in dq)
    peers_html = ""
    if any(e.is_peer for e in entries) and any(not e.is_peer for e in entries):
        ph, prows = best_against_peers(entries)
        peers_html = ("<h2>Ours against the peers</h2><p>Other systems' lookup functions (<code>docs/peers.md</code>),"
                      " each with its own defaults, replayed on the same traces and priced the same way. Per task"
                      f" group, our best entry against the best peer (estimated speedup, CPU profile"
                      f"{', public cases' if fresh else ''}):</p>" + _table(ph, prows, first_asc=1))
    tracks_html = ""
    for track in track_names(entries):
        about = (info.get("tracks") or {}).get(track) or {}
        th, trows = track_rows(entries, track)
        tracks_html += (f"<h3>track {html_text(track)}: {html_text(str(about.get('model', '?')).removeprefix(f'{track}: '))}"
                        f", one-token forward {_f(about.get('forward_ms_1'), 1)} ms, drafts of up to "
                        f"{html_text(about.get('draft_budget', '?'))} nodes{html_text(track_setting(about))}</h3>"
                        + _table(th, trows))
    if tracks_html:
        notes = SAMPLED_NOTE + BATCH_NOTE
        tracks_html = ("<h2>Tracks</h2><p>Each entry replayed again per track, its cost-aware drafters planning"
                       " under the track's profile (<code>docs/hardware.md</code>) with drafts of up to 63 nodes, and"
                       " priced under it; the oracle's runs are priced the same way. Ours and"
                       " the peers in one ranking;"
                       f" <em>of oracle gain</em> per track and group{'. On the public cases' if fresh else ''}."
                       f"{html_text(notes, len(notes))}</p>" + tracks_html)
    img = (f'<h2>By task group</h2><img alt="estimated speedup by task group" '
           f'src="data:image/png;base64,{base64.b64encode(png).decode()}">' if png else "")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pld-lab leaderboard</title><style>{CSS}</style></head>
<body>
<h1>pld-lab leaderboard: the best lookup function</h1>
<p>Generated {html_text(now())} by <code>python experiments/leaderboard.py build</code>. Rules, scoring and how to
submit: <a href="{html_text(docs)}">docs/competition.md</a>; the cost models of the GPU tracks:
<a href="{html_text(docs.replace('competition.md', 'hardware.md'))}">docs/hardware.md</a>; the peers:
<a href="{html_text(docs.replace('competition.md', 'peers.md'))}">docs/peers.md</a>.
Click a column to sort by it (again: the other way).</p>
<ul>{info_lines}</ul>
<p id="ranked-by">{_inline(ranked_by(entries))}</p>
{_table(headers, rows, values, classes, COLUMNS)}
<h2>Columns</h2><dl id="columns">{columns}</dl>
<h2>Per task group</h2><p>Estimated speedup (CPU profile) and tau{" on the public benchmark's cases" if fresh else ""}.</p>
{_table(gh, grows, first_asc=1)}
{peers_html}
{tracks_html}
{f"<h2>Disqualified</h2><ul>{dq_html}</ul>" if dq else ""}
{img}
<script>{SORT_JS}</script>
</body></html>
"""


def html_safe(line: str) -> str:
    """A line of :func:`_benchmark_lines` (it may quote the benchmark's folder: text from a file),
    cleaned for :func:`_inline`."""
    return clean(line, 1000)


# -- W&B ---------------------------------------------------------------------------------------------------
def log_wandb(entries: Sequence[Entry], info: dict, mode: str | None, out_dir: Path,
              png: bytes | None = None) -> list[str]:
    """The board as a W&B table (and the plot), through ``reporting.wandb_log.log_run``; "off" logs
    nothing. Never raises for W&B trouble."""
    if not entries:
        return []
    headers, rows, order = main_rows(entries)
    columns = ["rank", "entry", "kind", "score_cpu", "score_gpu", "tau", "of_oracle_gain", "drafter_us_per_step"]
    oracle = ranked(entries).oracle
    data = [[r[0], clean(e.name, 48), clean(e.kind, 20), board_scores(e).score, board_scores(e).score_gpu,
             e.public.tau, 1.0 if e is oracle else _gain(e, oracle), e.public.drafter_us_per_step]
            for r, e in zip(rows, order)]
    summary = {f"score/{clean(e.name, 48)}": score for e in order if (score := board_scores(e).score)}
    return wandb_log.log_run(mode=mode, group=f"leaderboard-{info.get('hash')}", name="leaderboard",
                             job_type="leaderboard", config={"benchmark": info},
                             tables={"leaderboard": (columns, data)},
                             images={"speedup_by_category": png} if png else {}, summary=summary, out_dir=out_dir)


def write_outputs(entries: Sequence[Entry], info: dict, folder: Path, wandb_mode: str | None = "off") -> list[Path]:
    """LEADERBOARD.md, leaderboard.json and index.html in ``folder`` (each replaced atomically)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)  # a second benchmark's views: a folder of the board's
    png = plot_png(entries)
    outputs = {
        folder / "LEADERBOARD.md": markdown(entries, info),
        folder / "leaderboard.json": json.dumps(board_json(entries, info), indent=1, default=str) + "\n",
        folder / "index.html": page(entries, info, png),
    }
    for path, text in outputs.items():
        atomic_write(path, text)
    written = list(outputs)
    if log_wandb(entries, info, wandb_mode, folder, png):
        written.append(folder / "wandb")
    return written
