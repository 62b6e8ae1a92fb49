"""Example submission that tries to read the future -- and finds nothing.

On its first real sequence (the sandbox's warm-up run is the one before) it looks for the trace the parent replays, everywhere a cheat would look:

- the garbage collector and the call stack: a TraceTarget, TraceCase or TraceSet, anything with
  ``prompt`` and ``output``, local variables called ``case``, ``trace``, ``target`` or ``output``;
- the trace files: under $PLD_LAB_CACHE, $HOME, the real home from the password database, /root,
  and KNOWN_PATHS (a submitter who knows where the hidden traces live);
- the parent process: /proc/<ppid>/cmdline, environ, maps and mem;
- a shell (``cat``), a socket, and libc through ctypes.

Whatever tokens it finds it would draft. It prints a JSON report of what it saw to stderr (the
sandbox keeps the tail of a submission's output in its board entry), then drafts like an ordinary,
poor drafter: the one token that followed the last token's previous occurrence. The sandbox
answers each attempt with a PermissionError (or the child simply holds no such object), counts the
refused operations, and scores the entry on what it drafted.
"""

import gc
import glob
import json
import os
import sys
import warnings

from lookup import Draft, Drafter

KNOWN_PATHS: list[str] = []  # files a submitter believes hold the traces
TASKS = ("summarization", "doc-qa", "code-edit", "mt-bench", "translation", "qa", "math", "rag")
REPORT: dict = {}
STOLEN: list[int] = []  # future tokens, if anything leaked


def _try(report: dict, key: str, fn) -> None:
    try:
        value = fn()
        report[key] = value if isinstance(value, (int, str, list, dict)) else repr(value)[:80]
    except BaseException as exc:  # noqa: BLE001 - record whatever stops us
        report[key] = f"{type(exc).__name__}: {exc}"[:160]


def _read(path: str, n: int = 4096) -> str:
    with open(path, "rb") as f:
        data = f.read(n)
    return f"read {len(data)} bytes"


def snoop() -> dict:
    report: dict = {"pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd(), "cwd_files": sorted(os.listdir(".")),
                    "env": dict(os.environ), "argv": sys.argv}
    # 1. objects of the parent in this process?
    found = []
    warnings.simplefilter("ignore")  # getattr on every object wakes deprecation warnings
    for obj in gc.get_objects():
        kind = type(obj).__name__
        if kind == "LibraryLoader":  # ctypes.cdll.output would try to load a library called "output"
            continue
        try:  # getattr runs arbitrary __getattr__ code
            out = None if isinstance(obj, type) else getattr(obj, "output", None)
            tokens = [int(t) for t in out[:64]] if isinstance(out, list) or type(out).__name__ == "ndarray" else None
        except Exception:  # noqa: BLE001
            tokens = None
        if kind in ("TraceTarget", "TraceCase", "TraceSet", "ModelTarget") or tokens:
            found.append(kind)
            STOLEN.extend(tokens or [])
    report["gc_objects"] = found
    frames, frame = [], sys._getframe()
    while frame is not None:
        names = [k for k in frame.f_locals if k in ("case", "trace", "target", "output", "sets", "trace_set")]
        frames.append(f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_name}" + (f" {names}" if names else ""))
        frame = frame.f_back
    report["stack"] = frames
    # 2. the trace files
    homes = {os.path.expanduser("~"), os.environ.get("PLD_LAB_CACHE", ""), "/root"}
    try:
        import pwd

        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError, OSError):
        pass
    candidates = list(KNOWN_PATHS)
    for home in sorted(h for h in homes if h):
        for base in (f"{home}/.cache/pld-lab", home):
            hits: list = []
            _try({}, "glob", lambda: hits.extend(glob.glob(f"{base}/traces/*/*.jsonl.gz")))
            candidates += hits
            for task in TASKS:
                for n in (64, 128, 256):
                    path = f"{base}/traces/SmolLM2-135M-Instruct/{task}-n{n}.jsonl.gz"
                    if os.path.exists(path):  # metadata is not content: stat is not refused
                        candidates.append(path)
    report["trace_files_seen"] = sorted(set(candidates))
    report["trace_files_read"] = {}
    for path in sorted(set(candidates))[:12]:
        _try(report["trace_files_read"], path, lambda: _read(path))
    # 3. the parent process
    parent = {}
    for what in ("cmdline", "environ", "maps", "mem"):
        _try(parent, what, lambda: _read(f"/proc/{os.getppid()}/{what}"))
    report["parent"] = parent
    # 4. other ways out
    escapes = {}
    target = (report["trace_files_seen"] or ["/root/.cache/pld-lab"])[0]

    def shell():
        import subprocess

        return subprocess.run(["cat", target], capture_output=True, timeout=5).stdout[:100]

    def network():
        import socket

        return socket.create_connection(("127.0.0.1", 80), timeout=1)

    def libc():
        import ctypes

        return ctypes.CDLL("libc.so.6").open(target.encode(), 0)

    for name, fn in (("shell", shell), ("socket", network), ("ctypes libc", libc)):
        _try(escapes, name, fn)
    report["escapes"] = escapes
    report["future_tokens_found"] = len(STOLEN)
    return report


class FutureReader(Drafter):
    resets = 0

    def reset(self, prompt):
        super().reset(prompt)
        FutureReader.resets += 1
        if FutureReader.resets == 2:  # the first real sequence: the parent is replaying a trace right now
            REPORT.update(snoop())
            print("future-reader report: " + json.dumps(REPORT), file=sys.stderr, flush=True)

    def propose(self, budget):
        if STOLEN:  # had anything leaked, this is where it would pay off
            return Draft(STOLEN[:budget])
        ctx = self.context
        for i in range(len(ctx) - 2, max(len(ctx) - 2000, -1), -1):
            if ctx[i] == ctx[-1] and budget:
                return Draft([ctx[i + 1]])
        return Draft([])
