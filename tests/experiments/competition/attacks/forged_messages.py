"""Attack (protocol): find the child's end of the pipe and write the parent what it never asked for.

``attack`` picks the forgery, sent in the middle of the replay (or, for ``load``, while the parent
waits for the submission to load): a 100,000-deep JSON, a "load" error (which once made ``submit``
exit without recording the entry), a stats reply with a string for a count, a forged report of full
isolation, an 8 MiB answer, an error of an unknown kind 100 kB long, and a length header followed
by silence. The parent must record a disqualification every time, and never raise or hang.
"""

import gc
import json
import os
import struct
import time

from lookup import Draft, Drafter

FORGED = {
    "deep_json": b"J" + b"[" * 100_000 + b"]" * 100_000,
    "load": b'J{"error": "load", "message": "forged: the file defines no Drafter subclass"}',
    "stats": b'J{"ok": true, "refused": [], "refused_count": "lots", "isolation": "bwrap+seccomp"}',
    "ready": b'J{"ready": true, "layers": ["bwrap", "seccomp", "landlock-abi9"]}',
    "huge": b"D" + bytes(8 << 20),
    "kind": b"J" + json.dumps({"error": "<script>alert(1)</script>" + "x" * 100_000, "message": "m"}).encode(),
}


def connection():
    from multiprocessing.connection import Connection

    return next(obj for obj in gc.get_objects() if isinstance(obj, Connection))


def forge(attack: str) -> None:
    conn = connection()
    if attack == "silence":  # promise 1000 bytes, send two, never send the rest
        os.write(conn.fileno(), struct.pack("!i", 1000) + b"J{")
        time.sleep(3600)
    conn.send_bytes(FORGED[attack])


class Forger(Drafter):
    def __init__(self, attack: str = "deep_json"):
        super().__init__()
        self.attack = attack
        if attack == "load" and not getattr(Forger, "forged", False):  # the first instance: the parent waits for the load
            Forger.forged = True
            forge(attack)

    def reset(self, prompt):
        super().reset(prompt)
        self.live = len(prompt) > 50

    def propose(self, budget):
        if self.live and self.attack != "load":
            forge(self.attack)
        return Draft([])
