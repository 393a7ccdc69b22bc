"""Issue 38's git attack rows, through a real `awp run` with a canary secret in the runner's environment and a
canary HOME, for a `command` agent and for the real Claude Code CLI (its Bash tool, driven by the local fake
Messages API), batched: one packet of three prompts, one row each.

- 01 `nested`: the agent makes a repository in its tree whose config runs a clean filter and an fsmonitor that
  dump their environment outside the tree (git would run them as the runner on the outer `git add`/`status`);
- 02 `verifier`: the contract runs the agent's `check.sh`, which writes MERGE_HEAD, moves the branch to a forged
  commit and stages a nested repository before AWP's commit;
- 03 `honest`: plain work.

Every row completes and is committed (the nested repository as files, never a gitlink; the commit with its one
recorded parent); no marker lands outside the tree; the canaries are in no output, record, commit or request.
A second packet, with `isolation: none`, has its agent forge a commit whose trailers name the next prompt's
Attempt: the branch moved, so the Attempt ends `tree_tampered`, and the forged commit is never adopted.
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

SECRET = "canary-38b1-runner-only-password"
AGENT_KEY = "agent-own-key-38b1"
# The row is read off the tree (the same script serves the `command` agent and Claude Code's Bash tool).
AGENT = r"""#!/bin/sh
cat >/dev/null 2>&1 || true
mark=@MARK@
if [ ! -d vendor/lib ]; then
  row=nested
  mkdir -p vendor/lib && cd vendor/lib && git init -q && git config user.email a@b && git config user.name a \
    && git config filter.canary.clean "sh -c 'env >> $mark; cat'" && git config filter.canary.required true \
    && git config core.fsmonitor "sh -c 'env >> $mark; false'" && printf '* filter=canary\n' > .gitattributes \
    && echo 'x = 1' > code.py && git add -A && git commit -qm nested; cd ../..
elif [ ! -f check.sh ]; then
  row=verifier
  cat > check.sh <<'EOF'
git rev-parse HEAD > .git/MERGE_HEAD 2>/dev/null
forged=$(git commit-tree -p HEAD -m "forged

AWP-Attempt: forged.01.a1" "$(git rev-parse 'HEAD^{tree}')" 2>/dev/null) && git update-ref refs/heads/main "$forged"
mkdir -p n && git -C n init -q 2>/dev/null; echo n > n/file; git add n 2>/dev/null
env > verifier-env.txt
exit 0
EOF
else
  row=honest
fi
echo "the $row work" > "work-$row.txt"
echo "row $row: done"
"""
FORGER = r"""#!/bin/sh
cat >/dev/null
run=${AWP_AGENT_ATTEMPT%%.*}
echo forged > forged.txt && git add forged.txt && git commit -qm "looks done

AWP-Packet: gitforge
AWP-Prompt: 02
AWP-Agent-Run: $run.02
AWP-Attempt: $run.02.a1
AWP-Mode: run
AWP-Provider: agent
AWP-Account: none
AWP-Model: m"
echo "the work" > work.txt
"""
ROWS = {"01_nested": "work-nested.txt", "02_verifier": "work-verifier.txt", "03_honest": "work-honest.txt"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def packet(tmp: Path, make_git_repo: Any, name: str, script: str, prompts: dict[str, dict[str, Any]],
           isolation: str = "sandbox", claude: FakeMessagesServer | None = None) -> tuple[Path, Path]:
    agent = tmp / "agents" / f"{name}.sh"
    agent.parent.mkdir(exist_ok=True)
    agent.write_text(script.replace("@MARK@", shlex.quote(str(tmp / "marker"))))
    agent.chmod(0o755)
    providers = tmp / f"{name}-providers.yaml"
    (tmp / "accounts" / "a").mkdir(parents=True, exist_ok=True)
    providers.write_text(yaml.safe_dump({
        "providers": {"agent": {"kind": "command", "command": str(agent), "models": ["m"]}},
        "accounts": {"a": {"provider": "agent", "credential_env": "AWP_TEST_AGENT_KEY",
                           "config_dir": str(tmp / "accounts" / "a")}}}))
    if claude is not None:
        providers.write_text(yaml.safe_dump(agent_provider(tmp, "claude", claude)))
        claude.command = f"printf 'go\\n' | sh -c {shlex.quote(agent.read_text())}"
    root = tmp / name
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": name, "provider": "agent", "model": "m", "timeout": "3m", "accounts": ["a"], "isolation": isolation,
        "repos": {"app": {"path": "./workspace", "default": True}}, **(MANIFESTS["claude"] if claude else {})}))
    (root / "prompts").mkdir()
    for stem, verify in prompts.items():
        (root / "prompts" / f"{stem}.prompt.md").write_text(f"---\n{yaml.safe_dump({'verify': verify})}---\n"
                                                             "Do the work.\n")
    return root, providers


def awp_run(tmp: Path, root: Path, providers: Path) -> subprocess.CompletedProcess[str]:
    home = tmp / "operator-home"
    home.mkdir(exist_ok=True)
    (home / "canary.txt").write_text("operator's secret\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "AWP_PG_PASSWORD": SECRET, "AWP_TEST_AGENT_KEY": AGENT_KEY,
           "LANG": "C.UTF-8", "DATABASE_URL": f"postgresql://awp:{SECRET}@db/awp", **QUIET_CLI}
    return subprocess.run([sys.executable, "-c", "from awp_pipelines.cli import main; main()", "run", str(root),
                           "--providers", str(providers), "--json"], env=env, cwd=tmp, capture_output=True,
                          text=True, timeout=400)


def rows_and_judge(tmp: Path, make_git_repo: Any, claude: FakeMessagesServer | None = None) -> None:
    prompts = {"01_nested": {"files_exist": ["work-nested.txt"]},
               "02_verifier": {"commands": [{"exec": "sh", "args": ["check.sh"]}],
                               "files_exist": ["work-verifier.txt"]},
               "03_honest": {"files_exist": ["work-honest.txt"]}}
    root, providers = packet(tmp, make_git_repo, "gitbound", AGENT, prompts, claude=claude)
    tree = root / "workspace"
    base = git(tree, "rev-parse", "HEAD").strip()
    done = awp_run(tmp, root, providers)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    outcomes = json.loads(done.stdout)["prompts"]
    assert [o["result"] for o in outcomes] == ["completed"] * 3, outcomes
    packet_run = outcomes[0]["attempt"].split(".")[0]
    records = [r for p in ("01", "02", "03") for r in stored_records(root, packet_run, p)]
    commits = git(tree, "rev-list", "--first-parent", f"{base}..HEAD").split()[::-1]
    assert len(commits) == 3 and [r["commits"][0]["sha"] for r in records] == commits
    # 01: the nested repository's files, never a gitlink, never its .git; its programs never ran.
    first = [line.split(None, 3) for line in git(tree, "ls-tree", "-r", commits[0]).splitlines()]
    assert {mode for mode, *_ in first} <= {"100644", "100755"} and any(p == "vendor/lib/code.py" for *_, p in first)
    assert not any(p.startswith("vendor/lib/.git/") for *_, p in first)
    assert not (tmp / "marker").exists(), (tmp / "marker").read_text()
    # 02: the check's writes to .git were refused; AWP's commit has the one parent it recorded.
    assert git(tree, "rev-list", "--parents", "-n1", commits[1]).split() == [commits[1], commits[0]]
    assert not (tree / ".git" / "MERGE_HEAD").exists() and "forged" not in git(tree, "log", "--all", "--format=%B")
    assert "160000" not in git(tree, "ls-tree", "-r", commits[1])
    # Every honest row is committed; the canaries are nowhere.
    assert all(git(tree, "show", f"HEAD:{f}").startswith("the ") for f in ROWS.values())
    stored = json.dumps(records) + done.stdout + done.stderr + git(tree, "log", "--all", "-p")
    stored += "".join(json.dumps(body) for body in claude.bodies) if claude is not None else ""
    for canary in (SECRET, "operator's secret"):
        assert canary not in stored
    assert AGENT_KEY not in stored.replace(json.dumps(claude.bodies) if claude else "", "")


@pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")
def test_git_boundary_rows_of_a_command_agent(tmp_path: Path, make_git_repo: Any) -> None:
    rows_and_judge(tmp_path, make_git_repo)


@pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")
def test_git_boundary_rows_of_the_real_claude_code_cli(tmp_path: Path, make_git_repo: Any) -> None:
    real_cli("claude")
    with fake_api("bash") as api:
        rows_and_judge(tmp_path, make_git_repo, api)
    said = json.dumps(api.bodies)
    assert all(f"row {row}: done" in said for row in ("nested", "verifier", "honest")), said[-2000:]


def test_a_forged_commit_naming_the_next_prompt_is_never_adopted(tmp_path: Path, make_git_repo: Any) -> None:
    """Under `isolation: none` the agent can write `.git`: it commits `AWP-Attempt: <run>.02.a1` itself. Its
    branch moved, so AWP commits nothing (`tree_tampered`), and neither the run nor `awp status` takes the
    forged commit for prompt 02's work."""
    prompts = {"01_forge": {"files_exist": ["work.txt"]}, "02_next": {"files_exist": ["next.txt"]}}
    root, providers = packet(tmp_path, make_git_repo, "gitforge", FORGER, prompts, isolation="none")
    done = awp_run(tmp_path, root, providers)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    first = json.loads(done.stdout)["prompts"][0]
    packet_run = first["attempt"].split(".")[0]
    [record] = stored_records(root, packet_run, "01")
    assert record["result"] == "tree_tampered" and record["commits"] == [], record["failure"]
    assert stored_records(root, packet_run, "02") == []
    assert f"{packet_run}.02.a1" in git(root / "workspace", "log", "-1", "--format=%B")  # the forgery is there
    status = subprocess.run([sys.executable, "-c", "from awp_pipelines.cli import main; main()", "status", str(root),
                             "--json"], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "operator-home")})
    [second] = [p for p in json.loads(status.stdout)["prompts"] if p["prompt"] == "02"]
    assert (second["state"], second["attempts"]) == ("planned", []), second
