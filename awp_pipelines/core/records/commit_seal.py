"""AWP's seal on its own commits: a trailer is never proof on its own.

Anyone who can write a commit can write `AWP-Attempt: <id>` in its message — an agent under `isolation: none`,
or a verifier that moved the branch before this design. So every commit AWP makes carries `AWP-Seal:`, an
HMAC-SHA256 of the commit's tree, its parents and its AWP-Attempt id, keyed by a secret no sandbox ever sees;
adoption of lost commits and `awp blame` accept an AWP-Attempt trailer only where the seal checks.

The key is a file of the operator's, outside every tree and every sandbox (the agent's and the verifier's HOME
is private): `AWP_SEAL_KEY_FILE`, else `$XDG_DATA_HOME/awp/seal.key` (`~/.local/share/awp/seal.key`), 32
random bytes made on first use, mode 0600. It is not in the instance's database, so a restore of the database
keeps it; hosts that adopt each other's commits share the same file (docs/security.md). Where no key can be
made (a read-only HOME), commits carry no seal and are never adopted: set AWP_SEAL_KEY_FILE.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

SEAL_TRAILER = "AWP-Seal"
KEY_ENV = "AWP_SEAL_KEY_FILE"
_KEY_BYTES = 32


def key_file() -> Path:
    named = os.environ.get(KEY_ENV)
    if named:
        return Path(named)
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "awp" / "seal.key"


def seal_key(create: bool = True) -> bytes | None:
    """The key: read, or made (O_EXCL: two processes making it at once agree on the first). None when there is
    none and `create` is false (a reader never makes one: what it checks was sealed by no key of this host)."""
    path = key_file()
    try:
        data = path.read_bytes()
        if len(data) >= _KEY_BYTES:
            return data
    except FileNotFoundError:
        if not create:
            return None
    except OSError:
        return None
    if not create:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return path.read_bytes()
    except OSError:  # a read-only HOME: commits go unsealed, so none is ever adopted (the safe side)
        return None
    with os.fdopen(fd, "wb") as out:
        out.write(secrets.token_bytes(_KEY_BYTES))
    return path.read_bytes()


def seal(key: bytes, attempt: str, tree: str, parents: Sequence[str]) -> str:
    text = "\0".join(["awp-commit-seal-v1", attempt, tree, *parents])
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def sealed(key: bytes | None, attempt: str, tree: str, parents: Sequence[str], trailer: str | None) -> bool:
    """True when `trailer` is the seal of this commit (its tree, parents and Attempt) under `key`."""
    if key is None or not trailer:
        return False
    return hmac.compare_digest(seal(key, attempt, tree, parents), trailer.strip())
