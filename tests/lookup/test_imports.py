"""``import lookup`` stays light: no torch, no transformers, and no JIT compilation until a drafter is built."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_import_lookup_loads_neither_torch_nor_transformers():
    assert run("import lookup, sys; print('torch' in sys.modules, 'transformers' in sys.modules)") == "False False"


def test_kernels_compile_when_a_drafter_is_built_not_at_import():
    out = run("""
        import lookup
        from numba.core.registry import CPUDispatcher
        from lookup.indexes import automaton_kernels
        from lookup.drafters import voting

        def compiled():
            return sorted(
                f"{m.__name__}.{n}" for m in (automaton_kernels, voting)
                for n, f in vars(m).items() if isinstance(f, CPUDispatcher) and f.signatures
            )

        print(compiled() == [])
        lookup.create("voting")  # warms up the automaton's kernels and voting's
        print("lookup.indexes.automaton_kernels.sam_extend" in compiled(), "lookup.drafters.voting.vote_tree" in compiled())
    """)
    assert out.splitlines() == ["True", "True True"]


def test_unfold_builds_without_torch_imported_first():
    out = run("""
        import sys, lookup
        d = lookup.create("unfold")
        d.reset(list(range(1, 13)) + [1, 2])  # the published lookup wants a full 10-token continuation
        print('torch' in sys.modules, d.propose(2).tokens.tolist())
    """)
    assert out == "True [3, 4]"
