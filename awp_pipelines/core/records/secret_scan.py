"""Push protection for AWP's own commits and checkpoints: the diff about to be stored in git is searched for
every secret value AWP knows (the Attempt's credentials, every account's, the runner's secret-named
variables: the boundary redactor's literals). A git object is forever and `awp blame` prints from git, so a
match refuses the commit, naming the file and line, never the value (`secret_in_work`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class SecretHit:
    path: str
    line: int


class SecretInWork(Exception):
    """The work holds a secret AWP knows: `hits` says where (repo, path, line)."""

    def __init__(self, repo: str, hits: list[SecretHit]) -> None:
        self.repo = repo
        self.hits = hits
        where = ", ".join(f"{hit.path} line {hit.line}" for hit in hits[:10])
        more = f" and {len(hits) - 10} more" if len(hits) > 10 else ""
        super().__init__(f"{repo}: the work holds a secret AWP knows (a credential of the Attempt or the runner) "
                         f"at {where}{more}: nothing was committed; remove it from the work tree (and rotate the "
                         "credential if the agent could send it anywhere)")


def _path_of(header: str) -> str:
    name = header[4:].strip()
    if name.startswith('"') and name.endswith('"'):
        name = name[1:-1]
    return name[2:] if name.startswith("b/") else name


def secrets_in_diff(diff: str, secrets: Iterable[str]) -> list[SecretHit]:
    """Where an added line of `diff` (unified, `-U0`) holds one of `secrets`: new-side path and line."""
    # A secret of several lines (a private key in a variable) is looked for line by line: a diff is lines.
    values = [part for s in secrets if s for part in (s.split("\n") if "\n" in s else [s])
              if len(part.strip()) >= (16 if "\n" in s else 1)]
    if not values:
        return []
    hits: list[SecretHit] = []
    path, line = "", 0
    for text in diff.split("\n"):
        if text.startswith("+++ "):
            path = _path_of(text)
        elif text.startswith("@@"):
            match = _HUNK.match(text)
            line = int(match.group(1)) if match else 0
        elif text.startswith("+"):
            if any(value in text for value in values):
                hits.append(SecretHit(path, line))
            line += 1
    return hits
