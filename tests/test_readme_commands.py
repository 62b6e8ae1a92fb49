"""Every command the README prints runs as printed, from a fresh shell, in a fresh clone.

A fresh clone (``git clone`` of this checkout: what is committed) gets the venv its two set-up
commands made here (``make setup``; the clone's ``.venv`` is this one's, so nothing is installed
twice), then each command of the README's ``sh`` blocks and each inline ``python ...``, ``make ...``
or ``pld-...`` command runs in ``bash --noprofile --norc`` under an empty environment (PATH, HOME and
the cache only): no venv active, unless the README's own activation line, which runs first, makes it so.

Slow (minutes: a replay of the whole benchmark, a submission, a small live run): ``make test-readme``
runs it (and ``.ci/run`` calls that); ``make test`` skips it, saying so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
ENV = "PLD_LAB_README_COMMANDS"
#: commands printed but not run here, each with why; the test fails when one is no longer printed
NOT_RUN = {
    "make run": "the default live comparison (45 runs, 13-14 min on a busy 2-core CPU); "
                "`make run ARGS=...` below runs the same path on fewer tokens",
    "make test": "the suite itself: .ci/run runs it before this",
    "make test-vllm": "builds a second venv with vLLM: .ci/run runs it",
    "make TORCH=...": "a placeholder: which torch build is yours to choose",
    'make run ARGS="..."': "a placeholder: the flags are yours (an example follows it)",
    "python experiments/compare.py --wandb off": "the same 45 live runs as `make run` (13-14 min busy)",
    "python experiments/leaderboard.py build": "rebuilds every board: the better part of an hour; the "
                                               "competition tests build boards of toy traces",
}
#: how a command starts, to be one (inline code spans are often names, paths or figures)
COMMAND = re.compile(r"^(?:python3? \S|make \S|pld-[a-z-]+ |\. \.venv/bin/activate)")
SETUP = ". .venv/bin/activate"


def readme_commands(text: str) -> list[str]:
    """The commands the README prints, in order, each once: the lines of its ``sh`` blocks (comments
    dropped) and the inline code spans that are commands."""
    found = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line and not line.startswith("#"):
                found.append(line)
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    found += [span for span in re.findall(r"`([^`\n]+)`", text) if COMMAND.match(span)]
    return list(dict.fromkeys(found))


def test_the_readme_commands_are_found_and_the_ones_not_run_say_why():
    commands = readme_commands(README.read_text())
    assert commands[:1] == ["make run"] and SETUP in commands  # the two set-up commands, then the venv
    assert all(c in commands for c in NOT_RUN), [c for c in NOT_RUN if c not in commands]  # no stale excuse
    first = next(c for c in commands if c not in NOT_RUN and c != SETUP)
    assert commands.index(SETUP) < commands.index(first)  # the venv comes before the first command run


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    if not os.environ.get(ENV):
        pytest.skip(f"slow (minutes): `make test-readme` runs the README's commands ({ENV}=1)")
    if not shutil.which("git") or not (ROOT / ".git").exists():
        pytest.fail("the README's commands run in a fresh clone: this checkout is no git clone")
    if not (Path(sys.prefix) / ".installed").exists():  # else make would install into this venv
        pytest.fail(f"run the README's set-up first (make setup): {sys.prefix} holds no .installed stamp")
    where = tmp_path_factory.mktemp("readme") / "pld-lab"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(where)], check=True)
    # the venv `make setup` made, shared: its stamp newer than the clone's Makefile and pyproject.toml,
    # so that make installs nothing again
    os.symlink(sys.prefix, where / ".venv")
    for name in ("Makefile", "pyproject.toml"):
        os.utime(where / name, (0, 0))
    return where


def fresh_shell(clone: Path, lines: list[str], timeout: int = 900) -> subprocess.CompletedProcess:
    """``lines`` in a fresh ``bash`` (no profile, no rc, no inherited environment but PATH and HOME)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
    for name in ("PLD_LAB_CACHE", "OMP_NUM_THREADS"):  # the converted model; the CPU share of a shared machine
        if os.environ.get(name):
            env[name] = os.environ[name]
    script = "set -e\n" + "\n".join(lines) + "\n"
    return subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=clone, env=env, text=True,
                          capture_output=True, timeout=timeout)


def run_list() -> list[str]:
    return [c for c in readme_commands(README.read_text()) if c not in NOT_RUN and c != SETUP]


@pytest.mark.parametrize("command", run_list())
def test_a_readme_command_runs_as_printed_from_a_fresh_shell(clone, command):
    done = fresh_shell(clone, [SETUP, command])
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
