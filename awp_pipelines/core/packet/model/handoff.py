"""The hand-off of a repo (`repos.<name>.handoff` in the manifest): when a packet run ends, its work is pushed to
a branch of the repo's remote and a pull request (GitHub) or merge request (GitLab) opened or updated for it."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from awp_pipelines.core.packet.model.base import StrictModel
from awp_pipelines.core.records.run_tags import BRANCH_PREFIX

Forge = Literal["github", "gitlab"]
HandoffWhen = Literal["completed", "ended"]

# GitHub: owner/name; GitLab: group/subgroup/…/name (or the numeric project id).
_PROJECT = re.compile(r"^([A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+|[0-9]+)$")
_BRANCH_FIELDS = re.compile(r"\{([^}]*)\}")
BRANCH_PLACEHOLDERS = ("packet", "packet_run")
_API_CREDENTIAL = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@]*@", re.IGNORECASE)

# Beside a remote repo's packet-run branches (<prefix><packet>/<packet run>, remote.py), never over them: git cannot
# hold a branch `awp/demo` and a branch `awp/demo/pr-…` in one repository.
DEFAULT_BRANCH = BRANCH_PREFIX + "{packet}/handoff"

DEFAULT_API_URL: dict[str, str] = {"github": "https://api.github.com", "gitlab": "https://gitlab.com/api/v4"}


class HandoffSpec(StrictModel):
    """Where and how a packet run's work in this repo is handed to reviewers."""

    forge: Forge = Field(description="github (pull request, REST API v3) or gitlab (merge request, API v4).")
    project: str = Field(description="The repository on the forge: `owner/name` on GitHub, `group/…/name` or "
                         "the numeric project id on GitLab.")
    account: str = Field(min_length=1, description="An account of providers.yaml whose `credential_env` holds the "
                         "forge token (e.g. `github-bot: {provider: github, credential_env: AWP_GITHUB_TOKEN}`). "
                         "The token is given to the push and the API calls only: never to an agent, never stored.")
    base: str | None = Field(None, description="The branch the pull request merges into; default the remote "
                             "repo's `branch`, else `main`.")
    branch: str = Field(DEFAULT_BRANCH, min_length=1, description="The head branch pushed to the remote. "
                        "`{packet}` and `{packet_run}` are filled in: with the default, every packet run of the "
                        "packet updates the same pull request; with `{packet_run}` in it, each opens its own.")
    remote: str = Field("origin", min_length=1, description="The git remote of the repo to push to (a remote "
                        "repo's clone: its `origin`).")
    api_url: str | None = Field(None, description="The forge's API root for a self-hosted forge; default "
                                "https://api.github.com or https://gitlab.com/api/v4.")
    when: HandoffWhen = Field("completed", description="completed: only a packet run whose prompts all completed "
                              "is handed off; ended: any packet run that ended (its body says what failed).")
    draft: bool = Field(False, description="Open the pull request as a draft.")

    @field_validator("project")
    @classmethod
    def _project_form(cls, value: str) -> str:
        if not _PROJECT.match(value):
            raise ValueError(f"project {value!r} is neither `owner/name` nor `group/…/name` nor a numeric id")
        return value

    @field_validator("branch")
    @classmethod
    def _known_placeholders(cls, value: str) -> str:
        unknown = [f for f in _BRANCH_FIELDS.findall(value) if f not in BRANCH_PLACEHOLDERS]
        if unknown:
            raise ValueError(f"branch {value!r} names {', '.join('{' + f + '}' for f in unknown)}: only "
                             f"{', '.join('{' + f + '}' for f in BRANCH_PLACEHOLDERS)} are filled in")
        return value

    @field_validator("api_url")
    @classmethod
    def _no_credential(cls, value: str | None) -> str | None:
        if value is not None and _API_CREDENTIAL.match(value):
            raise ValueError("the API URL carries a credential: name an account whose variable holds the token")
        return value

    def api_root(self) -> str:
        return (self.api_url or DEFAULT_API_URL[self.forge]).rstrip("/")

    def head_branch(self, packet: str, packet_run: str) -> str:
        """The branch pushed: `branch` with its placeholders filled in, characters git refuses in a ref as `-`."""
        filled = self.branch.replace("{packet}", packet).replace("{packet_run}", packet_run)
        return "/".join(re.sub(r"[^A-Za-z0-9._-]|\.\.|^\.|\.lock$|\.$", "-", part) for part in filled.split("/"))

    def describe(self, packet: str) -> str:
        """One line for `awp plan`."""
        kind = "merge request" if self.forge == "gitlab" else "pull request"
        branch = self.branch.replace("{packet}", packet)
        return (f"{self.forge} {kind} {self.project}: {branch} → {self.base or 'the base branch'} "
                f"via remote {self.remote}, token of account {self.account}, when {self.when}"
                + (", draft" if self.draft else ""))
