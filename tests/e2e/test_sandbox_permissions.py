"""`permission_mode: plan` means what it says on a `command` agent and on the real OpenCode, which have no plan
mode of their own: the sandbox mounts the work tree read-only, the agent's write fails, the tree is unchanged,
and the Attempt's provenance says the sandbox enforced it. Without the sandbox the same write lands (and `awp
lint` errors)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from attack_support import script_agent_packet
from e2e_support import awp, git_status, stored_records

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "providers"))
from fake_apis import fake_api  # noqa: E402
from provider_helpers import real_cli  # noqa: E402

from awp_pipelines.core.isolation.bwrap import unavailable  # noqa: E402

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")
WRITER = "#!/bin/sh\necho planned > planned.txt && echo 'wrote it' || echo 'could not write'\nexit 0\n"


def planning_packet(tmp: Path, make_git_repo, isolation: str) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    return script_agent_packet(tmp, make_git_repo, WRITER, {"permission_mode": "plan", "isolation": isolation},
                               "---\nid: '01'\n---\nPlan only.\n")


def test_plan_on_a_command_agent_is_enforced_by_the_sandbox(tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    packet, providers = planning_packet(tmp_path, make_git_repo, "sandbox")
    assert awp("lint", packet, "--providers", providers).exit_code == 0
    result = awp("run", packet, "--providers", providers, "--json")
    assert result.exit_code == 0, result.output
    assert not (packet / "workspace" / "planned.txt").exists() and git_status(packet / "workspace") == ""
    [outcome] = json.loads(result.stdout)["prompts"]
    [record] = stored_records(packet, outcome["attempt"].split(".")[0])
    assert record["provenance"]["permission_mode_enforced_by"] == "sandbox"
    modes = {g["path"]: g["mode"] for g in record["isolation"]["grants"]["paths"]}
    assert modes[str(packet / "workspace")] == "ro"


def test_without_the_sandbox_plan_is_not_enforced_and_lint_says_so(tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    packet, providers = planning_packet(tmp_path, make_git_repo, "none")
    lint = awp("lint", packet, "--providers", providers, "--json")
    kinds = {f["kind"]: f["severity"] for f in json.loads(lint.stdout)["findings"]}
    assert lint.exit_code == 1 and kinds["permission_not_enforced"] == "error" and kinds["isolation_none"] == "warning"
    result = awp("run", packet, "--providers", providers, "--json", "--no-commit")
    [outcome] = json.loads(result.stdout)["prompts"]
    assert (packet / "workspace" / "planned.txt").exists()
    [record] = stored_records(packet, outcome["attempt"].split(".")[0])
    assert record["provenance"]["permission_mode_enforced_by"] == "not enforced"


@pytest.mark.parametrize("isolation", ["sandbox", "none"])
def test_plan_on_the_real_opencode_is_enforced_by_the_sandbox(tmp_path: Path, make_git_repo,
                                                              isolation: str) -> None:  # type: ignore[no-untyped-def]
    """OpenCode has no plan mode: its own bash tool writes into the tree, unless the sandbox mounts it
    read-only. The fake Messages API plays the model that calls the tool."""
    packet = tmp_path / "p"
    make_git_repo(packet / "workspace")
    (packet / "packet.yaml").write_text(yaml.safe_dump({
        "name": "planned", "provider": "oc", "model": "anthropic/claude-haiku-4-5", "timeout": "3m",
        "permission_mode": "plan", "accounts": ["oc-a"], "isolation": isolation,
        "repos": {"app": {"path": "./workspace", "default": True}}}))
    (packet / "prompts").mkdir()
    (packet / "prompts" / "01_plan.prompt.md").write_text("---\nid: '01'\n---\nPlan only.\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "AWP_TEST_OC_KEY": "sk-ant-api03-oc-plan-0123456789",
           "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1", "LANG": "C.UTF-8"}
    with fake_api("bash") as api:
        api.command, api.tool_name = "echo planned > planned.txt", "bash"
        providers = tmp_path / "providers.yaml"
        providers.write_text(yaml.safe_dump({
            "providers": {"oc": {"kind": "opencode", "command": str(real_cli("opencode")),
                                 "credential_env": "ANTHROPIC_API_KEY", "models": ["anthropic/"]}},
            "accounts": {"oc-a": {"provider": "oc", "credential_env": "AWP_TEST_OC_KEY",
                                  "base_url": api.url + "/v1"}}}))
        done = subprocess.run([sys.executable, "-c", "from awp_pipelines.cli import main; main()", "run", str(packet),
                               "--providers", str(providers), "--json", "--no-commit"], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
    [outcome] = json.loads(done.stdout)["prompts"]
    [record] = stored_records(packet, outcome["attempt"].split(".")[0])
    assert any(e for e in api.requests), done.stderr  # the real CLI reached the fake API
    if isolation == "sandbox":
        assert not (packet / "workspace" / "planned.txt").exists() and git_status(packet / "workspace") == ""
        assert record["provenance"]["permission_mode_enforced_by"] == "sandbox"
    else:
        assert (packet / "workspace" / "planned.txt").read_text() == "planned\n", record["failure"]
        assert record["provenance"]["permission_mode_enforced_by"] == "not enforced"
