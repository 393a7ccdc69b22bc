"""Helpers for the verifier tests (a module with its own name, so `import` never picks another conftest)."""

from __future__ import annotations

import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from awp_pipelines.core.verifiers import ItemResult, VerifierReport, VerifyContext, VerifyContract, run_contract


def front_matter(prompt: Path) -> dict[str, Any]:
    """A prompt file's YAML front matter."""
    _, header, _ = prompt.read_text().split("---\n", 2)
    return yaml.safe_load(header)


@dataclass
class Workspace:
    root: Path  # the packet folder
    repos: dict[str, Path]

    def ctx(self, **overrides: Any) -> VerifyContext:
        values: dict[str, Any] = {
            "packet_root": self.root,
            "repos": self.repos,
            "default_repo": "app",
            "prompt_id": "01",
        }
        return VerifyContext(**{**values, **overrides})

    def verify(self, verify: dict[str, Any], **ctx: Any) -> VerifierReport:
        return run_contract(VerifyContract.model_validate(verify), self.ctx(**ctx))

    def item(self, verify: dict[str, Any], **ctx: Any) -> ItemResult:
        """The single item a one-entry contract yields."""
        (item,) = self.verify(verify, **ctx).items
        return item

    def write(self, rel: str, text: str = "x\n", repo: str = "app") -> Path:
        path = self.repos.get(repo, self.root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def script(self, rel: str, body: str, repo: str = "app") -> Path:
        """An executable shell script (the command itself runs without a shell; its #! picks one)."""
        path = self.write(rel, "#!/bin/sh\n" + body + "\n", repo)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return path

    def git(self, repo: str, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=self.repos[repo], check=True, capture_output=True, text=True)
        return done.stdout


def git_repo(path: Path) -> Path:
    """A repository on branch main with one commit adding README.md (local identity for later commits)."""
    path.mkdir(parents=True)
    for args in (
        ["init", "-q", "--template=", "--initial-branch=main"],
        ["config", "user.name", "t"],
        ["config", "user.email", "t@t"],
        ["config", "commit.gpgsign", "false"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    (path / "README.md").write_text(f"# {path.name}\n")
    subprocess.run(["git", "add", "README.md"], cwd=path, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-q", "-m", "Add README"], cwd=path, check=True, capture_output=True)
    return path


