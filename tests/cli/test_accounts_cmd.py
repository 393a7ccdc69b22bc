"""`awp accounts`: each account's state, reason and until when, read from the instance's store (text and
`--json`); `awp accounts lift NAME` ends a cooldown; a refused login is shown as `auth_refused`, not as a
rest after a limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from awp_pipelines.cli import cli
from awp_pipelines.core.decisions.rotation import AUTH_RECHECK_MS, cooldown_for
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance
from awp_pipelines.orchestration.ledger.ledger import now_ms


@pytest.fixture
def packet(tmp_path: Path) -> Path:
    root = tmp_path / "pkt"
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "acc", "provider": "codex", "accounts": ["a", "b"]}))
    (root / "prompts" / "01_p.prompt.md").write_text("---\nid: '01'\n---\n# P\n")
    (root / "providers.yaml").write_text(yaml.safe_dump({"accounts": {
        "a": {"provider": "codex", "credential_env": "AWP_ACC_A"},
        "b": {"provider": "codex", "credential_env": "AWP_ACC_B"},
        "c": {"provider": "claude", "credential_env": "AWP_ACC_C"}}}))
    instance = open_instance(root)
    try:
        ledger = ledger_of(instance)
        for cooldown in (cooldown_for("a", FailureEnvelope.for_class("provider_rate_limit", "usage limit reached",
                                                                     suggested_delay_ms=3_600_000), 60, now_ms()),
                         cooldown_for("b", FailureEnvelope.for_class("provider_auth_claim", "Not logged in · Please "
                                                                     "run /login"), 3600, now_ms())):
            assert cooldown is not None
            ledger.rest(cooldown)
    finally:
        instance.dispose()
    return root


def _accounts(packet: Path, *args: str) -> dict:
    result = CliRunner().invoke(cli, ["accounts", *args, "--providers", str(packet / "providers.yaml"), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_accounts_lists_each_state_with_its_reason_and_until(packet: Path) -> None:
    views = {v["account"]: v for v in _accounts(packet, str(packet))["accounts"]}
    assert views["a"]["state"] == "cooling_down" and views["a"]["failure_class"] == "provider_rate_limit"
    assert 3500 < views["a"]["remaining_s"] <= 3600 and views["a"]["until"].endswith("+00:00")
    # Not logged in: an auth refusal, shown as one, passed over for minutes rather than parked for the hour.
    assert views["b"]["state"] == "auth_refused" and "Not logged in" in views["b"]["reason"]
    assert views["b"]["remaining_s"] <= AUTH_RECHECK_MS // 1000
    assert (views["c"]["state"], views["c"]["provider"]) == ("ready", "claude")
    text = CliRunner().invoke(cli, ["accounts", str(packet), "--providers", str(packet / "providers.yaml")]).output
    assert "a (codex): cooling_down until" in text and "resting after provider_rate_limit" in text
    assert "b (codex): auth_refused" in text and "log in, then `awp accounts lift b`" in text
    assert "resting after" not in text.split("b (codex)")[1].splitlines()[0]


def test_lift_ends_a_cooldown_and_the_rotation_picks_the_account_again(packet: Path) -> None:
    lifted = _accounts(packet, "lift", "a", str(packet))
    assert lifted["account"] == "a" and lifted["lifted"]["failure_class"] == "provider_rate_limit"
    views = {v["account"]: v for v in _accounts(packet, str(packet))["accounts"]}
    assert views["a"]["state"] == "ready" and views["b"]["state"] == "auth_refused"
    instance = open_instance(packet)
    try:
        assert not ledger_of(instance).availability(["a"], now_ms()).resting("a")
    finally:
        instance.dispose()
    again = CliRunner().invoke(cli, ["accounts", "lift", "a", str(packet), "--providers",
                                     str(packet / "providers.yaml")])
    assert again.exit_code == 0 and "a has no cooldown: it is ready" in again.output


def test_lifting_an_unknown_account_names_the_mistake(packet: Path) -> None:
    result = CliRunner().invoke(cli, ["accounts", "lift", "nobody", str(packet), "--providers",
                                      str(packet / "providers.yaml")])
    assert result.exit_code == 2 and "no account 'nobody'" in result.output


def test_doctor_shows_a_refused_login_as_one_not_as_a_rest_after_a_limit() -> None:
    from awp_pipelines.core.decisions.rotation import Cooldown
    from awp_pipelines.core.planning.provider_checks import Need, cooldown_checks

    cooldowns = {"a": Cooldown(account="a", until_ms=120_000, failure_class="provider_auth_claim",
                               reason="Not logged in · Please run /login"),
                 "b": Cooldown(account="b", until_ms=3_600_000, failure_class="provider_rate_limit")}
    refused, limited = cooldown_checks([Need("codex", ("a", "b", "c"))], cooldowns, now_ms=0)
    assert "login was refused (Not logged in" in refused.detail and "awp accounts lift a" in refused.fix
    assert "resting 60 min more after provider_rate_limit" in limited.detail
