"""Issue 38, item 3: every process AWP starts gets an allow-listed environment, never the runner's as it is.

Read from the package's source: every call that starts a program (subprocess.*, os.exec*/spawn*/system/popen)
passes `env=` built by an allow-list builder, or is on the reviewed list below with the builder it relies on
(the expression as written): a new call site, or a changed one, fails here until someone reviews it."""

from __future__ import annotations

import ast
from pathlib import Path

from repo_paths import REPO_ROOT

PACKAGE = REPO_ROOT / "awp_pipelines"
STARTERS = {("subprocess", name) for name in ("run", "Popen", "call", "check_call", "check_output", "getoutput",
                                               "getstatusoutput")} | {
    ("os", name) for name in ("system", "popen", "execv", "execve", "execvp", "execvpe", "execl", "execle",
                              "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "posix_spawn",
                              "posix_spawnp")} | {("asyncio", "create_subprocess_exec"),
                                                  ("asyncio", "create_subprocess_shell")}
# The allow-list builders (core/records/process_env.py, and the agent's providers/environment.py).
BUILDERS = ("allowed_env(", "network_env(")
# Call sites whose environment is built elsewhere, by an allow-list, and handed in: (file, function) →
# the `env=` expression as written ("" for an exec, which keeps the environment its caller built).
REVIEWED = {
    ("core/providers/process.py", "run_streaming"): "dict(env)",  # providers/environment.agent_env
    ("core/verifiers/process.py", "run_bounded"): "dict(env)",  # commands.command_env, the sandbox's, network_env
    ("core/planning/provider_checks.py", "check_cli"): "env",  # bare_env plus a throwaway HOME (awp doctor)
    ("core/isolation/limiter.py", "main"): "",  # exec inside the sandbox: bwrap set its environment
    ("core/isolation/forwarder.py", "main"): "",  # exec of the agent: the agent's environment, already built
    ("dagster_compat/log_mirrors.py", "Popen"): "",  # Dagster's compute-log tail of AWP's own log file
}


def _starts(tree: ast.AST) -> list[tuple[str, ast.Call]]:
    found = []
    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(func):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name)
                        and (node.func.value.id, node.func.attr) in STARTERS):
                    found.append((func.name, node))
    return found


def test_every_process_awp_starts_gets_an_allow_listed_environment() -> None:
    seen: dict[tuple[str, str], str] = {}
    for source in sorted(PACKAGE.rglob("*.py")):
        rel = source.relative_to(PACKAGE).as_posix()
        for function, call in _starts(ast.parse(source.read_text())):
            env = next((ast.unparse(k.value) for k in call.keywords if k.arg == "env"), "")
            if env.startswith(BUILDERS) or "network_env(" in env:
                continue
            seen[(rel, function)] = env
    unreviewed = {site: env for site, env in seen.items() if REVIEWED.get(site) != env}
    assert not unreviewed, f"a process started with an environment no allow-list built: {unreviewed}"
    assert set(seen) == set(REVIEWED), f"reviewed sites that no longer exist: {set(REVIEWED) - set(seen)}"


def test_the_runners_secrets_reach_no_network_git_and_the_token_only_its_push(
        make_git_repo, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A real push and fetch to a local bare remote whose hooks write the environment git hands down: the
    database password is in neither, the forge token only in the push that carries it."""
    from awp_pipelines.core.handoff.push import fetch_branch, push_branch, token_env

    monkeypatch.setenv("AWP_PG_PASSWORD", "canary-pg-5e1")
    monkeypatch.setenv("DAGSTER_PG_URL", "postgresql://u:canary-url-5e1@h/db")
    repo = make_git_repo(tmp_path / "app")
    remote = tmp_path / "remote.git"
    import subprocess

    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    seen = tmp_path / "seen"
    for hook in ("pre-receive", "post-update"):
        (remote / "hooks" / hook).write_text(f"#!/bin/sh\nenv >> {seen}\ncat >/dev/null\n")
        (remote / "hooks" / hook).chmod(0o755)
    push_branch(repo, str(remote), "HEAD", "awp/x", token_env("github", "ghs_canary-token-5e1"))
    pushed = seen.read_text()
    assert "canary-pg-5e1" not in pushed and "canary-url-5e1" not in pushed
    assert "ghs_canary-token-5e1" in pushed  # the one process that needs it has it (its credential helper's)
    seen.unlink()
    assert fetch_branch(repo, str(remote), "awp/x", {})
    from awp_pipelines.core.records.workspace import network_env

    env = network_env()
    assert not {"AWP_PG_PASSWORD", "DAGSTER_PG_URL"} & set(env) and env["GIT_CONFIG_NOSYSTEM"] == "1"
