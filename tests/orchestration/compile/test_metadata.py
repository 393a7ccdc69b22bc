"""An AttemptRecord as Dagster metadata (orchestration/metadata.py), called directly: no Dagster run."""

from __future__ import annotations

import json
from pathlib import Path

from dagster import (
    AssetCheckSeverity,
    DagsterRunMetadataValue,
    FloatMetadataValue,
    JsonMetadataValue,
    MarkdownMetadataValue,
)

from awp_pipelines.core.decisions.agent_run import AWP_RUN_LAUNCHES, SENSOR_LAUNCHES, AgentRunStatus, next_step
from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget, Usage
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.committer import CommitResult
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.core.verifiers.report import ItemResult, VerifierReport
from awp_pipelines.orchestration.compile.metadata import check_results, record_metadata, unmet_summary
from awp_pipelines.orchestration.compute.prompt_compute import attempt_failure

SECRET = "sk-ant-api03-" + "A" * 40
ROOT = Path("/work/packets/demo")


def _record(**changes: object) -> AttemptRecord:
    report = VerifierReport(prompt_id="01", items=[
        ItemResult(kind="files_exist", check_name="done_txt_exists", label="file exists: done.txt", passed=True,
                   repo="app", path="done.txt"),
        ItemResult(kind="contains", check_name="done_txt_contains_done", label="contains: done.txt",
                   passed=False, details=[f"{ROOT}/workspace/done.txt lacks 'done'"], repo="app", path="done.txt")])
    base = AttemptRecord(
        identity=AttemptIdentity(attempt_id="pr-1.01.a2", agent_run="pr-1.01", number=2, packet="demo",
                                 packet_run="pr-1", prompt="01", mode="repair", parent_run="run-1",
                                 dagster_run="run-2"),
        target=AttemptTarget(provider="claude", provider_kind="claude_code", account="work", model="sonnet",
                             effort="high", reason="repair 1/2: unmet verifier items"),
        role="coder", prompt_name="Done", workspace={"app": f"{ROOT}/workspace"}, cwd=f"{ROOT}/workspace",
        checkpoint={"app": "abc"}, started_at="2026-11-30T00:00:00+00:00", ended_at="2026-11-30T00:00:03+00:00",
        duration_s=3.25, result="verification_failed",
        failure=FailureEnvelope.for_class("provider_runtime_claim", f"token {SECRET} refused"),
        usage=Usage(input_tokens=1200, output_tokens=300, cached_input_tokens=50, cost_usd=0.0125,
                    cost_source="provider"),
        verifier=report, commits=[CommitResult(repo="app", status="committed", sha="f" * 40)],
        events_file=f"{ROOT}/.awp/events/pr-1/01.a2.jsonl")
    return base.model_copy(update=changes)


def test_the_searchable_fields_carry_the_record_with_dagster_types() -> None:
    meta = record_metadata(_record(), "## Prompt\n\nWrite it.", state="waiting — repair 2 due")
    # The asset page opens on the link to the Attempt's page, then a short set in a fixed order.
    assert list(meta)[:7] == [tags.PAGE, tags.RESULT, tags.AGENT_RUN_STATE, tags.REASON, tags.TARGET,
                              tags.COST_USD, tags.COMMIT]
    assert meta[tags.PAGE].url == "http://127.0.0.1:3001/attempts/pr-1.01.a2"
    assert (meta[tags.TARGET], meta[tags.COMMIT]) == ("claude/work/sonnet", f"app@{'f' * 12}")
    assert meta[tags.RESULT] == "verification_failed" and meta[tags.ATTEMPT] == "pr-1.01.a2"
    assert meta[tags.AGENT_RUN_STATE] == "waiting — repair 2 due" and meta[tags.MODE] == "repair"
    assert meta[tags.FAILURE_CLASS] == "provider_runtime_claim"
    assert isinstance(meta[tags.DURATION_S], FloatMetadataValue) and meta[tags.DURATION_S].value == 3.25
    assert meta[tags.COST_USD].value == 0.0125
    assert isinstance(meta[tags.PARENT_RUN], DagsterRunMetadataValue) and meta[tags.PARENT_RUN].run_id == "run-1"
    for key in (tags.ATTEMPTS, tags.TRANSCRIPT):
        assert isinstance(meta[key], MarkdownMetadataValue), key
    # What the Attempt's page shows instead: verifier table, commits, provider/account/model apart, session.
    moved = (tags.VERIFIER, tags.COMMITS, tags.PROVIDER, tags.ACCOUNT, tags.MODEL, tags.EFFORT, tags.SESSION_ID,
             tags.TOKENS_CACHED, tags.COST_SOURCE, tags.ATTEMPT_NUMBER)
    assert [key for key in moved if key in meta] == []
    # Nor what another place holds: the packet run is a run tag, the events file is on the start marker and in
    # the transcript, the AgentRun is the Attempt's id without its number, the tokens are in the record.
    # The role is the asset's own tag (translator.py), the same for every Attempt.
    held = ("awp/packet_run", "awp/events", "awp/agent_run", "awp/tokens_in", "awp/tokens_out", tags.ROLE)
    assert [key for key in held if key in meta] == []


def test_the_whole_record_is_stored_redacted_and_reads_back() -> None:
    record = _record()
    meta = record_metadata(record, "")
    stored = meta[tags.RECORD]
    assert isinstance(stored, JsonMetadataValue) and isinstance(stored.data, dict)
    assert SECRET not in str(meta) and "[REDACTED" in meta[tags.FAILURE]
    back = AttemptRecord.model_validate(stored.data)
    assert back.model_copy(update={"failure": record.failure}) == record  # only the secret differs


def test_the_stored_record_leaves_out_defaults_and_derived_lists_and_reads_back_whole() -> None:
    record = _record()
    stored = record.stored()
    assert "resumes" not in stored and "steers" not in stored and "session_id" not in stored  # at defaults
    assert set(stored["verifier"]) == {"prompt_id", "items"}  # passed, failures and faults: from the items
    assert "fault" not in stored["verifier"]["items"][0]
    assert AttemptRecord.model_validate(stored) == record
    assert AttemptRecord.model_validate({**stored, "prompt_text": "an older record's"}) == record  # still reads
    assert record.model_dump(mode="json")["verifier"]["failures"] == [record.verifier.items[1].model_dump(mode="json")]
    assert len(json.dumps(stored)) < 0.8 * len(json.dumps(record.model_dump(mode="json")))


def test_one_check_result_per_verifier_item() -> None:
    results = check_results(_record(), packet_root=ROOT)
    assert [(r.check_name, r.passed) for r in results] == [("done_txt_exists", True),
                                                            ("done_txt_contains_done", False)]
    assert all(r.severity == AssetCheckSeverity.ERROR for r in results)
    failed = results[1].metadata
    # What was found; what the item demands is the check's description (its kind, repo and path say it again).
    assert set(failed) == {"details"} and failed["details"].value == "demo/workspace/done.txt lacks 'done'"
    assert results[1].description == "contains: done.txt"  # the item's label: this one has no description
    assert results[0].metadata["details"].value == "met"
    assert unmet_summary(_record()) == f"unmet: {results[1].description}"
    assert check_results(_record(verifier=None)) == [] and unmet_summary(_record(verifier=None)) == ""


def test_a_failed_attempt_that_a_repair_follows_says_repair_next_first_and_in_its_history() -> None:
    waiting = AgentRunStatus("waiting", "repair 1/2: unmet verifier items", next_mode="repair")
    coming = next_step(waiting, 1, SENSOR_LAUNCHES.format(packet_run="pr-1"))
    assert coming is not None and coming.startswith("repair next — Attempt 2 (repair 1/2: unmet verifier items)")
    assert "recovery sensor" in coming and "--packet-run pr-1" in coming
    assert next_step(AgentRunStatus("failed", "repairs used up"), 2, SENSOR_LAUNCHES) is None  # nothing follows
    assert next_step(AgentRunStatus("completed"), 1, AWP_RUN_LAUNCHES) is None
    meta = record_metadata(_record(), "", state=waiting.text, coming=coming)
    assert list(meta)[:3] == [tags.PAGE, tags.RESULT, tags.NEXT] and meta[tags.NEXT] == coming
    table = meta[tags.ATTEMPTS].value
    head, _, *rows = table.split("\n")
    assert head == "| # | mode | result | run |"  # four columns: the rest is on the Attempt's page
    assert rows[-4].startswith("| [2](") and rows[-3] == "| 3 | repair | **repair next** | |"
    assert rows[-2:] == ["", coming]  # a paragraph under the table
    failure = attempt_failure(_record(), coming)
    assert failure.description.startswith("repair next: Attempt pr-1.01.a2 did not complete")
    assert failure.metadata[tags.NEXT].value == coming
    assert list(failure.metadata) == [tags.NEXT]  # the rest is in its description and the observation before it
    assert attempt_failure(_record()).metadata == {}  # nothing follows: no metadata at all
