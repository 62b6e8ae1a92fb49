"""The child side of the leaderboard sandbox: one submission, one process, one pipe.

The parent (:mod:`experiments.competition.sandbox`) starts this file as ``python -I -B child.py FD`` in
an empty temp dir, with HOME and PLD_LAB_CACHE pointing into that dir and nothing else in the
environment. It never imports ``experiments`` or ``decoding``: the child holds no trace, no target
and no path to either; it learns committed tokens only, from the parent, as they are committed.

Start-up, in this order (untrusted code runs only after the last step):

1. resource limits (address space, file size, CPU time, no core files);
2. imports of numpy and ``lookup`` (from the parent's own checkout), and the built-in kernels warmed;
3. Landlock (Linux >= 5.13), where the kernel offers it: from here on the kernel lets this process
   read only the Python installation, ``lookup`` and the submission file, write only its temp dir,
   make no TCP connection and signal or trace no process outside the sandbox -- ctypes included;
4. an audit hook (``sys.addaudithook``) that refuses, with a PermissionError the submission can
   catch, the same file access plus sockets, new processes, signals to other processes,
   ``ctypes`` loading of foreign libraries and replacing a function's code. Refusals are counted
   and reported to the parent. On its own (no Landlock) the hook is best effort;
5. the submission is loaded, one drafter is built and warmed up on a synthetic sequence.

Protocol. Parent -> child: pickled tuples (the child trusts its parent). Child -> parent: bytes that
the parent parses without pickle (a submission must not be able to run code in the parent):
``b"J" + JSON`` for acknowledgements and errors, ``b"D" + header + timings + tokens [+ parents]``
for a draft.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys
import time

#: b"D" header: tokens, parents (-1 = a chain), event timings that follow, propose wall s, propose CPU s
DRAFT_HEADER = struct.Struct("<iiidd")

#: the rights Landlock knows, by ABI version (bits of landlock.h)
_FS_READ = (1 << 2) | (1 << 3)  # READ_FILE | READ_DIR
_FS_FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)  # the rights a rule on a file may hold

#: flags of an open() that writes
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC

#: libc names a foreign-library lookup may not ask for (the audit layer; Landlock makes them moot)
DENIED_SYMBOLS = frozenset(
    "open open64 openat openat64 openat2 creat creat64 fopen fopen64 freopen freopen64 opendir fdopendir "
    "syscall execve execv execvp execvpe execl execlp execle fexecve system popen fork vfork clone clone3 "
    "posix_spawn posix_spawnp kill tgkill killpg ptrace process_vm_readv process_vm_writev socket connect "
    "bind dlopen dlmopen dlsym dlvsym link linkat symlink symlinkat rename renameat renameat2 unlink "
    "unlinkat mount umount umount2 unshare setns prctl chroot name_to_handle_at open_by_handle_at".split()
)

#: events refused whatever their arguments
_ALWAYS_REFUSED = frozenset({
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "os.startfile", "os.link", "os.symlink", "os.mkfifo", "os.mknod", "os.chroot", "sys.remote_exec",
})
#: events whose first argument is a path that the call reads
_READ_EVENTS = frozenset({"os.listdir", "os.scandir"})
#: events whose first argument (and, for rename, second) is a path that the call changes
_WRITE_EVENTS = frozenset({
    "os.mkdir", "os.rmdir", "os.remove", "os.rename", "os.truncate", "os.chmod", "os.chown", "os.utime",
    "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr",
})
_HANDLED = frozenset(
    {"open", "import", "os.kill", "os.killpg", "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle",
     "object.__setattr__"} | _ALWAYS_REFUSED | _READ_EVENTS | _WRITE_EVENTS
)


# -- the roots a submission may read --------------------------------------------------------------
def read_roots(lookup_dir: str, extra: tuple[str, ...] = ()) -> list[str]:
    """Folders (or files) the child may read: the Python installation, system libraries, ``lookup``.

    The parent calls this too, to check that no trace folder lies under one of them.
    """
    import sysconfig

    paths = sysconfig.get_paths()
    roots = [paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    roots += [p for p in sys.path if p and "site-packages" in p]
    roots += ["/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/share/zoneinfo", lookup_dir, *extra]
    # the interpreter's own search path (python3X.zip is listed even where it does not exist)
    prefixes = (sys.prefix, sys.base_prefix)
    roots += [p for p in sys.path if p and p.startswith(prefixes)]
    out: list[str] = []
    for root in roots:
        if root and (os.path.exists(root) or root.startswith(prefixes)):
            real = os.path.realpath(root)
            if real not in out:
                out.append(real)
    return out


# -- the audit hook ---------------------------------------------------------------------------------
def _canonical(path, cwd, lstat, readlink, islnk, fspath, str_, bytes_, type_, int_):
    """``path`` made absolute, with ``.``/``..`` and symlinks resolved (like os.path.realpath).

    Built only from the C functions handed in, never from module globals or builtins, so that a
    submission cannot change what it computes by patching ``os.path`` or ``builtins``.
    """
    if type_(path) is int_:
        return None
    path = fspath(path)
    if type_(path) is bytes_:
        path = path.decode("utf-8", "surrogateescape")
    if type_(path) is not str_:
        return "/"  # unknown kinds: treat as the root (refused)
    if not path.startswith("/"):
        path = cwd() + "/" + path
    todo = path.split("/")
    todo.reverse()
    done: list = []
    hops = 0
    while todo:
        part = todo.pop()
        if part == "" or part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = "/" + "/".join(done + [part])
        try:
            is_link = islnk(lstat(candidate).st_mode)
        except OSError:
            is_link = False
        if is_link and hops < 40:
            hops += 1
            target = readlink(candidate)
            more = target.split("/")
            more.reverse()
            todo.extend(more)
            if target.startswith("/"):
                done = []
            continue
        done.append(part)
    return "/" + "/".join(done)


def _under(path, roots) -> bool:
    for root in roots:
        if path == root or path.startswith(root + "/") or root == "/":
            return True
    return False


def _audit(state, event, args):
    """Refuse what a submission must not do; the state is one tuple, immutable after start."""
    (handled, always, read_events, write_events, write_flags, reads, writes, denied, own_pid, denied_symbols,
     canon, under, cwd, lstat, readlink, islnk, fspath, str_, bytes_, int_, type_, perm_error, log) = state
    if event not in handled:
        if event.startswith("socket."):
            if log.__len__() < 1000:
                log.append(event)
            raise perm_error(13, "refused by the pld-lab sandbox: no network", event)
        return
    what = None
    if event in always:
        what = event
    elif event == "open" or event in read_events or event in write_events:
        targets = [args[0]]
        if event == "os.rename":
            targets.append(args[1])
        if event == "open":
            mode, flags = args[1], args[2]
            write = ((flags or 0) & write_flags) != 0 or (type_(mode) is str_ and (
                "w" in mode or "a" in mode or "x" in mode or "+" in mode))
        else:
            write = event in write_events
        for target in targets:
            if event in read_events and target is None:
                target = "."
            path = canon(target, cwd, lstat, readlink, islnk, fspath, str_, bytes_, type_, int_)
            if path is None:  # an fd the child already holds
                continue
            if under(path, denied) or not under(path, writes if write else reads + writes):
                what = event + " " + path
                break
    elif event == "os.kill" or event == "os.killpg":
        if args[0] != own_pid:
            what = event + " " + str_(args[0])
    elif event == "ctypes.dlopen":
        name = args[0]
        path = None if name is None else canon(name, cwd, lstat, readlink, islnk, fspath, str_, bytes_, type_, int_)
        if path is None or not (type_(name) is str_ or type_(name) is bytes_) or not (
                (name.startswith("/") if type_(name) is str_ else name.startswith(b"/")) and under(path, reads)):
            what = "ctypes.dlopen " + str_(name)
    elif event == "ctypes.dlsym" or event == "ctypes.dlsym/handle":
        name = args[1]
        if type_(name) is bytes_:
            name = name.decode("utf-8", "replace")
        if name in denied_symbols:
            what = event + " " + str_(name)
    elif event == "object.__setattr__":
        if args[1] == "__code__":
            what = "replacing the code of " + str_(type_(args[0]).__name__)
    elif event == "import":
        if args[0] == "_posixsubprocess":
            what = "import _posixsubprocess"
    if what is not None:
        if log.__len__() < 1000:
            log.append(what)
        raise perm_error(13, "refused by the pld-lab sandbox", what)


def install_audit_hook(reads, writes, denied) -> list:
    """Install the hook; returns the (append-only) list of refused operations."""
    import stat
    import types

    log: list = []
    state = (
        _HANDLED, _ALWAYS_REFUSED, _READ_EVENTS, _WRITE_EVENTS, _WRITE_FLAGS, tuple(reads), tuple(writes), tuple(denied),
        os.getpid(), DENIED_SYMBOLS, _canonical, _under, os.getcwd, os.lstat, os.readlink, stat.S_ISLNK,
        os.fspath, str, bytes, int, type, PermissionError, log,
    )
    # A bound method: __func__ and __self__ are read-only, the state is a tuple; replacing the
    # function's code is itself refused by the hook.
    sys.addaudithook(types.MethodType(_audit, state))
    return log


# -- Landlock -----------------------------------------------------------------------------------------
def landlock_abi() -> int:
    """The Landlock ABI this kernel offers (0: none). Asks only; restricts nothing."""
    import ctypes

    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return 0
    syscall.restype = ctypes.c_long
    return max(0, int(syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))))


def apply_landlock(reads, writes, files_rw=("/dev/null",)) -> int:
    """Restrict this process (and anything it starts) with Landlock; returns the ABI used, 0 if none.

    ``reads``: folders or files readable; ``writes``: folders with every right; ``files_rw``:
    device files readable and writable. No TCP bind/connect (ABI >= 4); no signals to, or abstract
    unix sockets of, processes outside the sandbox (ABI >= 6). Tracing a process outside the
    sandbox (so /proc/<parent>/mem) is refused by every ABI.
    """
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
    except (OSError, AttributeError):
        return 0
    syscall.restype = ctypes.c_long
    abi = syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        return 0
    fs = (1 << 13) - 1
    if abi >= 2:
        fs |= 1 << 13  # REFER
    if abi >= 3:
        fs |= 1 << 14  # TRUNCATE
    if abi >= 5:
        fs |= 1 << 15  # IOCTL_DEV

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    attr = RulesetAttr(fs, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = syscall(444, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return 0
    try:
        rules = [(p, _FS_READ) for p in reads] + [(p, fs) for p in writes] + [(p, (1 << 1) | (1 << 2)) for p in files_rw]
        for path, allowed in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(path):
                    allowed &= _FS_FILE_RIGHTS
                rule = PathBeneath(allowed & fs, fd)
                if syscall(445, ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule({path})")
            finally:
                os.close(fd)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, required by landlock_restrict_self
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if syscall(446, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return int(abi)


# -- loading a submission ---------------------------------------------------------------------------
class LoadError(Exception):
    """The submission is not a valid entry (no Drafter subclass, several, unknown entry point)."""


def _load_file(source: dict):
    import types

    from lookup.errors import PLDError
    from lookup.files import the_drafter

    path = source["path"]
    # compiled from the source, never from a cached .pyc beside it
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    module = types.ModuleType("pld_submission")
    module.__file__ = path
    sys.modules["pld_submission"] = module
    exec(code, module.__dict__)
    try:  # the rule every drafter file follows (lookup.files)
        return the_drafter(module, os.path.basename(path))
    except PLDError as exc:
        raise LoadError(str(exc)) from None


def _load_entry_point(source: dict):
    from importlib import metadata

    from lookup.base import Drafter
    from lookup.registry import ENTRY_POINT_GROUP

    points = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == source["name"]]
    if not points:
        raise LoadError(f"no entry point {source['name']!r} in group {ENTRY_POINT_GROUP}")
    cls = points[0].load()
    if not (isinstance(cls, type) and issubclass(cls, Drafter)):
        raise LoadError(f"entry point {source['name']!r} is {cls!r}, not a Drafter subclass")
    return cls


def _load_builtin(source: dict):
    import lookup

    return lookup.get(source["name"])


LOADERS = {"file": _load_file, "entry_point": _load_entry_point, "builtin": _load_builtin}


def _import_lookup(lookup_dir: str) -> None:
    """Import ``lookup`` from the parent's checkout, without putting that checkout on sys.path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "lookup", os.path.join(lookup_dir, "__init__.py"), submodule_search_locations=[lookup_dir])
    module = importlib.util.module_from_spec(spec)
    sys.modules["lookup"] = module
    spec.loader.exec_module(module)


def _prepare_numba() -> None:
    """Make a refused cache write harmless: a kernel compiled in the sandbox just stays in memory.

    The built-in kernels need nothing more: numba picks each kernel's cache folder (lookup's
    __pycache__) when ``lookup`` is imported, before the sandbox closes, and later only reads it.
    """
    try:
        from numba.core import caching
    except ImportError:
        return
    original = caching.Cache.save_overload

    def save_overload(self, sig, data):
        try:
            original(self, sig, data)
        except OSError:
            pass

    caching.Cache.save_overload = save_overload


def _neutralise_subprocess() -> None:
    """``_posixsubprocess.fork_exec`` raises no audit event: take it away before untrusted code runs."""
    try:
        import _posixsubprocess
    except ImportError:
        return

    def fork_exec(*_a, **_k):
        raise PermissionError(13, "refused by the pld-lab sandbox", "fork_exec")

    _posixsubprocess.fork_exec = fork_exec


# -- the loop -----------------------------------------------------------------------------------------
class Child:
    def __init__(self, conn, hello: dict) -> None:
        self.conn, self.hello = conn, hello
        self.limits = hello["limits"]
        self.params = hello.get("params") or {}
        self.cls = None
        self.drafter = None
        self.last = None  # the Draft the drafter returned at its last propose
        self.refused: list = []
        self.isolation = "audit-hook"

    def send_json(self, **data) -> None:
        self.conn.send_bytes(b"J" + json.dumps(data, default=str).encode())

    def error(self, kind: str, message: str) -> None:
        data = {"error": kind, "message": message[:2000]}
        if self.refused:
            data["refused"] = list(self.refused[:50])
        self.send_json(**data)

    # each call of the submission: timed (wall and CPU), exceptions reported
    def timed(self, what: str, fn, limit: float):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        if wall > limit and cpu > limit:
            raise TooSlow(f"{what} took {1e3 * wall:.0f} ms (limit {1e3 * limit:.0f} ms)")
        return result, wall, cpu

    def start(self) -> None:
        self.cls = LOADERS[self.hello["source"]["kind"]](self.hello["source"])
        self.warm_up()

    def make(self):
        return self.cls(**self.params)

    def warm_up(self) -> None:
        """Run a throwaway drafter over a synthetic sequence: JIT compilers compile now, not in a timed call."""
        import numpy as np

        from lookup.base import Draft

        rng = np.random.default_rng(0)
        vocab = int(self.hello["vocab_size"])
        base = rng.integers(0, max(2, min(vocab, 1000)), 24).tolist()
        truth = base * 6
        d = self.make()
        d.reset(truth[:40])
        pos = 40
        for _ in range(12):
            draft = d.propose(16)
            tokens = draft.tokens.tolist() if isinstance(draft, Draft) else []
            accepted = 0
            while accepted < len(tokens) and pos + accepted < len(truth) - 1 and tokens[accepted] == truth[pos + accepted]:
                accepted += 1
            new = truth[pos: pos + accepted + 1]
            pos += len(new)
            d.extend(new)
            d.observe(draft if isinstance(draft, Draft) else Draft(), accepted)

    def reset(self, prompt) -> None:
        def run():
            self.drafter = self.make()
            self.drafter.reset(prompt)

        _, wall, _ = self.timed("reset", run, self.limits["reset_s"])
        self.last = None
        self.send_json(ok=True, s=wall)

    def step(self, events, budget) -> None:
        import numpy as np

        from lookup.base import EMPTY_DRAFT, Draft

        d = self.drafter
        times = []
        for event in events:
            if event[0] == "e":
                _, wall, _ = self.timed("extend", lambda: d.extend(event[1]), self.limits["call_s"])
            else:
                draft = self.last if event[2] and self.last is not None else EMPTY_DRAFT
                _, wall, _ = self.timed("observe", lambda: d.observe(draft, event[1]), self.limits["call_s"])
            times.append(wall)
        if budget is None:  # the end of a sequence: timings only
            self.conn.send_bytes(b"D" + DRAFT_HEADER.pack(0, -1, len(times), 0.0, 0.0) + np.asarray(times, "<f8").tobytes())
            return
        draft, wall, cpu = self.timed("propose", lambda: d.propose(budget), self.limits["call_s"])
        if not isinstance(draft, Draft):
            raise Invalid(f"propose returned {type(draft).__name__}, not a Draft")
        self.last = draft
        tokens = np.ascontiguousarray(draft.tokens, dtype="<i8")
        parents = None if draft.parents is None else np.ascontiguousarray(draft.parents, dtype="<i4")
        head = DRAFT_HEADER.pack(len(tokens), -1 if parents is None else len(parents), len(times), wall, cpu)
        body = np.asarray(times, "<f8").tobytes() + tokens.tobytes() + (b"" if parents is None else parents.tobytes())
        self.conn.send_bytes(b"D" + head + body)

    def serve(self) -> None:
        while True:
            try:
                message = self.conn.recv()
            except EOFError:
                return
            op = message[0]
            try:
                if op == "reset":
                    self.reset(message[1])
                elif op == "step":
                    self.step(message[1], message[2])
                elif op == "stats":
                    usage = resource.getrusage(resource.RUSAGE_SELF)
                    self.send_json(ok=True, refused=list(self.refused[:50]), refused_count=len(self.refused),
                                   max_rss_kb=usage.ru_maxrss, cpu_s=usage.ru_utime + usage.ru_stime,
                                   isolation=self.isolation)
                elif op == "quit":
                    return
            except TooSlow as exc:
                self.error("slow", str(exc))
            except Invalid as exc:
                self.error("invalid", str(exc))
            except BaseException as exc:  # noqa: BLE001 - everything a submission raises disqualifies it
                self.error("exception", describe(exc))


class TooSlow(Exception):
    pass


class Invalid(Exception):
    pass


def describe(exc: BaseException) -> str:
    """``Type: message (file:line in function)`` of the innermost frame of the traceback."""
    import traceback

    text = str(exc).strip().splitlines()
    where = ""
    # lookup_lines=False: reading source files for the message would count as a refused open
    frames = traceback.StackSummary.extract(traceback.walk_tb(exc.__traceback__), lookup_lines=False)
    if frames:
        f = frames[-1]
        where = f" ({os.path.basename(f.filename)}:{f.lineno} in {f.name})"
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ") + where


def set_limits(limits: dict) -> None:
    def cap(which, value):
        try:
            soft, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    cap(resource.RLIMIT_AS, int(limits["memory_bytes"]))
    cap(resource.RLIMIT_FSIZE, int(limits.get("file_bytes", 64 << 20)))
    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_CPU, int(limits["total_s"] + limits["setup_s"] + 30))


def _die_with_parent() -> None:
    """SIGKILL this process when the parent dies (a killed parent must not leave a runaway child)."""
    import ctypes

    parent = os.getppid()
    try:
        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the prctl
        os._exit(1)


def main(argv: list[str]) -> int:
    from multiprocessing.connection import Connection

    _die_with_parent()
    conn = Connection(int(argv[1]))
    hello = conn.recv()
    set_limits(hello["limits"])
    child = Child(conn, hello)
    try:
        import numpy  # noqa: F401

        _import_lookup(hello["lookup_dir"])
        _prepare_numba()
        _neutralise_subprocess()
        reads, writes, denied = hello["read_roots"], [hello["write_root"]], hello["deny_roots"]
        if hello.get("landlock", True):
            abi = apply_landlock(reads, writes)
            if abi:
                child.isolation = f"landlock-abi{abi}+audit-hook"
        if hello.get("audit_hook", True):
            child.refused = install_audit_hook(reads, writes, denied)
        else:
            child.isolation = child.isolation.replace("+audit-hook", "").replace("audit-hook", "none")
    except BaseException as exc:  # noqa: BLE001 - the sandbox itself failed: say so, do not run the submission
        child.send_json(error="sandbox", message=describe(exc))
        return 1
    try:
        w0 = time.perf_counter()
        child.start()
        child.send_json(ok=True, isolation=child.isolation, setup_s=time.perf_counter() - w0)
    except LoadError as exc:
        child.error("load", str(exc))
        return 1
    except BaseException as exc:  # noqa: BLE001
        child.error("exception", "during start-up (loading, building, warm-up run): " + describe(exc))
        return 1
    child.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
