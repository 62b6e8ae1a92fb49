"""The kernel's walls the sandbox child puts around itself: resource limits, Landlock, seccomp.

The child (``child.py``) loads this file by path (it never imports ``experiments``) and applies
each layer before any submitted code runs; every layer holds whatever that code does, ``ctypes``
and machine code included, because the kernel enforces it:

- :func:`set_limits`: address space, file size, open files, CPU time, no core files;
- :func:`apply_landlock` (Linux >= 5.13): read only the allowed paths, write only the scratch dir,
  no TCP, no signals to or abstract sockets of processes outside the sandbox, run no program;
- :func:`apply_seccomp` (through libseccomp, the library systemd and Chrome use to build their
  filters): no new process, no socket of any kind, no shared memory that would dodge the memory
  limit (memfd, SysV, POSIX message queues), no io_uring or AIO (kernel workers whose time no
  clock of the child counts), no namespaces, mounts, tracing, keys, clock or module changes, no
  raised limits, no signal to another process. A denied call fails with EPERM (``clone3`` with
  ENOSYS, so that the C library falls back to ``clone``, which may start threads only).

Each ``apply_*`` returns whether (or which version of) its layer now holds, so the child can tell
the parent which walls stand; none raises for a kernel that lacks the mechanism.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource

# -- resource limits ----------------------------------------------------------------------------------
#: open files: enough for Python, numpy, numba and torch; few enough that pipe buffers stay small
OPEN_FILES = 512


def set_limits(memory_bytes: int, file_bytes: int, cpu_s: int) -> None:
    """Cap this process (soft = hard, so it cannot raise them back; raising is also refused by seccomp)."""

    def cap(which, value):
        try:
            _, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    cap(resource.RLIMIT_AS, int(memory_bytes))
    cap(resource.RLIMIT_FSIZE, int(file_bytes))
    cap(resource.RLIMIT_NOFILE, OPEN_FILES)
    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_CPU, int(cpu_s))


# -- Landlock ---------------------------------------------------------------------------------------------
#: the rights Landlock knows, by ABI version (bits of landlock.h)
_FS_READ = (1 << 2) | (1 << 3)  # READ_FILE | READ_DIR
_FS_FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)  # the rights a rule on a file may hold
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446


def _syscall():
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long
    return syscall


def landlock_abi() -> int:
    """The Landlock ABI this kernel offers (0: none). Asks only; restricts nothing."""
    syscall = _syscall()
    if syscall is None:
        return 0
    return max(0, int(syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))))


def expand_hidden(reads, hidden) -> list[str]:
    """``reads`` with every root that holds a ``hidden`` path replaced by its entries, minus the
    hidden ones (recursively): Landlock grants whole trees, so a tree with a hole is listed around it."""
    out: list[str] = []
    for root in reads:
        inside = [h for h in hidden if h.startswith(root.rstrip("/") + "/")]
        if root in hidden:
            continue
        if not inside or not os.path.isdir(root):
            out.append(root)
            continue
        entries = sorted(os.path.join(root, e) for e in os.listdir(root))
        out += expand_hidden(entries, inside)
    return out


def apply_landlock(reads, writes, hidden=(), lists=(), files_rw=("/dev/null",)) -> int:
    """Restrict this process (and anything it starts) with Landlock; returns the ABI used, 0 if none.

    ``reads``: folders or files readable, less the ``hidden`` paths under them; ``lists``: folders
    whose entries (and their subfolders' entries) may be listed, no file in them read; ``writes``:
    folders with every right; ``files_rw``: device files readable and writable. No TCP bind/connect
    (ABI >= 4); no signals to, or abstract unix sockets of, processes outside the sandbox
    (ABI >= 6). Tracing a process outside the sandbox (so /proc/<parent>/mem) is refused by every
    ABI, and no right here includes EXECUTE: no program can be run.
    """
    syscall = _syscall()
    if syscall is None:
        return 0
    abi = syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # LANDLOCK_CREATE_RULESET_VERSION
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
    ruleset = syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        rules = ([(p, _FS_READ) for p in expand_hidden(list(reads), list(hidden))] + [(p, 1 << 3) for p in lists]
                 + [(p, fs) for p in writes]
                 + [(p, (1 << 1) | (1 << 2)) for p in files_rw])
        for path, allowed in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(path):
                    allowed &= _FS_FILE_RIGHTS
                rule = PathBeneath(allowed & fs, fd)
                if syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule({path})")
            finally:
                os.close(fd)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, required by landlock_restrict_self
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return int(abi)


# -- seccomp, through libseccomp ----------------------------------------------------------------------------
#: system calls refused whatever their arguments (names this architecture lacks are skipped)
DENIED_SYSCALLS = (
    # new processes and other processes
    "fork vfork execve execveat ptrace process_vm_readv process_vm_writev kcmp pidfd_open pidfd_getfd "
    "pidfd_send_signal process_madvise process_mrelease tkill "
    # network: no socket at all (the parent's pipe is handed over already open)
    "socket socketpair sendmsg sendmmsg "
    # memory that RLIMIT_AS does not count until mapped, and kernel work no clock of ours counts
    "memfd_create memfd_secret shmget shmat shmctl msgget msgsnd msgrcv msgctl semget semop semtimedop semctl "
    "mq_open mq_timedsend io_uring_setup io_uring_enter io_uring_register io_setup io_submit userfaultfd "
    "perf_event_open bpf "
    # namespaces, mounts, file handles, device nodes
    "unshare setns mount umount2 pivot_root chroot open_tree move_mount fsopen fsconfig fsmount fspick "
    "mount_setattr name_to_handle_at open_by_handle_at mknod mknodat "
    # keys, clocks, the machine itself, limits
    "add_key request_key keyctl clock_settime settimeofday adjtimex clock_adjtime reboot kexec_load "
    "kexec_file_load init_module finit_module delete_module swapon swapoff acct sethostname setdomainname "
    "iopl ioperm syslog quotactl vhangup setrlimit"
).split()

_ALLOW = 0x7FFF0000  # SCMP_ACT_ALLOW
_CMP_NE, _CMP_EQ, _CMP_MASKED_EQ = 1, 4, 7
_ATTR_BADARCH = 2  # SCMP_FLTATR_ACT_BADARCH: what a system call of another ABI (i386 int 0x80, x32) gets
_ATTR_TSYNC = 4  # SCMP_FLTATR_CTL_TSYNC: the filter covers every thread, not only the caller
_CLONE_THREAD = 0x00010000
_F_SETPIPE_SZ = 1031


def _errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)  # SCMP_ACT_ERRNO(code)


class _Cmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]


def _libseccomp():
    """libseccomp's functions used here, or None when the library is missing."""
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        return None
    lib.seccomp_init.restype, lib.seccomp_init.argtypes = ctypes.c_void_p, [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_Cmp)]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


def seccomp_available() -> bool:
    """Whether libseccomp can be loaded here (the kernel's support is checked when the filter loads)."""
    return _libseccomp() is not None


def _rules(own_pid: int) -> list[tuple[str, int, list[tuple[int, int, int, int]]]]:
    """(syscall, action, argument comparisons) of the filter; a rule's comparisons must all hold."""
    eperm = _errno(errno.EPERM)
    rules = [(name, eperm, []) for name in DENIED_SYSCALLS]
    rules += [
        ("clone3", _errno(errno.ENOSYS), []),  # the C library then uses clone, checked below
        ("clone", eperm, [(0, _CMP_MASKED_EQ, _CLONE_THREAD, 0)]),  # a process, not a thread
        ("kill", eperm, [(0, _CMP_NE, own_pid, 0)]),
        ("tgkill", eperm, [(0, _CMP_NE, own_pid, 0)]),
        ("rt_sigqueueinfo", eperm, [(0, _CMP_NE, own_pid, 0)]),
        ("rt_tgsigqueueinfo", eperm, [(0, _CMP_NE, own_pid, 0)]),
        ("prlimit64", eperm, [(2, _CMP_NE, 0, 0)]),  # reading a limit is fine, setting one is not
        ("fcntl", eperm, [(1, _CMP_EQ, _F_SETPIPE_SZ, 0)]),  # pipe buffers stay at their default size
    ]
    return rules


def apply_seccomp(own_pid: int | None = None) -> bool:
    """Load the filter into every thread of this process; False when libseccomp is missing."""
    lib = _libseccomp()
    if lib is None:
        return False
    ctx = lib.seccomp_init(_ALLOW)
    if not ctx:
        raise OSError(errno.ENOMEM, "seccomp_init")
    try:
        for name, action, compares in _rules(os.getpid() if own_pid is None else own_pid):
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:
                continue  # not a system call of this architecture
            args = (_Cmp * max(1, len(compares)))(*[_Cmp(*c) for c in compares])
            code = lib.seccomp_rule_add_array(ctx, action, number, len(compares), args if compares else None)
            if code < 0:
                raise OSError(-code, f"seccomp_rule_add({name})")
        # another ABI's numbers would dodge every rule above: they fail instead (libseccomp's default
        # kills the calling thread only, which leaves the process hung rather than stopped)
        for attr, value, name in ((_ATTR_BADARCH, _errno(errno.ENOSYS), "BADARCH"), (_ATTR_TSYNC, 1, "TSYNC")):
            code = lib.seccomp_attr_set(ctx, attr, value)
            if code < 0:
                raise OSError(-code, f"seccomp_attr_set({name})")
        code = lib.seccomp_load(ctx)
        if code < 0:
            raise OSError(-code, "seccomp_load")
    finally:
        lib.seccomp_release(ctx)
    return True
