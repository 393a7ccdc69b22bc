"""The git attack table of issue 31: a `command` agent prepares its work tree against AWP's git (the part of
the work AWP handles as the runner, outside the sandbox, after the session), run by `awp run` in its own
process, with a canary secret in its environment, a canary HOME and a second repository on the host.

One row per attack, with `isolation: sandbox` (the `.git` is read-only inside: the attack is denied, the honest
work in the same Attempt is committed) and with `isolation: none` (the attack lands in the tree: the tamper check
ends the Attempt `tree_tampered` before AWP's first git step). AWP's git is libgit2 now (issue 38): the rows show
the sandbox's read-only `.git` and the tamper check; what libgit2 runs (nothing) is shown by
tests/core/records/test_git_enumeration.py. Every row: no marker outside the tree, the
second repository untouched, the canary in no output or store, the run ended in bounded time, and its failure
named where it is one. The digest rows (links to /dev/zero, to a FIFO, to a folder, a name with a newline)
complete; the secret row ends `secret_in_work` in both, its key in no git object. One more row in the sandbox:
the real Claude Code CLI runs the same script through its own Bash tool, trying three attacks in one Attempt.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from attack_support import MANIFESTS, QUIET_CLI, agent_provider
from e2e_support import stored_records

from awp_pipelines.core.isolation.bwrap import unavailable

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "providers"))
from fake_apis import FakeMessagesServer, fake_api  # noqa: E402
from provider_helpers import real_cli  # noqa: E402

SECRET = "canary-2b7e-runner-only-password"  # in the runner's environment, as a database password would be
AGENT_KEY = "agent-own-key-4c1d9e"  # the Attempt's own credential, which its agent gets
AGENT = r"""#!/bin/sh
prompt=$(cat)
val() { printf '%s\n' "$prompt" | sed -n "s|^$1=||p" | head -n 1; }
row=$(val ROW); mark=$(val MARK); out=$(val OUT); second=$(val SECOND)
echo "the real work" > work.txt
evil_config() {  # fsmonitor and hooks in git dir $1 that append to the marker, outside the tree
  mkdir -p "$1/evil-hooks" || return 1
  for h in pre-commit post-commit post-index-change reference-transaction; do
    printf '#!/bin/sh\necho %s >> %s\n' "$h" "$mark" > "$1/evil-hooks/$h" && chmod +x "$1/evil-hooks/$h"
  done
  printf '[core]\n\tfsmonitor = "echo fsmonitor >> %s; false"\n\thooksPath = %s\n' "$mark" "$1/evil-hooks" \
    >> "$1/config"
}
for r in $row; do  # one row per `command` run; the Claude Code row tries several
case "$r" in
  commondir_program) cp -a .git .agent-git && evil_config .agent-git && echo "$PWD/.agent-git" > .git/commondir ;;
  commondir_second) echo "$second/.git" > .git/commondir ;;
  new_git_dir) mv .git .git-aside && cp -a .git-aside .git && evil_config .git ;;
  index_link) rm -f .git/index && ln -s "$out" .git/index ;;
  reflog_link) rm -f .git/logs/HEAD && ln -s "$out" .git/logs/HEAD ;;
  hook) printf '#!/bin/sh\necho hook >> %s\n' "$mark" > .git/hooks/pre-commit \
    && cp .git/hooks/pre-commit .git/hooks/post-commit && chmod +x .git/hooks/pre-commit .git/hooks/post-commit ;;
  digest_zero) ln -s /dev/zero zero ;;
  digest_fifo) mkfifo "$PWD/.fifo" && ln -s "$PWD/.fifo" fifo-link ;;
  digest_names) ln -s /usr dir-link && printf 'x\n' > "$(printf 'new\nline.txt')" ;;
  secret) echo "key: $AWP_TEST_AGENT_KEY" >> work.txt ;;
esac
echo "row $r: $?"
done
"""
GIT_ROWS = ("commondir_program", "commondir_second", "new_git_dir", "index_link", "reflog_link", "hook")
DIGEST_ROWS = ("digest_zero", "digest_fifo", "digest_names")
ROWS = ("honest", *GIT_ROWS, *DIGEST_ROWS, "secret")


def expected(row: str, isolation: str) -> str:
    """The Attempt's result: the attack denied inside the sandbox (the work committed), caught outside it.
    `row`: one row, or several separated by spaces (tried in one Attempt)."""
    if row == "secret":
        return "secret_in_work"
    if set(row.split()) & set(GIT_ROWS) and isolation == "none":
        return "tree_tampered"
    return "completed"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def build(tmp: Path, make_git_repo: Any, row: str, isolation: str,
          claude: FakeMessagesServer | None = None) -> tuple[Path, Path, dict[str, str]]:
    """(packet, providers.yaml, the prompt's targets): a one-prompt packet on ./workspace, its `command` agent
    with its own credential (account `a`); with `claude`, the real Claude Code CLI instead, whose one Bash tool
    call (from the fake Messages API) runs the same script, fed the prompt's lines as the `command` agent is."""
    agent = tmp / "agents" / "agent.sh"
    agent.parent.mkdir()
    agent.write_text(AGENT)
    agent.chmod(0o755)
    providers = tmp / "providers.yaml"
    providers.write_text(yaml.safe_dump({
        "providers": {"agent": {"kind": "command", "command": str(agent), "models": ["m"]}},
        "accounts": {"a": {"provider": "agent", "credential_env": "AWP_TEST_AGENT_KEY",
                           "config_dir": str(tmp / "accounts" / "a")}}}))
    (tmp / "accounts" / "a").mkdir(parents=True)
    packet = tmp / "p"
    make_git_repo(packet / "workspace")
    (packet / "packet.yaml").write_text(yaml.safe_dump({
        "name": "gitattack", "provider": "agent", "model": "m", "timeout": "2m", "accounts": ["a"],
        "isolation": isolation, "repos": {"app": {"path": "./workspace", "default": True}},
        **(MANIFESTS["claude"] if claude else {})}))
    (packet / "prompts").mkdir()
    places = {"ROW": row, "MARK": str(tmp / "marker"), "OUT": str(tmp / "outside" / "planted"),
              "SECOND": str(tmp / "second")}
    front = {"verify": {"files_exist": ["work.txt"]}}
    body = "Do the work.\n" + "\n".join(f"{k}={v}" for k, v in places.items())
    (packet / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\n{body}\n")
    (tmp / "outside").mkdir()
    if claude is not None:
        providers.write_text(yaml.safe_dump(agent_provider(tmp, "claude", claude)))
        claude.command = f"printf '%s\\n' {shlex.quote(body)} | sh -c {shlex.quote(AGENT)}"
    return packet, providers, places


def awp_run(tmp: Path, packet: Path, providers: Path) -> subprocess.CompletedProcess[str]:
    home = tmp / "operator-home"
    home.mkdir()
    (home / "canary.txt").write_text("operator's secret\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "AWP_PG_PASSWORD": SECRET, "AWP_TEST_AGENT_KEY": AGENT_KEY,
           "LANG": "C.UTF-8", **QUIET_CLI}
    return subprocess.run([sys.executable, "-c", "from awp_pipelines.cli import main; main()", "run", str(packet),
                           "--providers", str(providers), "--json"], env=env, cwd=tmp, capture_output=True,
                          text=True, timeout=240)


# The git metadata rows run in both modes: the sandbox's read-only `.git` stops them inside, and without it AWP's
# hardened git and the tamper check must. The digest, honest and secret rows meet the same code either way (the
# digest and the push protection run outside the sandbox), so they run once, sandboxed, as an Attempt runs by
# default (tests/core/records/test_git_hardening.py tests the digest's reads, tests/core/engine/test_untrusted_work.py
# the push protection on the engine).
TABLE = [(row, isolation) for row in GIT_ROWS for isolation in ("sandbox", "none")] + [
    (row, "sandbox") for row in ("honest", *DIGEST_ROWS, "secret")]


@pytest.mark.parametrize(("row", "isolation"), TABLE, ids=[f"{r}-{i}" for r, i in TABLE])
def test_git_attack_rows(tmp_path: Path, make_git_repo: Any, row: str, isolation: str) -> None:
    if isolation == "sandbox" and unavailable() is not None:
        pytest.skip(f"no sandbox here: {unavailable()}")
    attack_and_judge(tmp_path, make_git_repo, row, isolation)


@pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")
def test_the_git_attacks_from_the_real_claude_code_clis_bash_tool_are_denied(tmp_path: Path,
                                                                             make_git_repo: Any) -> None:
    """Claude Code's own Bash tool (driven by the local fake Messages API) plants a commondir whose config runs
    a program, an index linked outside and pre-commit/post-commit hooks, then the work: in the sandbox the
    `.git` is read-only, so none lands and the work is committed."""
    real_cli("claude")
    with fake_api("bash") as api:
        attack_and_judge(tmp_path, make_git_repo, "commondir_program index_link hook", "sandbox", api)
    # The script ran in the CLI's Bash tool, and each attack failed there (a nonzero status per row).
    said = tool_output(api)
    assert all(f"row {r}: 0" not in said and f"row {r}: " in said for r in ("commondir_program", "index_link",
                                                                         "hook")), said


def tool_output(api: FakeMessagesServer) -> str:
    """What the CLI sent back to the model as its Bash tool's result."""
    return "\n".join(json.dumps(block.get("content")) for body in api.bodies for message in body["messages"]
                     if isinstance(message["content"], list) for block in message["content"]
                     if block.get("type") == "tool_result")


def attack_and_judge(tmp_path: Path, make_git_repo: Any, row: str, isolation: str,
                     claude: FakeMessagesServer | None = None) -> None:
    second = make_git_repo(tmp_path / "second")
    second_refs = git(second, "for-each-ref")
    packet, providers, places = build(tmp_path, make_git_repo, row, isolation, claude)
    tree = packet / "workspace"
    head = git(tree, "rev-parse", "HEAD")
    done = awp_run(tmp_path, packet, providers)  # bounded: a hang fails the test at the timeout
    want = expected(row, isolation)
    assert done.returncode == (0 if want == "completed" else 1), done.stdout + done.stderr
    [outcome] = json.loads(done.stdout)["prompts"]
    [record] = stored_records(packet, outcome["attempt"].split(".")[0])
    assert record["result"] == want, record["failure"]
    # Nothing landed outside the tree, nothing in the second repository.
    assert not Path(places["MARK"]).exists(), Path(places["MARK"]).read_text()
    assert not Path(places["OUT"]).exists()
    assert git(second, "for-each-ref") == second_refs
    # The canaries are in no output and no store.
    stored = json.dumps(record) + done.stdout + done.stderr
    assert SECRET not in stored and AGENT_KEY not in stored and "operator's secret" not in stored
    if want == "completed":
        assert "the real work" in git(tree, "show", "HEAD:work.txt")
        assert git(tree, "log", "-1", "--format=%B").count("AWP-Attempt:") == 1
    else:  # nothing committed or checkpointed: the branch (read as a file: git would follow a commondir) stayed
        assert record["commits"] == [] and record["wip"] == {}
        git_dir = tree / (".git-aside" if row == "new_git_dir" else ".git")
        assert (git_dir / "refs" / "heads" / "main").read_text() == head
    if want == "tree_tampered":
        assert ".git" in record["failure"]["message"] and not record["failure"]["retryable"]
    if row == "secret":
        assert "work.txt line 2" in record["failure"]["message"]
        assert AGENT_KEY not in subprocess.run(["git", "-C", str(tree), "log", "--all", "-p"], capture_output=True,
                                               text=True, check=False).stdout
