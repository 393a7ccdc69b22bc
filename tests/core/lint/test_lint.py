"""`awp lint`: each finding kind comes from one small packet on disk, and a clean packet has none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from packet_sources import PACKET_NAMES

from awp_pipelines.cli import cli
from awp_pipelines.core.lint import KINDS, Finding, LintReport, lint_packet
from awp_pipelines.core.packet.agents import AgentSpec
from awp_pipelines.core.packet.home_profile import profiles_dir, templates_dir
from awp_pipelines.core.packet.model.execution import TargetSpec
from awp_pipelines.core.packet.providers_config import (
    BUILTIN,
    AccountSpec,
    AliasSpec,
    Catalog,
    ProviderSpec,
    load_catalog,
)

CATALOG = Catalog(
    accounts={"spark-a": AccountSpec(provider="codex", credential_env="AWP_SPARK_A_KEY"),
              "claude-main": AccountSpec(provider="claude", credential_env="AWP_CLAUDE_MAIN_KEY")},
    aliases={"factory-throwaway": AliasSpec(targets=[TargetSpec(provider="codex", model="gpt-5.3-codex-spark")])},
).merged_over(BUILTIN)

# A prompt that lints clean: a contract with a bounded command.
CLEAN_VERIFY = {"files_exist": ["hello.txt"],
                "commands": [{"exec": "python3", "args": ["-m", "pytest"], "timeout_ms": 120000}]}


def write_packet(root: Path, manifest: dict[str, Any] | None = None,
                 prompts: dict[str, dict[str, Any]] | None = None, body: str = "# Work\n") -> Path:
    """packet.yaml plus prompts {filename stem: front matter}; by default one clean prompt 01_hello."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "app" / ".git").mkdir(parents=True, exist_ok=True)  # its work tree is there (missing_work_tree)
    base = {"name": "lint-demo", "provider": "simulated", "model": "simulated-demo",
            "repos": {"app": {"path": "./app", "default": True}}}
    (root / "packet.yaml").write_text(yaml.safe_dump({**base, **(manifest or {})}, sort_keys=False))
    for stem, front in (prompts if prompts is not None else {"01_hello": {}}).items():
        keys = {**front, "verify": front.get("verify", CLEAN_VERIFY)}
        text = f"---\n{yaml.safe_dump({k: v for k, v in keys.items() if v is not None}, sort_keys=False)}---\n"
        (root / "prompts").mkdir(exist_ok=True)
        (root / "prompts" / f"{stem}.prompt.md").write_text(text + body)
    return root


def lint(root: Path) -> LintReport:
    return lint_packet(root, CATALOG)


def only(report: LintReport, kind: str) -> list[Finding]:
    """The findings of `kind`, after checking there are no findings of any other kind."""
    assert {f.kind for f in report.findings} == {kind}, [str(f) for f in report.findings]
    return [f for f in report.findings if f.kind == kind]


def line_of(file: Path, text: str) -> int:
    return next(n for n, line in enumerate(file.read_text().splitlines(), start=1) if text in line)


def test_a_clean_packet_has_no_findings(tmp_path: Path) -> None:
    report = lint(write_packet(tmp_path))
    assert report.findings == []
    assert (report.packet, report.exit_code(), report.exit_code(strict=True)) == ("lint-demo", 0, 0)


@pytest.mark.parametrize("name", PACKET_NAMES)
def test_every_compat_packet_lints_without_errors(prompt_runner_root: Path, name: str) -> None:
    report = lint_packet(prompt_runner_root / name, BUILTIN)
    assert report.errors == [], [str(f) for f in report.errors]
    assert report.exit_code() == 0
    # Prompt Runner's own examples carry no commands and name home profiles this machine lacks; two carry
    # per-CLI options (`claude_opts`, `codex_thread_opts`) that AWP does not pass on, and says so.
    opts = {"unsupported_setting"} if name in ("claude_packet", "multi_repo_packet") else set()
    # Their work trees are on their authors' machines: lint says so here, as a warning (`awp run` refuses them).
    assert {f.kind for f in report.warnings} == {"contract_without_commands", "profile_missing", "missing_work_tree",
                                                 *opts}


def test_a_packet_that_does_not_load_is_one_invalid_packet_error(tmp_path: Path) -> None:
    root = write_packet(tmp_path, {"reasoning_efort": "low"})
    [finding] = lint(root).findings
    assert (finding.kind, finding.severity, finding.key, finding.line) == (
        "invalid_packet", "error", "reasoning_efort", line_of(root / "packet.yaml", "reasoning_efort"))
    assert finding.file == str(root / "packet.yaml") and finding.hint == "did you mean 'reasoning_effort'?"
    assert lint(root).exit_code() == 2


# --- Prompt Runner's kinds -------------------------------------------------------------------------------------


def test_prompt_id_filename_mismatch(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"id": "02"}})
    [finding] = only(lint(root), "prompt_id_filename_mismatch")
    assert (finding.key, finding.line) == ("id", 2)


def test_prompt_filename_without_prefix(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"hello": {}})
    [finding] = only(lint(root), "prompt_filename_without_prefix")
    assert finding.file.endswith("hello.prompt.md") and finding.severity == "error"


def test_duplicate_prompt_id(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_first": {}, "01_second": {}})
    [finding] = only(lint(root), "duplicate_prompt_id")
    assert finding.file.endswith("01_second.prompt.md") and "01_first.prompt.md" in finding.message


def test_unknown_target_repo(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"targets": ["app", "web"]}})
    [finding] = only(lint(root), "unknown_target_repo")
    assert finding.key == "targets.1" and "web" in finding.message and "app" in (finding.hint or "")


def test_unknown_verify_repo(tmp_path: Path) -> None:
    verify = {**CLEAN_VERIFY, "contains": [{"repo": "web", "path": "a.txt", "text": "x"}]}
    root = write_packet(tmp_path, prompts={"01_hello": {"verify": verify}})
    [finding] = only(lint(root), "unknown_verify_repo")
    assert finding.key == "verify.contains.0"
    packet_folder = {**CLEAN_VERIFY, "files_exist": [{"repo": "packet", "path": "notes.md"}]}
    assert lint(write_packet(tmp_path / "ok", prompts={"01_hello": {"verify": packet_folder}})).findings == []


def test_invalid_agent_control_when_completion_verify_checks_nothing(tmp_path: Path) -> None:
    root = write_packet(tmp_path, {"agent_control": {"enabled": True, "completion_verify": {}}})
    [finding] = only(lint(root), "invalid_agent_control")
    assert finding.key == "agent_control.completion_verify"


def test_invalid_agent_control_when_the_packet_is_not_linear(tmp_path: Path) -> None:
    control = {"enabled": True, "completion_verify": {"files_exist": ["done.txt"]}}
    root = write_packet(tmp_path, {"agent_control": control},
                        prompts={"01_a": {}, "02_b": {}, "03_c": {"depends_on": ["01"]}})
    [finding] = only(lint(root), "invalid_agent_control")
    assert finding.file.endswith("03_c.prompt.md") and finding.key == "depends_on"


def test_legacy_shell_command(tmp_path: Path) -> None:
    verify = {"commands": [{"exec": "bash", "args": ["-c", "pytest -q"], "timeout_ms": 60000}]}
    root = write_packet(tmp_path, prompts={"01_hello": {"verify": verify}})
    [finding] = only(lint(root), "legacy_shell_command")
    assert finding.severity == "warning" and finding.key == "verify.commands.0.exec"


def test_verify_command_without_timeout(tmp_path: Path) -> None:
    verify = {"commands": [{"exec": "make", "args": ["test"]}]}
    root = write_packet(tmp_path, prompts={"01_hello": {"verify": verify}})
    [finding] = only(lint(root), "verify_command_without_timeout")
    assert "make" in finding.message


def test_prompt_without_verify(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"verify": None}, "02_empty": {"verify": {}}})
    assert [f.file.rsplit("/", 1)[1] for f in only(lint(root), "prompt_without_verify")] == [
        "01_hello.prompt.md", "02_empty.prompt.md"]


def test_contract_without_commands(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"verify": {"files_exist": ["hello.txt"]}}})
    [finding] = only(lint(root), "contract_without_commands")
    assert finding.severity == "warning" and finding.key == "verify"


@pytest.mark.parametrize("allowed", [[], ["*"], ["."], ["./"], ["app:**"], ["hello.txt", "**/*"]])
def test_changed_paths_only_vacuous(tmp_path: Path, allowed: list[str]) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"verify": {**CLEAN_VERIFY, "changed_paths_only": allowed}}})
    [finding] = only(lint(root), "changed_paths_only_vacuous")
    assert finding.key == "verify.changed_paths_only"


def test_changed_paths_only_naming_files_is_not_vacuous(tmp_path: Path) -> None:
    verify = {**CLEAN_VERIFY, "changed_paths_only": ["hello.txt", "docs/"]}
    assert lint(write_packet(tmp_path, prompts={"01_hello": {"verify": verify}})).findings == []


def test_inert_front_matter_key(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"references": ["docs/adr.md"], "context_files": ["a"]}})
    assert [f.key for f in only(lint(root), "inert_front_matter_key")] == ["references", "context_files"]


# --- AWP's kinds -----------------------------------------------------------------------------------------------


def test_unknown_provider_is_reported_once_where_it_is_written(tmp_path: Path) -> None:
    root = write_packet(tmp_path, {"provider": "nosuch"}, prompts={"01_a": {}, "02_b": {}})
    [finding] = only(lint(root), "unknown_provider")
    assert (finding.file, finding.key, finding.line) == (str(root / "packet.yaml"), "provider", 2)
    assert "simulated" in (finding.hint or "")


def test_unknown_provider_in_a_fallback_target(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"fallback": [{"provider": "nosuch", "model": "m"}]}})
    assert only(lint(root), "unknown_provider")[0].key == "fallback.0.provider"


def test_unknown_alias_for_a_model_no_provider_serves(tmp_path: Path) -> None:
    root = write_packet(tmp_path, {"provider": None, "model": "factory-thrwaway"})
    (root / "packet.yaml").write_text((root / "packet.yaml").read_text().replace("provider: null\n", ""))
    [finding] = only(lint(root), "unknown_alias")
    assert finding.hint and finding.hint.startswith("did you mean 'factory-throwaway'?")
    assert finding.key == "model" and finding.file == str(root / "packet.yaml")


@pytest.mark.parametrize("model", ["factory-throwaway", "gpt-5.6-luna", "sonnet"])
def test_aliases_and_inferable_models_are_not_unknown(tmp_path: Path, model: str) -> None:
    root = write_packet(tmp_path, {"model": model})
    (root / "packet.yaml").write_text((root / "packet.yaml").read_text().replace("provider: simulated\n", ""))
    assert lint(root).findings == []


def test_unknown_alias_in_a_fallback_chain(tmp_path: Path) -> None:
    root = write_packet(tmp_path, {"fallback": ["codex", "factory-throwaway", "factory-nope"]})
    [finding] = only(lint(root), "unknown_alias")
    assert finding.key == "fallback.2" and "factory-nope" in finding.message


def test_unknown_account_not_in_the_catalog(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"provider": "codex", "model": "gpt-5", "accounts": ["ghost"]}})
    [finding] = only(lint(root), "unknown_account")
    assert finding.key == "accounts" and "ghost" in finding.message


def test_unknown_account_of_another_provider(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"provider": "claude", "model": "haiku",
                                                        "accounts": ["claude-main", "spark-a"]}})
    [finding] = only(lint(root), "unknown_account")
    assert "'spark-a' belongs to provider 'codex', not 'claude'" in finding.message


def test_an_entry_with_no_way_to_authenticate_is_an_error_where_providers_yaml_writes_it(tmp_path: Path) -> None:
    providers = tmp_path / "providers.yaml"
    providers.write_text("accounts:\n  bare:\n    provider: claude\n")
    root = write_packet(tmp_path / "p", prompts={"01_hello": {"provider": "claude", "model": "haiku",
                                                              "accounts": ["bare"]}})
    [finding] = only(lint_packet(root, load_catalog(providers)), "provider_cannot_login")
    assert (finding.file, finding.line, finding.key) == (str(providers), 2, "accounts.bare")
    assert "no credential_env and no config_dir" in finding.message


def test_an_agent_word_must_name_a_role_or_a_catalog_agent_and_its_targets_must_be_allowed(tmp_path: Path) -> None:
    [unknown] = only(lint(write_packet(tmp_path / "a", prompts={"01_hello": {"agent": "reviwer"}})), "invalid_packet")
    assert (unknown.key, unknown.line) == ("agent", 2) and "'reviwer'" in unknown.message
    catalog = Catalog(agents={"gpt-reviewer": AgentSpec(role="reviewer", providers=["codex"])}).merged_over(CATALOG)
    root = write_packet(tmp_path / "b", prompts={"01_hello": {"agent": "gpt-reviewer"}})
    [refused] = only(lint_packet(root, catalog), "agent_target_refused")
    assert "provider 'simulated' is not among its providers (codex)" in refused.message


def test_reviewer_same_target_as_the_coder_it_reviews(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_code": {}, "02_review": {"agent": "reviewer"}})
    [finding] = only(lint(root), "reviewer_same_target")
    assert finding.file.endswith("02_review.prompt.md") and finding.key == "agent" and finding.severity == "warning"
    independent = {"agent": "reviewer", "provider": "claude", "model": "haiku"}
    assert lint(write_packet(tmp_path / "ok", prompts={"01_code": {}, "02_review": independent})).findings == []


@pytest.mark.parametrize("entry", [{"files_exist": ["../outside.txt"]}, {"files_absent": ["/etc/passwd"]},
                                   {"doc": [{"repo": "app", "path": "docs/../../x.md"}]},
                                   {"commands": [{"exec": "make", "cwd": "..", "timeout_ms": 60000}]}])
def test_verify_path_escapes_repo(tmp_path: Path, entry: dict[str, Any]) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"verify": {**CLEAN_VERIFY, **entry}}})
    [finding] = only(lint(root), "verify_path_escapes_repo")
    assert finding.key == f"verify.{next(iter(entry))}.0"
    inside = write_packet(tmp_path / "ok", prompts={"01_hello": {"verify": {**CLEAN_VERIFY,
                                                                           "files_exist": ["a/../b.txt"]}}})
    assert lint(inside).findings == []


def test_secret_in_packet_names_kind_and_line_never_the_value(tmp_path: Path) -> None:
    secret = "sk-ant-" + "a1B2c3D4e5F6g7H8i9J0k"
    root = write_packet(tmp_path, body=f"# Work\n\nUse the key {secret} to call the API.\n")
    [finding] = only(lint(root), "secret_in_packet")
    prompt = root / "prompts" / "01_hello.prompt.md"
    assert finding.line == line_of(prompt, secret)
    assert "anthropic key" in finding.message and f"line {finding.line}" in finding.message
    assert secret not in finding.model_dump_json() and "a1B2" not in str(finding)


def test_secret_in_the_manifest(tmp_path: Path) -> None:
    root = write_packet(tmp_path, {"claude_opts": {"api_key": "hunter2-hunter2"}})
    [finding] = only(lint(root), "secret_in_packet")
    assert finding.file == str(root / "packet.yaml") and "hunter2" not in str(finding)


@pytest.mark.parametrize("command", [{"exec": "true"}, {"exec": "/bin/true"}, {"exec": "sh", "args": ["-c", "exit 0"]},
                                     {"exec": "bash", "args": ["-c", ":"]}])
def test_command_cannot_fail(tmp_path: Path, command: dict[str, Any]) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"verify": {"commands": [{**command, "timeout_ms": 1000}]}}})
    kinds = {f.kind for f in lint(root).findings} - {"legacy_shell_command"}
    assert kinds == {"command_cannot_fail"}


def test_a_trivial_command_that_checks_its_output_can_fail(tmp_path: Path) -> None:
    command = {"exec": "true", "stdout_contains": "ok", "timeout_ms": 1000}
    assert lint(write_packet(tmp_path, prompts={"01_hello": {"verify": {"commands": [command]}}})).findings == []


@pytest.mark.parametrize(("timeout", "short"), [(30, True), ("59s", True), ("60s", False), ("30m", False)])
def test_timeout_too_short(tmp_path: Path, timeout: Any, short: bool) -> None:
    report = lint(write_packet(tmp_path, prompts={"01_hello": {"timeout": timeout}}))
    if short:
        [finding] = only(report, "timeout_too_short")
        assert finding.key == "timeout" and finding.line == 2
    else:
        assert report.findings == []


def test_unknown_depends_on(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_a": {}, "02_b": {"depends_on": ["01", 7]}})
    [finding] = only(lint(root), "unknown_depends_on")
    assert "'07'" in finding.message and finding.key == "depends_on"


def test_a_reviewer_depending_on_no_prompt_is_a_finding_not_a_key_error(tmp_path: Path) -> None:
    """The plan looks up a reviewer's upstream prompts for their role: one that is not there has none."""
    root = write_packet(tmp_path, prompts={"01_a": {"agent": "reviewer", "depends_on": ["09"]}})
    [finding] = only(lint(root), "unknown_depends_on")
    assert "'09'" in finding.message


def test_dependency_cycle_is_reported_once(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_a": {}, "02_b": {"depends_on": "03"}, "03_c": {"depends_on": "02"}})
    [finding] = only(lint(root), "dependency_cycle")
    assert finding.file.endswith("02_b.prompt.md") and "02 → 03 → 02" in finding.message


def test_a_prompt_depending_on_itself_is_a_cycle(tmp_path: Path) -> None:
    assert "01 → 01" in only(lint(write_packet(tmp_path, prompts={"01_a": {"depends_on": 1}})),
                             "dependency_cycle")[0].message


def test_unknown_phase_when_phases_are_declared(tmp_path: Path) -> None:
    root = write_packet(tmp_path, {"phases": {"1": "Build"}}, prompts={"01_a": {"phase": 1}, "02_b": {"phase": 2}})
    [finding] = only(lint(root), "unknown_phase")
    assert finding.file.endswith("02_b.prompt.md") and finding.key == "phase"
    assert lint(write_packet(tmp_path / "free", prompts={"01_a": {"phase": 9}})).findings == []


def test_missing_template_packet_local_or_home(tmp_path: Path) -> None:
    root = write_packet(tmp_path, {"prompt_template": "from-adr"}, prompts={"01_hello": {"template": "gone"}})
    assert [f.key for f in only(lint(root), "missing_template")] == ["prompt_template", "template"]
    (root / "templates").mkdir()
    (root / "templates" / "from-adr.prompt.md").write_text("# from an ADR\n")
    templates_dir().mkdir(parents=True)
    (templates_dir() / "gone.prompt.md").write_text("# back\n")
    assert lint(root).findings == []


@pytest.mark.parametrize(("tree", "said"), [("absent", "no such work tree"), ("file", "is a file, not a folder"),
                                             ("bare folder", "is not in a git repository")])
def test_a_work_tree_that_is_not_there_is_a_warning_at_its_path(tmp_path: Path, tree: str, said: str) -> None:
    repos = {"app": {"path": "./app", "default": True}, "web": {"path": "./web"}}
    root = write_packet(tmp_path, {"repos": repos})
    if tree == "file":
        (root / "web").write_text("not a tree\n")
    elif tree == "bare folder":
        (root / "web").mkdir()
    [finding] = only(lint(root), "missing_work_tree")
    assert (finding.severity, finding.key, finding.line) == ("warning", "repos.web.path",
                                                             line_of(root / "packet.yaml", "./web"))
    assert said in finding.message and "repo 'web'" in finding.message and "path:" in (finding.hint or "")
    (root / "web").unlink() if tree == "file" else None
    (root / "web" / ".git").mkdir(parents=True)
    assert lint(root).findings == []


def test_profile_missing_is_a_warning(tmp_path: Path) -> None:
    root = write_packet(tmp_path, {"profile": "laptop"})
    [finding] = only(lint(root), "profile_missing")
    assert (finding.severity, finding.key) == ("warning", "profile")
    assert lint(root).exit_code() == 0 and lint(root).exit_code(strict=True) == 1
    profiles_dir().mkdir(parents=True)
    (profiles_dir() / "laptop.md").write_text("---\nreasoning_effort: low\n---\n")
    assert lint(root).findings == []


def test_a_remote_repos_missing_reference_cache_is_a_warning(tmp_path: Path) -> None:
    remote = {"remote": {"url": "https://git.example.com/app.git", "reference": "cache/app.git"}, "default": True}
    root = write_packet(tmp_path, {"repos": {"app": remote}})
    [finding] = only(lint(root), "reference_missing")
    assert (finding.severity, finding.key) == ("warning", "repos")
    assert "cache/app.git" in finding.message
    (root / "cache" / "app.git").mkdir(parents=True)
    assert lint(root).findings == []


def test_a_packet_whose_own_files_lie_in_a_target_tree_is_a_warning_naming_the_fix(tmp_path: Path) -> None:
    root = write_packet(tmp_path / "p", {"repos": {"app": {"path": ".", "default": True}}})
    (root / ".git").mkdir()
    [finding] = only(lint(root), "packet_in_target_tree")
    assert (finding.severity, finding.key, Path(finding.file).name) == ("warning", "repos", "packet.yaml")
    assert "move the packet out of the tree" in (finding.hint or "")
    assert lint(write_packet(tmp_path / "q")).findings == []  # ./app beside the packet's files: fine


def test_every_kind_has_a_severity_and_a_meaning() -> None:
    assert all(severity in ("error", "warning") and meaning for severity, meaning in KINDS.values())
    assert "unknown_verify_clause" not in KINDS  # the strict model makes it an invalid_packet


# --- the command ---------------------------------------------------------------------------------------------


def awp_lint(*args: str) -> Any:
    result = CliRunner().invoke(cli, ["lint", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_awp_lint_prints_one_line_per_finding_and_a_summary(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"targets": ["web"], "references": ["x"]}})
    result = awp_lint(str(root))
    assert result.exit_code == 1
    prompt = root / "prompts" / "01_hello.prompt.md"
    assert result.stdout.splitlines() == [
        f"{prompt}:3: error unknown_target_repo: target repo 'web' is not declared (declared repos: app)",
        f"{prompt}:4: warning inert_front_matter_key: 'references' is never sent to the agent "
        "(write the reading list in the prompt body)",
        "lint-demo: 1 error, 1 warning",
    ]


def test_awp_lint_exits_0_with_warnings_and_1_with_strict(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"references": ["x"]}})
    assert awp_lint(str(root)).exit_code == 0
    assert awp_lint("--strict", str(root)).exit_code == 1
    assert awp_lint(str(write_packet(tmp_path / "clean"))).stdout == "lint-demo: 0 errors, 0 warnings\n"


def test_awp_lint_json_prints_the_report(tmp_path: Path) -> None:
    root = write_packet(tmp_path, prompts={"01_hello": {"id": "7"}})
    result = awp_lint("--json", str(root))
    assert result.exit_code == 1
    report = LintReport.model_validate(json.loads(result.stdout))
    assert [(f.kind, f.key, f.line) for f in report.findings] == [("prompt_id_filename_mismatch", "id", 2)]


def test_awp_lint_uses_the_providers_file(tmp_path: Path) -> None:
    providers = tmp_path / "providers.yaml"
    providers.write_text("aliases:\n  cheap:\n    targets:\n      - {provider: simulated, model: simulated-demo}\n")
    root = write_packet(tmp_path / "p", {"model": "cheap"})
    (root / "packet.yaml").write_text((root / "packet.yaml").read_text().replace("provider: simulated\n", ""))
    assert awp_lint(str(root)).exit_code == 1
    assert awp_lint("--providers", str(providers), str(root)).exit_code == 0


def test_every_kind_is_produced_by_a_test_in_this_module() -> None:
    source = Path(__file__).read_text()
    assert [kind for kind in KINDS if f'"{kind}"' not in source] == []


# `awp lint` reports a permission setting nobody enforces: allowed_tools on Codex, OpenCode or a `command` agent
# (none has a tool allow-list, nor can the sandbox make one; under bypass it restricts nothing), `plan` on
# OpenCode or `command` without the sandbox; and says when an agent runs unsandboxed.
ENFORCING_CATALOG = Catalog(providers={**BUILTIN.providers, "agent": ProviderSpec(kind="command", command="true"),
                             "bare": ProviderSpec(kind="command", command="true", isolation="none")})


def _enforcement_kinds(tmp: Path, **settings: object) -> dict[str, str]:
    (tmp / "packet.yaml").write_text(yaml.safe_dump({"name": "p", "timeout": "10m", **settings}))
    (tmp / "prompts").mkdir(exist_ok=True)
    (tmp / "prompts" / "01_a.prompt.md").write_text("---\nverify:\n  files_exist: [a.txt]\n---\nDo it.\n")
    return {f.kind: f.severity for f in lint_packet(tmp, ENFORCING_CATALOG).findings
            if f.kind in ("permission_not_enforced", "tools_not_enforced", "isolation_none")}


@pytest.mark.parametrize(("settings", "expected"), [
    ({"provider": "codex", "model": "gpt-5", "allowed_tools": ["Read"]}, {"tools_not_enforced": "error"}),
    ({"provider": "codex", "model": "gpt-5", "allowed_tools": ["Read"], "permission_mode": "bypass"}, {}),
    ({"provider": "opencode", "model": "opencode/x", "allowed_tools": ["Read"]}, {"tools_not_enforced": "error"}),
    ({"provider": "agent", "model": "m", "allowed_tools": ["Read"]}, {"tools_not_enforced": "error"}),
    ({"provider": "claude", "model": "haiku", "allowed_tools": ["Read"], "permission_mode": "plan"}, {}),
    ({"provider": "codex", "model": "gpt-5", "permission_mode": "plan"}, {}),
    ({"provider": "opencode", "model": "opencode/x", "permission_mode": "plan"}, {}),  # the sandbox enforces it
    ({"provider": "agent", "model": "m", "permission_mode": "plan"}, {}),
    ({"provider": "agent", "model": "m", "permission_mode": "bypass", "isolation": "none"},
     {"isolation_none": "warning"}),
    ({"provider": "agent", "model": "m", "permission_mode": "auto"}, {"permission_not_enforced": "error"}),
    ({"provider": "bare", "model": "m", "permission_mode": "plan"},
     {"permission_not_enforced": "error", "isolation_none": "warning"}),
])
def test_lint_reports_what_nobody_enforces(tmp_path: Path, settings: dict[str, object],
                                           expected: dict[str, str]) -> None:
    assert _enforcement_kinds(tmp_path, **settings) == expected
