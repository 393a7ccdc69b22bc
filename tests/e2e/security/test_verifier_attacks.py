"""The verifier's attack table: the agent's work is a conftest.py that the contract's `python -m pytest` runs,
and files that the file clauses read; `awp run` runs it as its own process.

The runner is started as an operator would start it: a canary secret in its environment (a database
password), a HOME holding a canary SSH key. The `command` agent writes its work: a conftest.py that tries
each row at import and prints a verdict per row (never the row's target), a test that fails so the output
goes into the verifier report and the repair Attempt's prompt, a FIFO and a link to /dev/zero that the
contract's `contains` and `json` name (both ignored by the repo: what git does with them is issue 31's git part).

Each row: in the verifier's sandbox it is denied, nothing lands outside the tree, no canary is in any output,
prompt or store, and the Attempt ends `verification_failed` naming each unmet item. With `isolation: none`
(the verifier beside the runner, as before) each sandbox row gets through, so the table tests the sandbox,
not the script; the runner's secret-named canary is still redacted from every store. An honest row (the
agent's own tests under the same `python -m pytest`) is verified and committed inside the sandbox.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from attack_support import MANIFESTS, QUIET_CLI, agent_provider, script_agent_packet
from e2e_support import git_log, sent_prompt, stored_records

from awp_pipelines.core.isolation.bwrap import unavailable

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "providers"))
from fake_apis import FakeMessagesServer, fake_api  # noqa: E402
from provider_helpers import real_cli  # noqa: E402

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")

SECRET = "canary-9b27c4-runner-env"  # in the runner's environment, under a secret-looking name
SSH_KEY = "canary-4e81d0-operator-ssh-key"  # in the operator's ~/.ssh
SANDBOX_ROWS = ("proc_environ", "home_ssh", "instance", "write_outside", "late_child")
LATE_S = 1  # the detached child's delay, after its check ended, before it edits the tree

CONFTEST = '''
import os, subprocess, sys
from pathlib import Path

TREE = Path(__file__).resolve().parent
rows = {}


def _read(path):
    try:
        return path.read_bytes()
    except OSError:
        return b""


environs = [_read(p / "environ") for p in Path("/proc").glob("[0-9]*")]
# Judged by the variable's name and the key's presence: the work (stored as its diff) holds no canary itself.
rows["proc_environ"] = "LEAK" if any(b"AWP_PG_PASSWORD=" in e for e in environs) else "denied"
rows["home_ssh"] = "LEAK" if _read(Path("%(home)s/.ssh/id_ed25519")) else "denied"
rows["instance"] = "LEAK" if _read(Path("%(instance)s/marker.txt")) else "denied"
try:
    Path("%(outside)s").write_text("written by the verifier\\n")
except OSError:
    pass
# Waits for the check (this pytest) to end, then edits the tree: only a child that outlives it writes.
wait = f"while kill -0 {os.getpid()} 2>/dev/null; do sleep 0.1; done; sleep %(late)s; "
subprocess.Popen(["setsid", "sh", "-c", wait + "echo late > " + str(TREE / "late.txt")],
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                 start_new_session=True)
for name, verdict in rows.items():
    print(f"ROW {name}: {verdict}")
# What an attacker would hand the next session: the values themselves (redacted, or never read).
print("STOLEN", [e.decode(errors="replace") for e in environs if b"AWP_PG_PASSWORD=" in e][:1],
      _read(Path("%(home)s/.ssh/id_ed25519")).decode(errors="replace"))
'''

ATTACK_AGENT = """#!/bin/sh
cat > /dev/null
cat > conftest.py <<'PY'
%(conftest)s
PY
printf 'def test_attack():\\n    assert False, "see the rows above"\\n' > test_attack.py
[ -p notes.md ] || mkfifo notes.md
ln -sf /dev/zero data.json
"""

HONEST_AGENT = """#!/bin/sh
cat > /dev/null
printf 'def add(a, b):\\n    return a + b\\n' > calc.py
printf 'from calc import add\\n\\n\\ndef test_add():\\n    assert add(2, 3) == 5\\n' > test_calc.py
"""

PYTEST = {"exec": sys.executable, "args": ["-m", "pytest", "-q", "-s", "--tb=line", "-p", "no:cacheprovider"]}


def prompt(verify: dict[str, object]) -> str:
    return f"---\n{yaml.safe_dump({'verify': verify})}---\nDo the work.\n"


def run_awp(tmp: Path, make_git_repo, script: str, verify: dict[str, object],  # type: ignore[no-untyped-def]
            isolation: str, claude: FakeMessagesServer | None = None) -> tuple[Path, dict, str]:
    """`awp run` of a one-prompt packet whose `command` agent is `script`; with `claude`, the real Claude Code
    CLI instead, whose one Bash tool call (from the fake Messages API) runs the same script."""
    home = tmp / "operator-home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(SSH_KEY + "\n")
    manifest: dict[str, object] = {"isolation": isolation, "recovery": {"repair": {"max_attempts": 1}}}
    if claude is not None:
        manifest |= {**MANIFESTS["claude"], "accounts": ["a"]}
        claude.command = f"sh -c {shlex.quote(script)} < /dev/null"
    packet, providers = script_agent_packet(tmp, make_git_repo, script, manifest, prompt(verify))
    if claude is not None:
        providers.write_text(yaml.safe_dump(agent_provider(tmp, "claude", claude)))
    # The operator's repo ignores the FIFO and the link: what AWP's git does with them is issue 31's git part.
    (packet / "workspace" / ".gitignore").write_text("notes.md\ndata.json\nlate.txt\n")
    for git in (["add", ".gitignore"], ["commit", "-qm", "ignores"]):
        subprocess.run(["git", *git], cwd=packet / "workspace", check=True)
    (packet / ".awp").mkdir()
    (packet / ".awp" / "marker.txt").write_text("the instance\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "AWP_PG_PASSWORD": SECRET, "LANG": "C.UTF-8",
           "AWP_TEST_AGENT_KEY": "own-key-of-account-a", **QUIET_CLI}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", "from awp_pipelines.cli import main; main()", "run", str(packet),
                           "--providers", str(providers), "--json"], env=env, cwd=tmp, capture_output=True,
                          text=True, timeout=300)
    assert time.monotonic() - started < 240, "a file clause or a check blocked the run"
    [outcome] = json.loads(done.stdout)["prompts"]
    return packet, outcome, done.stdout + done.stderr


def stored_text(packet: Path) -> str:
    """Every file AWP keeps for the packet (records, events, transcripts, diffs), as one text."""
    return "\n".join(p.read_bytes().decode(errors="replace") for p in (packet / ".awp").rglob("*") if p.is_file())


def attack_run(tmp: Path, make_git_repo, isolation: str,  # type: ignore[no-untyped-def]
               claude: FakeMessagesServer | None = None) -> tuple[Path, dict, dict[str, str], str]:
    tree = tmp / "p" / "workspace"
    conftest = CONFTEST % {"home": tmp / "operator-home",
                           "instance": tmp / "p" / ".awp", "outside": tmp / "outside.txt", "late": LATE_S}
    verify = {"commands": [PYTEST], "contains": [{"path": "notes.md", "text": "done"}],
              "json": [{"path": "data.json"}]}
    packet, outcome, output = run_awp(tmp, make_git_repo, ATTACK_AGENT % {"conftest": conftest}, verify, isolation,
                                      claude)
    time.sleep(LATE_S + 1.5)  # a child that outlived its check has written by now
    store = stored_text(packet)
    [first, _repair] = stored(packet, outcome)
    [details] = [item["details"] for item in first["verifier"]["items"] if item["kind"] == "commands"]
    rows = dict(line.removeprefix("ROW ").split(": ", 1) for line in details if line.startswith("ROW "))
    rows["_details"] = "\n".join(details)
    rows["write_outside"] = "LEAK" if (tmp / "outside.txt").exists() else "denied"
    rows["late_child"] = "LEAK" if (tree / "late.txt").exists() else "denied"
    return packet, outcome, rows, output + store


@pytest.mark.parametrize(("isolation", "verdict"), [("sandbox", "denied"), ("none", "LEAK")])
def test_each_attack_from_the_agents_conftest_is_denied_in_the_verifiers_sandbox(
        tmp_path: Path, make_git_repo, isolation: str, verdict: str) -> None:  # type: ignore[no-untyped-def]
    judge(*attack_run(tmp_path, make_git_repo, isolation), isolation, verdict)


def test_the_same_attack_written_by_the_real_claude_code_cli_is_denied(tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    """The work comes from Claude Code's own Bash tool (driven by the local fake Messages API), in its sandbox."""
    real_cli("claude")
    with fake_api("bash") as api:
        found = attack_run(tmp_path, make_git_repo, "sandbox", api)
    judge(*found, "sandbox", "denied")


def judge(packet: Path, outcome: dict, rows: dict[str, str], everything: str, isolation: str, verdict: str) -> None:
    assert {r: rows.get(r) for r in SANDBOX_ROWS} == dict.fromkeys(SANDBOX_ROWS, verdict), rows
    assert SECRET not in everything  # the runner's secret-named variable: never read, or redacted wherever it went
    if isolation == "sandbox":
        assert SSH_KEY not in everything
    else:  # beside the runner the key is read, and nothing knows it for a secret: it reaches the repair prompt
        assert SSH_KEY in everything
    assert (outcome["result"], outcome["state"]) == ("verification_failed", "failed"), outcome
    [record, repair] = stored(packet, outcome)
    assert repair["identity"]["mode"] == "repair" and "Remaining verifier failures" in sent_prompt(repair)
    unmet = "\n".join(d for item in record["verifier"]["items"] for d in item["details"])
    assert f"not a regular file (a FIFO): {packet / 'workspace' / 'notes.md'}" in unmet
    assert "escapes repo 'app' through a symlink (resolves to /dev/zero)" in unmet
    assert len(git_log(packet / "workspace")) == 2  # README, .gitignore: nothing of the attack was committed


def stored(packet: Path, outcome: dict) -> list[dict]:
    """The prompt's Attempt records, first to last."""
    return stored_records(packet, outcome["attempt"].split(".")[0])


def test_an_honest_agents_own_tests_pass_in_the_sandbox_and_are_committed(tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    packet, outcome, output = run_awp(tmp_path, make_git_repo, HONEST_AGENT,
                                      {"commands": [{**PYTEST, "stdout_contains": "1 passed"}]}, "sandbox")
    assert (outcome["result"], outcome["state"]) == ("completed", "completed"), output
    shown = subprocess.run(["git", "show", "HEAD:test_calc.py"], cwd=packet / "workspace", capture_output=True,
                           text=True, check=True).stdout
    assert "assert add(2, 3) == 5" in shown
