"""The real Amp CLI (npm @sourcegraph/amp, pinned in install_real_clis.sh) against a local stand-in for Amp's server
(fake_amp.py, through AMP_URL): its refusals before a session, each one Attempt, read from what it prints and, where
it prints only "Unexpected error inside Amp CLI.", from the structured error its log file names. A session itself
runs on Amp's server, which no local fake here speaks: its events are tested with replayed ones (test_amp.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from fake_amp import fake_amp
from provider_helpers import real_cli, sink

from awp_pipelines.core.packet.providers_config import BUILTIN, AccountBinding
from awp_pipelines.core.providers.amp import AmpAdapter
from awp_pipelines.core.providers.base import ProviderOutcome, ProviderRequest
from awp_pipelines.core.providers.registry import adapter_for

KEY = "sgamp_user_real_amp_test_0123456789abcdef"


@pytest.fixture(scope="module")
def amp() -> Path:
    return real_cli("amp")


def _run(tmp: Path, amp: Path, url: str, key: str = KEY) -> tuple[ProviderOutcome, float]:
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    account = AccountBinding(name="real-amp", provider="amp", credential_env="AWP_REAL_AMP_KEY",
                             config_dir=str(tmp / "amp-config"), base_url=url)
    env = {"PATH": os.environ["PATH"], "AWP_REAL_AMP_KEY": key} if key else {"PATH": os.environ["PATH"]}
    request = ProviderRequest(prompt_text="Say hello.", cwd=work, timeout_ms=120_000, idle_timeout_ms=90_000,
                              account=account, env=env, home=tmp / "home")
    adapter = adapter_for(BUILTIN.providers["amp"].model_copy(update={"command": str(amp)}), name="amp")
    assert isinstance(adapter, AmpAdapter)
    started = time.monotonic()
    return adapter.run(request, sink(tmp, (KEY,))), time.monotonic() - started


def _refused(outcome: ProviderOutcome, cls: str) -> str:
    failure = outcome.failure
    assert failure is not None and (failure.failure_class, failure.retryable, failure.repairable) == (
        cls, False, False), failure
    assert "not retried" in failure.message, failure.message
    return failure.message


def test_real_amp_with_no_key_is_refused_not_left_waiting_at_its_login(tmp_path: Path, amp: Path) -> None:
    """With no key Amp starts an interactive login and waits for a code for ever: stopped at that line."""
    with fake_amp("success") as server:
        outcome, seconds = _run(tmp_path, amp, server.url, key="")
    assert "No API key found. Starting login flow" in _refused(outcome, "provider_auth_claim") and seconds < 60


def test_real_amp_key_refused_by_its_server(tmp_path: Path, amp: Path) -> None:
    with fake_amp("refused_key") as server:
        outcome, _ = _run(tmp_path, amp, server.url)
        asked = server.requests
    assert "Invalid or missing API key" in _refused(outcome, "provider_auth_claim")
    assert asked and all(auth == f"Bearer {KEY}" for _, auth in asked)  # its own account's key, under AMP_API_KEY


@pytest.mark.parametrize(("scenario", "cls"), [("thread_429", "provider_rate_limit"),
                                               ("thread_503", "provider_capacity")])
def test_real_amp_limits_and_outages_are_read_from_its_log(tmp_path: Path, amp: Path, scenario: str,
                                                           cls: str) -> None:
    """Its stderr says only "Unexpected error inside Amp CLI."; its log file names the thread its server refused."""
    with fake_amp(scenario) as server:
        outcome, _ = _run(tmp_path, amp, server.url)
    failure = outcome.failure
    assert failure is not None and failure.failure_class == cls, failure
    assert "Failed to create thread-actors thread: " + scenario[-3:] in failure.message and failure.retryable


def test_real_amp_server_unreachable_is_a_transport_failure(tmp_path: Path, amp: Path) -> None:
    with fake_amp("success") as server:
        url = server.url  # closed when the block ends: nothing listens there any more
    outcome, _ = _run(tmp_path, amp, url)
    failure = outcome.failure
    assert failure is not None and failure.failure_class == "transport_disconnect", failure
    assert "Couldn't connect to the Amp server" in failure.message and failure.retryable
