"""What the sandbox child may read, and the bubblewrap command around it, wherever Python lives.

The checkout, its venv and the interpreter may lie anywhere (``/tmp`` included, as in a fresh
clone's CI): no mount may cover a path the child must read, the interpreter must find its venv
inside bubblewrap, and without bubblewrap the child must be able to read every package that
``import torch`` (or numba) looks for, so that the ``unfold`` baseline is not disqualified.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from toys_competition import QUICK, VOCAB, make_trace_folder, require_layer  # tests/experiments/competition is on sys.path

from experiments.benchmarks.traces import load_trace_sets
from experiments.competition import isolation
from experiments.competition.sandbox import Sandbox, Submission
from pldcore.errors import PLDError


def tmpfs_mounts(command: list[str]) -> list[str]:
    return [command[i + 1] for i, arg in enumerate(command) if arg == "--tmpfs"]


def bind_targets(command: list[str]) -> list[str]:
    return [command[i + 2] for i, arg in enumerate(command) if arg in ("--ro-bind", "--symlink")]


# -- which packages ---------------------------------------------------------------------------------------
def test_the_allowed_packages_are_computed_and_hold_no_model_package():
    names = set(isolation.allowed_packages())
    assert {"numpy", "numba", "llvmlite", "torch", "sympy", "jinja2"} <= names
    assert not names & {*isolation.MODEL_PACKAGES, "transformers"}
    assert {"transformers", "huggingface-hub", "safetensors", "tokenizers"}.isdisjoint(
        isolation._normal(d.metadata["Name"]) for d in isolation.allowed_distributions())
    forbidden = isolation.forbidden_paths()
    assert not [(f, p) for f in forbidden for p in isolation.allowed_package_paths() if isolation.under(f, p)]


def test_the_packages_torch_and_numba_look_for_are_readable():
    """What a clean interpreter loads from outside the standard library when it imports numpy,
    numba and torch and runs every built-in drafter is exactly what the child may read (and
    ``lookup``): nothing more is needed, with bubblewrap or without."""
    checkout = str(Path(__file__).resolve().parents[3])
    site = [os.path.realpath(p) for p in sys.path if "-packages" in p]
    # no site module: what .pth files import at start-up runs before any layer, in the child too
    code = (f"import sys; sys.path[:0] = [{checkout!r}]; sys.path += {site!r}\n"
            "import lookup, numpy, numba, torch\n"
            "for name in lookup.builtin_names():\n"
            "    try:\n"
            "        d = lookup.create(name); d.reset([1, 2, 3, 1, 2, 3, 4, 1, 2, 3]); d.observe(d.propose(8), 0)\n"
            "    except Exception:\n"
            "        pass\n"
            "print('\\n'.join(getattr(m, '__file__', None) or '' for m in list(sys.modules.values())))\n")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    reads, _ = isolation.read_paths(os.path.join(checkout, "lookup"))
    loaded = {os.path.realpath(f) for f in out.stdout.split("\n") if f}
    outside = sorted(f for f in loaded if any(isolation.under(f, s) for s in site)
                     and not any(isolation.under(f, r) for r in reads))
    assert not outside, outside


def test_requirements_follow_extras_only_where_asked():
    class Fake:
        requires = ["filelock", "sympy>=1.13; python_version >= '3.9'", 'pyyaml; extra == "pyyaml"',
                    "Babel>=2.7 ; extra == 'i18n'"]

    assert isolation._required(Fake(), extras=False) == ["filelock", "sympy"]
    assert isolation._required(Fake(), extras=True) == ["filelock", "sympy", "pyyaml", "Babel"]


def test_a_distributions_paths_come_from_its_record(tmp_path):
    site = tmp_path / "site-packages"
    for folder in ("pkg", "pkg.libs", "ns/mine", "ns/theirs", "__pycache__"):
        (site / folder).mkdir(parents=True)
    for file in ("pkg/__init__.py", "pkg.libs/libx.so", "mod.py", "ns/mine/__init__.py", "ns/theirs/__init__.py"):
        (site / file).write_text("")
    info = site / "demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
    (info / "RECORD").write_text("\n".join(f"{f},," for f in (
        "pkg/__init__.py", "pkg.libs/libx.so", "mod.py", "__pycache__/mod.cpython-311.pyc", "ns/mine/__init__.py",
        "../../../bin/demo", "demo-1.0.dist-info/METADATA", "demo-1.0.dist-info/RECORD", "demo.pth")))
    compiled = Path(importlib.util.cache_from_source(str(site / "mod.py")))
    compiled.write_text("")
    paths = isolation.distribution_paths(metadata.PathDistribution(info))
    expected = [site / "pkg", site / "pkg.libs", site / "mod.py", compiled, site / "ns" / "mine", info]
    # of the shared folder ns/, only this distribution's part; no script, no .pth
    assert sorted(paths) == sorted(os.path.realpath(p) for p in expected)


# -- where they are, and what may cover them -----------------------------------------------------------------
def fake_install(root: Path) -> dict:
    """A base installation whose site-packages (hidden) holds an allowed package (no venv), and a
    venv beside it, both under ``root``."""
    stdlib = root / "base" / "lib" / "python3"
    for folder in ("json", "site-packages/torch", "site-packages/transformers"):
        (stdlib / folder).mkdir(parents=True)
    (stdlib / "os.py").write_text("")
    (stdlib / "site-packages" / "six.py").write_text("")
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /nowhere\n")
    return {"stdlib": str(stdlib), "site": str(stdlib / "site-packages"), "torch": str(stdlib / "site-packages/torch"),
            "venv": str(venv), "python": str(venv / "bin" / "python")}


def test_a_hidden_folder_never_holds_a_readable_path(tmp_path, monkeypatch):
    """Packages installed into the base interpreter itself (no venv) lie in the folder the child
    must not list: it is hidden entry by entry around them."""
    fake = fake_install(tmp_path)
    monkeypatch.setattr(isolation, "python_paths", lambda: ([fake["stdlib"]], [fake["site"]]))
    monkeypatch.setattr(isolation, "allowed_package_paths", lambda: (fake["torch"],))
    reads, hidden = isolation.read_paths(str(tmp_path / "lookup"))
    assert fake["torch"] in reads and fake["site"] not in hidden
    assert sorted(hidden) == sorted(os.path.join(fake["site"], n) for n in ("six.py", "transformers"))
    assert not [(r, h) for r in reads for h in hidden if isolation.under(r, h)]


@pytest.mark.skipif(isolation.bwrap_path() is None, reason="needs the bwrap program to build its command")
def test_no_mount_covers_a_readable_path(tmp_path):
    fake = fake_install(tmp_path)
    reads = [fake["stdlib"], fake["torch"], os.path.join(fake["venv"], "pyvenv.cfg")]
    hidden = [os.path.join(fake["site"], n) for n in ("six.py", "transformers")]
    scratch = str(tmp_path / "scratch" / "home")
    command = isolation.bwrap_command(reads, hidden, scratch, 1 << 20, 3, fake["python"])
    assert tmpfs_mounts(command) == [scratch]  # the only tmpfs: the fresh scratch dir
    targets = bind_targets(command)
    assert fake["torch"] in targets and fake["python"] in targets and fake["stdlib"] not in targets
    assert not [t for t in targets if any(isolation.under(t, h) for h in [*hidden, fake["site"] + "/six.py"])]
    assert os.path.join(fake["stdlib"], "json") in targets  # the folder with a hole, bound around it

    with pytest.raises(PLDError, match="would cover .*which the child must read"):
        isolation.bwrap_command(reads, hidden, str(tmp_path), 1 << 20, 3, fake["python"])  # the old probe's /tmp
    with pytest.raises(PLDError, match="is hidden from the child but holds"):
        isolation.bwrap_command(reads, [fake["site"]], scratch, 1 << 20, 3, fake["python"])


def test_links_on_the_way_to_the_interpreter_are_made_again(tmp_path):
    (tmp_path / "real" / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "hop").symlink_to("link")  # relative, to another link
    assert isolation._links_on_the_way(str(tmp_path / "real/venv/bin/python"), []) == []
    assert isolation._links_on_the_way(str(tmp_path / "hop/venv/bin/python"), []) == [
        "--symlink", "link", str(tmp_path / "hop"), "--symlink", str(tmp_path / "real"), str(tmp_path / "link")]
    assert isolation._links_on_the_way(str(tmp_path / "link/venv/bin/python"), [str(tmp_path)]) == []  # bound already


# -- for real: bubblewrap around an interpreter that lives under /tmp ------------------------------------------------
def venv_under(root: Path) -> Path:
    """A venv as ``python -m venv`` makes it (bin/python a link to the base interpreter, a
    pyvenv.cfg naming its home), under ``root``; no packages."""
    base = os.path.realpath(sys._base_executable if hasattr(sys, "_base_executable") else sys.executable)
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(base)
    (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(base)}\ninclude-system-site-packages = false\n")
    return venv


@pytest.mark.parametrize("through_link", [False, True])
def test_an_interpreter_under_tmp_finds_its_venv_inside_bubblewrap(tmp_path, through_link):
    require_layer("bwrap")
    venv = venv_under(tmp_path / "real")
    if through_link:
        (tmp_path / "link").symlink_to(tmp_path / "real")
        venv = tmp_path / "link" / "venv"
    python = str(venv / "bin" / "python")
    reads, hidden = isolation.python_paths()
    reads = isolation._real([*reads, str(venv / "pyvenv.cfg")])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    r, w = os.pipe()
    try:
        command = isolation.bwrap_command(reads, hidden, str(scratch / "home"), 1 << 20, w, python)
        out = subprocess.run(command + [python, "-I", "-c", "import sys; print(sys.prefix)"], pass_fds=(w,),
                             capture_output=True, text=True, timeout=60)
    finally:
        os.close(r)
        os.close(w)
    assert out.returncode == 0, out.stderr
    assert os.path.realpath(out.stdout.strip()) == os.path.realpath(venv)


def test_the_probe_passes_where_bubblewrap_works():
    require_layer("bwrap")  # the probe is what require_layer asks: here, that it finds no problem
    assert isolation.bwrap_problem() is None


# -- the unfold baseline imports torch: it runs, with bubblewrap and without ----------------------------------------
@pytest.mark.parametrize("bwrap", [True, False])
def test_the_unfold_baseline_runs_with_nothing_refused(tmp_path, bwrap):
    if bwrap:
        require_layer("bwrap")
    sets = load_trace_sets(make_trace_folder(tmp_path / "toy", cases=1, tasks=("copy",)))
    with Sandbox(Submission.builtin("unfold"), VOCAB, QUICK, deny=[tmp_path], bwrap=bwrap) as box:
        out, _ = box.replay(sets[0].cases[0], sets[0].profile)
    assert ("bwrap" in box.layers) == bwrap and "audit-hook" in box.layers and len(out.tokens) > 0
    # at `import torch`, torch looks for device-backend plug-ins in every distribution's entry points:
    # without bubblewrap the other distributions' metadata folders are there, and unreadable (a
    # refusal, not an error), unless the child's environment turns that look-up off
    scan = box._environment(tmp_path).get("TORCH_DEVICE_BACKEND_AUTOLOAD") != "0"
    refused = [r for r in box.refused if not (scan and r.endswith(".dist-info/entry_points.txt"))]
    assert refused == [], (box.refused, box.log_tail[-2000:])
