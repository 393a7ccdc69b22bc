"""What a hand-off leaves behind (core/handoff/): one result per repo, kept in the instance's key-value store with
the packet run (orchestration/views/handoff.py) and shown by `awp status`. Nothing secret is in it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

HandoffAction = Literal["opened", "updated", "skipped", "failed"]


class HandoffResult(BaseModel):
    """One repo's hand-off of one packet run: what `awp status` shows and the ledger keeps (no secret in it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str = Field(description="Repo name from the manifest.")
    forge: str = Field(description="github or gitlab.")
    branch: str = Field(description="The head branch pushed.")
    action: HandoffAction = Field(description="opened, updated (the open pull request of the branch), skipped "
                                  "(`when: completed` and the packet run did not complete) or failed.")
    url: str | None = Field(None, description="The pull (merge) request's page.")
    number: int | None = Field(None, description="Its number (GitHub) or iid (GitLab).")
    commit: str | None = Field(None, description="The commit pushed to the branch.")
    message: str = Field("", description="What failed, in one line (HTTP status and the forge's words, or git's), "
                         "or why it was skipped.")
    at: str = Field(description="ISO 8601 time of the hand-off.")

    @property
    def ok(self) -> bool:
        return self.action in ("opened", "updated")

    def line(self) -> str:
        """One line for a terminal."""
        kind = "merge request" if self.forge == "gitlab" else "pull request"
        if self.ok:
            return f"{self.repo}: {kind} {self.action}: {self.url} (branch {self.branch} at {(self.commit or '')[:12]})"
        return f"{self.repo}: hand-off {self.action}: {self.message}"
