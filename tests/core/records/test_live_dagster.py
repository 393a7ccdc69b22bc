"""The live hook wired the way the Dagster layer will wire it: batches go to `context.log`, and each is in the
run's stored event log while the compute (the Attempt) is still running."""

# No `from __future__ import annotations`: Dagster reads the `context` annotation at definition time.
import time
from pathlib import Path

from dagster import AssetExecutionContext, DagsterInstance, asset, materialize
from dagster._core.test_utils import instance_for_test

from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.live_lines import LiveFeed, ticking


def stored_messages(instance: DagsterInstance, run_id: str) -> list[str]:
    return [record.user_message for record in instance.all_logs(run_id)]


def test_the_first_agent_message_is_in_the_runs_stored_log_before_the_attempt_ends(tmp_path: Path) -> None:
    seen_while_running: list[str] = []

    @asset
    def slow_attempt(context: AssetExecutionContext) -> None:
        feed = LiveFeed(lambda lines: context.log.info("\n".join(lines)), interval_s=0.5)
        sink = EventSink(tmp_path / "events.jsonl", "pr-1.01.a1", root=tmp_path, live=feed)
        with ticking(sink.live, every_s=0.1):
            sink.message("Reading the repo first.")
            sink.tool_call_started("Bash", input={"command": "ls"})  # inside the interval: waits for the ticker
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # the agent is still working; a watcher reads the run's log
                stored = stored_messages(context.instance, context.run.run_id)
                if any("tool Bash: ls" in m for m in stored):
                    break
                time.sleep(0.05)
            seen_while_running.extend(stored)
            sink.message("Done.")
        sink.close()

    with instance_for_test() as instance:
        result = materialize([slow_attempt], instance=instance)
        assert result.success
        assert any(m == "agent: Reading the repo first." for m in seen_while_running)
        assert any("tool Bash: ls" in m for m in seen_while_running)
        after = stored_messages(instance, result.run_id)
        assert any("agent: Done." in m for m in after)  # flushed when the Attempt ended
        batches = [m for m in after if m.startswith(("agent:", "tool "))]
        assert len(batches) == 3  # one stored event per batch, not per agent event
