"""The child side of the leaderboard sandbox: one submission, one process, one pipe.

The parent (:mod:`experiments.competition.sandbox`) starts this file as ``python -I -B child.py FD``
-- inside bubblewrap where the machine allows it -- in an empty scratch dir, with HOME and
PLD_LAB_CACHE pointing into it and nothing else in the environment. It never imports
``experiments`` or ``decoding``: the child holds no trace, no target and no path to either; it
learns committed tokens (and, for a drafter that wants them, the target's top-k rows of committed
tokens) only from the parent, as they are committed.

Two roles (``Child``): the first process, the *zygote*, runs nothing submitted; every case is
served by a process forked from it, which dies when its case ends (a stream entry's one case
process serves every case in order). Start-up, in this order (untrusted code runs only after the
last step, and only in a case process):

1. (zygote) resource limits (address space, file size, open files, CPU time, no core files);
2. (zygote) imports of numpy, ``pldcore`` and ``lookup`` (from the parent's own checkout), of the modules the
   submission's source names (standard library and allowed packages only, as the parent found them
   without running it), and a built-in's class, warmed up; then the calibration steps;
3. (case process, forked) every descriptor closed but its own channel, the refusal channel and its
   output; the kernel's layers (``confine.py``): Landlock where the kernel offers it, then a seccomp
   filter, writes to its own scratch folder only;
4. an audit hook (``sys.addaudithook``) that refuses, with a PermissionError the submission can
   catch, the same file access plus sockets, new processes, signals to other processes,
   ``ctypes`` loading of foreign libraries and replacing a function's code. Each refusal is
   written at once to a pipe only the parent reads, so no later code can take one back;
5. the case process tells the parent which layers hold (before any submitted code has run, so
   that report is true), then loads the submission and warms one instance up (the calibration
   steps, a built-in no-op drafter answered by the zygote, measured what the protocol itself costs).

Protocol. Parent -> child: pickled tuples (the child trusts its parent). Child -> parent: bytes the
parent parses without pickle, bounded and validated (a submission must not be able to run code in,
crash or silence the parent): ``b"J" + JSON`` for the start-up reports and errors, ``b"R"`` for a
finished reset, ``b"D" + header + tokens [+ parents]`` for a draft; from the zygote, ``b"C"``
carrying a case process's channel (``SCM_RIGHTS``), then ``J {"pid": pid}`` (its pid in the zygote's
namespace), and ``J {"exit": code}`` once it has ended; between two runs of one entry (one sandbox
serves every track of a build: ``sandbox.Sandboxes``), ``("setting", ...)`` to the zygote, answered
``J {"ready": true}``. The child reports no times: the parent measures them, from the child's CPU clock.

A case process is forked ahead: while one case runs, the next case's process confines itself (step
3 and 4, the costly part of a start), so the next case starts at once; it loads the submission only
when the parent asks, after the zygote has reported the end of the case before. Two case processes
are alive at once, never two running submitted code.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import time

#: b"D" header: tokens, parents (-1 = a chain)
DRAFT_HEADER = struct.Struct("<ii")
#: the whole answer to a reset
RESET_DONE = b"R"
#: exit status of a child whose refusal channel was closed or replaced under it
EXIT_TAMPERED = 86
#: longest refused-operation line the audit hook writes
REFUSAL_CHARS = 300
#: the calibration drafter's draft (what a typical step's answer carries)
CALIBRATION_DRAFT = tuple(range(1, 9))

#: flags of an open() that writes
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC

#: libc names a foreign-library lookup may not ask for (the audit layer; seccomp and Landlock make them moot)
DENIED_SYMBOLS = frozenset(
    "open open64 openat openat64 openat2 creat creat64 fopen fopen64 freopen freopen64 opendir fdopendir "
    "syscall execve execv execvp execvpe execl execlp execle fexecve system popen fork vfork clone clone3 "
    "posix_spawn posix_spawnp kill tgkill killpg ptrace process_vm_readv process_vm_writev socket connect "
    "bind dlopen dlmopen dlsym dlvsym link linkat symlink symlinkat rename renameat renameat2 unlink "
    "unlinkat mount umount umount2 unshare setns prctl chroot name_to_handle_at open_by_handle_at "
    "memfd_create shm_open".split()
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


def _record(channel, what) -> None:
    """Write one refused operation to the parent's channel, at once; a channel that is gone or
    replaced means the submission tampered with it: the process ends (the parent says why)."""
    fd, ident, fstat, write, exit_, tampered, chars, blocked, os_error = channel
    try:
        st = fstat(fd)
        if (st.st_dev, st.st_ino) != ident:
            exit_(tampered)
        write(fd, (what[:chars].replace("\n", " ") + "\n").encode("utf-8", "replace"))
    except blocked:
        pass  # the channel is full: the parent has the first ones, and counts no more
    except os_error:
        exit_(tampered)


def _audit(state, event, args):
    """Refuse what a submission must not do; the state is one tuple, immutable after start."""
    (handled, always, read_events, write_events, write_flags, reads, lists, writes, denied, own_pid, denied_symbols,
     canon, under, cwd, lstat, readlink, islnk, fspath, str_, bytes_, int_, type_, perm_error, record, channel,
     protected) = state
    if event not in handled:
        if event.startswith("socket."):
            record(channel, event)
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
            if not write and path in lists:  # a folder on the search path: its entries, nothing more
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
            for function in protected:  # the hook's own functions (numba replaces the code of others)
                if args[0] is function:
                    what = "replacing the code of the sandbox's audit hook"
    elif event == "import":
        if args[0] == "_posixsubprocess":
            what = "import _posixsubprocess"
    if what is not None:
        record(channel, what)
        raise perm_error(13, "refused by the pld-lab sandbox", what)


def install_audit_hook(reads, writes, denied, channel_fd: int, lists=()) -> None:
    """Install the hook; every refusal goes to ``channel_fd`` (a pipe's write end, made non-blocking).

    ``reads``: trees the submission may read; ``lists``: folders it may only list (exactly those);
    ``writes``: trees it may change; ``denied``: trees it may not touch even inside ``reads``.
    """
    import stat
    import types

    os.set_blocking(channel_fd, False)
    st = os.fstat(channel_fd)
    channel = (channel_fd, (st.st_dev, st.st_ino), os.fstat, os.write, os._exit, EXIT_TAMPERED, REFUSAL_CHARS,
               BlockingIOError, OSError)
    state = (
        _HANDLED, _ALWAYS_REFUSED, _READ_EVENTS, _WRITE_EVENTS, _WRITE_FLAGS, tuple(reads), frozenset(lists),
        tuple(writes), tuple(denied),
        os.getpid(), DENIED_SYMBOLS, _canonical, _under, os.getcwd, os.lstat, os.readlink, stat.S_ISLNK,
        os.fspath, str, bytes, int, type, PermissionError, _record, channel, (_audit, _canonical, _under, _record),
    )
    # A bound method: __func__ and __self__ are read-only, the state is a tuple; replacing the
    # function's code is itself refused by the hook.
    sys.addaudithook(types.MethodType(_audit, state))


# -- loading a submission ---------------------------------------------------------------------------
class LoadError(Exception):
    """The submission is not a valid entry (no Drafter subclass, several, not a Drafter)."""


class BadParams(Exception):
    """The submission's class refuses its parameters (``submit --params``): a parameter it does not
    take, a value its annotation rules out, one it needs and was not given. The submitter's slip,
    found before any case: ``submit`` says it in one line and records nothing."""


def _load_file(source: dict):
    import types

    from pldcore.errors import PLDError
    from lookup.files import compile_source, the_drafter

    path = source["path"]
    shown = source.get("display") or os.path.basename(path)  # as submitted (the path is its stored copy)
    # compiled from the source, never from a cached .pyc beside it; a syntax error in the words
    # compare.py uses (``my_drafter.py: line 4: expected ':'``)
    with open(path, "rb") as f:
        try:
            code = compile_source(f.read(), shown)
        except PLDError as exc:
            raise LoadError(str(exc)) from None
    module = types.ModuleType("pld_submission")
    module.__file__ = path
    sys.modules["pld_submission"] = module
    exec(code, module.__dict__)
    try:  # the rule every drafter file follows (lookup.files)
        return the_drafter(module, shown)
    except PLDError as exc:
        raise LoadError(str(exc)) from None


def _load_entry_point(source: dict):
    """The plug-in's class, from the ``module:attribute`` the parent resolved, its top-level package
    imported from the file the parent found (the child reads no package metadata and searches no
    folder: only the plug-in's own files are readable)."""
    import importlib

    from lookup.base import Drafter

    _import_file(source["top"], source["origin"], source.get("package_dir"))
    module, _, attribute = source["value"].partition(":")
    cls = importlib.import_module(module.strip())
    for part in attribute.split("[")[0].strip().split(".") if attribute else []:
        cls = getattr(cls, part)
    if not (isinstance(cls, type) and issubclass(cls, Drafter)):
        raise LoadError(f"entry point {source['name']!r} is {cls!r}, not a Drafter subclass")
    return cls


def _load_builtin(source: dict):
    import lookup

    return lookup.get(source["name"])


LOADERS = {"file": _load_file, "entry_point": _load_entry_point, "builtin": _load_builtin}


def _import_file(name: str, path: str, package_dir: str | None = None):
    """Import the module (or package) at ``path`` as ``name``, without putting its folder on sys.path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[package_dir] if package_dir else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _prepare_numba() -> None:
    """Let numba read the built-in kernels' cache from a read-only folder (lookup's __pycache__,
    which the parent keeps current), and make a refused cache write harmless: a kernel compiled
    in the sandbox just stays in memory."""
    try:
        from numba.core import caching
    except ImportError:
        return
    ensure = caching._CacheLocator.ensure_cache_path

    def ensure_cache_path(self):  # numba insists on a writable folder; an existing one is enough to read
        try:
            ensure(self)
        except OSError:
            if not os.path.isdir(self.get_cache_path()):
                raise

    caching._CacheLocator.ensure_cache_path = ensure_cache_path
    original = caching.Cache.save_overload

    def save_overload(self, sig, data):
        try:
            original(self, sig, data)
        except OSError:
            pass

    caching.Cache.save_overload = save_overload
    # numba reads every installed package's entry points at its first compile: do it now, before
    # the audit hook, so that a kernel compiled in the sandbox (a cache the child cannot use) does
    # not show up as dozens of refused reads
    try:
        from numba.core import entrypoints

        entrypoints.init_all()
    except Exception:  # noqa: BLE001 - numba without entry points still compiles
        pass


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
class _Calibration:
    """The drafter of the calibration steps: does nothing, answers a fixed draft. What the parent
    measures for it is the protocol's own cost, which it then leaves out of a submission's time."""

    def extend(self, tokens) -> None:
        pass

    def observe(self, draft, accepted) -> None:
        pass

    def observe_top(self, tokens, top, probs) -> None:
        pass

    def propose(self, budget):
        from lookup.base import Draft

        return Draft(list(CALIBRATION_DRAFT[:budget]))


class Child:
    """The child's two roles. The first process is the *zygote*: it imports what a lookup function
    needs (and, for a built-in, loads and warms its class: our code), answers the calibration steps,
    and runs nothing submitted. For each ``case`` request it hands the parent a *case process* (forked
    ahead, during the case before) and that process's own channel, and waits for it to exit. The case process closes every descriptor
    it did not get on purpose, puts up the kernel's layers and the audit hook, reports them, and only
    then loads the submission and serves one case (a stream entry: every case, in order). So nothing
    a per-request entry keeps -- module state, memory, native code's -- outlives its case, and the
    process that makes the next case process never ran submitted code."""

    def __init__(self, conn, hello: dict) -> None:
        self.conn, self.hello = conn, hello
        self.limits = hello["limits"]
        self.params = hello.get("params") or {}
        self.stream = bool(hello.get("stream"))
        self.cls = None
        self.wants_top: int | None = None
        self.asked_vocab = False  # whether the drafter asked for the vocabulary's strings (make)
        self.drafter = _Calibration()  # until the submission is loaded
        self.last = None  # the Draft the drafter returned at its last propose
        self.cases = 0
        self._ahead = None  # the zygote's case process forked ahead: (pid, channel, scratch folder)
        self._setting = None  # the hello's setting, once read (make)
        self._spec = None  # the entry as a parsed spec, once made (make)
        self._fresh = False  # whether self.drafter was built at load and has not been reset yet

    def send_json(self, **data) -> None:
        self.conn.send_bytes(b"J" + json.dumps(data, default=str).encode())

    def error(self, kind: str, message: str) -> None:
        self.send_json(error=kind, message=message[:2000])

    # each call of the submission: timed in the child too, so that an honest slow call is named
    # exactly (the parent's own clock, over the whole request, is the one that counts)
    def timed(self, what: str, fn, limit: float):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        if wall > limit and cpu > limit:
            raise TooSlow(f"{what} took {1e3 * wall:.0f} ms (limit {1e3 * limit:.0f} ms)")
        return result

    # -- the zygote ---------------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Limits, then trusted imports: numpy, ``lookup``, the modules the submission names (found
        by the parent in its source, never by running it), and a built-in's own class, warmed up."""
        hello = self.hello
        self.confine_module = _import_file("pld_confine", hello["confine_path"])
        limits = hello["limits"]
        self.confine_module.set_limits(hello["address_bytes"], limits["file_bytes"],
                                       int(limits["total_s"] + limits["setup_s"] + 30))
        import numpy  # noqa: F401

        _prepare_numba()  # before lookup's kernels choose their cache folder, at import
        # the base first: lookup imports it (both from the parent's own checkout, neither on sys.path)
        _import_file("pldcore", os.path.join(hello["pldcore_dir"], "__init__.py"), hello["pldcore_dir"])
        _import_file("lookup", os.path.join(hello["lookup_dir"], "__init__.py"), hello["lookup_dir"])
        _neutralise_subprocess()
        for var in ("PLD_LAB_CACHE", "TMPDIR"):  # inside bubblewrap the scratch dir is a fresh tmpfs
            os.makedirs(os.environ[var], exist_ok=True)
        import importlib

        for name in hello.get("preload") or ():  # standard library and allowed packages only (the parent's list)
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the case process imports it again and says what fails
                pass
        if hello.get("warm"):
            warm_builtins(hello["warm"])
        if hello["source"]["kind"] == "builtin":  # our own code: loaded and warmed once, here
            self.cls = _load_builtin(hello["source"])
            self.wants_top = self.warm_up()

    def serve_zygote(self) -> None:
        """Calibration steps, then one case process per ``case`` request, until ``quit``; a
        ``setting`` request between two runs makes the next case processes for another setting."""
        try:
            while True:
                try:
                    message = self.conn.recv()
                except (EOFError, ConnectionResetError):  # the parent has gone (see serve)
                    return
                if message[0] == "step":
                    self.step(message[1], message[2])
                elif message[0] == "case":
                    self.fork_worker()
                elif message[0] == "setting":
                    self.retarget(message[1])
                elif message[0] == "quit":
                    return
        finally:
            self._drop_ahead()

    def retarget(self, setting: dict) -> None:
        """A new run of the same entry, in another setting (a board track's: its profile, regime,
        batch): the case process forked ahead was made for the last one, so it goes, and a built-in's
        class is warmed up again in the new one (its JIT paths may differ), as at start-up. Then
        ``ready``, or the error report of a built-in that failed there."""
        self._drop_ahead()
        self.hello["setting"] = setting
        self._setting = None
        if self.hello["source"]["kind"] == "builtin" and self.cls is not None:
            try:
                self.wants_top = self.warm_up()
            except BaseException as exc:  # noqa: BLE001 - our own code failed in this setting: the parent says so
                self.error("exception", "during start-up (warm-up run in the run's setting): " + describe(exc))
                return
        self.send_json(ready=True)

    def fork_worker(self) -> None:
        """Hand the parent a case process with a channel of its own (its far end goes to the parent
        over this one, then its pid as this process knows it), fork the next one ahead, wait for
        this one to exit, clear its scratch folder, and report how it ended.

        Forked ahead, a case process confines itself (its layers: the costly part of a start) while
        the case before it runs, so the next case starts at once. It runs nothing submitted before
        the parent has it load the entry, which the parent asks only once this process has reported
        the end of the case before: no two case processes ever run submitted code at once. A stream
        is served by one case process: none is forked ahead for it."""
        import shutil
        import socket

        pid, ours, scratch = self._ahead if self._ahead is not None else self._spawn_worker()
        self._ahead = None
        carrier = socket.socket(fileno=os.dup(self.conn.fileno()))
        try:
            socket.send_fds(carrier, [b"C"], [ours.fileno()])
        finally:
            carrier.close()
            ours.close()
        self.send_json(pid=pid)
        if not self.stream:
            self._ahead = self._spawn_worker()
        _, status = os.waitpid(pid, 0)
        shutil.rmtree(scratch, ignore_errors=True)
        self.send_json(exit=os.waitstatus_to_exitcode(status))

    def _spawn_worker(self):
        """A new case process, confining itself: (its pid, this end of its channel, its scratch folder)."""
        import gc
        import socket

        self.cases += 1
        scratch = os.path.join(self.hello["write_root"], f"case-{self.cases}")
        os.makedirs(scratch)
        ours, theirs = socket.socketpair()
        # the collector would touch every object the zygote holds, copying each page it lies on into
        # the case process (a cost charged to the entry's calls): freeze them out of its sight
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the case process
            code = 0
            try:
                ours.close()
                code = self.run_worker(theirs.detach(), scratch)
            except BaseException as exc:  # noqa: BLE001 - whatever happens, the case process ends here
                describe(exc)  # the traceback, to the log
                code = 1
            finally:
                os._exit(code)
        theirs.close()
        return pid, ours, scratch

    def _drop_ahead(self) -> None:
        """End the case process forked ahead and never handed over (the sandbox is closing)."""
        import shutil
        import signal

        if self._ahead is None:
            return
        pid, ours, scratch = self._ahead
        self._ahead = None
        try:  # killed before its channel closes: closing it first (its "ready" unread) would wake the
            # process with a reset connection, whose traceback would crowd the entry's log
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
        ours.close()
        shutil.rmtree(scratch, ignore_errors=True)

    # -- a case process -------------------------------------------------------------------------------------
    def run_worker(self, fd: int, scratch: str) -> int:
        from multiprocessing.connection import Connection

        keep = {0, 1, 2, fd, self.hello["refusal_fd"]}
        _close_fds_except(keep)  # the zygote's channel first of all: a case talks to the parent only
        self.conn = Connection(fd)
        _die_with_parent()
        try:
            layers = self.confine(scratch)
        except BaseException as exc:  # noqa: BLE001 - the sandbox itself failed: say so, run nothing submitted
            self.error("sandbox", describe(exc))
            return 1
        if self.cls is not None and self.wants_top is not None:  # a built-in: our code, which the zygote loaded
            try:  # its warm-up and its case's drafter, made while the case before runs (load says what fails)
                self._prepare_case()
            except BaseException:  # noqa: BLE001 - load does it again and reports it
                self.drafter, self._fresh = None, False
        self.send_json(ready=True, layers=layers)
        self.serve()
        return 0

    def confine(self, scratch: str) -> list[str]:
        """Every layer of a case process, in order; returns the names of those that hold. It may
        write only its own scratch folder, which the zygote removes when it exits."""
        hello = self.hello
        confine = self.confine_module
        for var, sub in (("HOME", ""), ("PLD_LAB_CACHE", "cache"), ("TMPDIR", "tmp"), ("XDG_CACHE_HOME", "cache")):
            os.environ[var] = os.path.join(scratch, sub) if sub else scratch
            os.makedirs(os.environ[var], exist_ok=True)
        os.chdir(scratch)
        reads, writes, hidden, lists = hello["read_roots"], [scratch], hello["hidden_roots"], hello["list_roots"]
        # its own /proc entry (torch reads its memory map) and the CPU's description: nothing of anyone else
        reads = [*reads, f"/proc/{os.getpid()}", "/proc/cpuinfo"]
        layers = []
        if hello.get("landlock", True):
            abi = confine.apply_landlock(reads, writes, hidden, lists, hello["devices"])
            if abi:
                layers.append(f"landlock-abi{abi}")
        if hello.get("seccomp", True) and confine.apply_seccomp():
            layers.append("seccomp")
        if hello.get("audit_hook", True):
            devices = hello["devices"]  # /dev/null and the like: read and written
            # the zygote's own scratch (and every other case's) is outside this case's: denied
            install_audit_hook([*reads, *devices], [*writes, *devices],
                               [*hello["deny_roots"], *hidden], hello["refusal_fd"], lists)
            layers.append("audit-hook")
        return layers

    def load(self) -> None:
        """Load the submission, warm it up, build the case's drafter; tell the parent its ``wants_top``.
        A built-in was loaded and warmed by the zygote: its case process inherits both and warms up
        once more, before it reports ready (:meth:`run_worker`: while the case before runs), since a
        forked process pays for its first touch of each inherited page it writes (copied then), as a
        submission loaded here already has. None of this is charged: a drafter is built once where it
        serves (a stream entry's is too), so a case is charged its ``reset`` on the prompt and its
        steps, never its construction."""
        if not self._fresh:  # a built-in's case process made both before it reported ready
            self.drafter = None
            if self.cls is None or self.wants_top is None:
                self.cls = LOADERS[self.hello["source"]["kind"]](self.hello["source"])
                self.check_params()
            self._prepare_case()
        self.send_json(loaded=True, wants_top=self.wants_top, wants_vocab=self.asked_vocab)

    def _prepare_case(self) -> None:
        """The warm-up run, then the drafter the case will reset."""
        self.wants_top = self.warm_up()
        self.drafter = self.make()
        self._fresh = True

    def make(self):
        """A new drafter, built as every path builds one (:meth:`lookup.specs.DrafterSpec.build`) for
        the setting the entry is scored in (sent with the hello); one that asks for the vocabulary's
        strings gets the parent's (sent once, with the hello, and shared by every drafter of this
        process: a tuple, which none can change)."""
        from lookup.base import hand_vocab

        drafter = self.spec().build(self._read_setting())
        # told to the parent, which refuses an entry that asks for strings the benchmark does not hold
        self.asked_vocab = bool(drafter.wants_vocab())
        hand_vocab(drafter, lambda: self.hello.get("vocab"))
        return drafter

    def spec(self):
        """The entry as a parsed spec: its class and its parameters (checked by :meth:`check_params`)."""
        if self._spec is None:
            from lookup.specs import DrafterSpec

            source = self.hello["source"]
            shown = source.get("display") or source.get("name") or "submission"
            self._spec = DrafterSpec(shown, shown, dict(self.params), self.cls)
        return self._spec

    def _read_setting(self):
        """The hello's setting, read once."""
        if self._setting is None:
            from pldcore.setting import Setting

            self._setting = Setting.from_dict(self.hello["setting"])
        return self._setting

    def check_params(self) -> None:
        """Build the drafter once through the registry's checks (:func:`lookup.registry.construct`,
        what ``lookup.create`` and so compare.py apply): a TypeError there (an unknown parameter,
        with the close names; a value of the wrong type; a required one missing) is :class:`BadParams`."""
        spec = self.spec()
        if "setting" in self.params:
            raise BadParams(f"drafter {spec.name!r}: setting is not a parameter: the board hands it")
        try:
            spec.build(self._read_setting())
        except TypeError as exc:
            raise BadParams(str(exc)) from None

    def warm_up(self) -> int:
        """Run a throwaway drafter over a synthetic sequence: JIT compilers compile now, not in a
        timed call. Returns the instance's ``wants_top``."""
        import numpy as np

        from lookup.base import MAX_TOP, Draft

        rng = np.random.default_rng(0)
        vocab = max(2, min(int(self.hello["vocab_size"]), 1000))
        truth = rng.integers(0, vocab, 24).tolist() * 6
        d = self.make()
        wants_top = int(d.wants_top)
        k = max(0, min(wants_top, MAX_TOP))  # what the parent will hand it

        def top_rows(first: int, end: int):  # the true next token first, then others
            ids = np.stack([truth[first + 1: end + 1], *[rng.integers(0, vocab, end - first) for _ in range(k - 1)]],
                           axis=1).astype(np.int64)
            probs = np.linspace(0.9, 0.01, k, dtype=np.float16)[None, :].repeat(end - first, 0)
            return np.asarray(truth[first:end], np.int64), ids, probs

        # a drafter that keeps a history (a stream entry's) serves a second request, which matches the
        # first in its history: the history's paths are compiled here too, not in its first timed case
        for _ in range(2 if d.keeps_history() else 1):
            d.reset(truth[:40])
            if k > 0:
                d.observe_top(*top_rows(0, 39))
            pos = 40
            for _ in range(12):
                draft = d.propose(16)
                tokens = draft.tokens.tolist() if isinstance(draft, Draft) else []
                accepted = 0
                while accepted < len(tokens) and pos + accepted < len(truth) - 1 and tokens[accepted] == truth[pos + accepted]:
                    accepted += 1
                new = truth[pos: pos + accepted + 1]
                d.extend(new)
                d.observe(draft if isinstance(draft, Draft) else Draft(), accepted)
                if k > 0:
                    d.observe_top(*top_rows(pos - 1, pos - 1 + len(new)))
                pos += len(new)
        return wants_top

    # -- the replay ---------------------------------------------------------------------------------------
    def reset(self, prompt) -> None:
        def run():
            # the drafter built at load serves the first case; a stream entry keeps it for every case
            if self.drafter is None or not (self.stream or self._fresh):
                self.drafter = self.make()
            self._fresh = False
            self.drafter.reset(prompt)

        self.timed("reset", run, self.limits["reset_s"])
        self.last = None
        self.conn.send_bytes(RESET_DONE)

    def event(self, event) -> None:
        """One queued call: ("e", tokens) extend, ("o", accepted, used) observe, ("t", tokens, k,
        ids, probs, prompt) observe_top (arrays as little-endian bytes; ``prompt``: the prompt's rows)."""
        import numpy as np

        from lookup.base import EMPTY_DRAFT

        d = self.drafter
        if event[0] == "e":
            self.timed("extend", lambda: d.extend(event[1]), self.limits["call_s"])
        elif event[0] == "o":
            draft = self.last if event[2] and self.last is not None else EMPTY_DRAFT
            self.timed("observe", lambda: d.observe(draft, event[1]), self.limits["call_s"])
        else:
            _, tokens, k, ids, probs, prompt = event
            tokens = np.frombuffer(tokens, "<i8").astype(np.int64)
            ids = np.frombuffer(ids, "<i8").astype(np.int64).reshape(len(tokens), k)
            probs = np.frombuffer(probs, "<f2").astype(np.float16).reshape(len(tokens), k)
            limit = self.limits["reset_s"] if prompt else self.limits["call_s"]
            self.timed("observe_top", lambda: d.observe_top(tokens, ids, probs), limit)

    def step(self, events, budget) -> None:
        import numpy as np

        from lookup.base import Draft

        for event in events:
            self.event(event)
        if budget is None:  # the end of a sequence: nothing to draft
            self.conn.send_bytes(b"D" + DRAFT_HEADER.pack(0, -1))
            return
        draft = self.timed("propose", lambda: self.drafter.propose(budget), self.limits["call_s"])
        if not isinstance(draft, Draft):
            raise Invalid(f"propose returned {type(draft).__name__}, not a Draft")
        self.last = draft
        tokens = np.ascontiguousarray(draft.tokens, dtype="<i8")
        parents = None if draft.parents is None else np.ascontiguousarray(draft.parents, dtype="<i4")
        head = DRAFT_HEADER.pack(len(tokens), -1 if parents is None else len(parents))
        self.conn.send_bytes(b"D" + head + tokens.tobytes() + (b"" if parents is None else parents.tobytes()))

    def serve(self) -> None:
        while True:
            try:
                message = self.conn.recv()
            except (EOFError, ConnectionResetError):  # the parent has gone: nothing left to serve
                return
            op = message[0]
            try:
                if op == "load":
                    try:
                        self.load()
                    except LoadError as exc:
                        self.error("load", str(exc))
                    except BadParams as exc:
                        self.error("params", str(exc))
                    except BaseException as exc:  # noqa: BLE001
                        self.error("exception", "during start-up (loading, building, warm-up run): " + describe(exc))
                elif op == "reset":
                    self.reset(message[1])
                elif op == "step":
                    self.step(message[1], message[2])
                elif op in ("end", "quit"):
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
    """``Type: message (file:line in function)`` of the innermost frame of the traceback; the whole
    traceback goes to stderr, which the parent keeps (the entry's log)."""
    import traceback

    try:  # lookup_lines=False: reading source files for the message would count as refused opens
        text = traceback.TracebackException.from_exception(exc, lookup_lines=False).format()
        sys.stderr.write("".join(text))
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a message without its traceback is still a message
        pass
    text = str(exc).strip().splitlines()
    where = ""
    frames = traceback.StackSummary.extract(traceback.walk_tb(exc.__traceback__), lookup_lines=False)
    if frames:
        f = frames[-1]
        where = f" ({os.path.basename(f.filename)}:{f.lineno} in {f.name})"
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ") + where


def _die_with_parent() -> None:
    """SIGKILL this process when the parent dies (a killed parent must not leave a runaway child)."""
    import ctypes

    parent = os.getppid()
    try:
        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        return
    if parent != 0 and os.getppid() != parent:  # it died before the prctl
        os._exit(1)


def _close_fds_except(keep: set[int]) -> None:
    """Close every descriptor of this process but ``keep`` (what the zygote held: its channel, the
    other end of this case's channel), so a case process can reach nothing but its own channel."""
    low = 0
    for fd in sorted(keep):
        if fd > low:  # never an empty range: CPython passes close_range(low, high - 1), which wraps
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, max(low + 1, os.sysconf("SC_OPEN_MAX")))


def warm_builtins(names=None) -> None:
    """Build the drafters ``names`` (default: every built-in) once and run a short sequence through
    each, every call a replay makes, so that their numba kernels are compiled: in the zygote, those
    a submission names, which every case process then inherits compiled (it pays nothing per case
    to wrap one); in the parent, all of them, so that numba's on-disk cache of them is current."""
    import lookup

    sequence = [1, 2, 3, 1, 2, 3, 4, 1, 2, 3]
    for name in lookup.builtin_names() if names is None else names:
        try:
            drafter = lookup.create(name)
            drafter.reset(sequence)
            draft = drafter.propose(8)
            drafter.extend([1])
            drafter.observe(draft, 0)
        except Exception:  # noqa: BLE001 - a built-in that needs parameters warms itself when used
            pass


def main(argv: list[str]) -> int:
    from multiprocessing.connection import Connection

    _die_with_parent()
    conn = Connection(int(argv[1]))
    hello = conn.recv()
    child = Child(conn, hello)
    try:
        child.prepare()
    except BaseException as exc:  # noqa: BLE001 - the sandbox itself (or a built-in) failed: say so
        child.send_json(error="sandbox", message=describe(exc))
        return 1
    child.send_json(ready=True)
    child.serve_zygote()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
