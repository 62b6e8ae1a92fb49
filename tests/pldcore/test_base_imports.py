"""The base imports nothing above it: ``import pldcore`` loads no drafter, no numba, no torch; and
``import lookup`` loads no drafter either (the registry imports one when it is first named)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def loaded_after(code: str) -> set[str]:
    script = textwrap.dedent(f"""
        import sys
        {code}
        print(" ".join(sorted(sys.modules)))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def ours(modules: set[str], package: str) -> set[str]:
    return {m for m in modules if m == package or m.startswith(package + ".")}


def test_the_base_imports_no_drafter_no_numba_and_no_torch():
    modules = loaded_after("import pldcore, pldcore.hardware, pldcore.setting; pldcore.reference_setting()")
    assert not ours(modules, "lookup") and not ours(modules, "decoding") and not ours(modules, "experiments")
    assert "numba" not in modules and "torch" not in modules


def test_lookup_imports_no_drafter_until_one_is_named():
    bare = loaded_after("import lookup; lookup.available(); lookup.trusted_names()")
    assert not ours(bare, "lookup.drafters") and not ours(bare, "lookup.peers") and not ours(bare, "lookup.indexes")
    assert "numba" not in bare and "torch" not in bare
    # parsing a spec imports the modules of the drafters it names (to read their classes), no others
    named = loaded_after("import lookup; lookup.parse_drafter('adaptive:history=true').classes()")
    assert ours(named, "lookup.drafters") == {"lookup.drafters", "lookup.drafters.adaptive",
                                              "lookup.drafters.suffix_automaton"}
    assert not ours(named, "lookup.peers") and "torch" not in named


def test_every_built_in_registers_under_the_name_its_table_gives():
    modules = loaded_after("""
        import lookup
        from lookup.registry import BUILTINS, _REGISTRY
        for name, module in BUILTINS.items():
            assert lookup.get(name).__module__ == module, name
        assert set(_REGISTRY) == set(BUILTINS), set(_REGISTRY) ^ set(BUILTINS)
        assert lookup.get("none") is lookup.get("plain")
    """)
    assert "lookup.drafters.adaptive" in modules
