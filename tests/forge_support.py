"""A demo packet handed off to a forge: its workspace with a local bare repository as `origin`, a hand-off in the
manifest naming an account of providers.yaml, the token in that account's variable. The forge's API is recorded
with `responses` by the tests; the push is real git."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import responses
import yaml

TOKEN_VAR = "AWP_TEST_FORGE_TOKEN"
TOKEN = "ghp_forgeTestToken0123456789abcdefABCDEF"  # a token-shaped value: redaction must catch it
GITHUB_PULLS = "https://api.github.com/repos/acme/docs/pulls"
GITLAB_MRS = "https://gitlab.com/api/v4/projects/acme%2Fdocs/merge_requests"


@dataclass(frozen=True)
class ForgeDemo:
    packet: Path
    workspace: Path
    origin: Path  # the bare remote
    providers: Path

    def remote_branch(self, branch: str = "awp/demo/handoff") -> str | None:
        proc = subprocess.run(["git", "--git-dir", str(self.origin), "rev-parse", "--verify", "--quiet",
                               f"refs/heads/{branch}"], capture_output=True, text=True)
        return proc.stdout.strip() or None

    def head(self) -> str:
        return git_out(self.workspace, "rev-parse", "HEAD")


def git_out(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def forge_demo(packet: Path, tmp_path: Path, forge: str = "github", **handoff: Any) -> ForgeDemo:
    """`packet`: a demo copy (its ./workspace made). Its `docs` repo gets a bare `origin` holding main and a
    hand-off to `acme/docs` on `forge` with the account `forge-bot`."""
    workspace = packet / "workspace"
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", str(origin)], check=True)
    git_out(workspace, "remote", "add", "origin", str(origin))
    git_out(workspace, "push", "--quiet", "origin", "main")
    manifest = packet / "packet.yaml"
    data = yaml.safe_load(manifest.read_text())
    data["repos"]["docs"]["handoff"] = {"forge": forge, "project": "acme/docs", "account": "forge-bot", **handoff}
    manifest.write_text(yaml.safe_dump(data, sort_keys=False))
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({"accounts": {"forge-bot": {"provider": forge, "credential_env": TOKEN_VAR}}}))
    return ForgeDemo(packet, workspace, origin, providers)


def github_pr(number: int) -> dict[str, Any]:
    return {"number": number, "html_url": f"https://github.com/acme/docs/pull/{number}"}


def gitlab_mr(iid: int) -> dict[str, Any]:
    return {"iid": iid, "web_url": f"https://gitlab.com/acme/docs/-/merge_requests/{iid}"}


def sent(call: Any) -> dict[str, Any]:
    """The JSON a recorded call sent."""
    return dict(json.loads(call.request.body))


def github_open_then_update(mock: responses.RequestsMock, number: int = 7) -> None:
    """The forge as two hand-offs see it: no open pull request for the branch, then the one the first opened."""
    mock.get(GITHUB_PULLS, json=[])
    mock.post(GITHUB_PULLS, json=github_pr(number), status=201)
    mock.get(GITHUB_PULLS, json=[github_pr(number)])
    mock.patch(f"{GITHUB_PULLS}/{number}", json=github_pr(number))
