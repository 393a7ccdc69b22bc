"""Completion contracts: a prompt without one, the repos and paths its entries name, commands that prove nothing."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from awp_pipelines.core.packet.model.contract import CommandCheck, RepoPath, ReposCleanCheck, VerifyContract
from awp_pipelines.core.packet.packet import Prompt
from awp_pipelines.core.verifiers.clause_table import CLAUSE_TABLE
from awp_pipelines.core.verifiers.context import PACKET_ALIAS
from awp_pipelines.core.verifiers.paths import written_repo_path

from .context import LintContext
from .where import Where

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
_ALWAYS_TRUE = frozenset({"true", ":"})
_NOOP_SCRIPT = re.compile(r"^\s*(?:exit(?:\s+0)?|true|:)?\s*;?\s*$")
_ALLOWS_EVERYTHING = frozenset({"*", "**", "**/*", "*/**"})


def lint_prompt(ctx: LintContext, prompt: Prompt) -> None:
    """A prompt's `verify:` block: that there is one, that it runs a command, and what it names."""
    where = Where(prompt.doc, ("verify",))
    contract = prompt.front.verify
    if contract is None or contract.is_empty():
        ctx.add("prompt_without_verify", where if contract is not None else prompt.file,
                f"prompt {prompt.id} has no completion contract: provider success alone cannot complete it",
                hint="add a `verify:` block: files_exist, contains, commands, ...")
        return
    if not contract.commands:
        ctx.add("contract_without_commands", where,
                f"prompt {prompt.id}'s contract runs no command",
                hint="add a `commands` entry that runs the tests or the build")
    lint_contract(ctx, contract, where)


def lint_contract(ctx: LintContext, contract: VerifyContract, where: Where) -> None:
    """Every entry's repo, paths and command, and a `changed_paths_only` that checks nothing."""
    for row in CLAUSE_TABLE:
        clause = row.name
        for index, entry in enumerate(row.entries(contract)):
            at = where.at(clause, index)
            repo = entry.repo if isinstance(entry, RepoPath | CommandCheck | ReposCleanCheck) else None
            if repo and repo != PACKET_ALIAS and repo not in ctx.packet.repos:
                ctx.add("unknown_verify_repo", at, f"{clause} entry names repo '{repo}', which is not declared",
                        hint=ctx.known_repos())
            for path in _entry_paths(entry):
                if os.path.isabs(path) or os.path.normpath(path).split(os.sep)[0] == os.pardir:
                    ctx.add("verify_path_escapes_repo", at, f"{clause} path '{path}' leaves its repo",
                            hint="paths are relative to the repo root; name another repo with `repo:`")
            if isinstance(entry, CommandCheck):
                _lint_command(ctx, entry, at)
    if "changed_paths_only" in contract.model_fields_set:
        allowed = [written_repo_path(e)[1] for e in contract.changed_paths_only]
        if not allowed or any(_allows_everything(p) for p in allowed):
            what = "allows every path" if allowed else "lists no path"
            ctx.add("changed_paths_only_vacuous", where.at("changed_paths_only"),
                    f"changed_paths_only {what}, so it checks nothing",
                    hint="list the files the prompt may change")


def _lint_command(ctx: LintContext, command: CommandCheck, at: Where) -> None:
    program = Path(command.exec).name
    script = command.args[command.args.index("-c") + 1] if "-c" in command.args[:-1] else None
    if program in SHELLS and "-c" in command.args:
        ctx.add("legacy_shell_command", at.at("exec"), f"runs a shell script through '{program} -c'",
                hint="give exec and args as argv; put longer logic in a script file")
    if "timeout_ms" not in command.model_fields_set:
        ctx.add("verify_command_without_timeout", at, f"'{command.exec}' has no timeout_ms (default 30 s)",
                hint="set timeout_ms to what the command needs")
    checks_output = command.stdout_contains or command.stdout_matches or command.regenerates
    trivial = program in _ALWAYS_TRUE or (program in SHELLS and script is not None and _NOOP_SCRIPT.match(script))
    if trivial and not checks_output:
        ctx.add("command_cannot_fail", at, f"'{' '.join([command.exec, *command.args])}' always exits 0",
                hint="run the check that proves the work (tests, a build, a linter)")


def _entry_paths(entry: Any) -> Iterator[str]:
    """Every path an entry names: the entry's path, a command's cwd and the files it regenerates."""
    if isinstance(entry, CommandCheck):
        yield entry.cwd
        yield from entry.regenerates
    elif isinstance(entry, str | RepoPath):
        yield written_repo_path(entry)[1]


def _allows_everything(path: str) -> bool:
    stripped = path.strip().rstrip("/")
    return stripped in _ALLOWS_EVERYTHING or os.path.normpath(stripped or ".") == "."
