"""`awp control steer|amend|relax` against a running Attempt of the pure engine (the simulated agent, a real git
repo, the commands run as a user runs them from another terminal): a steer ends the session and resumes it with
the message, within `recovery.max_steers`; a relax lets the running AgentRun complete, recorded with its timing."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from awp_pipelines.cli import cli
from awp_pipelines.core.decisions.operator_control import operator_folder, read_log, running_sessions
from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget
from awp_pipelines.core.engine.attempts import AttemptSpec, execute_attempt
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.planning.plan import PlanContext, build_plan
from awp_pipelines.core.providers.simulated import SimulatedProvider
from awp_pipelines.core.records.events import EventSink


def awp(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


class Running:
    """One Attempt of a one-prompt packet, run in a thread while the test acts as the person at the terminal."""

    def __init__(self, tmp_path: Path, make_git_repo: Any, front: dict[str, Any]) -> None:
        self.root = tmp_path / "p"
        make_git_repo(self.root / "workspace")
        (self.root / "packet.yaml").write_text(yaml.safe_dump({
            "name": "steered", "provider": "simulated", "repos": {"app": {"path": "./workspace", "default": True}}}))
        (self.root / "prompts").mkdir()
        (self.root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
        packet = load_packet(self.root)
        [plan] = build_plan(packet, PlanContext(catalog=load_catalog(None))).prompts
        prompt = packet.prompt("01")
        self.state = self.root / ".awp"
        self.folder = operator_folder(self.state, "pr-1", "01")
        self.spec = AttemptSpec(
            packet=packet, prompt=prompt, plan=plan, simulate=prompt.front.simulate, operator=self.folder,
            identity=AttemptIdentity(attempt_id="pr-1.01.a1", agent_run="pr-1.01", number=1, packet="steered",
                                     packet_run="pr-1", prompt="01", mode="run"),
            target=AttemptTarget(provider="simulated", provider_kind="simulated", model="sim", reason="primary"))
        self.sink = EventSink(tmp_path / "events.jsonl", "pr-1.01.a1")
        self.record: AttemptRecord | None = None
        self.thread = threading.Thread(target=self._run)
        self.started = time.monotonic()
        self.thread.start()
        deadline = time.monotonic() + 10
        while not running_sessions(self.state) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert running_sessions(self.state), "the session never said it runs"

    def _run(self) -> None:
        self.record = execute_attempt(self.spec, SimulatedProvider(), self.sink)

    def ended(self) -> AttemptRecord:
        self.thread.join(30)
        assert self.record is not None
        return self.record


def test_a_steer_ends_the_session_and_resumes_it_with_the_message_within_max_steers(
        tmp_path: Path, make_git_repo: Any) -> None:
    front = {"verify": {"files_exist": ["done.txt"]}, "recovery": {"max_steers": 1},
             "simulate": {"attempts": [{"messages": ["working slowly"], "delay_ms": 8000}],
                          "resume": {"messages": ["ok, writing it now"],
                                     "writes": [{"path": "done.txt", "text": "x"}]}}}
    run = Running(tmp_path, make_git_repo, front)
    first = awp("control", "steer", run.root, "stop", "dawdling:", "write", "done.txt", "--author", "ada", "--json")
    assert first.exit_code == 0, first.output
    assert awp("control", "steer", run.root, "one more", "--author", "bob").exit_code == 0  # queued before it is taken
    record = run.ended()
    assert time.monotonic() - run.started < 7  # the 8 s step was cut short by the steer
    assert record.result == "completed"
    assert [(s.author, s.delivered) for s in record.steers] == [("ada", True), ("bob", False)]
    assert "max_steers (1)" in record.steers[1].refused
    events = run.sink.events()
    [resumed] = [e for e in events if e["type"] == "resume_started"]
    assert resumed["prompt"] == "stop dawdling: write done.txt"
    steers = [(e["author"], e["delivered"]) for e in events if e["type"] == "steer_received"]
    assert steers == [("ada", True), ("bob", False)]
    log = [(e.command, e.outcome, e.author) for e in read_log(run.folder) if e.command == "steer"]
    assert log == [("steer", "queued", "ada"), ("steer", "queued", "bob"), ("steer", "applied", "ada"),
                   ("steer", "refused", "bob")]
    refused = awp("control", "steer", run.root, "again", "--packet-run", "pr-1", "--prompt", "01")
    assert refused.exit_code == 1 and "no Attempt of prompt 01 is running" in " ".join(refused.output.split())
    assert json.loads(first.output)["author"] == "ada"


def test_relax_lets_the_running_agent_run_complete_with_the_relaxed_item_recorded(
        tmp_path: Path, make_git_repo: Any) -> None:
    front = {"verify": {"files_exist": ["done.txt"], "files_absent": ["secret.txt"]},
             "simulate": {"attempts": [{"messages": ["I cannot make done.txt"], "delay_ms": 2500,
                                        "writes": [{"path": "other.txt", "text": "x"}]}]}}
    run = Running(tmp_path, make_git_repo, front)
    unconfirmed = awp("control", "relax", run.root, "01", "--drop", "files_exist", "--reason", "not needed")
    assert unconfirmed.exit_code == 1 and "--confirm" in unconfirmed.output
    nameless = awp("control", "amend", run.root, "01", "--add-file", "x.txt", "--reason", " ")
    assert nameless.exit_code == 1 and "--reason is mandatory" in nameless.output
    relaxed = awp("control", "relax", run.root, "01", "--drop", "files_exist", "--reason",
                  "the file was never needed", "--confirm", "--author", "ada")
    assert relaxed.exit_code == 0, relaxed.output
    record = run.ended()
    assert record.result == "completed"  # files_absent alone is the contract now, and it passes
    [amendment] = record.amendments
    assert (amendment.direction, amendment.clause, amendment.phase, amendment.author) == (
        "relax", "files_exist", "pre_verify", "ada")
    assert [i.kind for i in record.verifier.items] == ["files_absent"] if record.verifier else False
    assert yaml.safe_load((run.root / "prompts" / "01_work.prompt.md").read_text().split("---")[1])["verify"][
        "files_exist"] == ["done.txt"]  # run-local: the packet's file is as written
    late = awp("control", "amend", run.root, "01", "--add-file", "late.txt", "--reason", "found later", "--json")
    assert json.loads(late.output)[0]["phase"] == "post_success"  # after the AgentRun's contract passed
