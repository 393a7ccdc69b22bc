"""The SDK's event stream of a daemon-driven packet run: examples/print_tool_calls.py, started before the run is
launched from the UI, prints each tool call of the agent (an OpenCode-format CLI that makes one every 2 s) as it
happens, then the packet run's end, read from the instance and the Attempts' event files."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from deployment import REPO_ROOT, all_finished, deployment, embedded_home, init_workspaces, make_project
from e2e_support import runs_of_packet

pytestmark = pytest.mark.slow
AGENT = """#!/usr/bin/env python3
import json, time
for i, name in enumerate(["one.txt", "two.txt", "three.txt"]):
    open(name, "w").write(name)
    print(json.dumps({"type": "tool_use", "sessionID": "ses_1", "part": {"type": "tool", "tool": "write",
          "callID": f"call_{i}", "state": {"status": "completed", "input": {"filePath": name}, "output": ""}}}),
          flush=True)
    time.sleep(2)
print(json.dumps({"type": "step_finish", "sessionID": "ses_1", "part": {"type": "step-finish", "cost": 0.001,
      "tokens": {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}}}}), flush=True)
"""


def test_an_sdk_script_prints_every_tool_call_of_a_daemon_driven_run_as_it_happens(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.write_text(AGENT)
    agent.chmod(0o755)
    src = tmp_path / "src" / "tools"
    (src / "prompts").mkdir(parents=True)
    (src / "packet.yaml").write_text(yaml.safe_dump({
        "name": "tools", "provider": "agent", "model": "m", "accounts": ["oc"],
        "repos": {"app": {"path": "./workspace", "default": True}}}))
    front = {"verify": {"files_exist": ["one.txt", "two.txt", "three.txt"]}}
    (src / "prompts" / "01_write.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWrite three files.\n")
    providers = yaml.safe_dump({
        "providers": {"agent": {"kind": "opencode", "command": str(agent), "models": ["m"], "isolation": "none"}},
        "accounts": {"oc": {"provider": "agent", "credential_env": "AWP_TEST_AGENT_KEY"}}})
    project = make_project(tmp_path / "project", {"tools": src}, providers)
    init_workspaces(project, ["tools"])
    home = embedded_home(tmp_path / "home")
    with deployment(home, project, {"AWP_TEST_AGENT_KEY": "k-test"}) as dep:
        script = subprocess.Popen([sys.executable, str(REPO_ROOT / "examples" / "print_tool_calls.py"),
                                   str(project / "assets" / "tools"), "--instance", str(home)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: list[tuple[float, str]] = []
        reader = threading.Thread(target=lambda: lines.extend((time.monotonic(), line.strip())
                                                              for line in script.stdout or ()))
        reader.start()
        try:
            dep.launch_job("packet__tools")
            script.wait(timeout=240)
            reader.join(10)
            with dep.instance() as instance:
                assert all_finished(instance, runs_of_packet(instance, "tools"))
        finally:
            if script.poll() is None:
                script.kill()
    assert script.returncode == 0, script.stderr.read() if script.stderr else ""
    calls = [(at, text) for at, text in lines if " write " in text]
    assert [text.split(" write ")[1] for _, text in calls] == [
        '{"filePath": "one.txt"}', '{"filePath": "two.txt"}', '{"filePath": "three.txt"}']
    assert all(text.startswith("01 pr-") for _, text in calls)
    assert calls[-1][0] - calls[0][0] >= 2  # each printed as the agent made it (2 s apart), not at the end
    assert lines[-1][1].startswith("packet run pr-") and lines[-1][1].endswith("ended completed")
