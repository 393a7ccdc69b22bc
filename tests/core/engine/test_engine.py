"""The pure engine, called directly: `execute_attempt` with the simulated provider on a real git repo, and the
completion table (provider outcome × verifier report → result). No Dagster here."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from engine_support import WRITES_DONE, _attempt
from pydantic import ValidationError

from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.engine.attempts import completion
from awp_pipelines.core.providers.base import ProviderOutcome
from awp_pipelines.core.records.failures import FailureClass, FailureEnvelope
from awp_pipelines.core.verifiers.report import Fault, ItemResult, VerifierReport


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def test_an_attempt_that_meets_its_contract_is_committed_with_its_trailers(tmp_path: Path, make_git_repo) -> None:
    record, repo = _attempt(tmp_path, make_git_repo, WRITES_DONE)
    assert record.result == "completed" and record.failure is None and record.completed
    assert record.verifier is not None and record.verifier.passed
    [commit] = record.commits
    assert (commit.repo, commit.status, commit.sha) == ("app", "committed", _git(repo, "rev-parse", "HEAD").strip())
    message = _git(repo, "log", "-1", "--format=%B")
    assert message.startswith("feat: write done.txt\n") and "AWP-Attempt: pr-1.01.a1" in message
    assert _git(repo, "status", "--porcelain") == ""
    assert record.workspace_changed and record.wip == {}
    assert [t.state for t in record.transitions] == ["created", "provisioning", "running", "checkpointing", "terminal"]
    assert record.fact().done and record.fact().number == 1


def test_an_unmet_contract_is_verification_failed_and_its_partial_work_is_checkpointed(
        tmp_path: Path, make_git_repo) -> None:
    half = {"writes": [{"path": "done.txt", "text": "not yet\n"}]}
    record, repo = _attempt(tmp_path, make_git_repo, half)
    assert record.result == "verification_failed" and record.commits == []
    assert record.verifier is not None and [i.kind for i in record.verifier.failures] == ["contains"]
    assert _git(repo, "show", f"{record.wip['app']}:done.txt") == "not yet\n"
    assert not (repo / "done.txt").exists()  # left as clean as before, so no other prompt commits it
    fact = record.fact()
    assert not fact.done and fact.workspace_changed and fact.result == "verification_failed"


def test_a_provider_error_after_the_work_is_done_still_completes(tmp_path: Path, make_git_repo) -> None:
    late = {**WRITES_DONE, "error": {"kind": "provider_runtime_claim", "message": "teardown failed"}}
    record, _ = _attempt(tmp_path, make_git_repo, late)
    assert record.result == "completed" and record.failure is None
    assert record.provider_failure is not None and record.provider_failure.failure_class == "provider_runtime_claim"


def test_a_provider_error_with_the_contract_unmet_is_provider_failed(tmp_path: Path, make_git_repo) -> None:
    record, repo = _attempt(tmp_path, make_git_repo, {"error": {"kind": "provider_rate_limit", "message": "429"}})
    assert record.result == "provider_failed"
    assert record.failure is not None and record.failure.failure_class == "provider_rate_limit"
    assert record.fact().retryable and not record.workspace_changed and record.commits == []


def test_a_work_tree_that_is_gone_ends_the_attempt_once_before_its_agent(tmp_path: Path, make_git_repo) -> None:
    """A run launched from the UI has no `awp run` preflight: the Attempt says it, deterministic (not retried),
    instead of an `interrupted` crash retried three times."""
    def gone(path: Path) -> Path:
        shutil.rmtree(make_git_repo(path))
        return Path(path)

    record, repo = _attempt(tmp_path, gone, WRITES_DONE)
    assert record.result == "provider_failed" and record.failure is not None
    failure = record.failure
    assert (failure.failure_class, failure.retryable, failure.phase) == ("launch_failed", False, "launch")
    assert failure.message.startswith(f"work tree 'app': no such work tree {repo}")
    assert not repo.exists() and [t.state for t in record.transitions][-1] == "terminal"


def test_the_record_is_frozen(tmp_path: Path, make_git_repo) -> None:
    record, _ = _attempt(tmp_path, make_git_repo, WRITES_DONE)
    with pytest.raises(ValidationError):
        record.result = "verification_failed"  # type: ignore[misc]  # the assignment under test
    with pytest.raises(ValidationError):
        record.identity.number = 2  # type: ignore[misc]  # the assignment under test
    again = record.model_copy(update={"result": "verification_failed"})
    assert (record.result, again.result) == ("completed", "verification_failed")
    assert AttemptRecord.model_validate(record.model_dump(mode="json")) == record


# -- the completion table: Prompt Runner's, with the verifier deciding -------------------------------------

def _outcome(error: FailureClass | None) -> ProviderOutcome:
    failure = FailureEnvelope.for_class(error, "said so") if error else None
    return ProviderOutcome(ok=failure is None, failure=failure)


def _report(*items: Met) -> VerifierReport:
    return VerifierReport(prompt_id="01", items=[
        ItemResult(kind="files_exist", check_name=f"c{i}", label=f"item {i}", passed=passed, fault=fault)
        for i, (passed, fault) in enumerate(items)])


Met = tuple[bool, Fault | None]
MET: Met = (True, None)
UNMET: Met = (False, None)
FAULT: Met = (False, "verifier_fault")


@pytest.mark.parametrize(("error", "report", "result", "failure_class"), [
    (None, _report(MET), "completed", None),  # ok + pass
    ("provider_runtime_claim", _report(MET), "completed", None),  # error + pass: the verifier overrides
    (None, _report(MET, UNMET), "verification_failed", None),  # ok + fail
    ("provider_capacity", _report(UNMET), "provider_failed", "provider_capacity"),  # error + fail
    (None, None, "completed", None),  # no contract: the provider's word stands
    ("transport_timeout", None, "provider_failed", "transport_timeout"),
    (None, _report(MET, FAULT), "verifier_fault", "verifier_fault"),  # a fault outranks everything
    ("provider_rate_limit", _report(FAULT), "verifier_fault", "verifier_fault"),
])
def test_the_completion_table(error: FailureClass | None, report: VerifierReport | None, result: str,
                              failure_class: str | None) -> None:
    got, failure = completion(_outcome(error), report)
    assert got == result
    assert (failure.failure_class if failure else None) == failure_class
