"""The sandbox's case process (``experiments/competition/child.py``): its warm-up compiles what a
timed replay calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

#: in a new process (nothing compiled by other tests): the warm-up of an entry, then two requests of
#: other tokens served by a drafter of the same spec; prints the kernels that gained a compiled
#: signature after the warm-up (compiled, or loaded from numba's cache, in what would be timed calls)
SCRIPT = textwrap.dedent('''
    import gc, json, sys, types
    import numpy as np
    from numba.core.registry import CPUDispatcher
    from experiments.competition.child import Child
    from lookup.specs import parse_drafter
    from pldcore.setting import reference_setting

    spec = parse_drafter(sys.argv[1])
    make = lambda: spec.build(reference_setting())
    Child.warm_up(types.SimpleNamespace(hello={"vocab_size": 50_000}, make=make))

    def signatures():
        return {f"{d.py_func.__module__}.{d.py_func.__name__}": len(d.signatures)
                for d in gc.get_objects() if isinstance(d, CPUDispatcher)}

    before = signatures()
    rng = np.random.default_rng(1)
    text = rng.integers(100, 140, 60).tolist() * 3
    drafter = make()
    for request in range(3):
        drafter.reset(text[:50])
        pos = 50
        while pos < len(text) - 1:
            draft = drafter.propose(16)
            accepted = 0
            while accepted < len(draft.tokens) and pos + accepted < len(text) - 1 and draft.tokens[accepted] == text[pos + accepted]:
                accepted += 1
            drafter.extend(text[pos: pos + accepted + 1])
            drafter.observe(draft, accepted)
            pos += accepted + 1
    after = signatures()
    print(json.dumps(sorted(k for k, n in after.items() if n != before.get(k, 0))))
''')


def _history_specs() -> list[str]:
    """``NAME:history=true`` of every built-in with a history (the board's stream entries), and one without."""
    import lookup
    import lookup.peers
    from experiments.competition.entries import can_keep_history

    return [f"{name}:history=true" for name in [*lookup.builtin_names(), *lookup.peers.names()]
            if can_keep_history(name)] + ["adaptive"]


@pytest.mark.parametrize("spec", _history_specs())
def test_the_warm_up_compiles_every_kernel_a_replay_calls_a_history_s_included(spec):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", SCRIPT, spec], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
