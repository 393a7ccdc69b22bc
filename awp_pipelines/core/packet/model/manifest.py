"""The packet manifest: `packet.yaml`, or the front matter of Prompt Runner's `prompt_runner_packet.md`."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from awp_pipelines.core.packet.ids import check_id
from awp_pipelines.core.packet.model.base import StrictModel
from awp_pipelines.core.packet.model.budget import BudgetConfig
from awp_pipelines.core.packet.model.control import AgentControlConfig
from awp_pipelines.core.packet.model.execution import ExecutionSettings
from awp_pipelines.core.packet.model.handoff import HandoffSpec
from awp_pipelines.core.packet.model.pathtext import PathText
from awp_pipelines.core.packet.model.recovery import RecoveryConfig

# Dagster's owner forms: an email address, or `team:NAME`.
_OWNER = re.compile(r"^(team:[A-Za-z0-9_.-]+|[^@\s]+@[^@\s]+\.[^@\s]+)$")
# What an Attempt does with changes it finds in its work tree before it starts (cleantree.py).
DirtyTreePolicy = Literal["refuse", "set_aside"]


# A URL with a password or token in it would be stored in .git/config and shown in logs: refused.
_URL_CREDENTIAL = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@]*:[^/@]*@", re.IGNORECASE)


class RemoteSpec(StrictModel):
    """A work tree that travels: each run worker clones it, and the orchestrator pushes the packet run's work."""

    url: str = Field(min_length=1, description="Git remote URL (ssh, https, file or a local path). No credential "
                     "in it: the worker's own git credential (ssh key, credential helper) pushes.")
    branch: str = Field("main", min_length=1, description="Base branch: a packet run's own branch "
                        "starts from its tip when the run first touches the repo.")
    reference: PathText | None = Field(None, description="A local reference repository (cache) to clone from "
                                       "where it exists on the worker (git clone --reference-if-able).")

    @field_validator("url")
    @classmethod
    def _no_credential(cls, value: str) -> str:
        if _URL_CREDENTIAL.match(value):
            raise ValueError("the remote URL carries a credential: give the worker a credential helper or an "
                             "ssh key instead")
        return value


class RepoSpec(StrictModel):
    path: PathText | None = Field(None, description="Repository folder, relative to the packet root (a local "
                                  "repo; not with `remote`).")
    remote: RemoteSpec | None = Field(None, description="A git remote to clone instead of a local folder: the "
                                      "clone lives under $AWP_WORK_ROOT/<packet>/<repo> (else the packet's "
                                      ".awp/trees/<repo>).")
    default: bool = Field(False, description="The default repo for verifier entries without a repo.")
    handoff: HandoffSpec | None = Field(None, description="When a packet run ends, push its work here to a branch "
                                        "of the remote and open (or update) a pull request for it (`awp handoff`).")

    @model_validator(mode="after")
    def _path_or_remote(self) -> RepoSpec:
        if (self.path is None) == (self.remote is None):
            raise ValueError("a repo names exactly one of `path` (a local folder) and `remote` (a git remote)")
        return self


class NamedRepoSpec(RepoSpec):
    name: str = Field(description="Repo name used by targets and verifier entries.")


class Manifest(ExecutionSettings):
    name: str = Field(min_length=1, description="Packet name; the Dagster asset group and job are named for it.")
    description: str | None = Field(None, description="What the packet does (native packet.yaml).")
    profile: str | None = Field(None, description="Home profile to layer under the packet "
                                "(~/.config/awp/profiles/NAME.md); absent is a warning.")
    owners: list[str] = Field(default_factory=list, description="Who answers for the packet: email addresses or "
                              "`team:NAME`. The Dagster UI shows them as the owners of every prompt's asset.")
    prompt_template: PathText | None = Field(None, description="Default template for `awp prompt new`.")
    prompt_dir: PathText = Field("prompts", description="Folder of NN_slug.prompt.md files.")
    repos: dict[str, RepoSpec] | list[NamedRepoSpec] = Field(
        default_factory=dict, description="Repositories: {name: {path | remote, default}} or a list with names.")
    phases: dict[str, str] = Field(default_factory=dict, description="Phase number → title.")
    recovery: RecoveryConfig = Field(default_factory=RecoveryConfig, description="Recovery budgets.")
    budget: BudgetConfig | None = Field(None, description="Spend caps of a whole packet run: no further Attempt "
                                        "starts once its recorded spend has reached one.")
    agent_control: AgentControlConfig = Field(default_factory=AgentControlConfig,
                                              description="Agent-driven iteration control.")
    dirty_tree: DirtyTreePolicy = Field("refuse", description="Changes a person left in a target repo (staged, "
                                        "unstaged or untracked) when an Attempt is about to start: `refuse` ends "
                                        "the Attempt naming the files; `set_aside` stashes them (`git stash pop` "
                                        "brings them back). Either way an Attempt commits only what its agent "
                                        "changed.")

    @field_validator("profile")
    @classmethod
    def _profile_is_a_name(cls, value: str | None) -> str | None:
        # It names a file in the home profiles folder: `../../x` would read any .md file as a profile.
        return None if value is None else check_id(value, "profile name")

    @field_validator("phases", mode="before")
    @classmethod
    def _phase_keys_as_text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
        return value

    @field_validator("owners")
    @classmethod
    def _owner_forms(cls, value: list[str]) -> list[str]:
        for owner in value:
            if not _OWNER.match(owner):
                raise ValueError(f"owner {owner!r} is neither an email address nor `team:NAME`")
        return value

    def repo_map(self) -> dict[str, RepoSpec]:
        if isinstance(self.repos, dict):
            return dict(self.repos)
        return {r.name: RepoSpec(path=r.path, remote=r.remote, default=r.default, handoff=r.handoff)
                for r in self.repos}
