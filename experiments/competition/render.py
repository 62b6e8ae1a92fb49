"""Views of the board: terminal text, LEADERBOARD.md, leaderboard.json, a static index.html, W&B.

Every view is computed from the entries of one benchmark (``Board.entries(hash)``); none holds
data of its own, so rebuilding them is always safe. Every text an entry carries goes through the
view's escaping (``text.py``): cleaned for the terminal, escaped for Markdown and for HTML, whatever
the board file holds.
"""

from __future__ import annotations

import base64
import io
import json
import math
from pathlib import Path
from typing import Callable, Sequence

from experiments.competition.board import ORACLE, atomic_write, now, ranked
from experiments.competition.text import clean, html_text, portable_refusal
from experiments.competition.text import markdown as md
from experiments.reporting import wandb_log as wl
from experiments.reporting.summary import oracle_gain
from experiments.reporting.tables import loss_table, render
from experiments.running.explain import PARTS, Loss

DOCS_LINK = "../docs/competition.md"
#: entries drawn in the plot, besides the oracle
PLOT_TOP = 9


def _x(value) -> str:
    return f"{value:.3f}x" if isinstance(value, (int, float)) else "-"


def _f(value, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "-"


def _gain(entry: dict, oracle: dict | None) -> float | None:
    """The share of the oracle's gain over plain decoding that ``entry`` reaches (CPU scores)."""
    return oracle_gain(entry.get("score"), (oracle or {}).get("score"))


def _notes(entry: dict) -> str:
    bits = [f"FLAG {flag}" for flag in entry.get("flags") or []]
    if entry.get("stream"):
        bits.append("stream: one drafter serves the cases in order, keeping what it learns")
    if entry.get("refused_count"):
        bits.append(f"{entry['refused_count']} operations refused")
    if entry.get("kind") != "oracle" and not entry.get("full_isolation"):
        bits.append(f"isolation: {entry.get('isolation') or 'unknown'} (not full)")
    reset = entry.get("reset_ms_per_case")
    if isinstance(reset, (int, float)) and reset >= 1:
        bits.append(f"reset {reset:.0f} ms/case")
    verify = entry.get("verify") or {}
    if isinstance(verify.get("speedup"), (int, float)):
        bits.append(f"live {verify['speedup']:.2f}x, {'identical' if verify.get('identical') else 'NOT identical'}")
    return "; ".join(bits)


PEER = "peer"  # the kind of the peers' entries: other systems' lookup functions, a section of their own


def split_peers(entries: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(the board proper: the oracle, baselines and submissions; the oracle and the peers)."""
    oracle = [e for e in entries if e.get("kind") == "oracle"]
    return [e for e in entries if e.get("kind") != PEER], oracle + [e for e in entries if e.get("kind") == PEER]


def standing(entries: Sequence[dict], name: str) -> tuple[int, int] | None:
    """(rank, of how many) of entry ``name`` as the views number it in the '#' column: among the
    board proper (:func:`split_peers`: the peers are ranked apart, in their own table), by
    :func:`board.ranked`. None where it is not ranked (disqualified, or pending its fresh score).
    ``submit`` prints this, so the rank it says is the rank ``show`` lists."""
    _, ok, _ = ranked(split_peers(entries)[0])
    return next(((i, len(ok)) for i, e in enumerate(ok, 1) if e.get("name") == name), None)


def public_standing(entries: Sequence[dict], name: str) -> tuple[int, int] | None:
    """(rank, of how many) of entry ``name`` by public score, among the board proper's entries that
    have one (scored, or pending their fresh score): where an entry submitted since the last build
    stands until that build ranks it by fresh cases (``show`` lists it so under "not scored on
    fresh cases yet", and ``submit`` says the same). None where it has no public score."""
    pool = [{**e, "status": "ok", "score": e.get("score_public")} for e in split_peers(entries)[0]
            if e.get("status") in ("ok", "pending") and isinstance(e.get("score_public"), (int, float))]
    return standing(pool, name)


def best_against_peers(entries: Sequence[dict], esc: Callable[[object], str] = clean) -> tuple[list[str], list[list]]:
    """Per task group: our best entry (baselines and submissions) and the best peer, by estimated
    speedup (CPU profile), and the ratio of the two."""
    _, ours, _ = ranked(split_peers(entries)[0])
    _, peers, _ = ranked(split_peers(entries)[1])
    rows = []
    for g in groups_of(ours + peers):
        a, b = (best_in_group(pool, g) for pool in (ours, peers))
        a, an = (a["groups"][g]["est_speedup"], a["name"]) if a else (None, None)
        b, bn = (b["groups"][g]["est_speedup"], b["name"]) if b else (None, None)
        rows.append([esc(g), f"{esc(an)} {_x(a)}" if an else "-", f"{esc(bn)} {_x(b)}" if bn else "-",
                     f"{a / b:.2f}" if a and b else "-"])
    return ["group", "our best", "best peer", "ours / peer"], rows


def best_in_group(pool: Sequence[dict], group: str) -> dict | None:
    """The entry of ``pool`` with the highest estimated speedup (CPU) in task group ``group`` (the
    later name on a tie), or None where none has a number there."""
    def speedup(e: dict):
        g = (e.get("groups") or {}).get(group) if isinstance(e.get("groups"), dict) else None
        v = g.get("est_speedup") if isinstance(g, dict) else None
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v else None

    scored = [(v, str(e.get("name") or ""), i) for i, e in enumerate(pool) if (v := speedup(e)) is not None]
    return pool[max(scored)[2]] if scored else None


def groups_of(entries: Sequence[dict]) -> list[str]:
    return sorted({g for e in entries for g in (e.get("groups") or {})})


def main_rows(entries: Sequence[dict], esc: Callable[[object], str] = clean) -> tuple[list[str], list[list], list[dict]]:
    """(headers, rows of display strings, the entries in row order): the oracle, then the ranking.
    ``esc`` makes an entry's texts safe for the view (the numbers are ours)."""
    oracle, ok, _ = ranked(entries)
    fresh = has_fresh(entries)
    headers = ["#", "entry", "kind", *(["fresh CPU (ranks)", "public CPU"] if fresh else ["est. speedup CPU"]),
               "public CPU cross-fitted" if fresh else "CPU cross-fitted",
               "est. speedup GPU (flat track)", *(["tau (public)", "of oracle gain (fresh)",
                                                   "drafter µs/step (sandbox CPU, public)"] if fresh
                                                  else ["tau", "of oracle gain", "drafter µs/step (sandbox CPU)"]),
               "notes"]
    public = (lambda e: [_x(e.get("score_public"))]) if fresh else (lambda e: [])
    rows, order = [], []
    if oracle:
        aware = oracle.get("score_cost_aware")
        note = "knows the answer, drafts exactly the accepted run" + (
            f"; cost-aware: {_x(aware)} CPU" + (" on the fresh cases" if fresh else "") if aware else "")
        rows.append(["-", ORACLE, "ceiling", _x(oracle.get("score")), *public(oracle), "-", _x(oracle.get("score_gpu")),
                     _f(oracle.get("tau")), "100%", "-", note])
        order.append(oracle)
    for rank, e in enumerate(ok, 1):
        gain = _gain(e, oracle)
        rows.append([str(rank), esc(e.get("name")), esc(e.get("kind", "?")), _x(e.get("score")), *public(e),
                     cross_fitted_cell(e), _x(e.get("score_gpu")), _f(e.get("tau")),
                     "-" if gain is None else f"{100 * gain:.0f}%".replace("-0%", "0%"),
                     _f(e.get("drafter_us_per_step"), 0), esc(_notes(e))])
        order.append(e)
    return headers, rows, order


def track_of(entry: dict, track: str) -> dict | None:
    """An entry's scores on GPU track ``track`` (``entry["tracks"][track]``: its run planned and priced
    under that track's profile) where it scored there, else None."""
    scores = (entry.get("tracks") or {}).get(track) if isinstance(entry.get("tracks"), dict) else None
    ok = isinstance(scores, dict) and scores.get("status", "ok") == "ok"
    return scores if ok and isinstance(scores.get("score"), (int, float)) else None


def track_names(entries: Sequence[dict]) -> list[str]:
    """The GPU tracks the oracle was scored on, in its order (none on a board from before tracks)."""
    oracle = next((e for e in entries if e.get("kind") == "oracle"), None)
    return list((oracle or {}).get("tracks") or {})


def track_ranking(entries: Sequence[dict], track: str) -> list[dict]:
    """Every entry (ours and the peers alike) scored on ``track``, best first (by name on a tie)."""
    scored = [e for e in entries if e.get("kind") != "oracle" and track_of(e, track) is not None]
    return sorted(scored, key=lambda e: (-track_of(e, track)["score"], str(e.get("name"))))


def track_rows(entries: Sequence[dict], track: str,
               esc: Callable[[object], str] = clean) -> tuple[list[str], list[list]]:
    """(headers, rows) of one GPU track: the oracle, then every entry by its score there, with its
    share of that track's oracle gain overall and per task group."""
    oracle = track_of(next((e for e in entries if e.get("kind") == "oracle"), {}), track) or {}
    groups = sorted(oracle.get("groups") or {})

    def cells(scores: dict) -> list[str]:
        out = []
        for g in groups:
            mine = (scores.get("groups") or {}).get(g, {}).get("est_speedup")
            gain = oracle_gain(mine, oracle["groups"][g].get("est_speedup"))
            out.append("-" if mine is None else f"{_x(mine)} ({'-' if gain is None else f'{100 * gain:.0f}%'})")
        return out

    def share(value) -> str:
        return "-" if value is None else f"{100 * value:.0f}%"

    topk = oracle.get("score_topk")
    headers = ["#", "entry", "kind", "est. speedup", "of oracle gain", "of top-k bound gain",
               *[f"{g} (of oracle gain)" for g in groups]]
    rows = [["-", ORACLE, "ceiling", _x(oracle.get("score")), "100%", share(oracle_gain(oracle.get("score"), topk)),
             *cells(oracle)]] if oracle else []
    if topk is not None:
        topk_cells = [_x(oracle["groups"][g].get("est_speedup_topk")) for g in groups]
        rows.append(["-", "oracle + top-k", "bound", _x(topk), "-", "100%", *topk_cells])
    for rank, e in enumerate(track_ranking(entries, track), 1):
        scores = track_of(e, track)
        rows.append([str(rank), esc(e.get("name")), esc(e.get("kind", "?")), _x(scores["score"]),
                     share(oracle_gain(scores["score"], oracle.get("score"))), share(oracle_gain(scores["score"], topk)),
                     *cells(scores)])
    return headers, rows


def track_lines(entries: Sequence[dict], info: dict, esc: Callable[[object], str] = clean,
                markdown: bool = False, only: str | None = None) -> list[str]:
    """The GPU tracks (or track ``only``), one table each, with the profile behind it and which
    entry to pick there."""
    lines: list[str] = []
    profiles = info.get("tracks") or {}
    for track in [t for t in track_names(entries) if only is None or t == only]:
        ranking = track_ranking(entries, track)
        ours = [e for e in ranking if e.get("kind") != PEER]
        about = profiles.get(track) or {}
        model = str(about.get("model", "?")).removeprefix(f"{track}: ")  # a named idealisation names itself
        device = "" if about.get("device") in (None, "ideal") else f" on {esc(about['device'])}"
        lines += ["", f"{'### ' if markdown else ''}track {esc(track)}: {esc(model)}{device},"
                  f" one-token forward {_f(about.get('forward_ms_1'), 1)} ms,"
                  f" drafts of up to {esc(about.get('draft_budget', '?'))} nodes",
                  "", render(*track_rows(entries, track, esc), markdown=markdown)]
        if ours:
            lines += ["", f"pick on this track: {esc(ours[0].get('name'))}"
                      f" ({_x(track_of(ours[0], track)['score'])})"]
    return lines


#: what the cross-fitted column says, under the Markdown board
CROSS_FITTED_NOTE = ("*cross-fitted*: an entry of ours whose numbers were fitted on the public cases (`adaptive`'s"
                     " acceptance models) scored on them again, each half of the cases with a fit made on the other"
                     " half only; its public score beside it is in sample (`docs/competition.md`).")


def cross_fitted(entry: dict | None) -> dict:
    """An entry's cross-fitted scores (``entry["cross_fitted"]``, for an entry whose numbers were
    fitted on the public cases: ``cross_fit.py``) where they were scored (not disqualified), else {}."""
    cross = (entry or {}).get("cross_fitted")
    return cross if isinstance(cross, dict) and cross.get("status", "ok") == "ok" else {}


def cross_fitted_cell(entry: dict) -> str:
    """The public score of an entry whose numbers were fitted on the public cases, cross-fitted
    (each half of the cases with a fit made on the other half: ``cross_fit.py``); "-" for the
    others, whose public score is out of sample already."""
    if not isinstance(entry.get("cross_fitted"), dict):
        return "-"
    return _x(cross_fitted(entry).get("score")) if cross_fitted(entry) else "disqualified"


def has_fresh(entries: Sequence[dict]) -> bool:
    """Whether the entries carry fresh scores (``flags.with_fresh``): the views rank by them."""
    return any("score_public" in e for e in entries)


def split_pending(dq: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(disqualified, pending): an entry scored on the public cases only waits for the next build."""
    return [e for e in dq if e.get("status") != "pending"], [e for e in dq if e.get("status") == "pending"]


def group_rows(entries: Sequence[dict], esc: Callable[[object], str] = clean) -> tuple[list[str], list[list]]:
    """Per task group: estimated speedup (CPU) and tau, for the oracle and every ranked entry."""
    oracle, ok, _ = ranked(entries)
    groups = groups_of(entries)
    rows = []
    for e in ([oracle] if oracle else []) + ok:
        cells = []
        for g in groups:
            s = (e.get("groups") or {}).get(g)
            cells.append(f"{_x(s.get('est_speedup'))} τ{_f(s.get('tau'))}" if isinstance(s, dict) else "-")
        rows.append([esc(e.get("name")), *cells])
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


def text_board(entries: Sequence[dict], info: dict, track: str | None = None) -> str:
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
        public = {e.get("name"): public_standing(entries, e.get("name")) for e in pending}
        parts += ["", "not scored on fresh cases yet (public score only, not ranked):"] + [
            f"  {clean(e.get('name'), 48)}: public {_x(e.get('score_public'))}" + (
                f" (#{public[e.get('name')][0]} of {public[e.get('name')][1]} by public score)"
                if public[e.get("name")] else "") + (
                f"; {clean('; '.join(e.get('flags') or []), 300)}" if e.get("flags") else "") for e in pending]
    if dq:
        parts += ["", "disqualified:"] + [f"  {clean(e.get('name'), 48)}: {clean(e.get('reason'), 500)}" for e in dq]
    if ranked(peers)[1]:
        ph, prows, _ = main_rows(peers)
        parts += ["", "the peers (other systems' lookup functions, replayed on the same traces):", render(ph, prows),
                  "", "per task group, our best against the best peer:", render(*best_against_peers(entries + peers))]
    return "\n".join(parts)


def entry_details(entry: dict, oracle: Sequence[dict], info: dict) -> str:
    """What ``show NAME`` prints: the entry beside the oracle, per group, and where it loses time
    against the cost-aware oracle (the parts add up to the gap; ``traces.py explain`` for any drafter)."""
    parts = [text_board([*oracle, entry], info)]
    cross = cross_fitted(entry)
    if isinstance(cross.get("groups"), dict):
        own = entry.get("groups") if isinstance(entry.get("groups"), dict) else {}
        rows = [[clean(g, 60), _x((own.get(g) or {}).get("est_speedup")), _x((s or {}).get("est_speedup"))]
                for g, s in cross["groups"].items() if isinstance(s, dict)]
        parts += ["", f"{clean(entry.get('name'), 48)} cross-fitted (each half of the public cases with a fit made on "
                      "the other half; docs/acceptance.md):", render(["group", "in sample", "cross-fitted"], rows)]
    attempts = [a for a in entry.get("attempts") or [] if isinstance(a, dict)] \
        if isinstance(entry.get("attempts"), list) else []
    if attempts:
        parts += ["", f"submissions of {clean(entry.get('name'), 48)}, oldest first (a resubmission never replaces "
                      "a better entry of its name: the board keeps the best):"] + [
            "  " + attempt_line(a, entry) for a in attempts]
    gap = entry.get("oracle_gap")
    if isinstance(gap, dict) and gap:
        try:
            losses = {clean(group, 60): _loss(loss) for group, loss in gap.items()}
        except TypeError:  # an entry recorded before the breakdown, or edited by hand
            losses = {}
        if losses:
            parts += ["", f"where {clean(entry.get('name'), 48)} loses time against the cost-aware oracle "
                          "(share of its gap, decoding phase):", loss_table(losses)]
    return "\n".join(parts)


def attempt_line(attempt: dict, entry: dict) -> str:
    """One submission an entry lists (``board.attempt_of``), cleaned: when, its score or why it
    failed, its parameters and file; "(on the board)" for the one the entry is."""
    source = attempt.get("source") if isinstance(attempt.get("source"), dict) else {}
    what = (f"{_x(attempt.get('score'))} CPU (public)" if attempt.get("status") == "ok"
            else f"disqualified -- {clean(attempt.get('reason'), 300)}")
    params = attempt.get("params") if isinstance(attempt.get("params"), dict) else {}
    given = ":".join(f"{clean(k, 40)}={clean(repr(v), 40)}" for k, v in list(params.items())[:8])
    file = source.get("display") or source.get("name")
    sha = source.get("sha256") if isinstance(source.get("sha256"), str) else ""
    bits = [clean(attempt.get("time"), 40), what, *([f"--params {given}"] if given else []),
            *([f"{clean(file, 80)}" + (f" ({clean(sha[:12], 12)})" if sha else "")] if file else [])]
    here = attempt.get("time") is not None and attempt.get("time") == entry.get("time")
    return "; ".join(bits) + ("  (on the board)" if here else "")


def _loss(fields) -> Loss:
    """One group's breakdown as the board file holds it; TypeError unless every field is a number
    (the table formats them as numbers: a string there would be printed or fail)."""
    loss = Loss(**fields)
    if not isinstance(loss.parts, dict) or not set(PARTS) <= set(loss.parts):
        raise TypeError("a breakdown without its parts")
    numbers = [loss.plain, loss.oracle, loss.run, loss.cases, *(loss.parts[p] for p in PARTS)]
    numbers += [] if loss.first_token_auc is None else [loss.first_token_auc]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in numbers):
        raise TypeError("a breakdown field is not a number")
    return loss


def markdown(entries: Sequence[dict], info: dict) -> str:
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
        "Ranked by the geometric mean over task groups of the **estimated speedup** over plain greedy decoding"
        " under the CPU profile (forward cost by tokens verified, plus the drafter's own CPU time, reset"
        " included, as the parent measured it)" + (", on the fresh cases made at the build; the public"
        " benchmark's score beside it, and the other columns and tables of the public benchmark" if has_fresh(entries)
        else "") + ". *of oracle gain* = (score - 1) / (oracle - 1). *drafter µs/step (sandbox CPU)*: the"
        " sandboxed process's CPU time per step as the parent measured it, its handling of each request included"
        " (`plain`'s figure is that handling alone); `compare.py` shows the in-process wall time, less. *est."
        " speedup GPU (flat track)*: the entry replayed again planning for the flat GPU profile (## GPU tracks). "
        + CROSS_FITTED_NOTE,
        "",
        render(headers, rows, markdown=True),
        "",
        "## Per task group",
        "",
        "Estimated speedup (CPU profile) and tau (tokens per target forward)"
        + (" on the public benchmark's cases." if has_fresh(entries) else "."),
        "",
        render(gh, grows, markdown=True),
    ]
    if ranked(peers)[1]:
        ph, prows, _ = main_rows(peers, md)
        pgh, pgrows = group_rows(peers, md)
        lines += ["", "## The peers", "",
                  "Other systems' lookup functions (`docs/peers.md`), each with its own default settings, replayed"
                  " through the same loop on the same traces and priced the same way. *of oracle gain* is against the"
                  " same oracle.", "", render(ph, prows, markdown=True), "", render(pgh, pgrows, markdown=True),
                  "", "Per task group, our best entry against the best peer (estimated speedup, CPU profile):", "",
                  render(*best_against_peers(everything, md), markdown=True)]
    if track_names(everything):
        lines += ["", "## GPU tracks", "",
                  "Each entry replayed again per track, its cost-aware drafters planning under the track's profile"
                  " (`docs/hardware.md`) with drafts of up to 63 nodes, and priced under it; the oracle's runs are"
                  " priced the same way. Ours and the peers in one ranking; *of oracle gain* per track and group."
                  + (" On the public benchmark's cases." if has_fresh(entries) else ""),
                  *track_lines(everything, info, md, markdown=True)]
    dq, pending = split_pending(dq)
    if pending:
        lines += ["", "## Not scored on fresh cases yet", "", "Submitted since the last build: public score only, not"
                  " ranked (the next build scores them on its fresh cases).", "",
                  render(["entry", "kind", "public CPU", "notes"],
                         [[md(e.get("name"), 48), md(e.get("kind", "?"), 20), _x(e.get("score_public")),
                           md(_notes(e), 500)] for e in pending], markdown=True)]
    if dq:
        lines += ["", "## Disqualified", "", render(["entry", "kind", "reason"],
                                                    [[md(e.get("name"), 48), md(e.get("kind", "?"), 20),
                                                      md(e.get("reason"), 500)] for e in dq], markdown=True)]
    refused = [e for e in ok + dq if e.get("refused_count")]
    if refused:
        lines += ["", "## Refused operations", "",
                  "What the sandbox refused (a PermissionError inside the submission; the entry is scored on what it"
                  " drafted):", ""]
        for e in refused:
            shown = "; ".join(md(portable_refusal(r), 200) for r in list(e.get("refused") or [])[:8])
            lines.append(f"- **{md(e.get('name'), 48)}** ({md(e['refused_count'], 20)}): {shown}")
    verified = [e for e in ok if e.get("verify")]
    if verified:
        lines += ["", "## Verified live", "", render(
            ["entry", "model", "prompts", "new tokens", "measured speedup", "identical to greedy"],
            [[md(e.get("name"), 48), md(e["verify"].get("model", "?"), 80), md(e["verify"].get("prompts", "?"), 20),
              md(e["verify"].get("max_new_tokens", "?"), 20), _x(e["verify"].get("speedup")),
              {True: "yes", False: "NO"}.get(e["verify"].get("identical"), "-")]
             for e in verified], markdown=True)]
    return "\n".join(lines) + "\n"


def board_json(entries: Sequence[dict], info: dict) -> dict:
    """leaderboard.json: the same numbers as the tables, machine-readable."""
    oracle, ok, dq = ranked(entries)
    keep = ("name", "kind", "score", "score_gpu", "score_public", "score_gpu_public", "cross_fitted", "tracks", "flags",
            "stream",
            "beyond_share",
            "tau", "drafter_us_per_step", "rt_us_per_step", "reset_ms_per_case",
            "groups", "source", "params", "refused_count", "refused", "isolation", "full_isolation", "eval_s", "verify",
            "time", "git_sha")
    texts = {"name": 48, "kind": 20, "isolation": 80}

    def slim(e: dict) -> dict:
        out = {k: e[k] for k in keep if k in e}
        out.update({k: clean(e[k], n) for k, n in texts.items() if k in e})
        if "refused" in e:
            out["refused"] = [clean(portable_refusal(r), 200) for r in list(e["refused"] or [])[:20]]
        return out

    return {
        "benchmark": info, "generated": now(),
        "oracle": slim(oracle) if oracle else None,
        "ranking": [{"rank": i, **slim(e), "of_oracle_gain": _gain(e, oracle)} for i, e in enumerate(ok, 1)],
        "tracks": {track: [{"rank": i, "name": clean(e.get("name"), 48), "kind": clean(e.get("kind"), 20),
                            "score": track_of(e, track)["score"],
                            "of_oracle_gain": oracle_gain(track_of(e, track)["score"],
                                                          (track_of(oracle or {}, track) or {}).get("score"))}
                           for i, e in enumerate(track_ranking(entries, track), 1)]
                   for track in track_names(entries)},
        "disqualified": [{**{k: v for k, v in slim(e).items() if k in ("name", "kind", "refused", "source", "isolation")},
                          "reason": clean(e.get("reason"), 500)} for e in dq],
    }


# -- the plot -----------------------------------------------------------------------------------------------
def _plot_text(value) -> str:
    """A label for matplotlib: cleaned, and with no ``$`` to start its math parser."""
    return clean(value, 48).replace("$", r"\$")


def plot_png(entries: Sequence[dict]) -> bytes | None:
    """Grouped bars: estimated speedup per task group (and the geo-mean), CPU and GPU profiles."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import numpy as np

    oracle, ok, _ = ranked(entries)
    shown = ([oracle] if oracle else []) + ok[:PLOT_TOP]
    groups = groups_of(shown)
    if not shown or not groups:
        return None
    labels = [_plot_text(g) for g in groups] + ["geo-mean"]
    cmap = plt.get_cmap("tab10")
    fig, axes = plt.subplots(2, 1, figsize=(max(8.0, 1.6 * len(labels) + 3), 8.5), sharex=True)
    width = 0.8 / len(shown)
    x = np.arange(len(labels))
    for ax, key, score, title in ((axes[0], "est_speedup", "score", "CPU profile (traces' own)"),
                                  (axes[1], "est_speedup_gpu", "score_gpu", "large-GPU profile (flat up to 64 tokens)")):
        for i, e in enumerate(shown):
            ys = [((e.get("groups") or {}).get(g) or {}).get(key) or 0.0 for g in groups] + [e.get(score) or 0.0]
            style = {"color": "lightgrey", "edgecolor": "black", "hatch": "//"} if e is oracle else {"color": cmap(i % 10)}
            ax.bar(x + (i - (len(shown) - 1) / 2) * width, ys, width, label=_plot_text(e.get("name")), **style)
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        heights = [p.get_height() for p in ax.patches if p.get_height() > 0]
        if heights and max(heights) / min(heights) > 8:  # ratios: 0.5x and 2x sit symmetric on a log axis
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.axvline(len(groups) - 0.5, color="grey", linewidth=0.8)
        ax.set_ylabel("estimated speedup")
        ax.set_title(f"Estimated speedup by task group -- {title}")
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_xticks(x, labels, rotation=20, ha="right")
    axes[0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=100)
    finally:
        plt.close(fig)
    return buf.getvalue()


# -- index.html -----------------------------------------------------------------------------------------------
SORT_JS = """
document.querySelectorAll("table.sortable th").forEach((th, i) => th.addEventListener("click", () => {
  const body = th.closest("table").tBodies[0], dir = th.dataset.dir = th.dataset.dir === "desc" ? "asc" : "desc";
  const key = r => { const c = r.cells[i], v = c.dataset.v ?? c.textContent; const n = parseFloat(v); return isNaN(n) ? v : n; };
  [...body.rows].sort((a, b) => { const x = key(a), y = key(b); return (x > y ? 1 : x < y ? -1 : 0) * (dir === "asc" ? 1 : -1); })
    .forEach(r => body.appendChild(r));
}));
"""

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 14px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th { background: #f3f3f3; cursor: pointer; user-select: none; }
td:nth-child(2), td:nth-child(3), td:last-child { text-align: left; }
tr.oracle td { background: #f7f7f0; font-style: italic; }
tr.baseline td:nth-child(3) { color: #777; }
code { font-size: 12px; }
"""


def page(entries: Sequence[dict], info: dict, png: bytes | None) -> str:
    """index.html: one static file, no external resources."""
    oracle, _, dq = ranked(entries)
    dq = split_pending(dq)[0] + split_pending(dq)[1]
    headers, rows, order = main_rows(entries)
    public = has_fresh(entries)
    sort_values = lambda e: ["", e["name"], e.get("kind", ""), e.get("score"),  # noqa: E731
                             *([e.get("score_public")] if public else []), cross_fitted(e).get("score"),
                             e.get("score_gpu"), e.get("tau"),
                             _gain(e, oracle) if e is not oracle else 1.0, e.get("drafter_us_per_step"), ""]

    def cell(text, value) -> str:
        attr = f' data-v="{value:.6g}"' if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
        return f"<td{attr}>{html_text(text, 1000)}</td>"

    body = []
    for e, row in zip(order, rows):
        cls = "oracle" if e is oracle else html_text(e.get("kind", ""), 20)
        values = sort_values(e)
        values[0] = -1 if e is oracle else int(row[0])
        body.append(f'<tr class="{cls}">' + "".join(cell(t, v) for t, v in zip(row, values, strict=True)) + "</tr>")
    gh, grows = group_rows(entries)
    group_body = ["<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in r) + "</tr>" for r in grows]
    info_lines = "".join(f"<li>{html_text(line, 1000)}</li>" for line in _benchmark_lines(info) if line)
    dq_html = "".join(f"<li><b>{html_text(e.get('name'), 48)}</b>: {html_text(e.get('reason'), 500)}</li>" for e in dq)
    img = (f'<img alt="estimated speedup by task group" src="data:image/png;base64,{base64.b64encode(png).decode()}">'
           if png else "")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pld-lab leaderboard</title><style>{CSS}</style></head>
<body>
<h1>pld-lab leaderboard: the best lookup function</h1>
<p>Generated {html_text(now())}. Click a column to sort. Rules and scoring: <code>docs/competition.md</code>.</p>
<ul>{info_lines}</ul>
<table class="sortable"><thead><tr>{"".join(f"<th>{html_text(h)}</th>" for h in headers)}</tr></thead>
<tbody>{"".join(body)}</tbody></table>
<h2>Per task group</h2><p>Estimated speedup (CPU profile) and tau.</p>
<table class="sortable"><thead><tr>{"".join(f"<th>{html_text(h)}</th>" for h in gh)}</tr></thead>
<tbody>{"".join(group_body)}</tbody></table>
{f"<h2>Disqualified</h2><ul>{dq_html}</ul>" if dq else ""}
{img}
<script>{SORT_JS}</script>
</body></html>
"""


# -- W&B ---------------------------------------------------------------------------------------------------
def log_wandb(entries: Sequence[dict], info: dict, mode: str | None, out_dir: Path, png: bytes | None = None) -> list[str]:
    """The board as a W&B table (and the plot); "off" logs nothing. Never raises for W&B trouble."""
    import tempfile

    mode = wl.resolve_mode(mode)
    if mode == "off" or not entries:
        return []
    if mode == "online" and not wl.logged_in():
        wl._warn("not logged in (no WANDB_API_KEY, no .netrc entry); logging offline instead")
        mode = "offline"
    headers, rows, order = main_rows(entries)
    columns = ["rank", "entry", "kind", "score_cpu", "score_gpu", "tau", "of_oracle_gain", "drafter_us_per_step"]
    oracle, _, _ = ranked(entries)
    data = [[r[0], clean(e.get("name"), 48), clean(e.get("kind"), 20), e.get("score"), e.get("score_gpu"), e.get("tau"),
             1.0 if e is oracle else _gain(e, oracle), e.get("drafter_us_per_step")] for r, e in zip(rows, order)]
    with wl._quiet():
        try:
            import wandb
        except ImportError as exc:
            wl._warn(f"wandb is not installed ({exc}); nothing logged")
            return []
        session = wl._Session(wandb, mode, "pld-lab", f"leaderboard-{info.get('hash')}", Path(out_dir))
        try:
            with tempfile.TemporaryDirectory() as tmp:
                logged = {"leaderboard": wandb.Table(columns=columns, data=data)}
                if png:
                    path = Path(tmp) / "speedup_by_category.png"
                    path.write_bytes(png)
                    logged["speedup_by_category"] = wandb.Image(str(path))
                session.log(name="leaderboard", job_type="leaderboard", config={"benchmark": info}, data=logged,
                            summary={f"score/{clean(e.get('name'), 48)}": e.get("score") for e in order if e.get("score")})
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - W&B trouble never breaks the build
            wl._warn(f"logging the board failed ({wl._first_line(exc)})")
    return session.dirs


def write_outputs(entries: Sequence[dict], info: dict, folder: Path, wandb_mode: str | None = "off") -> list[Path]:
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
