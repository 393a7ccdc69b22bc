"""The packet run's root run names what runs and what comes next (issue 26 item 4): while an Attempt runs,
`awp/packet_run_state` says which; once it failed, which repair or retry is due; at the end, the bare word."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from awp_pipelines.core.decisions.agent_run import AgentRunStatus
from awp_pipelines.core.engine import progress
from awp_pipelines.core.engine.progress import AttemptEnded, ProgressEvent
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.instance import open_instance_folder
from awp_pipelines.orchestration.naming import job_name
from awp_pipelines.orchestration.packet_run_tag import packet_run_tag

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_tag_names_each_agent_run_still_going_and_only_then() -> None:
    going = {"01": AgentRunStatus("completed", "attempt 1 met the contract"),
             "02": AgentRunStatus("active", "attempt 2 is running"),
             "03": AgentRunStatus("waiting", "provider_rate_limit: retry 1/5"),
             "04": AgentRunStatus("planned", "held: upstream 02 active", held_by=("02",))}
    assert packet_run_tag(going) == ("running — 02 active (attempt 2 is running); "
                                     "03 waiting (provider_rate_limit: retry 1/5)")
    done = {"01": AgentRunStatus("completed", "attempt 1 met the contract")}
    assert packet_run_tag(done) == "completed"  # a word the Runs list filters on, once nothing runs
    assert packet_run_tag({"01": AgentRunStatus("planned", "no Attempt yet")}) == "running"


def test_the_root_run_says_which_attempt_runs_then_which_repair_is_due(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(REPO_ROOT / "assets" / "demo", project / "assets" / "demo",
                    ignore=shutil.ignore_patterns("workspace", ".awp"))
    subprocess.run(["bash", str(project / "assets" / "demo" / "setup.sh")], check=True, capture_output=True)
    compiled = packet_assets(load_packet(project / "assets" / "demo"),
                             load_catalog(REPO_ROOT / "resources" / "providers.yaml"))
    instance = open_instance_folder(tmp_path / "home")
    seen: dict[str, str | None] = {}

    def on_progress(event: ProgressEvent) -> None:
        if isinstance(event, AttemptEnded):  # its record is not stored yet: the tag says it runs
            run = instance.get_runs(limit=1)[0]  # the root run: the first of its packet run
            seen[event.prompt] = run.tags.get(tags.PACKET_RUN_STATE)

    try:
        job = compiled.definitions().resolve_job_def(job_name(compiled.packet))
        with progress.listening(on_progress):
            result = job.execute_in_process(instance=instance, raise_on_error=False,
                                            asset_selection=[compiled.binding.key(p) for p in ("01", "02")])
        root = instance.get_run_by_id(result.run_id)
        assert root is not None
        after = root.tags[tags.PACKET_RUN_STATE]
    finally:
        instance.dispose()
    assert seen["01"] == "running — 01 active (attempt 1 is running)"  # 02 waits for it: planned, not named
    assert seen["02"] == "running — 02 active (attempt 1 is running)"
    assert after == "running — 02 waiting (repair 1/2: unmet verifier items)"
