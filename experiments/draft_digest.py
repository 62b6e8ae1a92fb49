"""A digest of every draft every drafter proposes on the shipped benchmarks, to prove a change drafts
exactly as before (a refactor's check): per drafter, benchmark, track and serving mode (per request,
and as one stream for a drafter that keeps a history), a hash over every step of every case: each
proposed draft's tokens and parents, and what the step verified, accepted and committed.

    python experiments/draft_digest.py --json results/digest.json               # every case
    python experiments/draft_digest.py --prompts 3 --against results/digest.json   # compare

Prints one line per key; with ``--against`` a file written before, the keys that differ (exit 1 when
any does).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from a checkout

import lookup  # noqa: E402
from experiments.benchmarks.traces import first_prompts, load_trace_sets, shipped_benchmarks  # noqa: E402
from experiments.cli import ArgumentParser, guarded  # noqa: E402
from experiments.running.methods import parse_method  # noqa: E402
from experiments.running.replay import replay_case  # noqa: E402
from experiments.running.serving import serve_traces  # noqa: E402
from experiments.running.tracks import TRACKS  # noqa: E402
from lookup.specs import parse_list  # noqa: E402
from pldcore.errors import PLDError  # noqa: E402

#: besides every registered drafter at its defaults: the history entries (as one stream too) and the
#: variants the board and the docs name
EXTRA_SPECS = ("adaptive:history=true", "suffix-automaton:history=true", "peer:suffix-decoding:history=true",
               "peer:llamacpp-lookup:history=true", "peer:sglang-ngram:history=true", "adaptive:base=frequency",
               "voting:tree=true")


def digest(sets, spec: str, track, stream: bool) -> str:
    """The hash over every step of every case of ``sets`` served by ``spec`` on ``track``."""
    h = hashlib.sha256()
    method = parse_method(spec)
    for served in serve_traces(sets, method.make, track.setting_for(sets), stream=stream):
        drafter, propose = served.drafter, served.drafter.propose

        def recorded(budget: int, propose=propose):
            draft = propose(budget)
            h.update(draft.tokens.tobytes())
            h.update(b"|" if draft.parents is None else draft.parents.tobytes())
            h.update(b";")
            return draft

        drafter.propose = recorded  # this instance only: the loop calls it, nothing else changes
        out = replay_case(served.case, drafter, served.setting.profile, track.draft_budget)
        h.update(json.dumps([[s.drafted, s.accepted, s.committed] for s in out.stats.steps]).encode())
        h.update(json.dumps(out.tokens).encode())
    return h.hexdigest()[:16]


@guarded
def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="draft_digest.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=0, help="the first N prompts of each task (0: every case)")
    parser.add_argument("--drafters", default="", help="specs, comma-separated (default: every drafter and "
                        f"{', '.join(EXTRA_SPECS)})")
    parser.add_argument("--json", default="", help="write the digests here")
    parser.add_argument("--against", default="", help="a digest file to compare with")
    args = parser.parse_args(argv)
    specs = parse_list(args.drafters) if args.drafters else [*lookup.available(), *EXTRA_SPECS]
    before = {}
    if args.against:
        try:
            before = json.loads(Path(args.against).read_text())
        except (OSError, ValueError) as exc:
            raise PLDError(f"--against: cannot read {args.against} ({exc})") from None
    found, differ = {}, []
    for bench, folder in shipped_benchmarks().items():
        sets = load_trace_sets(folder)
        sets = first_prompts(sets, args.prompts) if args.prompts else sets
        for track in TRACKS:
            for spec in specs:
                for stream in ((False, True) if "history" in spec else (False,)):
                    key = f"{bench}|{track.name}|{spec}|{'stream' if stream else 'request'}"
                    found[key] = digest(sets, spec, track, stream)
                    mark = "" if key not in before else " same" if before[key] == found[key] else " DIFFERS"
                    differ += [key] if mark == " DIFFERS" else []
                    print(f"{key} {found[key]}{mark}", flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    if before:
        print(f"{len(found) - len(differ)} of {len(found)} digests as before; differ: {', '.join(differ) or 'none'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
