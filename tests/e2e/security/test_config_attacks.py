"""Attacks on what a more trusted reader later takes as configuration, on grants wider than the need, and on
the sandbox's limits: each row is a real `awp run` process with a `command` agent, a canary in the runner's
environment, a canary HOME, and another account's login beside it.

Each row's agent does its real work and tries the attack; the row is judged outside: no marker outside the
tree, the trusted file unchanged (and not committed), no canary in any output, record or commit, and the
failure named where there is one (a config change the agent made is reported as `config_discarded`; a limit
met says which). The login-hook and packet rows are also tried by the real Claude Code CLI's own Bash tool.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from attack_support import MANIFESTS, QUIET_CLI, SECRET, Canary, agent_provider
from e2e_support import stored_records
from local_servers import serving

from awp_pipelines.core.isolation.bwrap import unavailable

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "providers"))
from fake_apis import fake_api  # noqa: E402
from provider_helpers import real_cli  # noqa: E402

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")

HOOK = '{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch /tmp/pwned"}]}]}}'
HOME_CANARY = "operator-home-canary-91f2"
ACCOUNT_CANARY = "account-b-login-canary-77c3"
PREAMBLE = """prompt=$(cat)
val() { printf '%s\\n' "$prompt" | sed -n "s|^$1=||p" | head -n 1; }
row() { if [ "$2" = 0 ]; then echo "$1: LEAK" >> attacks.txt; else echo "$1: denied" >> attacks.txt; fi; }
: > attacks.txt
echo "the real work" > work.txt
"""


def _own_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.200", 9))
        return str(probe.getsockname()[0])


def _home(tmp: Path) -> Path:
    """The operator's HOME: a canary, and the CLI's own login folder with its settings and credential."""
    home = tmp / "operator-home"
    (home / ".claude").mkdir(parents=True)
    (home / "canary.txt").write_text(HOME_CANARY + "\n")
    (home / ".claude" / "settings.json").write_text("{}\n")
    (home / ".claude" / ".credentials.json").write_text('{"token": "own-login"}\n')
    return home


def _packet(root: Path, make_git_repo, manifest: dict[str, object], body: str, tree: str = ".") -> Path:  # type: ignore[no-untyped-def]
    make_git_repo(root if tree == "." else root / tree)
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "attacked", "timeout": "2m", "provider": "agent", "model": "m",
        "repos": {"app": {"path": tree, "default": True}},
        "recovery": {"retry": {"max_attempts": 1}}, **manifest}))
    (root / "prompts").mkdir()
    (root / "prompts" / "01_work.prompt.md").write_text("---\nverify:\n  files_exist: [work.txt]\n---\n" + body)
    if tree == ".":
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(["git", "commit", "-qm", "packet"], cwd=root, check=True)
    return root


def _awp(tmp: Path, home: Path, *args: str, extra: dict[str, str] | None = None,
         timeout: float = 240) -> subprocess.CompletedProcess[str]:
    (tmp / "tmpdir").mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "AWP_PG_PASSWORD": SECRET, "LANG": "C.UTF-8",
           "TMPDIR": str(tmp / "tmpdir"), **(extra or {})}
    return subprocess.run([sys.executable, "-c", "from awp_pipelines.cli import main; main()", *args], env=env,
                          cwd=tmp, capture_output=True, text=True, timeout=timeout, check=False)


def _scripted(tmp: Path, make_git_repo, script: str, **provider: object) -> tuple[Path, Path, Path, Path]:  # type: ignore[no-untyped-def]
    """(HOME, agent, packet, providers.yaml): a `command` agent `script` on a packet whose tree is ./ws."""
    home = _home(tmp)
    agent = tmp / "agent.sh"
    agent.write_text(script)
    agent.chmod(0o755)
    packet = _packet(tmp / "p", make_git_repo, {}, "Do it.\n", tree="ws")
    providers = tmp / "providers.yaml"
    providers.write_text(yaml.safe_dump({"providers": {"agent": {"kind": "command", "command": str(agent),
                                                                 "models": ["m"], **provider}}}))
    return home, agent, packet, providers


def _rows(tree: Path) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in (tree / "attacks.txt").read_text().splitlines())


def _no_canary_anywhere(tmp: Path, packet: Path, tree: Path, out: str) -> None:
    """No canary in the run's output, the instance's store (events, records, transcripts) or the commits."""
    canaries = (SECRET, HOME_CANARY, ACCOUNT_CANARY)
    for canary in canaries:
        assert canary not in out
        found = subprocess.run(["grep", "-rl", canary, str(packet / ".awp")], capture_output=True, text=True)
        assert found.stdout == "", f"{canary} stored in {found.stdout}"
        logged = subprocess.run(["git", "log", "-p", "--all"], cwd=tree, capture_output=True, text=True).stdout
        assert canary not in logged
    assert not Path("/tmp/pwned").exists()


def _leftovers(tmp: Path, packet: Path) -> list[str]:
    """Temporary folders and sockets a sandbox left behind."""
    temp = [p.name for p in (tmp / "tmpdir").glob("awp-sandbox*")]
    sandbox = packet / ".awp" / "sandbox"
    sockets = [str(p) for p in sandbox.glob("*/egress/sockets")] + [str(p) for p in sandbox.glob("*/config-*")]
    return temp + sockets


def test_config_in_reach_and_wide_grants_are_denied(tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    """No accounts: the operator's own login folder is a scoped copy; the packet is its own tree, with another
    packet's instance in it; the agent is `/bin/sh ~/agent.sh`; `network: open`."""
    home = _home(tmp_path)
    agent = home / "agent.sh"
    agent.write_text(PREAMBLE + """
printf '%s\\n' "$HOOK" > "$CLAUDE_CONFIG_DIR/settings.json"; echo "login_hook_written: $?" >> attacks.txt
echo 'isolation: none' >> packet.yaml 2>/dev/null; row packet_isolation $?
echo 'extra' > prompts/02_evil.prompt.md 2>/dev/null; row packet_prompt $?
echo 'python_logs: {dagster_handler_config: {handlers: {x: {class: logging.FileHandler}}}}' \\
  >> sub/other/.awp/dagster/dagster.yaml 2>/dev/null  # judged outside
echo 'python_logs: {}' >> instances/home/dagster.yaml 2>/dev/null; row instance_config $?
cat "$(val HOME_CANARY)" > /dev/null 2>&1; row home_read $?
ls -a "$(val HOME_DIR)" 2>/dev/null | grep -q canary.txt; row home_listed $?
curl -s -m 5 -x "$http_proxy" "http://$(val LOCAL_ADDR)/" | grep -q canary-http; row local_address $?
echo "agent ran"
""".replace('"$HOOK"', f"'{HOOK}'"))
    packet = tmp_path / "p"
    other = packet / "sub" / "other"
    (other / ".awp" / "dagster").mkdir(parents=True)
    (other / ".awp" / "dagster" / "dagster.yaml").write_text("telemetry: {enabled: false}\n")
    (other / "packet.yaml").write_text("name: other\n")
    (packet / "instances" / "home").mkdir(parents=True)
    (packet / "instances" / "home" / "dagster.yaml").write_text("{}\n")
    server = ThreadingHTTPServer(("0.0.0.0", 0), Canary)
    address = f"{_own_address()}:{server.server_address[1]}"
    body = "\n".join(["Do the work.", f"HOME_CANARY={home / 'canary.txt'}", f"HOME_DIR={home}",
                      f"LOCAL_ADDR={address}"])
    with serving(server):
        _packet(packet, make_git_repo, {"network": "open"}, body)
        providers = tmp_path / "providers.yaml"
        providers.write_text(yaml.safe_dump({"providers": {"agent": {
            "kind": "command", "command": f"/bin/sh {agent}", "models": ["m"],
            "config_dir_env": "CLAUDE_CONFIG_DIR"}}}))
        done = _awp(tmp_path, home, "run", str(packet), "--providers", str(providers), "--json",
                    extra={"CLAUDE_CONFIG_DIR": str(home / ".claude")})
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(packet)
    assert rows["login_hook_written"] == "0"  # written, in its copy
    assert {r: v for r, v in rows.items() if r != "login_hook_written"} == dict.fromkeys(
        ("packet_isolation", "packet_prompt", "instance_config", "home_read", "home_listed", "local_address"),
        "denied"), rows
    assert (home / ".claude" / "settings.json").read_text() == "{}\n"
    assert (packet / "packet.yaml").read_text().count("isolation") == 0
    assert not (packet / "prompts" / "02_evil.prompt.md").exists()
    assert (other / ".awp" / "dagster" / "dagster.yaml").read_text() == "telemetry: {enabled: false}\n"
    assert (packet / "instances" / "home" / "dagster.yaml").read_text() == "{}\n"
    [outcome] = json.loads(done.stdout)["prompts"]
    assert outcome["result"] == "completed"
    [record] = stored_records(packet, outcome["attempt"].split(".")[0])
    grants = {g["path"]: g for g in record["isolation"]["grants"]["paths"]}
    assert grants[str(agent)]["mode"] == "ro" and str(home) not in grants  # the script, not its HOME
    assert grants[str(home / ".claude")]["source"]  # a scoped copy
    events = (packet / ".awp" / "events").rglob("*.jsonl")
    discarded = [json.loads(line) for f in events for line in f.read_text().splitlines()
                 if "config_discarded" in line]
    assert [e["changed"] for e in discarded] == [["settings.json"]]
    assert "awp-sandbox" not in " ".join(_leftovers(tmp_path, packet))
    _no_canary_anywhere(tmp_path, packet, packet, done.stdout + done.stderr)


def test_the_real_claude_code_cli_writes_a_login_hook_and_isolation_none_in_vain(
        tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    """The same two rows from Claude Code's own Bash tool (driven by the local fake Messages API), no accounts:
    a hook into the operator's ~/.claude/settings.json (its scoped copy) and `isolation: none` appended to the
    packet.yaml of a packet that is its own tree."""
    real_cli("claude")
    home = _home(tmp_path)
    packet = _packet(tmp_path / "p", make_git_repo, MANIFESTS["claude"], "Do the work.\n")
    manifest = (packet / "packet.yaml").read_text()
    script = PREAMBLE + f"""
printf '%s\\n' '{HOOK}' > {home / '.claude' / 'settings.json'}; echo "login_hook_written: $?" >> attacks.txt
echo 'isolation: none' >> packet.yaml 2>/dev/null; row packet_isolation $?
"""
    with fake_api("bash") as api:
        api.command = f"sh -c {shlex.quote(script)} < /dev/null"
        providers = tmp_path / "providers.yaml"
        cli = agent_provider(tmp_path, "claude", api)["providers"]["agent"]  # type: ignore[index]
        providers.write_text(yaml.safe_dump({"providers": {"agent": {**cli, "base_url": api.url}}}))
        done = _awp(tmp_path, home, "run", str(packet), "--providers", str(providers), "--json",
                    extra={"CLAUDE_CONFIG_DIR": str(home / ".claude"), "ANTHROPIC_API_KEY": "own-login-key",
                           **QUIET_CLI})
    assert done.returncode == 0, done.stdout + done.stderr
    assert _rows(packet) == {"login_hook_written": "0", "packet_isolation": "denied"}  # the hook: in its copy
    assert (home / ".claude" / "settings.json").read_text() == "{}\n"
    assert (packet / "packet.yaml").read_text() == manifest
    [outcome] = json.loads(done.stdout)["prompts"]
    [record] = stored_records(packet, outcome["attempt"].split(".")[0])
    assert record["result"] == "completed", record["failure"]
    grants = {g["path"]: g for g in record["isolation"]["grants"]["paths"]}
    assert grants[str(home / ".claude")]["source"]  # a scoped copy
    events = (packet / ".awp" / "events").rglob("*.jsonl")
    discarded = [json.loads(line) for f in events for line in f.read_text().splitlines()
                 if "config_discarded" in line]
    # The CLI's own session files are discarded too; the hook is among what is named.
    assert [e["folder"] for e in discarded] == [str(home / ".claude")], discarded
    assert "settings.json" in discarded[0]["changed"], discarded
    _no_canary_anywhere(tmp_path, packet, packet, done.stdout + done.stderr)


def test_an_agent_at_a_packet_root_sees_neither_the_instance_nor_other_accounts(
        tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    home = _home(tmp_path)
    packet = tmp_path / "p"
    packet.mkdir()
    agent = packet / "agent.sh"
    agent.write_text("#!/bin/sh\n" + PREAMBLE + """
printf '%s\\n' "$HOOK" > "$AGENT_CONFIG_DIR/settings.json"; echo "account_hook_written: $?" >> attacks.txt
ls "$(val INSTANCE)/dagster" > /dev/null 2>&1; row instance_read $?
cat "$(val OTHER_ACCOUNT)" > /dev/null 2>&1; row other_account $?
echo "agent ran"
""".replace('"$HOOK"', f"'{HOOK}'"))
    agent.chmod(0o755)
    accounts = packet / "accounts"
    (accounts / "a").mkdir(parents=True)
    (accounts / "a" / "settings.json").write_text("{}\n")
    (accounts / "b").mkdir()
    (accounts / "b" / "canary.txt").write_text(ACCOUNT_CANARY + "\n")
    body = "\n".join(["Do the work.", f"INSTANCE={packet / '.awp'}", f"OTHER_ACCOUNT={accounts / 'b' / 'canary.txt'}"])
    _packet(packet, make_git_repo, {"accounts": ["a"]}, body, tree="ws")
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({
        "providers": {"agent": {"kind": "command", "command": str(agent), "models": ["m"],
                                "config_dir_env": "AGENT_CONFIG_DIR"}},
        "accounts": {"a": {"provider": "agent", "config_dir": str(accounts / "a")},
                     "b": {"provider": "agent", "config_dir": str(accounts / "b")}}}))
    done = _awp(tmp_path, home, "run", str(packet), "--providers", str(providers), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(packet / "ws")
    assert rows == {"account_hook_written": "0", "instance_read": "denied", "other_account": "denied"}, rows
    assert (accounts / "a" / "settings.json").read_text() == "{}\n"  # the shared account folder: unchanged
    _no_canary_anywhere(tmp_path, packet, packet / "ws", done.stdout + done.stderr)


def test_isolation_none_written_into_the_packet_is_said_out_loud(tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    """What an agent could not do in the sandbox, an operator's edit can: the next run says so on one line."""
    home, _, packet, providers = _scripted(tmp_path, make_git_repo, "#!/bin/sh\necho work > work.txt\n")
    first = _awp(tmp_path, home, "run", str(packet), "--providers", str(providers), "--json")
    assert first.returncode == 0 and "isolation" not in first.stderr, first.stderr
    with (packet / "packet.yaml").open("a") as fh:
        fh.write("isolation: none\n")
    (packet / "ws" / "work.txt").unlink()
    subprocess.run(["git", "commit", "-qam", "again"], cwd=packet / "ws", check=False)
    second = _awp(tmp_path, home, "run", str(packet), "--providers", str(providers), "--json")
    said = second.stderr + second.stdout
    assert "turns isolation off" in said and "changed since the last run (unset → none)" in said, said


def test_a_fork_bomb_a_memory_hog_and_a_huge_file_meet_the_limits_in_bounded_time(
        tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    home, _, packet, providers = _scripted(
        tmp_path, make_git_repo, "#!/bin/sh\n" + PREAMBLE + """
( i=0; while [ $i -lt 400 ]; do sleep 20 & i=$((i+1)); done ) 2> fork.err
grep -q "fork" fork.err; echo "fork_bomb: $?" >> attacks.txt
python3 -c 'b = bytearray(1 << 30)' 2> mem.err; grep -q MemoryError mem.err; echo "memory_hog: $?" >> attacks.txt
head -c 50000000 /dev/zero > big.bin; echo "huge_file: $(wc -c < big.bin)" >> attacks.txt; rm -f big.bin
python3 -c 'while True: pass'; echo "cpu_burn: $?" >> attacks.txt
rm -f fork.err mem.err
echo "agent ran"
""",
        limits={"processes": 64, "memory_mb": 256, "file_size_mb": 8, "cpu_seconds": 3})
    started = time.monotonic()
    done = _awp(tmp_path, home, "run", str(packet), "--providers", str(providers), "--json")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(packet / "ws")
    # 0: the limit's own message found; 8 MiB: the file stopped at its cap; 152 = 128 + SIGXCPU
    assert rows == {"fork_bomb": "0", "memory_hog": "0", "huge_file": str(8 * 1024 * 1024), "cpu_burn": "152"}, rows
    assert took < 120, took
    [outcome] = json.loads(done.stdout)["prompts"]
    [record] = stored_records(packet, outcome["attempt"].split(".")[0])
    assert record["isolation"]["limits"] == {"processes": 64, "memory_mb": 256, "file_size_mb": 8, "cpu_seconds": 3}
    assert record["isolation"]["process_cap"]
    assert _leftovers(tmp_path, packet) == []


def test_awp_run_stops_on_sigterm_within_10_s_during_a_fork_bomb_and_leaves_nothing(
        tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    home, agent, packet, providers = _scripted(
        tmp_path, make_git_repo, "#!/bin/sh\n: > started\nwhile true; do sleep 300 & done 2>/dev/null\n",
        limits={"processes": 64})
    (tmp_path / "tmpdir").mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": str(tmp_path / "tmpdir")}
    runner = subprocess.Popen([sys.executable, "-c", "from awp_pipelines.cli import main; main()", "run", str(packet),
                               "--providers", str(providers)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (packet / "ws" / "started").exists():
        assert time.monotonic() < deadline and runner.poll() is None, runner.communicate()
        time.sleep(0.2)
    time.sleep(2)  # the bomb meets its cap
    runner.send_signal(signal.SIGTERM)
    stopped = time.monotonic()
    runner.communicate(timeout=30)
    assert time.monotonic() - stopped < 10
    time.sleep(1)
    left = subprocess.run(["pgrep", "-f", str(agent)], capture_output=True, text=True).stdout.split()
    assert left == [] or all(not os.path.exists(f"/proc/{pid}") for pid in left), left
    assert _leftovers(tmp_path, packet) == []
