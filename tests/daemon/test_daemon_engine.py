"""Spend caps, cancellation and agent control under a real dagster-daemon and webserver (the embedded
SQLite instance): the recovery sensor asks the same `next_launches` as `awp run`, so the cap stops it
there too and it launches the iterations the agent asks for (the simulated agent's, and a `command` agent's
own `awp agent-control` calls); a run terminated from the UI ends its Attempt user_cancelled and stops its
packet run (nothing more launches until a resume). One deployment serves the module's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance
from deployment import Deployment, all_finished, deployment, embedded_home, init_workspaces, make_project
from e2e_support import decided_launch, runs_of_packet

pytestmark = pytest.mark.slow
STEERING_AGENT = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "steering.sh"


def _packet(root: Path, name: str, manifest: dict, front: dict) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": name, "provider": "simulated", "repos": {"app": {"path": "./workspace", "default": True}},
        **manifest}))
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWrite done.txt.\n")
    return root


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    tmp_path = tmp_path_factory.mktemp("engine")
    step = {"messages": ["not yet"], "cost_usd": 0.02}
    capped = _packet(tmp_path / "src" / "capped", "capped",
                     {"budget": {"max_cost_usd": 0.05}, "recovery": {"repair": {"max_attempts": 5}}},
                     {"verify": {"files_exist": ["done.txt"]}, "simulate": {"attempts": [step] * 6}})
    slow = _packet(tmp_path / "src" / "slow", "slow", {},
                   {"verify": {"files_exist": ["done.txt"]},
                    "simulate": {"attempts": [{"messages": ["thinking"], "delay_ms": 120_000}]}})
    final = {"writes": [{"path": "final.txt", "text": "3"}], "control": {"action": "finish", "reason": "done"}}
    steered = _packet(tmp_path / "src" / "steered", "steered",
                      {"agent_control": {"enabled": True, "completion_verify": {"files_exist": ["final.txt"]}}},
                      {"verify": {"files_exist": ["step.txt"]}, "simulate": {"attempts": [
                          {"writes": [{"path": "step.txt", "text": "1"}], "control": {"action": "repeat"}},
                          {"writes": [{"path": "step.txt", "text": "2"}], "control": {"action": "repeat"}}, final]}})
    shelled = _packet(tmp_path / "src" / "shelled", "shelled",
                      {"provider": "agent", "model": "m", "timeout": "2m",
                       "agent_control": {"enabled": True, "completion_verify": {"files_exist": ["final.txt"]}}},
                      {"verify": {"files_exist": ["step.txt"]}})
    providers = yaml.safe_dump({"providers": {"agent": {"kind": "command", "command": str(STEERING_AGENT),
                                                        "models": ["m"]}}})
    project = make_project(tmp_path / "project", {"capped": capped, "slow": slow, "steered": steered,
                                                  "shelled": shelled}, providers)
    init_workspaces(project, ["capped", "slow", "steered", "shelled"])
    home = embedded_home(tmp_path / "home")
    with deployment(home, project) as dep:
        yield dep


def _runs(instance: DagsterInstance, packet: str) -> list:
    return list(reversed(runs_of_packet(instance, packet)))


def _records(instance: DagsterInstance, runs: list) -> list[dict]:
    from e2e_support import attempt_records

    return [r.model_dump(mode="json") for run in runs for r in attempt_records(instance, run.run_id)]


def _started(instance: DagsterInstance, run_id: str) -> bool:
    from dagster import DagsterEventType

    return any("awp/started" in (e.dagster_event.event_specific_data.asset_observation.metadata or {})
               for e in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_OBSERVATION))



def _steered_to_the_end(running: Deployment, packet: str, iterations: int) -> tuple[str, list, list[dict]]:
    """Launch the packet's job and wait for its iterations to finish: (first run id, its runs, their records)."""
    first = running.launch_job(f"packet__{packet}")
    running.wait_until(lambda i: len(_runs(i, packet)) >= iterations and all_finished(i, _runs(i, packet)), 300,
                       f"{iterations} iterations")
    running.wait_for_ticks("awp_recovery", 3)  # the finish ended it: nothing more may launch
    with running.instance() as instance:
        runs = _runs(instance, packet)
        return first, runs, _records(instance, runs)

def test_the_spend_cap_stops_the_recovery_sensor_and_a_ui_termination_cancels_the_attempt(
        running: Deployment) -> None:
    capped = running.launch_job("packet__capped")
    slow = running.launch_job("packet__slow")
    running.wait_until(lambda i: _started(i, slow), 180, "the slow Attempt to start")
    assert running.client().terminate_run(slow) is None  # what the UI's Terminate button sends
    running.wait_until(lambda i: len(_runs(i, "capped")) >= 3 and all_finished(i, _runs(i, "capped"))
                       and all_finished(i, _runs(i, "slow")), 300, "the capped packet's three Attempts")
    running.wait_for_ticks("awp_recovery", 3)  # three ticks looked: nothing more may be launched
    with running.instance() as instance:
        runs = _runs(instance, "capped")
        assert runs[0].run_id == capped and len(runs) == 3
        records = _records(instance, runs)
        assert [r["identity"]["mode"] for r in records] == ["run", "repair", "repair"]
        assert records[-1]["packet_run_spend"]["cost_usd"] == pytest.approx(0.06)
        [cancelled] = _runs(instance, "slow")  # no retry of a cancelled Attempt
        assert cancelled.status.value == "CANCELED"
        [record] = _records(instance, [cancelled])
        assert (record["result"], record["failure"]["failure_class"]) == ("provider_failed", "user_cancelled")
        assert record["transitions"][-1]["cause"] == "cancellation"


def test_an_agent_that_repeats_twice_then_finishes_runs_three_iterate_attempts_through_the_sensor(
        running: Deployment) -> None:
    first, runs, records = _steered_to_the_end(running, "steered", 3)
    assert runs[0].run_id == first and len(runs) == 3
    assert [decided_launch(r)[1] for r in runs[1:]] == ["iterate", "iterate"]
    assert all(r.tags["dagster/sensor_name"] == "awp_recovery" for r in runs[1:])
    assert [(r["identity"]["mode"], r["control"]["outcome"]) for r in records] == \
        [("iterate", "repeat"), ("iterate", "repeat"), ("iterate", "finish")]
    assert all(r["result"] == "completed" for r in records)


def test_a_command_agent_steers_its_iterations_under_the_daemon(running: Deployment) -> None:
    """Its `awp agent-control repeat`, then `finish`, from its own shell in a run worker: the sensor launches
    the second iteration, and the finish ends the AgentRun."""
    first, runs, records = _steered_to_the_end(running, "shelled", 2)
    log = running.project / "assets" / "shelled" / ".awp" / "homes" / "agent-login" / "control.log"
    assert runs[0].run_id == first and len(runs) == 2, log.read_text() if log.exists() else "no control.log"
    assert [(r["identity"]["mode"], r["control"]["outcome"], r["control"]["source"]) for r in records] == \
        [("iterate", "repeat", "request"), ("iterate", "finish", "request")]
    assert records[0]["control"]["progress"] == "first pass done"
