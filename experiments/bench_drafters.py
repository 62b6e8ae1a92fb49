"""Micro-benchmark of every registered drafter: propose/extend cost and memory vs context length.

    python experiments/bench_drafters.py [--sizes 1k,8k,32k,128k,1M] [--json PATH] [--quick]

What it measures: ``experiments.running.drafter_bench``. Prints a table and PASS/FAIL per target,
writes JSON (default ``results/bench_drafters.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from a checkout

import torch  # noqa: E402

import lookup  # noqa: E402
from decoding.progress import progress_bar  # noqa: E402
from experiments.reporting.tables import render  # noqa: E402
from lookup.specs import parse_list  # noqa: E402
from experiments.running.drafter_bench import (BUDGET, CHUNK, Row, bench_drafter, bench_reference,  # noqa: E402
                                               hf_reference, human, jobs, judge, parse_size, published,
                                               random_tokens, text_tokens)

HEADERS = ("dataset", "size", "method", "propose us", "extend us/tok", "step us", "mean step", "reset us/tok",
           "B/tok", "traced B/tok", "steps", "draft")


def table(rows: list[Row]) -> str:
    return render(HEADERS, [(r.dataset, human(r.size), r.method, r.propose_us, r.extend_us_per_token, r.step_us,
                             r.mean_step_us, r.reset_us_per_token, r.bytes_per_token, r.traced_bytes_per_token,
                             r.steps, r.mean_draft) for r in rows])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1k,8k,32k,128k,1M", help="context sizes, e.g. 1k,32k,1M")
    ap.add_argument("--json", default="results/bench_drafters.json", help="where to write the results")
    ap.add_argument("--quick", action="store_true", help="small sizes, short timings (a smoke test)")
    ap.add_argument("--drafters", default=None, help="comma-separated subset of drafters (default: all)")
    # One thread by default: lookup runs between forwards, and on a small shared CPU a torch
    # thread pool waiting for a busy core turns sub-millisecond ops into long outliers.
    ap.add_argument("--threads", type=int, default=1, help="torch threads for the torch-based methods")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    sizes = [parse_size(s) for s in ("1k,8k,32k" if args.quick else args.sizes).split(",")]
    seconds, max_steps = (0.1, 200) if args.quick else (0.6, 2000)
    # drafters that read the target's top-k get none here (their propose would be a lookup alone);
    # the peers are benched only when asked for
    methods = parse_list(args.drafters) if args.drafters else [
        n for n in lookup.available(peers=False) if not lookup.get(n).wants_top]
    extra = CHUNK * max_steps + 16
    data = {"random": random_tokens(max(sizes) + extra)}
    data["text"], tokenizer = text_tokens(max(sizes) + extra)
    refs = {"published-fn": published, "hf-prompt-lookup": hf_reference()}

    rows: list[Row] = []
    load_before = os.getloadavg()  # other work on the machine inflates every timing below
    started = time.perf_counter()
    todo = list(jobs(sizes, methods, with_refs=True))
    with progress_bar(len(todo), "bench", unit="run") as bar:
        for dataset, size, method in todo:
            tokens = data[dataset]
            if method not in refs:
                row = bench_drafter(method, tokens, size, seconds, max_steps)
            elif refs[method] is None:  # a reference this transformers lacks: no row
                row = None
            else:
                row = bench_reference(method, refs[method], tokens, size, seconds, max_steps)
            if row is not None:
                row.dataset = dataset
                rows.append(row)
            bar.update()

    targets = judge(rows, sizes)
    print()
    print(table(rows))
    print()
    for t in targets:
        print(f"{t.name}: " + "; ".join(f"{ds} {v}" for ds, v in t.verdicts.items()))
    elapsed = time.perf_counter() - started
    print(f"\n{len(rows)} runs in {elapsed:.0f} s; text tokenized with the {tokenizer}; load average {load_before[0]:.1f} -> {os.getloadavg()[0]:.1f}")

    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "meta": {
                    "sizes": sizes,
                    "budget": BUDGET,
                    "chunk": CHUNK,
                    "tokenizer": tokenizer,
                    "torch_threads": args.threads,
                    "python": platform.python_version(),
                    "machine": platform.machine(),
                    "processor": platform.processor(),
                    "seconds": elapsed,
                    "loadavg_before_after": [load_before[0], os.getloadavg()[0]],
                    "cpus": os.cpu_count(),
                    "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                },
                "rows": [asdict(r) for r in rows],
                "targets": [asdict(t) for t in targets],
            },
            indent=1,
        )
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
