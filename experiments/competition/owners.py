"""Names on the board are owned: a submission under a name replaces the entry of that name only
when it proves it comes from the submitter who took the name.

    key = submitter_key(args.key)            # --key, else this account's key file (made on first use)
    proof = owner_proof(name, key)            # what the board keeps of it (never the key)
    check_owner(board_data, name, proof)      # PLDError of one line when the name is someone else's

The proof is a secret, not an identity. Every submitter has a key: a random string in a file only
their account reads (``~/.config/pld-lab/submitter.key``, mode 0600, ``$PLD_LAB_KEY_FILE`` to put it
elsewhere), made the first time they submit, or given with ``submit --key KEY`` (to submit from
another account or machine). The board's ``owners`` maps each name to ``sha256(name, key)``: salted
with the name, so the table links no two names of one submitter, and the key never leaves its file.
A name with entries but no owner (an example the build submits, an entry from before names were
owned) belongs to nobody who can prove it: a submission under it is refused too.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from pathlib import Path
from typing import Any, Iterable

from experiments.benchmarks.untrusted import clean, read_bytes
from pldcore.errors import PLDError

#: where a submitter's key lives unless ``$PLD_LAB_KEY_FILE`` says otherwise
KEY_ENV = "PLD_LAB_KEY_FILE"
#: a key: 22-128 URL-safe characters (``secrets.token_urlsafe(32)`` makes 43)
KEY_RE = re.compile(r"[A-Za-z0-9_-]{22,128}")
#: what a proof on the board looks like
PROOF_RE = re.compile(r"sha256:[0-9a-f]{64}")


def key_file() -> Path:
    """This account's key file: ``$PLD_LAB_KEY_FILE``, else ``~/.config/pld-lab/submitter.key``."""
    return Path(os.environ.get(KEY_ENV) or Path.home() / ".config" / "pld-lab" / "submitter.key")


def submitter_key(given: str | None = None) -> str:
    """The submitter's key: ``given`` (``--key``), else the key file's, made there (mode 0600) when
    there is none. A key that is not 22-128 URL-safe characters is refused with one line."""
    if given is not None:
        if not KEY_RE.fullmatch(given):
            raise PLDError("--key must be 22-128 letters, digits, '-' or '_' (the content of a key file)")
        return given
    path = key_file()
    if not path.exists() and not path.is_symlink():
        path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(32)
        try:  # O_EXCL: never through a link, never over a file another process just made
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as f:
                f.write(key + "\n")
            return key
    key = read_bytes(path, 4096, "key file").decode("ascii", "replace").strip()
    if not KEY_RE.fullmatch(key):
        raise PLDError(f"{clean(path)} is not a key file (22-128 letters, digits, '-' or '_'); "
                       "move it away to have a new key made")
    return key


def owner_proof(name: str, key: str) -> str:
    """What the board keeps to recognise ``key``'s holder as the owner of ``name``."""
    return "sha256:" + hashlib.sha256(f"{name}\0{key}".encode()).hexdigest()


def owners_of(data: dict) -> dict[str, str]:
    """The board file's ``owners`` as it may be (name -> proof); anything else in it reads as missing."""
    table = data.get("owners")
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, str) and PROOF_RE.fullmatch(v)}


def check_owner(data: dict, name: str, proof: str, held: Iterable[Any] = ()) -> bool:
    """Whether ``name`` is free (True: the caller takes it) or already ``proof``'s (False); a
    PLDError of one line, naming the choice, when it is someone else's: owned under another key, or
    held by entries of no owner (``held``: the board's records of that name, any benchmark)."""
    owner = owners_of(data).get(name)
    if owner is not None and secrets.compare_digest(owner, proof):
        return False
    shown = clean(name, 48)
    if owner is not None:
        raise PLDError(f"the name {shown!r} belongs to another submitter (it was taken with another key): choose "
                       f"another --name, or give the key of the name's first submission with --key")
    if any(True for _ in held):
        raise PLDError(f"the name {shown!r} is held by an entry nobody can prove to own (an example the build "
                       "submits, or an entry from before names were owned): choose another --name")
    return True


def take(data: dict, name: str, proof: str) -> None:
    """Record ``proof`` as the owner of ``name`` in the board file's data."""
    table = data.get("owners")
    if not isinstance(table, dict):
        table = data["owners"] = {}
    table[name] = proof
