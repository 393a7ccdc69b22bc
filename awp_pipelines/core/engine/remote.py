"""Work trees that travel: a repo entry naming a git remote is cloned by whichever worker runs the Attempt.

A packet run works on its own branch of each remote repo, `awp/<packet>/<packet run>`, started from the base
branch's tip the first time the run touches the repo (pushed at once, so every host starts from the same
base). Before an Attempt, holding the tree's lease (a pool in the instance, so across hosts), the worker
brings its clone to the branch's tip and fetches the checkpoints; after it, the orchestrator — never the
agent, whose environment holds no git credential — pushes the Attempt's commit to the branch, and its
partial work as `refs/awp/checkpoints/<agent run>/<attempt>`, so a retry on another host continues from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from awp_pipelines.core.packet.model.manifest import RemoteSpec
from awp_pipelines.core.packet.packet import Packet, Repo
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.committer import CommitError
from awp_pipelines.core.records.workspace import (
    FALLBACK_IDENTITY,
    WorkspaceError,
    changed_paths,
    git,
    head,
    is_git_repo,
    open_repo,
)

_CHECKPOINTS = "refs/awp/checkpoints"
_NOT_IN_REF = re.compile(r"[^A-Za-z0-9._-]|\.\.|^\.|\.lock$|\.$")
_ORIGIN = "origin"


def run_branch(packet: str, packet_run: str) -> str:
    """The packet run's branch on every remote repo it works on (characters git refuses in a ref become -)."""
    return tags.BRANCH_PREFIX + "/".join(_NOT_IN_REF.sub("-", part) for part in (packet, packet_run))


def _remote_ref(repo: Path, url: str, ref: str) -> str | None:
    out = git(repo, "ls-remote", url, ref).stdout.split()
    return out[0] if out else None


def _clone(repo: Repo, remote: RemoteSpec, packet_root: Path) -> None:
    """A partial clone (blobs fetched when checked out), from a local reference cache where there is one."""
    repo.path.parent.mkdir(parents=True, exist_ok=True)
    args = ["clone", "--quiet", "--no-checkout", "--filter=blob:none", "--origin", _ORIGIN]
    if remote.reference is not None:
        reference = (packet_root / remote.reference).resolve()
        if reference.is_dir():
            # --dissociate copies what it borrows: the clone never breaks when the cache is pruned.
            args += ["--reference-if-able", str(reference), "--dissociate"]
    git(repo.path.parent, *args, remote.url, str(repo.path))
    config = open_repo(repo.path).config
    for key, fallback in FALLBACK_IDENTITY.items():
        # A clone AWP owns on a worker without a git identity: whoever commits in it (the agent too) has one.
        if key not in config:
            config[key] = fallback


@dataclass(frozen=True)
class RemoteTrees:
    """The remote repos of one packet run, as seen from this worker."""

    packet: Packet
    packet_run: str

    @property
    def branch(self) -> str:
        return run_branch(self.packet.name, self.packet_run)

    def _remote(self, path: Path) -> tuple[Repo, RemoteSpec] | None:
        for repo in self.packet.repos.values():
            if repo.remote is not None and repo.path == Path(path).resolve():
                return repo, repo.remote
        return None

    def sync(self, paths: Iterable[Path]) -> dict[str, str]:
        """Bring each remote repo among `paths` to the tip of the packet run's branch (cloning it first on a
        new worker, creating the branch from the base on the run's first touch) with the remote's
        checkpoints fetched. Local repos are left alone. Call it holding the trees' lease, on clean trees.
        Returns repo name → the commit it now stands on."""
        tips = {}
        for path in paths:
            found = self._remote(path)
            if found is None:
                continue
            repo, remote = found
            if not is_git_repo(repo.path):
                _clone(repo, remote, self.packet.root)
            # Checkpoints saved here since (a dead Attempt's work, saved by the next one on this host) travel
            # too; best effort: one already on the remote under that name stays as it is.
            git(repo.path, "push", "--quiet", _ORIGIN, f"{_CHECKPOINTS}/*:{_CHECKPOINTS}/*", ok_codes=(0, 1))
            tip = _remote_ref(repo.path, _ORIGIN, f"refs/heads/{self.branch}")
            start = f"refs/remotes/{_ORIGIN}/{self.branch}" if tip else f"refs/remotes/{_ORIGIN}/{remote.branch}"
            git(repo.path, "fetch", "--quiet", "--prune", _ORIGIN,
                f"+refs/heads/{remote.branch}:refs/remotes/{_ORIGIN}/{remote.branch}",
                *([f"+refs/heads/{self.branch}:refs/remotes/{_ORIGIN}/{self.branch}"] if tip else []),
                f"+{_CHECKPOINTS}/*:{_CHECKPOINTS}/*")
            if changed_paths(repo.path) and is_checked_out(repo.path):
                raise WorkspaceError(repo.path, ["checkout"], "the clone has uncommitted changes that no Attempt "
                                     "saved: refusing to move it to the packet run's branch")
            git(repo.path, "checkout", "--quiet", "--force", "-B", self.branch, start)
            if tip is None:  # the run's first touch: its base is pinned on the remote for every other host
                git(repo.path, "push", "--quiet", _ORIGIN, f"HEAD:refs/heads/{self.branch}")
            tips[repo.name] = head(repo.path) or ""
        return tips

    def push_commits(self, paths: dict[str, Path]) -> None:
        """Push each remote repo's HEAD to the packet run's branch (a fast-forward: the tree's lease kept
        every other host off it). A refusal is the Attempt's `commit_failed`: work not on the remote is not
        done."""
        for name, path in paths.items():
            if self._remote(path) is None:
                continue
            try:
                git(path, "push", "--quiet", _ORIGIN, f"HEAD:refs/heads/{self.branch}")
            except WorkspaceError as err:
                raise CommitError(name, f"push to the packet run's branch {self.branch} failed: {err.detail}") \
                    from err

    def push_checkpoints(self, paths: dict[str, Path], agent_run: str) -> list[str]:
        """Push the AgentRun's checkpoints, so its next Attempt continues from them on any host. Best effort:
        the names of the repos whose push failed (the checkpoint stays local)."""
        failed = []
        for name, path in paths.items():
            if self._remote(path) is None:
                continue
            spec = f"{_CHECKPOINTS}/{agent_run}/*"
            try:
                git(path, "push", "--quiet", _ORIGIN, f"{spec}:{spec}")
            except WorkspaceError:
                failed.append(name)
        return failed


def trees_of(packet: Packet, packet_run: str) -> RemoteTrees | None:
    """The packet run's remote trees; None when every repo of the packet is a local folder."""
    return RemoteTrees(packet, packet_run) if any(r.remote for r in packet.repos.values()) else None


def is_checked_out(repo: Path) -> bool:
    """False for a fresh `--no-checkout` clone: it has no index yet, and every file would show as deleted."""
    return (repo / ".git" / "index").exists()
