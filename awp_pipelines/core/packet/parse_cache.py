"""A cache of parsed YAML on disk, one file per packet folder: the daemon, the webserver and every run worker
load the same unchanged packets again, and composing their YAML was most of a load's parsing time.

An entry is keyed by the text itself (its SHA-256 with the line offset), not by a file's size and mtime, so
any edit misses it, however fast it follows the last load. The key's salt also names AWP's version, PyYAML's
and the source of yamlsrc.py and of this file: a change of how YAML is read, or of which texts are stored,
never meets an entry of the old way. Only a document whose data JSON keeps exactly (str keys, no dates, finite
floats) is stored, so a hit gives the data and key-path lines the parse gave. A text that holds a secret is
never stored (it is parsed at every load): one a secret pattern finds, or that holds the value of an
environment variable that could be a credential (redact.py). Each load writes the file again only when it
changed (new texts, or entries no longer used, which are dropped), by an atomic rename: concurrent writers
leave one whole file. The file carries the SHA-256 of its payload: a file that is cut short, garbled or of
another version is ignored and rewritten, never trusted.

AWP_CACHE_HOME sets the folder (default `$XDG_CACHE_HOME/awp-pipelines`, else `~/.cache/awp-pipelines`);
`AWP_CACHE_HOME=off` turns the cache off. A folder that cannot be written only means no cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from awp_pipelines.core.packet.install import VERSION
from awp_pipelines.core.records.redact import Redactor

CACHE_ENV = "AWP_CACHE_HOME"
_FOLDER = "parse"
KeyPath = tuple[str, ...]


@cache
def _salt() -> str:
    # This file's source too: entries chosen by an older rule (one stored a secret) are dropped, never kept.
    source = b"".join(Path(__file__).with_name(name).read_bytes() for name in ("yamlsrc.py", "parse_cache.py"))
    return f"{VERSION}\0{yaml.__version__}\0{hashlib.sha256(source).hexdigest()}"


def cache_folder() -> Path | None:
    """Where parse caches live, or None when AWP_CACHE_HOME is `off`."""
    value = os.environ.get(CACHE_ENV, "").strip()
    if value.lower() == "off":
        return None
    if value:
        return Path(value) / _FOLDER
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    try:
        return (Path(xdg) if xdg else Path.home() / ".cache") / "awp-pipelines" / _FOLDER
    except RuntimeError:  # no home folder to be found: no cache
        return None


def _exact(value: Any) -> bool:
    """Whether JSON gives `value` back as it is (type for type)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_exact(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _exact(v) for k, v in value.items())
    return False


class ParseCache:
    """The parsed texts of one packet folder. `get` and `put` during a load; `save` after it."""

    def __init__(self, file: Path | None, entries: dict[str, str]) -> None:
        self.file = file
        self._stored = entries  # key → one entry as JSON text (decoded per hit: each caller gets its own data)
        self._used: dict[str, str] = {}
        self._secrets: Redactor | None = None  # built at the first store: a load that hits everything needs none
        self.hits = 0

    @classmethod
    def for_folder(cls, root: Path) -> ParseCache:
        folder = cache_folder()
        if folder is None:
            return cls(None, {})
        file = folder / f"{hashlib.sha256(str(root).encode()).hexdigest()[:32]}.json"
        return cls(file, _read(file))

    def key(self, text: str, line_offset: int) -> str:
        return hashlib.sha256(f"{_salt()}\0{line_offset}\0{text}".encode()).hexdigest()

    def get(self, text: str, line_offset: int) -> tuple[Any, dict[KeyPath, int]] | None:
        key = self.key(text, line_offset)
        entry = self._stored.get(key)
        if entry is None:
            return None
        try:
            data, lines = json.loads(entry)
            found = (data, {tuple(path): int(line) for path, line in lines})
        except (ValueError, TypeError):  # an entry of the wrong shape: parsed again, and replaced
            return None
        self._used[key] = entry
        self.hits += 1
        return found

    def put(self, text: str, line_offset: int, data: Any, lines: dict[KeyPath, int]) -> None:
        if self.file is None or not _exact(data):
            return
        if self._secrets is None:
            self._secrets = Redactor.for_environment()
        if not self._secrets.holds_secret(text):  # a secret's text is parsed each time, never written down
            self._used[self.key(text, line_offset)] = json.dumps([data, [[list(p), n] for p, n in lines.items()]])

    def save(self) -> None:
        """Write the entries this load used, when they differ from the file's."""
        if self.file is None or self._used == self._stored:
            return
        payload = json.dumps({"salt": _salt(), "entries": self._used}, sort_keys=True)
        with contextlib.suppress(OSError):
            self.file.parent.mkdir(parents=True, exist_ok=True)
            handle, temp = tempfile.mkstemp(dir=self.file.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(f"{hashlib.sha256(payload.encode()).hexdigest()}\n{payload}")
                os.replace(temp, self.file)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)


def _read(file: Path) -> dict[str, str]:
    """The file's entries; none if it is missing, damaged or from another version."""
    try:
        digest, _, payload = file.read_text(encoding="utf-8").partition("\n")
        if hashlib.sha256(payload.encode()).hexdigest() != digest:
            return {}
        content = json.loads(payload)
        entries = content["entries"] if content.get("salt") == _salt() else {}
        return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, str)}
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        return {}


_CURRENT: ContextVar[ParseCache | None] = ContextVar("awp_parse_cache", default=None)


def current() -> ParseCache | None:
    return _CURRENT.get()


@contextlib.contextmanager
def parse_cache(root: Path) -> Iterator[ParseCache]:
    """The cache of `root`'s folder for the YAML parsed in the block; saved when the block ends without error."""
    cache_ = ParseCache.for_folder(root)
    token = _CURRENT.set(cache_)
    try:
        yield cache_
    finally:
        _CURRENT.reset(token)
    cache_.save()
