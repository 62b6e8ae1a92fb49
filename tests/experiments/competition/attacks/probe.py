"""Attack: tell the public cases from fresh ones by what the sandbox hands the entry. It looks at
everything it can reach before its first draft -- the hello it was started with (walking ``gc``
for it), the vocabulary's strings it asks for, the setting it plans for, its environment, working
folder, arguments, import path, limits and scratch folder, the draft budget -- and raises with a
digest of each, which the test compares between the two benchmarks (public=True on both, so the
message is kept). The sandbox warms a throwaway instance up on synthetic tokens (ids under 1,000)
first: it probes once it is reset with a real prompt."""

import gc
import hashlib
import json
import os
import re
import resource
import sys

from lookup import Draft, Drafter


def _digest(value, home: str) -> str:
    """A digest of ``value``, with what differs between any two sandboxes (its scratch folder's random
    name, as ``HOME`` and, outside bubblewrap, ``PWD`` name it) made the same."""
    text = re.sub(r"pld-sandbox-\d+-\w+", "<sandbox>", json.dumps(value, sort_keys=True, default=repr).replace(home, "<home>"))
    return hashlib.sha256(text.encode()).hexdigest()[:12] if home else "no-home"


class Probe(Drafter):
    uses_setting = True

    def __init__(self, setting=None):
        super().__init__()
        self.real = False
        self.setting, self.strings = setting, None

    def wants_vocab(self):
        return self.strings is None

    def set_vocab(self, strings):
        self.strings = list(strings)

    def reset(self, prompt):
        self.real = max(map(int, prompt), default=0) >= 1000

    def propose(self, budget):
        if not self.real:
            return Draft([])
        try:
            hello = next((o for o in gc.get_objects() if isinstance(o, dict) and "deny_roots" in o), {})
        except Exception:  # noqa: BLE001 - a sandbox may refuse the walk
            hello = {}
        home = str(hello.get("write_root") or os.environ.get("HOME", ""))
        seen = {
            "hello": {k: v for k, v in hello.items() if k != "vocab"},
            "vocab": self.strings,
            "setting": self.setting.to_dict() if self.setting is not None else None,
            "env": dict(os.environ), "cwd": os.getcwd(), "argv": sys.argv, "path": sys.path,
            "limits": [resource.getrlimit(getattr(resource, r)) for r in
                       ("RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CPU")],
            "home": sorted(os.listdir(home)) if home else None,
            "budget": budget,
        }
        seen["found_hello"] = bool(hello)
        raise RuntimeError("seen " + json.dumps({k: _digest(v, home) for k, v in seen.items()}, sort_keys=True))
        return Draft([])
