"""The parent's side of the pipe to a sandboxed child: deadlines both ways, bounded and checked answers.

    pipe = Pipe(sock)                               # requests out (pickled), answers in (bytes)
    pipe.send(message, deadline); data = pipe.receive(deadline, max_bytes)
    reply = json_answer(data); fields(reply, {"loaded": bool, "wants_top": int})
    draft = draft_answer(data, budget)              # a Draft, or a Disqualified

Nothing the child sends can make the parent wait past a deadline or raise anything it does not
expect: the pipe raises EOFError, TimeoutError or ValueError (too long), which the sandbox turns
into a :class:`Disqualified`; the checks of an answer raise only Disqualified. A child that sends
too much, too deep, the wrong shape or nothing at all is disqualified (``protocol``, ``timeout``,
``crash``), never trusted and never unpickled.
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import struct
import threading
import time
from typing import Sequence

import numpy as np

from experiments.competition import child as child_side
from experiments.competition.text import clean, clean_block
from lookup.base import Draft

#: what a disqualified entry's reason starts with (``params``: its class refused its parameters, a
#: slip ``submit`` reports without recording anything: ``child.BadParams``)
KINDS = ("crash", "timeout", "total-time", "slow", "invalid", "exception", "load", "params", "protocol", "disk",
         "unscorable")
#: the largest JSON answer (start-up reports and errors); drafts are bounded by ``Limits.max_message``
MAX_JSON = 1 << 16


class Disqualified(Exception):
    """A submission broke a rule: ``kind`` is one of :data:`KINDS`; the message is cleaned (``text.py``)."""

    def __init__(self, kind: str, message: str) -> None:
        message = clean(message, 500)
        super().__init__(f"{kind}: {message}")
        self.kind, self.message = kind, message

    @property
    def reason(self) -> str:
        return f"{self.kind}: {self.message}"


def protocol_error(message: str) -> Disqualified:
    return Disqualified("protocol", message)


# -- the pipe ------------------------------------------------------------------------------------------
class Pipe:
    """The parent's end of the child's pipe, in the framing of ``multiprocessing.connection`` (a
    4-byte length, or -1 and an 8-byte one, then the bytes). Requests go out pickled (the child
    trusts its parent); answers come back as bytes. No call blocks past its deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def _timeout(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self.sock.settimeout(left)

    def send(self, message, deadline: float) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        head = struct.pack("!i", len(data)) if len(data) <= 0x7FFFFFFF else struct.pack("!iQ", -1, len(data))
        self._timeout(deadline)
        self.sock.sendall(head + data)

    def _exactly(self, n: int, deadline: float) -> bytes:
        out = bytearray()
        while len(out) < n:
            self._timeout(deadline)
            chunk = self.sock.recv(min(n - len(out), 1 << 20))
            if not chunk:
                raise EOFError
            out += chunk
        return bytes(out)

    def receive(self, deadline: float, max_bytes: int) -> bytes:
        """One answer; EOFError when the child is gone, TimeoutError past ``deadline``, ValueError
        for a length over ``max_bytes``."""
        size = struct.unpack("!i", self._exactly(4, deadline))[0]
        if size == -1:
            size = struct.unpack("!Q", self._exactly(8, deadline))[0]
        if size < 0 or size > max_bytes:
            raise ValueError(size)
        return self._exactly(size, deadline)

    def close(self) -> None:
        self.sock.close()


class OutputTail(threading.Thread):
    """Reads the child's stdout and stderr as they come, keeping the last ``keep`` bytes: the child
    never blocks on a full pipe, and writes nothing to the parent's disk."""

    def __init__(self, fd: int, keep: int = 16000) -> None:
        super().__init__(daemon=True, name="sandbox-output")
        self.fd, self.keep, self.data = fd, keep, b""

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self.data = (self.data + chunk)[-self.keep:]
        except OSError:
            pass
        finally:
            os.close(self.fd)

    @property
    def text(self) -> str:
        return clean_block(self.data.decode("utf-8", "replace"), self.keep)


# -- answers, checked ---------------------------------------------------------------------------------------
def json_answer(data: bytes) -> dict:
    """A ``b"J"`` answer: a JSON object of at most :data:`MAX_JSON` bytes (anything else, however
    deep or broken, is a protocol violation, never an exception in the parent)."""
    if data[:1] != b"J" or len(data) > MAX_JSON:
        raise protocol_error("an answer that is not a report of the expected kind")
    try:
        reply = json.loads(data[1:].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise protocol_error("a malformed report") from None
    if not isinstance(reply, dict):
        raise protocol_error("a report that is not an object")
    return reply


def fields(reply: dict, shape: dict[str, type]) -> dict:
    """``reply`` when it has exactly the keys of ``shape``, each of exactly its type."""
    if set(reply) != set(shape) or any(type(reply[k]) is not t for k, t in shape.items()):
        raise protocol_error(f"a report of the wrong shape (keys {sorted(map(str, reply))[:8]})")
    return reply


def error_in(reply: dict, kinds: Sequence[str]) -> Disqualified | None:
    """The Disqualified that an error report stands for (None when ``reply`` is not one); a kind
    the child may not send at this point is itself a protocol violation."""
    if "error" not in reply:
        return None
    fields(reply, {"error": str, "message": str})
    if reply["error"] not in kinds:
        return protocol_error(f"an error report of kind {clean(reply['error'], 40)!r} at this point")
    return Disqualified(reply["error"], reply["message"])


def draft_answer(data: bytes, budget: int | None) -> Draft | None:
    """A ``b"D"`` answer: a draft (None at the end of a sequence)."""
    head = child_side.DRAFT_HEADER
    if data[:1] != b"D" or len(data) < 1 + head.size:
        raise protocol_error("the child answered a step with something other than a draft")
    n, n_parents = head.unpack_from(data, 1)
    if n < 0 or n_parents not in (-1, n) or (budget is None and n):
        raise protocol_error(f"malformed draft message ({n} tokens, {n_parents} parents)")
    if 1 + head.size + 8 * n + 4 * max(n_parents, 0) != len(data):
        raise protocol_error("malformed draft message (its length disagrees with its header)")
    if budget is None:
        return None
    at = 1 + head.size
    tokens = np.frombuffer(data, "<i8", n, at).astype(np.int64)
    parents = None if n_parents < 0 else np.frombuffer(data, "<i4", n, at + 8 * n).astype(np.int32)
    draft = Draft(tokens, parents)
    problem = draft.problem()
    if problem:
        raise Disqualified("invalid", f"malformed tree: {problem}")
    return draft
