"""What `awp lint` reports: every finding kind with its severity, one Finding, and the LintReport of a packet."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

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
    "provider_cannot_login": ("error", "a provider or account entry that leaves its agent no way to authenticate"),
    "agent_target_refused": ("error", "a prompt's target is not among its agent's providers or models"),
    "reviewer_same_target": ("warning", "a reviewer on the provider and account of the coder it reviews"),
    "verify_path_escapes_repo": ("error", "a verify path that is absolute or leaves its repo through '..'"),
    "secret_in_packet": ("error", "a credential-looking value written in the packet"),
    "command_cannot_fail": ("warning", "a `commands` entry that always exits 0 and checks no output"),
    "timeout_too_short": ("warning", "the resolved `timeout` is under 60 s"),
    "unknown_depends_on": ("error", "`depends_on` names a prompt the packet does not have"),
    "dependency_cycle": ("error", "prompts that depend on each other in a cycle"),
    "unknown_phase": ("error", "a prompt's phase is not among the manifest's `phases`"),
    "unsupported_setting": ("warning", "a Prompt Runner setting the prompt's provider does not honour"),
    "permission_not_enforced": ("error", "a permission_mode neither the provider nor AWP's sandbox enforces"),
    "tools_not_enforced": ("error", "allowed_tools on a provider without a tool allow-list"),
    "isolation_none": ("warning", "an agent that runs unsandboxed (`isolation: none`)"),
    "packet_in_target_tree": ("warning", "the packet's own files lie inside a work tree its agents write"),
    "missing_template": ("warning", "a template found neither in the packet nor in the home templates"),
    "profile_missing": ("warning", "the manifest's profile is not on this machine"),
    "reference_missing": ("warning", "a remote repo's reference cache is not on this machine"),
    "missing_work_tree": ("warning", "a repo's work tree is not a git work tree on this machine (`awp run` refuses "
                                     "it)"),
}


class Finding(BaseModel):
    """One hazard: where it is (file, line, key), what is wrong and how to fix it."""

    kind: str = Field(description="Finding kind; see awp_pipelines.core.lint.KINDS.")
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


def finding(kind: str, file: Path | str, message: str, *, line: int | None = None, key: str | None = None,
            hint: str | None = None) -> Finding:
    """A Finding of `kind`, its severity taken from KINDS."""
    return Finding(kind=kind, severity=KINDS[kind][0], file=str(file), line=line, key=key, message=message,
                   hint=hint)
