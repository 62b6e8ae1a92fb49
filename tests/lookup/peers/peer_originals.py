"""Shared by the peers' tests: scenarios, the vendored originals (built with g++), golden files.

A *scenario* is what the decoding loop does to a drafter: ``("reset", prompt)``, ``("extend",
tokens)`` and ``("propose", budget)`` operations, the first a reset. Each peer's test runs the
same scenarios through our drafter and through the peer's original code, and compares every
draft as ``(tokens, parents)`` (parents ``None`` for a chain).

Where the original is C++ (``originals/``: the peers' files, unchanged, with our small harness
and stubs; see ``originals/README.md``), :func:`build` compiles it once per source hash into
pytest's cache folder; without a compiler the comparison is skipped. Golden files
(``golden/<peer>.json``) hold drafts recorded from the originals on fixed scenarios, so that the
port stays tied to the original where nothing can be compiled or imported;
``pytest tests/lookup/peers --record-peer-goldens`` rewrites them from the originals.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from lookup import Draft, Drafter

HERE = Path(__file__).parent
ORIGINALS = HERE / "originals"
GOLDEN = HERE / "golden"

Scenario = list[tuple]  # [("reset", [ids]), ("extend", [ids]), ("propose", budget), ...]
DraftKey = tuple[list[int], "list[int] | None"]


def draft_key(draft: Draft) -> DraftKey:
    """A draft as plain lists: ``(tokens, parents or None)``; a tree that is a chain compares as a chain."""
    parents = None if draft.parents is None or draft.is_chain else draft.parents.tolist()
    return draft.tokens.tolist(), parents


def chain_or_tree(tokens: list[int], parents: list[int] | None) -> DraftKey:
    """The same normal form for an original's output."""
    if parents is not None and parents == list(range(-1, len(tokens) - 1)):
        parents = None
    return list(tokens), parents


def random_scenarios(seed: int, count: int, *, alphabets: Sequence[int] = (2, 3, 6, 40), max_prompt: int = 30,
                     max_ops: int = 30, max_extend: int = 5, max_budget: int = 16, first_token: int = 0,
                     resets: float = 0.1) -> list[Scenario]:
    """Scenarios over small alphabets (ids ``first_token`` .. ``first_token + a``), which repeat a lot."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        alphabet = rng.choice(alphabets)

        def ids(n: int) -> list[int]:
            return [first_token + rng.randint(0, alphabet) for _ in range(n)]

        ops: Scenario = [("reset", ids(rng.randint(0, max_prompt)))]
        for _ in range(rng.randint(1, max_ops)):
            r = rng.random()
            if r < resets:
                ops.append(("reset", ids(rng.randint(0, max_prompt))))
            elif r < 0.55:
                ops.append(("extend", ids(rng.randint(1, max_extend))))
            else:
                ops.append(("propose", rng.randint(0, max_budget)))
        out.append(ops)
    return out


def run_port(make: Callable[[], Drafter], scenario: Scenario) -> list[DraftKey]:
    """The drafts our drafter proposes along ``scenario``."""
    drafter = make()
    drafts = []
    for op, arg in scenario:
        if op == "reset":
            drafter.reset(arg)
        elif op == "extend":
            drafter.extend(arg)
        else:
            drafts.append(draft_key(drafter.propose(arg)))
    return drafts


# ---------------------------------------------------------------------- compiled originals

@dataclass(frozen=True)
class Source:
    """A vendored original and how to build our harness around it."""

    folder: str
    files: tuple[str, ...]
    flags: tuple[str, ...]


SOURCES = {
    "llama.cpp": Source("llama.cpp", ("harness.cpp", "ngram-cache.cpp"), ("-std=c++17",)),
    # result.h uses size_t without including <cstddef>: SGLang's build includes it earlier
    "sglang": Source("sglang", ("harness.cpp", "trie_cache.cpp", "result.cpp"), ("-std=c++20", "-include", "cstddef")),
    "arctic_inference": Source("arctic_inference", ("harness.cpp", "suffix_tree.cc"), ("-std=c++20",)),
    # not a peer: libstdc++ itself, for lookup.peers.std_int_map and lookup.peers.std_heap
    "unordered_map": Source("libstdcxx", ("unordered_map.cpp",), ("-std=c++17",)),
    "priority_queue": Source("libstdcxx", ("priority_queue.cpp",), ("-std=c++17",)),
}


class Unavailable(Exception):
    """The original cannot run here (no compiler, or it does not compile); the message says why."""


def compiler() -> str | None:
    return os.environ.get("CXX") or shutil.which("g++")


def build(name: str, cache_dir: Path) -> Path:
    """The harness binary for ``name``, compiled into ``cache_dir`` unless already there."""
    cxx = compiler()
    if cxx is None:
        raise Unavailable("no C++ compiler (g++ or $CXX)")
    source = SOURCES[name]
    folder = ORIGINALS / source.folder
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.suffix in (".cpp", ".cc", ".h"):
            digest.update(path.name.encode() + path.read_bytes())
    digest.update(" ".join((cxx, *source.flags)).encode())
    binary = cache_dir / f"{name}-{digest.hexdigest()[:16]}"
    if not binary.exists():
        tmp = binary.with_suffix(".tmp")
        cmd = [cxx, *source.flags, "-O1", "-I", str(folder), *(str(folder / f) for f in source.files), "-o", str(tmp)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            first = next((line for line in done.stderr.splitlines() if "error" in line), done.stderr[:200])
            raise Unavailable(f"{name} does not compile here: {first}")
        tmp.replace(binary)
    return binary


def run_batch(binary: Path, commands: Sequence[str]) -> list[str]:
    """Feed ``commands`` (one a line) to a harness; its output lines."""
    done = subprocess.run([str(binary)], input="\n".join(commands) + "\n", capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{binary.name} failed ({done.returncode}): {done.stderr[-500:]}")
    return done.stdout.splitlines()


class Process:
    """A harness kept running, for originals that call it step by step (``ask`` waits for one line)."""

    def __init__(self, binary: Path):
        self._proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def send(self, line: str) -> None:
        self._proc.stdin.write(line + "\n")

    def ask(self, line: str) -> str:
        self.send(line)
        self._proc.stdin.flush()
        reply = self._proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"harness exited ({self._proc.poll()})")
        return reply.rstrip("\n")

    def close(self) -> None:
        self._proc.stdin.close()
        self._proc.wait(timeout=60)


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split()]


# ---------------------------------------------------------------------- golden files

def golden_path(peer: str) -> Path:
    return GOLDEN / f"{peer.removeprefix('peer:')}.json"


def load_golden(peer: str) -> list[dict]:
    """Recorded cases of ``peer``: ``{"params", "ops", "drafts"}`` each."""
    cases = json.loads(golden_path(peer).read_text())["cases"]
    for case in cases:
        case["ops"] = [tuple(op) for op in case["ops"]]
        case["drafts"] = [(tokens, parents) for tokens, parents in case["drafts"]]
    return cases


def save_golden(peer: str, original: str, cases: list[dict]) -> None:
    GOLDEN.mkdir(exist_ok=True)
    head = json.dumps({"peer": peer, "original": original})[:-1]
    lines = ",\n".join(json.dumps(case, separators=(",", ":")) for case in cases)  # one case a line
    golden_path(peer).write_text(f'{head}, "cases": [\n{lines}\n]}}\n')
