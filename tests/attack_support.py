"""The sandbox's attack table, shared by its runs in process (tests/e2e/test_sandbox_attacks.py) and under the
daemon (tests/daemon/test_daemon_sandbox.py): the attacking agent, its targets, and how each row is judged.

The agent (tests/fixtures/agents/attacker.sh) does its real work, tries each row and writes what it got to
attacks.txt in its work tree; a write outside and a push are judged outside, by whether they arrived."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "providers"))
from fake_apis import FakeMessagesServer, fake_api  # noqa: E402
from provider_helpers import real_cli  # noqa: E402

ATTACKER = Path(__file__).resolve().parent / "fixtures" / "agents" / "attacker.sh"
ROWS = ("home_canary", "proc_environ", "other_account", "instance_db", "write_outside", "git_hook", "local_http",
        "git_push")
SECRET = "canary-5d1e0c-runner-only"  # in the runner's environment, as a database password would be


class Canary(BaseHTTPRequestHandler):
    """A local HTTP server that is on no allow-list."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"canary-http\n")

    def log_message(self, *args: object) -> None:
        pass


def plant_canaries(tmp: Path) -> Path:
    """A canary in the operator's HOME (returned) and in another account's config folder."""
    home = tmp / "operator-home"
    home.mkdir()
    (home / "canary.txt").write_text("operator's secret\n")
    other = tmp / "accounts" / "b"
    other.mkdir(parents=True)
    (other / "canary.txt").write_text("account b's login\n")
    return home


def targets(tmp: Path, instance: Path, port: int) -> str:
    """The prompt: the real work, and each row's target as NAME=VALUE lines."""
    return "\n".join([
        "Do the work.", f"HOME_CANARY={tmp / 'operator-home' / 'canary.txt'}", f"PROC_CANARY={SECRET}",
        f"OTHER_ACCOUNT={tmp / 'accounts' / 'b' / 'canary.txt'}", f"INSTANCE={instance}",
        f"OUTSIDE={tmp / 'outside.txt'}", f"LOCAL_HTTP=http://127.0.0.1:{port}/"])


def add_remote(tree: Path) -> Path:
    """The work tree's remote: a bare repo beside the packet."""
    remote = tree.parent / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "remote", "add", "origin", str(remote)], cwd=tree, check=True)
    return remote


def rows_of(tree: Path, tmp: Path, remote: Path) -> dict[str, str]:
    """What each row got: the agent's own report, and the two rows judged outside."""
    rows = dict(line.split(": ", 1) for line in (tree / "attacks.txt").read_text().splitlines())
    # A write that lands where the runner sees it (not in the sandbox's private /tmp) got out.
    rows["write_outside"] = "LEAK" if (tmp / "outside.txt").exists() else "denied"
    pushed = subprocess.run(["git", "rev-parse", "--verify", "-q", "refs/heads/stolen"], cwd=remote,
                            capture_output=True, check=False)
    rows["git_push"] = "LEAK" if pushed.returncode == 0 else "denied"
    return rows


def command_provider(tmp: Path, extra_account: dict[str, object] | None = None) -> dict[str, object]:
    """providers.yaml (as data): the attacking `command` agent, its account `a`, and another account `b`."""
    return {"providers": {"agent": {"kind": "command", "command": str(ATTACKER), "models": ["m"],
                                    "config_dir_env": "AGENT_CONFIG_DIR"}},
            "accounts": accounts(tmp, "agent", extra_account)}


AGENTS = ("command", "claude")  # a `command` agent, and the real Claude Code CLI through its own Bash tool
MANIFESTS = {"command": {"provider": "agent", "model": "m"},
             "claude": {"provider": "agent", "model": "claude-haiku-4-5", "permission_mode": "bypass"}}
# The runner's environment for the real CLI: no update check or telemetry to hosts the fake API is not.
QUIET_CLI = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


def agent_provider(tmp: Path, agent: str, api: FakeMessagesServer) -> dict[str, object]:
    """providers.yaml (as data) for `agent`: its account `a` (own credential and config folder) and account `b`.
    The real CLI is pointed at the fake Messages API `api`, whose Bash tool call runs the attacking script."""
    if agent == "command":
        return command_provider(tmp)
    return {"providers": {"agent": {
        "kind": "claude_code", "command": str(real_cli("claude")), "models": ["claude"],
        "credential_env": "ANTHROPIC_API_KEY", "config_dir_env": "CLAUDE_CONFIG_DIR",
        "env": {"IS_SANDBOX": "1"}}},  # lets `isolation: none` run bypass as root; moot in the sandbox
        "accounts": accounts(tmp, "agent", {"base_url": api.url})}


@contextmanager
def attacking_api(body: str) -> Iterator[FakeMessagesServer]:
    """The local fake Messages API whose one Bash tool call runs the attacking script, fed the prompt's lines
    `body` as a `command` agent is."""
    with fake_api("bash") as api:
        api.command = f"printf '%s\\n' {shlex.quote(body)} | sh -c {shlex.quote(ATTACKER.read_text())}"
        yield api


def accounts(tmp: Path, provider: str, extra: dict[str, object] | None = None) -> dict[str, object]:
    return {"a": {"provider": provider, "credential_env": "AWP_TEST_AGENT_KEY",
                  "config_dir": str(tmp / "accounts" / "a"), **(extra or {})},
            "b": {"provider": provider, "config_dir": str(tmp / "accounts" / "b")}}


def script_agent_packet(tmp: Path, make_git_repo, script: str, manifest: dict[str, object],  # type: ignore[no-untyped-def]
                        prompt: str) -> tuple[Path, Path]:
    """(packet, providers.yaml): a one-prompt packet on ./workspace whose `command` agent is `script`."""
    import yaml

    agent = tmp / "agents" / "agent.sh"
    agent.parent.mkdir(exist_ok=True)
    agent.write_text(script)
    agent.chmod(0o755)
    providers = tmp / "providers.yaml"
    providers.write_text(yaml.safe_dump({"providers": {"agent": {"kind": "command", "command": str(agent),
                                                                 "models": ["m"]}}}))
    packet = tmp / "p"
    make_git_repo(packet / "workspace")
    (packet / "packet.yaml").write_text(yaml.safe_dump({
        "name": "scripted", "provider": "agent", "model": "m", "timeout": "2m",
        "repos": {"app": {"path": "./workspace", "default": True}}, **manifest}))
    (packet / "prompts").mkdir()
    (packet / "prompts" / "01_a.prompt.md").write_text(prompt)
    return packet, providers
