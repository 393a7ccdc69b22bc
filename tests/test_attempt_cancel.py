"""A cancelled Attempt (the caller's interrupt raised mid-session) keeps its partial work as a checkpoint,
leaves the tree clean, and ends user_cancelled with its lifecycle trail."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from awp_pipelines.core.engine.attempts import AttemptIdentity, AttemptSpec, AttemptTarget, execute_attempt
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.planning.plan import PlanContext, build_plan
from awp_pipelines.core.providers.base import ProviderOutcome, ProviderRequest
from awp_pipelines.core.records.events import EventSink


class Interrupted(BaseException):
    """Stands for Dagster's DagsterExecutionInterruptedError, which the pure engine never imports."""


class WritesThenIsCancelled:
    def run(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        (request.repo_root() / "half.txt").write_text("partial work\n")
        raise Interrupted()

    def resume(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        raise AssertionError("never resumed")


def one_prompt_attempt(tmp_path: Path, make_git_repo) -> tuple[AttemptSpec, Path]:
    """Attempt 1 of a one-prompt packet whose contract (done.txt) the agents here never meet; and its repo."""
    repo = make_git_repo(tmp_path / "p" / "workspace")
    (tmp_path / "p" / "packet.yaml").write_text(yaml.safe_dump({
        "name": "cancel", "provider": "simulated", "repos": {"app": {"path": "./workspace", "default": True}}}))
    (tmp_path / "p" / "prompts").mkdir()
    prompt = "---\nverify: {files_exist: [done.txt]}\n---\nWork.\n"
    (tmp_path / "p" / "prompts" / "01_work.prompt.md").write_text(prompt)
    packet = load_packet(tmp_path / "p")
    [plan] = build_plan(packet, PlanContext(catalog=load_catalog(None))).prompts
    identity = AttemptIdentity(attempt_id="pr-1.01.a1", agent_run="pr-1.01", number=1, packet="cancel",
                               packet_run="pr-1", prompt="01", mode="run")
    target = AttemptTarget(provider="simulated", provider_kind="simulated", model="m", reason="primary")
    return AttemptSpec(packet=packet, prompt=packet.prompt("01"), plan=plan, identity=identity, target=target), repo


def test_a_cancelled_attempt_saves_its_partial_work_and_ends_user_cancelled(tmp_path: Path, make_git_repo) -> None:
    spec, repo = one_prompt_attempt(tmp_path, make_git_repo)
    record = execute_attempt(spec, WritesThenIsCancelled(), EventSink(tmp_path / "events.jsonl", "pr-1.01.a1"),
                             cancel_on=(Interrupted,))
    assert record.result == "provider_failed" and record.failure and record.failure.failure_class == "user_cancelled"
    assert [t.state for t in record.transitions] == ["created", "provisioning", "running", "checkpointing", "terminal"]
    assert record.transitions[-1].cause == "cancellation"
    sha = record.wip["app"]
    shown = subprocess.run(["git", "-C", str(repo), "show", f"{sha}:half.txt"], capture_output=True, text=True)
    assert shown.stdout == "partial work\n"
    assert not (repo / "half.txt").exists()  # the tree is as clean as before the Attempt
    assert record.fact().failure_class == "user_cancelled"
