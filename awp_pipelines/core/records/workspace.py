"""AWP's git on a work tree, through libgit2 (git_repository.py): it reads and writes the repository and starts no
program. The work tree itself is read by AWP (work_tree_scan.py), trees are written by AWP (tree_writer.py,
tree_restore.py); git's index, MERGE_HEAD, the sequencer, replace refs and grafts decide nothing.

`snapshot` is the checkpoint taken before an Attempt; `changed_since` tells the decision function whether
the Attempt left the workspace different (Prompt Runner repairs failed attempts that changed something).

The git CLI runs only for the network (`git`: push, fetch, clone, ls-remote of a remote work tree or a
hand-off), with an allow-listed environment, no system config, hooks off and no submodule recursion; it reads
the repository's config, which no sandbox can write and the tamper check compares.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pygit2

from awp_pipelines.core.records.commit_seal import SEAL_TRAILER, seal_key, sealed
from awp_pipelines.core.records.git_repository import (
    LinkedGitFile,
    WorkspaceError,
    git_location,
    open_repo,
    refuse_links,
)
from awp_pipelines.core.records.process_env import NETWORK, allowed_env
from awp_pipelines.core.records.regular_files import read_regular
from awp_pipelines.core.records.secret_scan import SecretInWork
from awp_pipelines.core.records.tree_restore import materialize
from awp_pipelines.core.records.tree_writer import check_secrets, write_tree
from awp_pipelines.core.records.work_tree_scan import TreeScan, scan

__all__ = ["LinkedGitFile", "SecretInWork", "WorkspaceError", "git_location", "open_repo"]

# What diff_stat reads of a changed file to count its lines.
STAT_CAP_BYTES = 16 * 1024 * 1024
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# Who AWP's own commits and checkpoints are by where the repo and the user configure nobody (a fresh worker).
FALLBACK_IDENTITY = {"user.name": "AWP Pipelines", "user.email": "awp@localhost"}

_LINK = int(pygit2.enums.FileMode.LINK)
# A remote work tree's checkout is among them: its clone is partial, git fetches the blobs while it checks out.
_NETWORK_COMMANDS = frozenset({"push", "fetch", "clone", "ls-remote", "checkout"})
# On the command line of the network commands: no hook (pre-push), no submodule walk (a child git per
# submodule), no pager. Nothing else of the repository is run by a push or a fetch.
_NETWORK_ARGS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "submodule.recurse=false",
                 "-c", "core.pager=cat")


def network_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a network git command: the allow-list (process_env.NETWORK: the operator's HOME for
    its credential helper and ssh), no system config, no prompt, then `extra` (a push's credential helper)."""
    return allowed_env(NETWORK, {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C",
                                 "GIT_PAGER": "cat", "PAGER": "cat", "GIT_EDITOR": ":", **(extra or {})})


def git(repo: Path | str, *args: str, input: str | None = None, ok_codes: Sequence[int] = (0,),
        timeout_s: float | None = None, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run one network git command (push, fetch, clone, ls-remote, a partial clone's checkout) in `repo`: the
    only git process AWP starts.
    `env`: the variables of this one process (a push's credential helper). Git runs in a process group of its
    own: a terminal's Ctrl-C never kills a push halfway (interrupts.py)."""
    if not args or args[0] not in _NETWORK_COMMANDS:
        raise ValueError(f"git {' '.join(args[:1])}: AWP runs git only for the network; use the library")
    argv = ["git", *_NETWORK_ARGS, "-C", str(repo), *args]
    if args[0] in ("fetch", "clone", "checkout"):
        argv.insert(len(argv) - len(args) + 1, "--no-recurse-submodules")
    try:
        proc = subprocess.run(argv, input=input, capture_output=True, encoding="utf-8", errors="replace",
                              env={**network_env(env), **git_location(repo)}, timeout=timeout_s, process_group=0,
                              stdin=None if input is not None else subprocess.DEVNULL)
    except OSError as err:
        raise WorkspaceError(repo, args, str(err)) from None
    except subprocess.TimeoutExpired:
        raise WorkspaceError(repo, args, f"no answer within {timeout_s} s") from None
    if proc.returncode not in ok_codes:
        raise WorkspaceError(repo, args, proc.stderr or proc.stdout or f"exit {proc.returncode}")
    return proc


def is_git_repo(repo: Path | str) -> bool:
    """True when `repo` is the top level of a git work tree (a folder inside another repo is not)."""
    path = Path(repo)
    if not path.is_dir():
        return False
    try:
        return not open_repo(path).is_bare
    except WorkspaceError:
        return False


def _head_commit(repository: pygit2.Repository) -> pygit2.Commit | None:
    if repository.head_is_unborn:
        return None
    return repository.head.peel(pygit2.Commit)


def head(repo: Path | str) -> str | None:
    """The commit HEAD points at; None in a repository without commits yet."""
    found = _head_commit(open_repo(repo))
    return str(found.id) if found is not None else None


def _tree(repository: pygit2.Repository, commit: str | None) -> pygit2.Tree | None:
    return repository.revparse_single(commit).peel(pygit2.Tree) if commit else None


def _scan_at(repo: Path | str, base: str | None) -> tuple[pygit2.Repository, TreeScan]:
    repository = open_repo(repo)
    return repository, scan(repository, repo, _tree(repository, base))


def scan_paths(repository: pygit2.Repository, found: TreeScan) -> list[str]:
    """Every file path of a scan's changes: a folder the base had and the tree lost, file by file."""
    base = repository[found.base] if found.base else None
    paths: set[str] = set()
    for path, entry in found.changes.items():
        old = base[path] if entry is None and base is not None else None  # type: ignore[index]
        if old is not None and old.type == pygit2.enums.ObjectType.TREE:
            paths.update(f"{path}/{p}" for p in _files(repository, repository[old.id]))  # type: ignore[arg-type]
        else:
            paths.add(path)
    return sorted(paths)


def _files(repository: pygit2.Repository, tree: pygit2.Tree, prefix: str = "") -> Iterator[str]:
    for obj in tree:
        if obj.type == pygit2.enums.ObjectType.TREE:
            yield from _files(repository, repository[obj.id], f"{prefix}{obj.name}/")  # type: ignore[arg-type]
        else:
            yield f"{prefix}{obj.name}"


def changed_paths(repo: Path | str, **_: object) -> list[str]:
    """Every path that differs from HEAD in the work tree: changed, added (ignored ones not), deleted; a rename
    as both its names."""
    repository = open_repo(repo)
    at = _head_commit(repository)
    found = scan(repository, repo, at.tree if at is not None else None)
    return scan_paths(repository, found)


def _digest(at: str | None, found: TreeScan) -> str:
    digest = hashlib.sha256((at or "").encode() + b"\0\0")
    for path, entry in sorted(found.changes.items()):
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(b"gone" if entry is None else f"{entry.mode:o} {entry.oid}".encode())
        digest.update(b"\0")
    for skipped in found.skipped:
        digest.update(skipped.encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


def worktree_digest(repo: Path | str) -> str:
    """sha256 over HEAD and every entry that differs from it (its mode and content id): equal digests, equal
    work tree."""
    at = head(repo)
    return _digest(at, _scan_at(repo, at)[1])


@dataclass(frozen=True)
class RepoState:
    """One repo at a checkpoint."""

    head: str | None
    dirty_paths: tuple[str, ...]
    digest: str

    @property
    def dirty(self) -> bool:
        return bool(self.dirty_paths)


def repo_state(repo: Path | str) -> RepoState:
    repository = open_repo(repo)
    at = _head_commit(repository)
    found = scan(repository, repo, at.tree if at is not None else None)
    sha = str(at.id) if at is not None else None
    return RepoState(sha, tuple(scan_paths(repository, found)), _digest(sha, found))


def snapshot(repos: Mapping[str, Path]) -> dict[str, RepoState]:
    """The checkpoint before an Attempt: each repo's HEAD, dirty paths and work-tree digest."""
    return {name: repo_state(path) for name, path in repos.items()}


def changed_since(before: Mapping[str, RepoState], after: Mapping[str, RepoState]) -> list[str]:
    """Names of the repos whose HEAD or work tree differ between two snapshots (a new repo counts)."""
    return sorted(name for name, state in after.items() if before.get(name) != state)


def identity(repository: pygit2.Repository) -> pygit2.Signature:
    """Who AWP's commits are by: the repository's own user.name/user.email, else the operator's global config
    (read by AWP from ~/.gitconfig and the XDG file outright: libgit2 reads no global config), else the
    fallback: a commit never fails for it."""
    found: dict[str, str] = {}
    for config in (repository.config, *_operator_configs()):
        for key in FALLBACK_IDENTITY:
            if key not in found:
                try:
                    value = str(config[key]).strip()
                except (KeyError, pygit2.GitError, ValueError):
                    continue
                if value:
                    found[key] = value
    return pygit2.Signature(found.get("user.name", FALLBACK_IDENTITY["user.name"]),
                            found.get("user.email", FALLBACK_IDENTITY["user.email"]))


def _operator_configs() -> list[pygit2.Config]:
    import os

    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    configs = []
    for path in (Path.home() / ".gitconfig", Path(xdg) / "git" / "config"):
        if read_regular(path, 1) is not None:
            try:
                configs.append(pygit2.Config(str(path)))
            except pygit2.GitError:
                continue
    return configs


def store_tree(repo: Path | str, base: str | None, secrets: Sequence[str] = (), repo_name: str = "",
               message: str = "") -> tuple[pygit2.Repository, TreeScan, str | None]:
    """The work tree against `base`, stored as a tree object once the secret scan passed (nothing written
    before): (repository, the scan, the tree's id; None when nothing differs from `base`)."""
    repository, found = _scan_at(repo, base)
    if not found.changes:
        return repository, found, None
    refuse_links(repository, repo, "write-tree")
    check_secrets(found, secrets, repo_name or str(repo), message)
    return repository, found, write_tree(repository, found)


def save_checkpoint(repo: Path | str, base: str | None, ref: str, message: str,
                    secrets: Sequence[str] = ()) -> str | None:
    """Store the work tree's changes against `base` (untracked files included) as a commit under `ref`,
    without touching HEAD, the index or the tree. None when there is nothing to save. SecretInWork when the
    changes hold one of `secrets`: nothing is stored."""
    repository, _, tree = store_tree(repo, base, secrets, message=message)
    if tree is None:
        return None
    who = identity(repository)
    sha = repository.create_commit(None, who, who, message, pygit2.Oid(hex=tree),
                                   [pygit2.Oid(hex=base)] if base else [])
    repository.references.create(ref, sha, force=True)
    return str(sha)


def checkpoint_trees(repo: Path | str) -> set[str]:
    """The trees of every checkpoint saved in `repo` (refs/awp/checkpoints/…): the work AWP itself saved."""
    repository = open_repo(repo)
    return {str(repository[ref.target].peel(pygit2.Tree).id) for ref in _refs(repository, "refs/awp/checkpoints/")}


def equals_a_checkpoint(repo: Path | str) -> bool:
    """The work tree as it is equals a checkpoint AWP saved (read against each, nothing written)."""
    repository = open_repo(repo)
    for ref in _refs(repository, "refs/awp/checkpoints/"):
        if not scan(repository, repo, repository[ref.target].peel(pygit2.Tree)).changes:
            return True
    return False


def _refs(repository: pygit2.Repository, prefix: str) -> list[pygit2.Reference]:
    return [repository.references[name] for name in repository.references if name.startswith(prefix)]


def discard_changes(repo: Path | str) -> None:
    """Back to HEAD: tracked changes reverted, untracked files removed (ignored files are kept), written by AWP
    without following a link (tree_restore.py); the index then matches HEAD, so `git status` is clean."""
    repository = open_repo(repo)
    refuse_links(repository, repo, "reset")
    index_unlocked(repository, repo, "reset")
    at = _head_commit(repository)
    tree = at.tree if at is not None else repository[repository.TreeBuilder().write()]
    materialize(repository, repo, tree)  # type: ignore[arg-type]
    index = repository.index
    index.read_tree(tree)
    index.write()


def index_unlocked(repository: pygit2.Repository, repo: Path | str, step: str) -> None:
    """WorkspaceError when `index.lock` is there (another git process holds the index, or one died holding
    it): checked before AWP writes anything a step would leave half done."""
    import os

    lock = Path(repository.path) / "index.lock"
    if os.path.lexists(lock):
        raise WorkspaceError(repo, [step], f"{lock} exists: another git process holds the index (or one died "
                             "holding it); delete it if none is running")


def restore_checkpoint(repo: Path | str, sha: str) -> bool:
    """Replay a checkpoint's changes onto the current tree (three-way, so commits made since by other
    prompts stay), unstaged. False when they no longer apply."""
    repository = open_repo(repo)
    saved = repository.revparse_single(sha).peel(pygit2.Commit)
    parent = saved.parents[0].tree if saved.parents else repository[repository.TreeBuilder().write()]
    at = _head_commit(repository)
    ours = at.tree if at is not None else repository[repository.TreeBuilder().write()]
    if parent.id == saved.tree.id:
        return True
    refuse_links(repository, repo, "restore")
    try:
        merged = repository.merge_trees(parent, ours, saved.tree)  # type: ignore[arg-type]
    except pygit2.GitError:  # a merge libgit2 cannot do (a driver it does not know): it no longer applies
        discard_changes(repo)
        return False
    if merged.conflicts is not None:
        discard_changes(repo)
        return False
    materialize(repository, repo, repository[merged.write_tree(repository)])  # type: ignore[arg-type]
    return True


def diff_stat(repo: Path | str, base: str | None) -> list[dict[str, str | int | None]]:
    """What changed since `base` (the Attempt's checkpoint), commits and work tree alike, untracked files
    included: `{path, status A|M|D|T, added, removed}` per file, sorted by path; counts None for binary."""
    repository, found = _scan_at(repo, base)
    base_tree = _tree(repository, base)
    rows: list[dict[str, str | int | None]] = []
    for path in scan_paths(repository, found):
        old = _blob_at(repository, base_tree, path)
        entry = found.changes.get(path)  # None: deleted (a file, or one inside a deleted folder)
        new_data = b"" if entry is None else read_work_file(found.root / path)
        status = "A" if old is None else "D" if entry is None else "M"
        if old is not None and entry is not None and old.filemode != entry.mode and _LINK in (old.filemode, entry.mode):
            status = "T"
        old_data = repository[old.id].data if old is not None else b""  # type: ignore[attr-defined]
        patch = pygit2.Patch.create_from(old_data, new_data)
        binary = patch.delta.is_binary or b"\0" in old_data[:8000] or b"\0" in new_data[:8000]
        _, added, removed = patch.line_stats
        rows.append({"path": path, "status": status, "added": None if binary else added,
                     "removed": None if binary else removed})
    return rows


def _blob_at(repository: pygit2.Repository, tree: pygit2.Tree | None, path: str) -> pygit2.Object | None:
    if tree is None:
        return None
    try:
        return tree[path]
    except KeyError:
        return None


def read_work_file(path: Path, cap: int = STAT_CAP_BYTES) -> bytes:
    """A work-tree entry's bytes as git stores them: a link's target, a regular file's content (up to `cap`)."""
    import os

    if path.is_symlink():
        return os.fsencode(os.readlink(path))
    return read_regular(path, cap) or b""


def latest_checkpoint(repo: Path | str, agent_run: str, since_number: int) -> str | None:
    """The newest checkpoint of an AgentRun in `repo` from Attempt `since_number` on (the refs are named
    `<agent run>.a<n>`), or None. An older one is history: later Attempts already moved past it."""
    repository = open_repo(repo)
    best: tuple[int, str] | None = None
    for ref in _refs(repository, f"refs/awp/checkpoints/{agent_run}/"):
        number = ref.name.rsplit(".a", 1)[-1]
        if number.isdigit() and int(number) >= since_number and (best is None or int(number) > best[0]):
            best = (int(number), str(ref.target))
    return best[1] if best else None


def trailers_of(commit: pygit2.Commit) -> dict[str, str]:
    """A commit's trailers (the last value of a key wins), as libgit2 parses its message's last paragraph."""
    try:
        return {k: v.strip() for k, v in commit.message_trailers.items()}
    except (pygit2.GitError, ValueError):
        return {}


def seal_holds(commit: pygit2.Commit, key: bytes | None) -> bool:
    """The commit's AWP-Seal is the seal of its own tree, parents and AWP-Attempt under `key`: AWP made it."""
    found = trailers_of(commit)
    return sealed(key, found.get("AWP-Attempt", ""), str(commit.tree_id), [str(p) for p in commit.parent_ids],
                  found.get(SEAL_TRAILER))


def _walk(repository: pygit2.Repository, after: str | None = None) -> Iterator[pygit2.Commit]:
    at = _head_commit(repository)
    if at is None:
        return
    walker = repository.walk(at.id, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)
    if after:
        try:
            walker.hide(pygit2.Oid(hex=after))
        except (ValueError, KeyError, pygit2.GitError) as err:
            raise WorkspaceError(repository.workdir or "", ["log"], f"{after}: {err}") from None
    yield from walker


def commit_of_attempt(repo: Path | str, attempt: str) -> str | None:
    """The commit on HEAD whose AWP-Attempt trailer names `attempt` and whose seal holds: proof the Attempt
    committed (a commit anyone else wrote with that trailer is no proof)."""
    key = seal_key(create=False)
    for commit in _walk(open_repo(repo)):
        if trailers_of(commit).get("AWP-Attempt") == attempt and seal_holds(commit, key):
            return str(commit.id)
    return None


def commits_naming(repo: Path | str, prefix: str, after: str | None = None, trailer: str = "AWP-Attempt"
                   ) -> list[tuple[str, str, dict[str, str]]]:
    """The sealed commits on HEAD (those since commit `after`, if given: the walk goes no further) whose
    `trailer` starts with `prefix` (a packet run's `<id>.`), newest first: (sha, commit time, their
    trailers). A commit whose seal does not hold is not AWP's, whatever its trailers say."""
    key = seal_key(create=False)
    found = []
    for commit in _walk(open_repo(repo), after):
        trailers = trailers_of(commit)
        if trailers.get(trailer, "").startswith(prefix) and seal_holds(commit, key):
            found.append((str(commit.id), commit_time(commit), trailers))
    return found


def commit_time(commit: pygit2.Commit) -> str:
    from datetime import datetime, timedelta, timezone

    zone = timezone(timedelta(minutes=commit.commit_time_offset))
    return datetime.fromtimestamp(commit.commit_time, zone).isoformat()


def message_of_commit(repo: Path | str, sha: str) -> str:
    """A commit's message (WorkspaceError when the repository no longer has it)."""
    try:
        return open_repo(repo).revparse_single(sha).peel(pygit2.Commit).message
    except (KeyError, ValueError, pygit2.GitError) as err:
        raise WorkspaceError(repo, ["show", sha], str(err)) from None
