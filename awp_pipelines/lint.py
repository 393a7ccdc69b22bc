"""`awp lint`: a packet's authoring hazards, found before anything runs (Prompt Runner's PacketLint, plus AWP's).

Pure: reads the packet, the catalog and the home profile folder; runs nothing. A packet that does not load is
one `invalid_packet` error naming its file, line and key. Everything else is a finding with a severity from
`KINDS`: errors fail `awp lint`, warnings only with `--strict`.

Prompt Runner's `unknown_verify_clause` is never produced: the strict contract model rejects an unknown clause
while loading, so it arrives as `invalid_packet` with the clause's line and a did-you-mean hint.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from awp_pipelines import profile as home
from awp_pipelines.authoring import find_template
from awp_pipelines.catalog import PROVIDER_ALIASES, Catalog
from awp_pipelines.errors import PacketError
from awp_pipelines.model.execution import TargetSpec
from awp_pipelines.model.prompt import INERT_KEYS
from awp_pipelines.packet import Packet, Prompt, load_packet, normalize_id
from awp_pipelines.plan import PacketPlan, PlanContext, PromptPlan, build_plan
from awp_pipelines.redact import find_secrets
from awp_pipelines.verifiers.context import PACKET_ALIAS
from awp_pipelines.verifiers.contract import CommandCheck, RepoPath, ReposCleanCheck, VerifyContract
from awp_pipelines.verifiers.items import CLAUSES, clause_entries
from awp_pipelines.verifiers.paths import written_repo_path
from awp_pipelines.yamlsrc import YamlDoc

Severity = Literal["error", "warning"]

# Every kind `lint_packet` can report, its severity and what it means.
KINDS: dict[str, tuple[Severity, str]] = {
    "invalid_packet": ("error", "the packet does not load: a manifest or prompt is malformed"),
    # Prompt Runner 0.12.1
    "prompt_id_filename_mismatch": ("error", "front-matter `id` differs from the filename's number"),
    "prompt_filename_without_prefix": ("error", "a prompt file without an NN_ number prefix"),
    "duplicate_prompt_id": ("error", "two prompts with one id"),
    "unknown_target_repo": ("error", "`targets` names a repo the manifest does not declare"),
    "unknown_verify_repo": ("error", "a verify entry names a repo the manifest does not declare"),
    "invalid_agent_control": ("error", "agent_control cannot work as configured"),
    "legacy_shell_command": ("warning", "a `commands` entry runs `sh -c`/`bash -c` instead of argv"),
    "verify_command_without_timeout": ("warning", "a `commands` entry relies on the default timeout_ms"),
    "prompt_without_verify": ("warning", "a prompt without a completion contract"),
    "contract_without_commands": ("warning", "a contract that never runs a command (tests, build)"),
    "changed_paths_only_vacuous": ("warning", "`changed_paths_only` allows nothing or everything"),
    "inert_front_matter_key": ("warning", "references/required_reading/context_files are never sent"),
    # AWP
    "unknown_provider": ("error", "a provider the catalog does not know"),
    "unknown_alias": ("error", "a model or fallback entry that is neither an alias nor a provider's model"),
    "unknown_account": ("error", "an account the catalog does not know, or one of another provider"),
    "reviewer_same_target": ("warning", "a reviewer on the provider and account of the coder it reviews"),
    "verify_path_escapes_repo": ("error", "a verify path that is absolute or leaves its repo through '..'"),
    "secret_in_packet": ("error", "a credential-looking value written in the packet"),
    "command_cannot_fail": ("warning", "a `commands` entry that always exits 0 and checks no output"),
    "timeout_too_short": ("warning", "the resolved `timeout` is under 60 s"),
    "unknown_depends_on": ("error", "`depends_on` names a prompt the packet does not have"),
    "dependency_cycle": ("error", "prompts that depend on each other in a cycle"),
    "unknown_phase": ("error", "a prompt's phase is not among the manifest's `phases`"),
    "missing_template": ("warning", "a template found neither in the packet nor in the home templates"),
    "profile_missing": ("warning", "the manifest's profile is not on this machine"),
}

MIN_TIMEOUT_MS = 60_000
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
_ALWAYS_TRUE = frozenset({"true", ":"})
_NOOP_SCRIPT = re.compile(r"^\s*(?:exit(?:\s+0)?|true|:)?\s*;?\s*$")
_ALLOWS_EVERYTHING = frozenset({"*", "**", "**/*", "*/**"})


class Finding(BaseModel):
    """One hazard: where it is (file, line, key), what is wrong and how to fix it."""

    kind: str = Field(description="Finding kind; see awp_pipelines.lint.KINDS.")
    severity: Severity = Field(description="error: `awp lint` fails; warning: fails only with --strict.")
    file: str = Field(description="File the finding is about.")
    line: int | None = Field(None, description="1-based line in `file`, when known.")
    key: str | None = Field(None, description="Dotted key the finding is about, when there is one.")
    message: str = Field(description="What is wrong. Never contains a secret value.")
    hint: str | None = Field(None, description="How to fix it.")

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}: {self.severity} {self.kind}: {self.message}{hint}"


class LintReport(BaseModel):
    packet: str = Field(description="Packet name, or the path given when the packet does not load.")
    findings: list[Finding] = Field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def invalid(self) -> Finding | None:
        """The load failure, when the packet could not be read at all."""
        return next((f for f in self.findings if f.kind == "invalid_packet"), None)

    def exit_code(self, strict: bool = False) -> int:
        """2: the packet does not load; 1: errors (or warnings with strict); 0: clean."""
        if self.invalid:
            return 2
        return 1 if self.errors or (strict and self.warnings) else 0


def lint_packet(path: Path | str, catalog: Catalog) -> LintReport:
    try:
        packet = load_packet(path)
        plan = build_plan(packet, PlanContext(catalog=catalog))
    except PacketError as err:
        return LintReport(packet=str(path), findings=[finding("invalid_packet", str(err.file), err.message,
                                                              line=err.line, key=err.key, hint=err.hint)])
    return LintReport(packet=packet.name, findings=_Linter(packet, catalog, plan).run())


def finding(kind: str, file: Path | str, message: str, *, line: int | None = None, key: str | None = None,
            hint: str | None = None) -> Finding:
    return Finding(kind=kind, severity=KINDS[kind][0], file=str(file), line=line, key=key, message=message,
                   hint=hint)


@dataclass(frozen=True)
class _Where:
    """A key path in one YAML document: its file, line and dotted name."""

    doc: YamlDoc
    path: tuple[Any, ...]

    def at(self, *more: Any) -> _Where:
        return _Where(self.doc, (*self.path, *more))

    @property
    def line(self) -> int | None:
        return self.doc.line_of(self.path)

    @property
    def key(self) -> str | None:
        return ".".join(str(p) for p in self.path) or None


@dataclass
class _Linter:
    packet: Packet
    catalog: Catalog
    plan: PacketPlan
    findings: list[Finding] = field(default_factory=list)

    def run(self) -> list[Finding]:
        manifest = _Where(self.packet.doc, ())
        self._profile(manifest)
        if self.packet.manifest.prompt_template:
            self._template(self.packet.manifest.prompt_template, manifest.at("prompt_template"))
        self._secrets(self.packet.manifest_file)
        self._fallback(self.packet.manifest.fallback, manifest.at("fallback"))
        self._agent_control(manifest.at("agent_control"))
        seen: dict[str, Prompt] = {}
        for prompt, plan in zip(self.packet.prompts, self.plan.prompts, strict=True):
            self._prompt(prompt, plan, seen)
            seen.setdefault(prompt.id, prompt)
        self._cycles()
        return self._unique()

    def add(self, kind: str, where: _Where | Path, message: str, hint: str | None = None) -> None:
        if isinstance(where, Path):
            self.findings.append(finding(kind, where, message, hint=hint))
        else:
            self.findings.append(finding(kind, where.doc.file, message, line=where.line, key=where.key, hint=hint))

    def _unique(self) -> list[Finding]:
        """A manifest value resolved into every prompt is reported once, where it is written."""
        unique = {(f.kind, f.file, f.line, f.key, f.message): f for f in self.findings}
        return list(unique.values())

    # --- manifest ----------------------------------------------------------------------------------------

    def _profile(self, manifest: _Where) -> None:
        name = self.packet.manifest.profile
        if name and home.load_profile(name) is None:
            self.add("profile_missing", manifest.at("profile"),
                     f"profile '{name}' is not in {home.profiles_dir()}; the packet's own settings apply",
                     hint=f"create it with `awp profile new {name}` on this machine, or drop `profile:`")

    def _template(self, name: str, where: _Where) -> None:
        if find_template(self.packet.root, name) is None:
            self.add("missing_template", where, f"template '{name}' not found",
                     hint=f"looked in {self.packet.root / 'templates'} and {home.templates_dir()}")

    def _secrets(self, file: Path) -> None:
        for line, kind in find_secrets(file.read_text(encoding="utf-8")):
            self.findings.append(finding(
                "secret_in_packet", file, f"a {kind.replace('_', ' ')} is written on line {line}", line=line,
                hint="remove and rotate it; an account's credential_env names the variable that holds it"))

    def _agent_control(self, where: _Where) -> None:
        control = self.packet.manifest.agent_control
        if control.completion_verify is not None:
            self._contract(control.completion_verify, where.at("completion_verify"))
        if not control.enabled:
            return
        if control.completion_verify is None or control.completion_verify.is_empty():
            self.add("invalid_agent_control", where.at("completion_verify"),
                     "agent_control is enabled but completion_verify checks nothing, so any 'finish' passes",
                     hint="list what must hold before the agent may finish")
        previous: str | None = None
        for prompt in self.packet.prompts:
            declared = prompt.declared_depends_on
            if declared is not None and declared != ([previous] if previous else []):
                self.add("invalid_agent_control", _Where(prompt.doc, ("depends_on",)),
                         f"agent_control moves through a linear packet, but prompt {prompt.id} depends on "
                         f"{', '.join(declared) or 'nothing'}",
                         hint="drop depends_on or disable agent_control")
            previous = prompt.id

    # --- one prompt ----------------------------------------------------------------------------------------

    def _prompt(self, prompt: Prompt, plan: PromptPlan, seen: dict[str, Prompt]) -> None:
        front, where = prompt.front, _Where(prompt.doc, ())
        if prompt.filename_id is None:
            self.add("prompt_filename_without_prefix", prompt.file,
                     f"'{prompt.file.name}' has no number prefix, so it runs after every numbered prompt",
                     hint="rename it NN_slug.prompt.md")
        elif front.id is not None and normalize_id(front.id) != prompt.filename_id:
            self.add("prompt_id_filename_mismatch", where.at("id"),
                     f"id '{front.id}' differs from the filename's '{prompt.filename_id}'",
                     hint=f"set id: \"{prompt.filename_id}\" or rename the file")
        if prompt.id in seen:
            self.add("duplicate_prompt_id", where.at("id") if front.id is not None else prompt.file,
                     f"prompt id {prompt.id} is also used by {seen[prompt.id].file.name}",
                     hint="give each prompt its own id")
        for index, name in enumerate(front.targets or []):
            if name not in self.packet.repos:
                self.add("unknown_target_repo", where.at("targets", index), f"target repo '{name}' is not declared",
                         hint=self._known_repos())
        self._depends_on(prompt, where.at("depends_on"))
        phases = self.packet.manifest.phases
        if phases and front.phase is not None and str(front.phase) not in phases:
            self.add("unknown_phase", where.at("phase"), f"phase '{front.phase}' is not in the manifest's phases",
                     hint=f"known phases: {', '.join(phases)}")
        if front.template:
            self._template(front.template, where.at("template"))
        for key in INERT_KEYS:
            if key in front.model_fields_set:
                self.add("inert_front_matter_key", where.at(key), f"'{key}' is never sent to the agent",
                         hint="write the reading list in the prompt body")
        self._secrets(prompt.file)
        self._verify(prompt, where.at("verify"))
        self._target(prompt, plan)
        self._fallback(front.fallback, where.at("fallback"))

    def _depends_on(self, prompt: Prompt, where: _Where) -> None:
        ids = {p.id for p in self.packet.prompts}
        for dep in prompt.declared_depends_on or []:
            if dep not in ids:
                self.add("unknown_depends_on", where, f"depends on prompt '{dep}', which the packet does not have",
                         hint=f"known prompts: {', '.join(sorted(ids))}")

    def _verify(self, prompt: Prompt, where: _Where) -> None:
        contract = prompt.front.verify
        if contract is None or contract.is_empty():
            self.add("prompt_without_verify", where if contract is not None else prompt.file,
                     f"prompt {prompt.id} has no completion contract: provider success alone cannot complete it",
                     hint="add a `verify:` block: files_exist, contains, commands, ...")
            return
        if not contract.commands:
            self.add("contract_without_commands", where,
                     f"prompt {prompt.id}'s contract runs no command",
                     hint="add a `commands` entry that runs the tests or the build")
        self._contract(contract, where)

    def _contract(self, contract: VerifyContract, where: _Where) -> None:
        for clause in CLAUSES:
            entries = clause_entries(contract, clause)
            for index, entry in enumerate(entries):
                at = where.at(clause, index)
                repo = entry.repo if isinstance(entry, RepoPath | CommandCheck | ReposCleanCheck) else None
                if repo and repo != PACKET_ALIAS and repo not in self.packet.repos:
                    self.add("unknown_verify_repo", at, f"{clause} entry names repo '{repo}', which is not declared",
                             hint=self._known_repos())
                for path in _entry_paths(entry):
                    if os.path.isabs(path) or os.path.normpath(path).split(os.sep)[0] == os.pardir:
                        self.add("verify_path_escapes_repo", at, f"{clause} path '{path}' leaves its repo",
                                 hint="paths are relative to the repo root; name another repo with `repo:`")
                if isinstance(entry, CommandCheck):
                    self._command(entry, at)
        if "changed_paths_only" in contract.model_fields_set:
            allowed = [written_repo_path(e)[1] for e in contract.changed_paths_only]
            if not allowed or any(_allows_everything(p) for p in allowed):
                what = "allows every path" if allowed else "lists no path"
                self.add("changed_paths_only_vacuous", where.at("changed_paths_only"),
                         f"changed_paths_only {what}, so it checks nothing",
                         hint="list the files the prompt may change")

    def _command(self, command: CommandCheck, at: _Where) -> None:
        program = Path(command.exec).name
        script = command.args[command.args.index("-c") + 1] if "-c" in command.args[:-1] else None
        if program in SHELLS and "-c" in command.args:
            self.add("legacy_shell_command", at.at("exec"), f"runs a shell script through '{program} -c'",
                     hint="give exec and args as argv; put longer logic in a script file")
        if "timeout_ms" not in command.model_fields_set:
            self.add("verify_command_without_timeout", at, f"'{command.exec}' has no timeout_ms (default 30 s)",
                     hint="set timeout_ms to what the command needs")
        checks_output = command.stdout_contains or command.stdout_matches or command.regenerates
        trivial = program in _ALWAYS_TRUE or (program in SHELLS and script is not None and _NOOP_SCRIPT.match(script))
        if trivial and not checks_output:
            self.add("command_cannot_fail", at, f"'{' '.join([command.exec, *command.args])}' always exits 0",
                     hint="run the check that proves the work (tests, a build, a linter)")

    # --- provider, model, accounts, bounds ------------------------------------------------------------------

    def _resolved_at(self, prompt: Prompt, plan: PromptPlan, key: str) -> tuple[_Where | Path, str]:
        """Where a resolved value was written, and a note when it came from outside the packet."""
        source = plan.sources.get(key)
        if source is None or source.startswith("inferred") or "(alias" in source:
            key, source = "model", plan.sources.get("model", "default")  # the model is what was written
        if source.startswith("prompt"):
            return _Where(prompt.doc, (key,)), ""
        if source.startswith("packet"):
            return _Where(self.packet.doc, (key,)), ""
        return prompt.file, f" (set by {source or 'default'})"

    def _target(self, prompt: Prompt, plan: PromptPlan) -> None:
        catalog = self.catalog
        if plan.provider not in catalog.providers:
            where, note = self._resolved_at(prompt, plan, "provider")
            self.add("unknown_provider", where, f"provider '{plan.provider}' is not in the catalog{note}",
                     hint=f"known providers: {', '.join(catalog.providers)}")
        model_source = plan.sources.get("model", "")
        inferred = plan.sources.get("provider", "").startswith("inferred")
        if "(alias" not in model_source and inferred and catalog.infer_provider(plan.model) is None:
            where, note = self._resolved_at(prompt, plan, "model")
            self.add("unknown_alias", where, f"model '{plan.model}' is no alias and names no provider's model{note}",
                     hint=_suggest(plan.model, catalog.aliases, "aliases") + "; or set `provider:`")
        where, note = self._resolved_at(prompt, plan, "accounts")
        self._accounts(plan.accounts, plan.provider, where, note)
        if plan.bounds.timeout_ms < MIN_TIMEOUT_MS:
            where, note = self._resolved_at(prompt, plan, "timeout")
            self.add("timeout_too_short", where,
                     f"timeout is {plan.bounds.timeout_ms} ms, under {MIN_TIMEOUT_MS // 1000} s{note}",
                     hint="a bare number is milliseconds: write '30m' or '2h'")
        if plan.agent == "reviewer":
            self._reviewer(prompt, plan)

    def _accounts(self, accounts: Iterable[str], provider: str, where: _Where | Path, note: str = "") -> None:
        for name in accounts:
            spec = self.catalog.accounts.get(name)
            if spec is None:
                self.add("unknown_account", where, f"account '{name}' is not in the catalog{note}",
                         hint=_suggest(name, self.catalog.accounts, "accounts"))
            elif _provider(spec.provider) != provider:
                self.add("unknown_account", where,
                         f"account '{name}' belongs to provider '{spec.provider}', not '{provider}'{note}",
                         hint=f"use an account of '{provider}'")

    def _fallback(self, entries: list[str | TargetSpec] | None, where: _Where) -> None:
        providers = self.catalog.providers
        for index, entry in enumerate(entries or []):
            at = where.at(index)
            if isinstance(entry, str):
                if entry not in self.catalog.aliases and _provider(entry) not in providers:
                    self.add("unknown_alias", at, f"fallback '{entry}' is neither an alias nor a provider",
                             hint=_suggest(entry, [*self.catalog.aliases, *providers], "aliases and providers"))
                continue
            provider = _provider(entry.provider)
            if provider not in providers:
                self.add("unknown_provider", at.at("provider"), f"fallback provider '{entry.provider}' is not in "
                         "the catalog", hint=f"known providers: {', '.join(providers)}")
            self._accounts(entry.accounts or [], provider, at.at("accounts"))

    def _reviewer(self, prompt: Prompt, plan: PromptPlan) -> None:
        for dep in plan.depends_on:
            coder = next((p for p in self.plan.prompts if p.id == dep), None)
            if coder is None or coder.agent != "coder":
                continue
            if coder.provider == plan.provider and coder.accounts[:1] == plan.accounts[:1]:
                account = plan.accounts[0] if plan.accounts else "its default account"
                where = _Where(prompt.doc, ("agent",)) if "agent" in prompt.front.model_fields_set else prompt.file
                self.add("reviewer_same_target", where,
                         f"reviewer {plan.id} runs on the provider and account of coder {dep} "
                         f"({plan.provider}, {account})",
                         hint="review on another provider or account, so the review is independent")

    # --- the whole packet ---------------------------------------------------------------------------------

    def _cycles(self) -> None:
        graph = {p.id: self.packet.dependencies(p) for p in self.packet.prompts}
        if len(graph) < len(self.packet.prompts):
            return  # duplicate ids make every graph wrong; duplicate_prompt_id says so
        reported: set[frozenset[str]] = set()
        for prompt in self.packet.prompts:
            cycle = _cycle_through(graph, prompt.id)
            if cycle and frozenset(cycle) not in reported:
                reported.add(frozenset(cycle))
                self.add("dependency_cycle", _Where(prompt.doc, ("depends_on",)),
                         "prompts depend on each other: " + " → ".join([*cycle, cycle[0]]),
                         hint="a prompt may only depend on prompts that do not depend on it")

    def _known_repos(self) -> str:
        return f"declared repos: {', '.join(self.packet.repos) or 'none'}"


def _provider(name: str) -> str:
    return PROVIDER_ALIASES.get(name, name)


def _suggest(value: str, known: Iterable[str], what: str) -> str:
    names = list(known)
    close = difflib.get_close_matches(value, names, n=1)
    if close:
        return f"did you mean '{close[0]}'?"
    return f"known {what}: {', '.join(names) or 'none'}"


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


def _cycle_through(graph: dict[str, list[str]], start: str) -> list[str] | None:
    """A path start → … that leads back to start, when there is one."""
    stack, visited = [(start, [start])], {start}
    while stack:
        node, path = stack.pop()
        for nxt in graph.get(node, []):
            if nxt == start:
                return path
            if nxt not in visited:
                visited.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None
