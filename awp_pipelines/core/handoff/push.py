"""The push of a hand-off: the repo's work to the head branch on its remote, outside the agent's sandbox.

The token never touches the disk or a command line: an ephemeral credential helper, configured for this one git
process through its environment (GIT_CONFIG_COUNT/KEY/VALUE, command-scope config no file holds), prints it from
a variable set in that same environment only. Every credential helper configured elsewhere is reset first (an
empty `credential.helper`), so no other one is asked or stores it. A file or ssh remote never asks for it. The
git command itself stays `push` or `fetch`: the runner knows a network command by its first word.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from awp_pipelines.core.records.workspace import WorkspaceError, git, open_repo

TOKEN_VAR = "AWP_HANDOFF_TOKEN"
USER_VAR = "AWP_HANDOFF_USER"
# The username each forge accepts with a token as the password over https.
TOKEN_USER = {"github": "x-access-token", "gitlab": "oauth2"}
_HELPER = (f"!f() {{ test \"$1\" = get && printf 'username=%s\\npassword=%s\\n' \"${USER_VAR}\" "
           f"\"${TOKEN_VAR}\"; }}; f")
_PUSH_TIMEOUT_S = 600.0


def token_env(forge: str, token: str | None) -> dict[str, str]:
    """The variables of the one push process: git asks only the ephemeral helper, which answers with the
    forge's username for a token and the token."""
    if not token:
        return {}
    helpers = ("", _HELPER)  # the empty one resets the list: no configured helper is asked or stores it
    config = {"GIT_CONFIG_COUNT": str(len(helpers))}
    for index, value in enumerate(helpers):
        config |= {f"GIT_CONFIG_KEY_{index}": "credential.helper", f"GIT_CONFIG_VALUE_{index}": value}
    return {**config, USER_VAR: TOKEN_USER.get(forge, "x-access-token"), TOKEN_VAR: token}


def commit_of(repo: Path, source: str) -> str:
    try:
        return str(open_repo(repo).revparse_single(source).peel(pygit2.Commit).id)
    except (KeyError, ValueError, pygit2.GitError) as err:
        raise WorkspaceError(repo, ["rev-parse", source], str(err)) from None


def push_branch(repo: Path, remote: str, source: str, branch: str, env: dict[str, str]) -> str:
    """Push `source` (HEAD, or a fetched tip) to `refs/heads/<branch>` on `remote`: a fast-forward only, so a
    reviewer's commit on the branch is never overwritten. Returns the commit pushed. Raises WorkspaceError with
    git's words (the caller redacts them)."""
    sha = commit_of(repo, source)
    git(repo, "push", "--quiet", remote, f"{sha}:refs/heads/{branch}", env=env, timeout_s=_PUSH_TIMEOUT_S)
    return sha


def fetch_branch(repo: Path, remote: str, branch: str, env: dict[str, str]) -> str:
    """Fetch a remote repo's packet-run branch (another host may have pushed its tip): FETCH_HEAD's commit."""
    git(repo, "fetch", "--quiet", remote, f"refs/heads/{branch}", env=env, timeout_s=_PUSH_TIMEOUT_S)
    return commit_of(repo, "FETCH_HEAD")
