"""Push protection for AWP's own commits and checkpoints: everything a commit would store is searched for every
secret value AWP knows (the Attempt's credentials, every account's, the runner's secret-named variables: the
boundary redactor's literals), before any of it reaches git's object store: the whole content of every new blob
(not only its added lines), every path name, every link's target, the commit message (a mode is one of git's
five numbers and holds nothing). A git object is forever and `awp blame` prints from git, so a match refuses
the commit, naming the file and line, never the value (`secret_in_work`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretHit:
    path: str
    line: int


class SecretInWork(Exception):
    """The work holds a secret AWP knows: `hits` says where (repo, path, line)."""

    def __init__(self, repo: str, hits: list[SecretHit]) -> None:
        self.repo = repo
        self.hits = hits
        where = ", ".join(f"{hit.path} line {hit.line}" if hit.line else hit.path for hit in hits[:10])
        more = f" and {len(hits) - 10} more" if len(hits) > 10 else ""
        super().__init__(f"{repo}: the work holds a secret AWP knows (a credential of the Attempt or the runner) "
                         f"at {where}{more}: nothing was committed; remove it from the work tree (and rotate the "
                         "credential if the agent could send it anywhere)")


def secret_values(secrets: Iterable[str]) -> list[bytes]:
    """The byte strings to look for: each secret, and a secret of several lines (a private key in a variable)
    by each of its lines of 16 characters or more, as a file may hold it re-wrapped."""
    values = [part for s in secrets if s for part in (s.split("\n") if "\n" in s else [s])
              if len(part.strip()) >= (16 if "\n" in s else 1)]
    return sorted({v.encode("utf-8") for v in values}, key=len, reverse=True)


class ContentScan:
    """A stream of bytes searched for `values` chunk by chunk (a value split across two chunks is found: the
    tail of each chunk is kept), with the line of each hit."""

    def __init__(self, values: Sequence[bytes]) -> None:
        self.values = values
        self.keep = max((len(v) for v in values), default=1) - 1
        self.tail = b""
        self.lines_before_tail = 1  # the line the tail starts on
        self.lines: set[int] = set()

    def feed(self, chunk: bytes) -> None:
        if not self.values:
            return
        window = self.tail + chunk
        for value in self.values:
            start = window.find(value)
            while start != -1:
                if start + len(value) > len(self.tail):  # not wholly inside the tail: found once only
                    self.lines.add(self.lines_before_tail + window.count(b"\n", 0, start))
                start = window.find(value, start + 1)
        cut = max(0, len(window) - self.keep)
        self.lines_before_tail += window.count(b"\n", 0, cut)
        self.tail = window[cut:]


def secrets_in_bytes(chunks: Iterable[bytes], values: Sequence[bytes], path: str) -> list[SecretHit]:
    """Where a stream (a file's content, a link's target) holds one of `values`: its path and lines."""
    scan = ContentScan(values)
    for chunk in chunks:
        scan.feed(chunk)
    return [SecretHit(path, line) for line in sorted(scan.lines)]


def secrets_in_name(path: str, values: Sequence[bytes]) -> list[SecretHit]:
    """A path name that holds a secret: named with the secret cut out (line 0: the name itself)."""
    raw = path.encode("utf-8", "surrogateescape")
    hit = [v for v in values if v in raw]
    if not hit:
        return []
    shown = raw
    for value in hit:
        shown = shown.replace(value, b"[REDACTED]")
    return [SecretHit(shown.decode("utf-8", "replace") + " (its name)", 0)]
