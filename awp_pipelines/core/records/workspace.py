"""Small git helpers over subprocess: `git -C <repo> ...`, never a shell, failures as `WorkspaceError`.

`snapshot` is the checkpoint taken before an Attempt; `changed_since` tells the decision function whether
the Attempt left the workspace different (Prompt Runner repairs failed attempts that changed something).

Every git command runs hardened (docs/security.md, "Git the agent cannot steer"): the repository is named
explicitly (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE, read with lstat from the tree's `.git`, never a link), no
system or global config and an empty HOME, hooks, fsmonitor and the untracked cache off on the command line
(it outranks the repository's config), and no pager, editor, askpass or credential helper. The agent's tree is
untrusted input: nothing it writes is run, or written through, by AWP's git.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from awp_pipelines.core.records.git_links import linked_write_paths
from awp_pipelines.core.records.regular_files import entry_fingerprint, read_regular
from awp_pipelines.core.records.secret_scan import SecretHit, SecretInWork, secrets_in_diff

# What diff_stat reads of an untracked file to count its lines.
STAT_CAP_BYTES = 16 * 1024 * 1024

# On the command line, so they outrank every config file: nothing in a repository's config runs a program
# of its choosing on `git status`, `add` or `commit` (hooks, the fsmonitor) or keeps state AWP would trust.
HARDENING = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
             "-c", "credential.helper=", "-c", "core.askPass=", "-c", "core.pager=cat")
# Network commands (a remote work tree's fetch and push) keep the operator's global config (its credential
# helper, its ssh settings): HARDENING's credential and askpass resets are left out for them.
_NETWORK_HARDENING = HARDENING[:6]


class WorkspaceError(RuntimeError):
    """A git command failed: which repo, which command, and git's own words."""

    def __init__(self, repo: Path | str, args: Sequence[str], detail: str) -> None:
        self.repo = Path(repo)
        self.command = ["git", *args]
        self.detail = detail.strip()
        super().__init__(f"{self.repo}: {' '.join(self.command)}: {self.detail or 'failed'}")


class LinkedGitFile(WorkspaceError):
    """A file AWP's git would write (the index, a reflog, a ref) is a link: nothing is written through it."""


@functools.cache
def _empty_home() -> str:
    """A HOME holding nothing (no ~/.gitconfig, no XDG attributes or ignore file), made once per process and
    removed when it exits (every run worker, step and test worker makes one: they piled up in /tmp)."""
    home, maker = tempfile.mkdtemp(prefix="awp-git-home-"), os.getpid()

    def remove() -> None:  # by its maker only: a forked child inherits the cache and this hook
        if os.getpid() == maker:
            shutil.rmtree(home, ignore_errors=True)
    atexit.register(remove)
    return home


def git_env(*, read_only: bool = False, operator_config: bool = False) -> dict[str, str]:
    """The environment every git command runs in: no GIT_* variable of the caller's (they would point git at
    another repository, index or config), no system or global config, an empty HOME. `read_only`: no optional
    locks, so `git status` does not refresh the index: a verifier must not write to the repository it judges
    (nor race the agent for index.lock). `operator_config`: the operator's global config and HOME stay, for a
    remote's credentials and the identity of AWP's commits."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in ("XDG_CONFIG_HOME",
                                                                                          "SSH_ASKPASS")}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_PAGER="cat", PAGER="cat", GIT_EDITOR=":")
    if not operator_config:
        env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", HOME=_empty_home())
    if read_only:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def git_location(repo: Path | str) -> dict[str, str]:
    """GIT_DIR, GIT_COMMON_DIR and GIT_WORK_TREE of the work tree `repo`, read with lstat: `.git` a folder, or a
    worktree's `gitdir:` file. GIT_COMMON_DIR set outright: a `commondir` file the agent writes is never read.
    Empty when `repo` has no `.git` of its own (a folder inside a repository, a bare one: git finds it).
    A `.git` that is a link or another kind of file is refused: AWP follows no link the agent can make."""
    top = Path(os.path.abspath(repo))
    dotgit = top / ".git"
    try:
        mode = os.lstat(dotgit).st_mode
    except OSError:
        return {}
    if stat.S_ISDIR(mode):
        # Only a worktree's git dir (under the main one's `worktrees/`) has a commondir; git's refs follow it
        # whatever GIT_COMMON_DIR says: in a repository's own `.git` it is someone steering git elsewhere.
        if os.path.lexists(dotgit / "commondir"):
            raise WorkspaceError(top, ["rev-parse"], f"{dotgit / 'commondir'} points git at another repository's "
                                 "refs: AWP does not follow it; remove it")
        return {"GIT_DIR": str(dotgit), "GIT_COMMON_DIR": str(dotgit), "GIT_WORK_TREE": str(top)}
    if not stat.S_ISREG(mode):
        raise WorkspaceError(top, ["rev-parse"], f"{dotgit} is not a folder or a gitdir file (a link?): "
                             "AWP does not follow it; restore the repository's .git")
    text = dotgit.read_text(encoding="utf-8", errors="replace")[:4096].strip()
    if not text.startswith("gitdir:"):
        raise WorkspaceError(top, ["rev-parse"], f"{dotgit} names no gitdir")
    git_dir = Path(os.path.normpath(top / text.removeprefix("gitdir:").strip()))
    common = git_dir
    pointer = git_dir / "commondir"
    if pointer.is_file() and not pointer.is_symlink():
        common = Path(os.path.normpath(git_dir / pointer.read_text(encoding="utf-8").strip()))
    return {"GIT_DIR": str(git_dir), "GIT_COMMON_DIR": str(common), "GIT_WORK_TREE": str(top)}


def git_argv(repo: Path | str, args: Sequence[str], *, network: bool = False) -> list[str]:
    return ["git", *(_NETWORK_HARDENING if network else HARDENING), "-C", str(repo), *args]


def git_environment(repo: Path | str, *, read_only: bool = False, operator_config: bool = False,
                    extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """git_env with the repository pinned (git_location) and `extra` (an index of AWP's own) on top."""
    return {**git_env(read_only=read_only, operator_config=operator_config), **git_location(repo), **(extra or {})}


_NETWORK_COMMANDS = frozenset({"push", "fetch", "clone", "ls-remote"})


def git(repo: Path | str, *args: str, input: str | None = None, ok_codes: Sequence[int] = (0,),
        read_only: bool = False, timeout_s: float | None = None, operator_config: bool = False,
        env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `git -C repo args...` hardened; raise WorkspaceError unless the exit code is in `ok_codes`. The one
    git runner: the verifier's queries pass `read_only` and a timeout; the hand-off's push passes its credential
    helper's variables in `env`, for that one process only. Output bytes that are not UTF-8 (a file
    name) are replaced, never a crash. Git runs in a process group of its own: a terminal's Ctrl-C (sent to
    the foreground group) never kills a commit or a checkpoint halfway; `awp run` stops in order around it
    (interrupts.py). A network command (push, fetch, clone, ls-remote) keeps the operator's global config."""
    network = bool(args) and args[0] in _NETWORK_COMMANDS
    try:
        environment = git_environment(repo, read_only=read_only, operator_config=operator_config or network,
                                      extra=env)
        if not read_only:
            refuse_links(repo, environment, args)
        proc = subprocess.run(git_argv(repo, args, network=network), input=input, capture_output=True,
                              encoding="utf-8", errors="replace", env=environment, timeout=timeout_s,
                              process_group=0, stdin=None if input is not None else subprocess.DEVNULL)
    except OSError as err:  # git itself missing, or repo path unusable
        raise WorkspaceError(repo, args, str(err)) from None
    except subprocess.TimeoutExpired:
        raise WorkspaceError(repo, args, f"no answer within {timeout_s} s") from None
    if proc.returncode not in ok_codes:
        raise WorkspaceError(repo, args, proc.stderr or proc.stdout or f"exit {proc.returncode}")
    return proc


def refuse_links(repo: Path | str, environment: Mapping[str, str], args: Sequence[str]) -> None:
    """Raise LinkedGitFile when a file this git command may write is a link (checked with lstat before it runs;
    a read-only command takes no lock and writes nothing)."""
    if "GIT_DIR" not in environment:
        return
    linked = linked_write_paths(Path(environment["GIT_DIR"]), Path(environment["GIT_COMMON_DIR"]))
    if linked:
        raise LinkedGitFile(repo, args, f"{', '.join(linked)}: a link where git writes a file; AWP writes "
                            "nothing through it (restore the repository's git metadata)")


def is_git_repo(repo: Path | str) -> bool:
    """True when `repo` is the top level of a git work tree (a folder inside another repo is not)."""
    path = Path(repo)
    if not path.is_dir():
        return False
    try:
        top = git(path, "rev-parse", "--show-toplevel").stdout.strip()
    except WorkspaceError:
        return False
    return Path(top).resolve() == path.resolve()


def head(repo: Path | str) -> str | None:
    """The commit HEAD points at; None in a repository without commits yet."""
    proc = git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok_codes=(0, 1))
    if proc.returncode == 1:
        git(repo, "rev-parse", "--git-dir")  # not a repo at all: raise with git's message
        return None
    return proc.stdout.strip()


def changed_paths(repo: Path | str, *, read_only: bool = False, timeout_s: float | None = None) -> list[str]:
    """Every path that differs from HEAD: staged, unstaged, deleted, both names of a rename, untracked
    (ignored ones not)."""
    status = git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", read_only=read_only,
                 timeout_s=timeout_s)
    return parse_status_z(status.stdout)


def parse_status_z(out: str) -> list[str]:
    """Sorted paths of `git status --porcelain=v1 -z` output; a rename also names its source, a copy not."""
    paths: set[str] = set()
    fields = iter(out.split("\0"))
    for entry in fields:
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        paths.add(path)
        if "R" in status or "C" in status:  # -z: the source name follows as its own field
            source = next(fields, "")
            if "R" in status and source:
                paths.add(source)
    return sorted(paths)


def worktree_digest(repo: Path | str) -> str:
    """sha256 over HEAD, the uncommitted diff and untracked files' contents: equal digests, equal work tree."""
    return _digest_at(repo, head(repo))


def _digest_at(repo: Path | str, at: str | None) -> str:
    """worktree_digest with HEAD as the caller just read it (None: no commit yet): not asked again."""
    base = at or git(repo, "hash-object", "-t", "tree", "--stdin", input="").stdout.strip()
    diff = git(repo, "diff", "--binary", "--no-ext-diff", "--no-textconv", base, "--").stdout
    untracked = git(repo, "ls-files", "--others", "--exclude-standard", "-z").stdout.split("\0")
    untracked = sorted(p for p in untracked if p)
    digest = hashlib.sha256()
    for part in (base, diff, "\0".join(untracked)):
        digest.update(part.encode("utf-8", "surrogateescape"))
        digest.update(b"\0\0")
    # Each untracked entry as itself, read here, not by `git hash-object` (which follows links): a link is its
    # text, a FIFO or device its kind, a file past the cap its size and time. Nothing here blocks.
    for path in untracked:
        digest.update(entry_fingerprint(Path(repo) / path) + b"\0")
    return digest.hexdigest()


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
    at = head(repo)
    return RepoState(at, tuple(changed_paths(repo)), _digest_at(repo, at))


def snapshot(repos: Mapping[str, Path]) -> dict[str, RepoState]:
    """The checkpoint before an Attempt: each repo's HEAD, dirty paths and work-tree digest."""
    return {name: repo_state(path) for name, path in repos.items()}


def changed_since(before: Mapping[str, RepoState], after: Mapping[str, RepoState]) -> list[str]:
    """Names of the repos whose HEAD or work tree differ between two snapshots (a new repo counts)."""
    return sorted(name for name, state in after.items() if before.get(name) != state)


# The WIP checkpoint: an Attempt that did not complete leaves its partial work in a commit object under
# refs/awp/checkpoints/…, not in the tree. The next Attempt of the same AgentRun starts from it; any other
# prompt's Attempt starts from a clean tree and never commits another AgentRun's partial work.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


# Who AWP's own commits and checkpoints are by where the repo and the user configure nobody (a fresh worker).
FALLBACK_IDENTITY = {"user.name": "AWP Pipelines", "user.email": "awp@localhost"}


def identity_overrides(repo: Path | str) -> list[str]:
    """`-c user.name=… -c user.email=…` for what the repository's config leaves unset: the operator's global
    identity (AWP's git reads no global config, so it is passed outright; reading config runs nothing), else
    the fallback: a commit never fails for it."""
    # One git process for both keys (exit 1: neither is set); a key set empty counts as unset, as before.
    found = git(repo, "config", "--show-scope", "--get-regexp", r"^user\.(name|email)$", ok_codes=(0, 1),
                operator_config=True).stdout
    local: dict[str, str] = {}
    wider: dict[str, str] = {}
    for line in found.splitlines():
        scope, _, rest = line.partition("\t")
        key, _, value = rest.partition(" ")
        (local if scope in ("local", "worktree") else wider)[key] = value
    args: list[str] = []
    for key, fallback in FALLBACK_IDENTITY.items():
        if not local.get(key, "").strip():
            args += ["-c", f"{key}={wider.get(key, '').strip() or fallback}"]
    return args


def save_checkpoint(repo: Path | str, base: str | None, ref: str, message: str,
                    secrets: Sequence[str] = ()) -> str | None:
    """Commit the work tree's changes against `base` (untracked files included) to `ref`, without touching
    HEAD, the index or the tree. None when there is nothing to save. SecretInWork when the changes hold one of
    `secrets`: nothing is saved."""
    if not changed_paths(repo):
        return None
    tree = worktree_tree(repo, base)
    hits = secrets_between(repo, base, tree, secrets)
    if hits:
        raise SecretInWork(str(repo), hits)
    parents = ["-p", base] if base else []
    sha = git(repo, *identity_overrides(repo), "commit-tree", tree, *parents, "-m", message).stdout.strip()
    git(repo, "update-ref", ref, sha)
    return sha


def secrets_between(repo: Path | str, base: str | None, tree: str, secrets: Sequence[str]) -> list[SecretHit]:
    """Where the lines added from `base` to `tree` hold one of `secrets` (file and line, never the value)."""
    if not any(secrets):
        return []
    diff = git(repo, "diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "--no-renames",
               base or EMPTY_TREE, tree, "--").stdout
    return secrets_in_diff(diff, secrets)


def worktree_tree(repo: Path | str, base: str | None) -> str:
    """The tree object of the work tree as it is (`base` plus every change, untracked files included), built in
    an index of its own, in a private folder only AWP writes (never under the tree's `.git`, where a link could
    send the write elsewhere): the repository's index, HEAD and files stay as they are (its index.lock too)."""
    folder = tempfile.mkdtemp(prefix="awp-checkpoint-")
    env = {"GIT_INDEX_FILE": os.path.join(folder, "index")}
    try:
        for args in (["read-tree", base] if base else ["read-tree", "--empty"], ["add", "-A"]):
            git(repo, *args, env=env)
        return git(repo, "write-tree", env=env).stdout.strip()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def checkpoint_trees(repo: Path | str) -> set[str]:
    """The trees of every checkpoint saved in `repo` (refs/awp/checkpoints/…): the work AWP itself saved."""
    out = git(repo, "for-each-ref", "--format=%(tree)", "refs/awp/checkpoints/").stdout
    return {line.strip() for line in out.splitlines() if line.strip()}


def discard_changes(repo: Path | str) -> None:
    """Back to HEAD: tracked changes reverted, untracked files removed (ignored files are kept)."""
    if head(repo) is not None:
        git(repo, "reset", "--quiet", "--hard", "HEAD")
    git(repo, "clean", "-fdq")


def restore_checkpoint(repo: Path | str, sha: str) -> bool:
    """Replay a checkpoint's changes onto the current tree (three-way, so commits made since by other
    prompts stay). False when they no longer apply."""
    parent = git(repo, "rev-parse", "--verify", "--quiet", f"{sha}^", ok_codes=(0, 1)).stdout.strip()
    patch = git(repo, "diff", "--binary", "--no-ext-diff", parent or EMPTY_TREE, sha).stdout
    if not patch:
        return True
    proc = git(repo, "apply", "--3way", "--whitespace=nowarn", input=patch, ok_codes=(0, 1))
    if proc.returncode != 0:
        discard_changes(repo)
        return False
    git(repo, "reset", "--quiet")  # leave the replayed work unstaged, as the agent left it
    return True


def diff_stat(repo: Path | str, base: str | None) -> list[dict[str, object]]:
    """What changed since `base` (the Attempt's checkpoint), commits and work tree alike, untracked files
    included: `{path, status A|M|D|T, added, removed}` per file, sorted by path; counts None for binary."""
    base = base or EMPTY_TREE
    flags = ("diff", "--no-renames", "--no-ext-diff", "--no-textconv", "-z")
    status_fields = git(repo, *flags, "--name-status", base, "--").stdout.split("\0")
    statuses = dict(zip(status_fields[1::2], status_fields[0::2], strict=False))
    rows: dict[str, dict[str, object]] = {}
    for entry in git(repo, *flags, "--numstat", base, "--").stdout.split("\0"):
        added, _, rest = entry.partition("\t")
        removed, _, path = rest.partition("\t")
        if path:
            rows[path] = {"path": path, "status": statuses.get(path, "M")[:1],
                          "added": int(added) if added.isdigit() else None,
                          "removed": int(removed) if removed.isdigit() else None}
    untracked = git(repo, "ls-files", "--others", "--exclude-standard", "-z").stdout.split("\0")
    for path in filter(None, untracked):
        # Read as itself (a link, a FIFO: nothing), never followed, and only up to the cap.
        data = read_regular(Path(repo) / path, STAT_CAP_BYTES) or b""
        binary = b"\0" in data[:8000]
        rows[path] = {"path": path, "status": "A", "added": None if binary else len(data.splitlines()),
                      "removed": None if binary else 0}
    return [rows[p] for p in sorted(rows)]


def latest_checkpoint(repo: Path | str, agent_run: str, since_number: int) -> str | None:
    """The newest checkpoint of an AgentRun in `repo` from Attempt `since_number` on (the refs are named
    `<agent run>.a<n>`), or None. An older one is history: later Attempts already moved past it."""
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", f"refs/awp/checkpoints/{agent_run}/").stdout
    best: tuple[int, str] | None = None
    for line in out.splitlines():
        ref, _, sha = line.partition(" ")
        number = ref.rsplit(".a", 1)[-1]
        if number.isdigit() and int(number) >= since_number and (best is None or int(number) > best[0]):
            best = (int(number), sha)
    return best[1] if best else None


def commit_of_attempt(repo: Path | str, attempt: str) -> str | None:
    """The commit on HEAD whose AWP-Attempt trailer names `attempt`: proof the Attempt committed."""
    if head(repo) is None:
        return None
    out = git(repo, "log", "--fixed-strings", f"--grep=AWP-Attempt: {attempt}", "--format=%H", "-1", "HEAD").stdout
    return out.strip() or None


def commits_naming(repo: Path | str, prefix: str, after: str | None = None) -> list[tuple[str, str, dict[str, str]]]:
    """The commits on HEAD (those since commit `after`, if given: git walks no further) whose AWP-Attempt trailer
    starts with `prefix` (a packet run's `<id>.`), newest first: (sha, commit time, their trailers; the last
    value of a key wins). One `git log` for all of them."""
    if head(repo) is None:
        return []
    out = git(repo, "log", "--fixed-strings", f"--grep=AWP-Attempt: {prefix}",
              "--format=%H%x1f%cI%x1f%(trailers:only,unfold)%x1e", f"{after}..HEAD" if after else "HEAD").stdout
    found = []
    for entry in out.split("\x1e"):
        sha, _, rest = entry.strip().partition("\x1f")
        at, _, text = rest.partition("\x1f")
        trailers = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
        if sha and trailers.get("AWP-Attempt", "").startswith(prefix):
            found.append((sha, at, trailers))
    return found
