"""Root and sandboxes: a permission mode the CLI refuses as root is found before any Attempt (doctor, the
run's preflight, the adapter), says what to do, and a CLI's own refusal of its configuration is a
deterministic failure that the decision function does not retry."""

from __future__ import annotations

import random
import stat
from pathlib import Path

from provider_helpers import sink

from awp_pipelines.core.decisions.policy import AttemptFact, chain_of, decide
from awp_pipelines.core.packet.model.recovery import RecoveryConfig
from awp_pipelines.core.packet.providers_config import Catalog, ProviderSpec, load_catalog
from awp_pipelines.core.planning.provider_checks import Need, root_checks
from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.claude_code import ClaudeCodeAdapter
from awp_pipelines.core.providers.sandbox import root_refusal
from awp_pipelines.core.records.failures import FailureEnvelope

REFUSAL = "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"


def _catalog(tmp: Path, provider_env: dict[str, str] | None = None,
             account_env: dict[str, str] | None = None) -> Catalog:
    file = tmp / "providers.yaml"
    import yaml

    file.write_text(yaml.safe_dump({
        "providers": {"claude": {"kind": "claude_code", "env": provider_env or {}}},
        "accounts": {"box": {"provider": "claude", "credential_env": "AWP_BOX_KEY", "env": account_env or {}}}}))
    return load_catalog(file)


def test_root_refuses_bypass_unless_is_sandbox_is_1() -> None:
    refused = root_refusal("claude_code", "bypass", {}, provider="claude", euid=0)
    assert refused is not None and "IS_SANDBOX" in refused.fix and "permission_mode: auto" in refused.fix
    assert root_refusal("claude_code", "bypass", {"IS_SANDBOX": "1"}, provider="claude", euid=0) is None
    assert root_refusal("claude_code", "bypass", {"IS_SANDBOX": "true"}, provider="claude", euid=0) is not None
    assert root_refusal("claude_code", "bypass", {}, provider="claude", euid=1000) is None
    assert root_refusal("claude_code", "auto", {}, provider="claude", euid=0) is None
    assert root_refusal("codex", "bypass", {}, provider="codex", euid=0) is None


def test_doctor_names_the_account_to_set_is_sandbox_on_and_sees_it_set(tmp_path: Path) -> None:
    # In AWP's sandbox (the default) the agent is uid 1000, never root: the rule is for `isolation: none` only.
    assert root_checks(_catalog(tmp_path), [Need("claude", ("box",), permission_mode="bypass")], euid=0) == []
    need = Need("claude", ("box",), permission_mode="bypass", isolation="none")
    [check] = root_checks(_catalog(tmp_path), [need], euid=0)
    assert (check.subject, check.what, check.status) == ("claude:box", "root", "blocking")
    assert "account box" in check.fix and "IS_SANDBOX" in check.fix
    assert root_checks(_catalog(tmp_path, account_env={"IS_SANDBOX": "1"}), [need], euid=0) == []
    assert root_checks(_catalog(tmp_path, provider_env={"IS_SANDBOX": "1"}), [need], euid=0) == []
    assert root_checks(_catalog(tmp_path), [need], euid=1000) == []
    # A fallback is a warning: the packet can still run on its primary target.
    fallback = Need("claude", ("box",), required=False, permission_mode="bypass", isolation="none")
    assert [c.status for c in root_checks(_catalog(tmp_path), [fallback], euid=0)] == ["warning"]


def _fake_refusing_cli(tmp: Path) -> Path:
    """Replays what the real Claude Code prints as root for bypassPermissions: one stderr line, exit 1."""
    script = tmp / "claude"
    script.write_text(f"#!/bin/sh\necho '{REFUSAL}' >&2\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_a_cli_refusing_its_configuration_is_deterministic_and_not_retried(tmp_path: Path) -> None:
    class NoPreflight(ClaudeCodeAdapter):  # let the CLI itself refuse, as an older AWP or another check would
        def refusal(self, request, env, executable):  # type: ignore[no-untyped-def]
            return None

    adapter = NoPreflight(ProviderSpec(kind="claude_code", command=str(_fake_refusing_cli(tmp_path))))
    request = ProviderRequest(prompt_text="hi", cwd=tmp_path, timeout_ms=30_000, permission_mode="bypass")
    failure = adapter.run(request, sink(tmp_path)).failure
    assert failure is not None and failure.failure_class == "provider_config_claim", failure
    assert not failure.retryable and not failure.resumeable and failure.local_deterministic
    assert "not retried" in failure.message and "awp plan" in failure.message  # the fix comes with it
    fact = AttemptFact(number=1, mode="run", result="provider_failed", failure_class=failure.failure_class,
                       retryable=failure.retryable, repairable=failure.repairable, provider="claude")
    verdict = decide([fact], RecoveryConfig(), chain_of("claude", None, None, [], []), random.Random(1))
    assert verdict.action == "fail", verdict
    # The same class claimed by the API (a 400 from the server) keeps Prompt Runner's retry budget.
    remote = FailureEnvelope.for_class("provider_config_claim", "HTTP 400 invalid_request")
    assert remote.retryable


def test_the_adapter_refuses_before_starting_the_cli_as_root(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("os.geteuid", lambda: 0)
    marker = tmp_path / "started"
    script = tmp_path / "claude"
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    script.chmod(0o755)
    adapter = ClaudeCodeAdapter(ProviderSpec(kind="claude_code", command=str(script)))
    request = ProviderRequest(prompt_text="hi", cwd=tmp_path, timeout_ms=30_000, permission_mode="bypass")
    failure = adapter.run(request, sink(tmp_path)).failure
    assert failure is not None and failure.provider_code == "root_permission_mode" and not failure.retryable
    assert "IS_SANDBOX" in failure.message and not marker.exists()
