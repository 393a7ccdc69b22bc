"""`repos_clean`: each named repository has nothing uncommitted and, with `pushed`, its HEAD is on the
upstream branch. One item for the whole clause. Read-only: the remote is asked with `ls-remote`, never
fetched, so the clause moves no ref in the repository it judges."""

from __future__ import annotations

from pathlib import Path

from awp_pipelines.core.packet.model.contract import ReposCleanCheck

from .. import git
from ..context import VerifyContext
from .outcome import Outcome

_MAX_DIRTY_LISTED = 10
_CACHED = "compared against the cached remote-tracking ref, which can only be behind the remote"


def repos_clean(entries: list[ReposCleanCheck], ctx: VerifyContext) -> Outcome:
    verdicts = [_verdict(entry, ctx) for entry in entries]
    names = {name for name, _, _ in verdicts}
    details = [f"{name}: {line}" for name, _, line in verdicts]
    return Outcome(all(ok for _, ok, _ in verdicts), details, repo=names.pop() if len(names) == 1 else None)


def _verdict(entry: ReposCleanCheck, ctx: VerifyContext) -> tuple[str, bool, str]:
    name = entry.repo or ctx.default_name()
    roots = ctx.roots()
    if name not in roots:
        return name, False, f"unknown repo (known: {', '.join(sorted(roots))})"
    root = roots[name]
    try:
        dirty = git.worktree_changes(root)
    except git.GitError as exc:
        return name, False, str(exc)
    if dirty:
        shown = ", ".join(dirty[:_MAX_DIRTY_LISTED])
        more = f", and {len(dirty) - _MAX_DIRTY_LISTED} more" if len(dirty) > _MAX_DIRTY_LISTED else ""
        return name, False, f"uncommitted changes ({len(dirty)}): {shown}{more}"

    branch, sha = git.head_of(root)
    head = sha[:7] if sha else None
    found = git.upstream_of(root, branch) if branch else None
    upstream = found.name if found else None
    if not entry.pushed:
        where = f"upstream {upstream}, push not asserted" if upstream else "local only, no upstream"
        return name, True, f"clean: {branch or 'HEAD'} at {head} ({where})"
    if found is None or branch is None:
        return name, False, f"no upstream for branch {branch or 'HEAD'} at {head}; pushed: true requires one"
    remote_sha, note = _remote_head(root, found, entry)
    if remote_sha is not None and remote_sha == sha:
        return name, True, f"clean: {branch} at {head} (pushed to {upstream}){note}"
    short = remote_sha[:7] if remote_sha else "(unresolved)"
    return name, False, f"not pushed: {branch} HEAD {head} does not match {upstream} {short}{note}"


def _remote_head(root: Path, found: git.Upstream, entry: ReposCleanCheck) -> tuple[str | None, str]:
    """The upstream branch's sha and a note saying who answered: the remote, or the cached ref."""
    cached, remote, ref = found.cached, found.remote, found.ref
    if not entry.network:
        return cached, f" [network: false; {_CACHED}]"
    try:
        done = git.ls_remote(root, remote, ref, entry.remote_timeout_ms)
    except OSError as exc:
        return cached, f" [git ls-remote could not run ({exc}); {_CACHED}]"
    if done.timed_out:
        return cached, f" [git ls-remote timed out after {entry.remote_timeout_ms} ms; {_CACHED}]"
    if done.exit_code == 2:  # --exit-code: the remote has no such ref
        return None, f" [{ref} is absent from {remote}]"
    if done.exit_code != 0:
        last = (done.output.strip().splitlines() or [""])[-1]
        return cached, f" [git ls-remote failed (exit {done.exit_code}: {last}); {_CACHED}]"
    for line in done.output.splitlines():
        sha, _, name = line.partition("\t")
        if name == ref:
            return sha, ""
    return None, f" [{ref} is absent from {remote}]"
