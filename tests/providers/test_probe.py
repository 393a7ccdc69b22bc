"""`probe: true` targets: the availability check (doctor's checks, and a GET of an HTTP provider's models
list), and the Attempt moving past a target whose probe fails, with the answer in its reason."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
import responses
import yaml
from provider_helpers import FAKES

from awp_pipelines.core.decisions.policy import Target, chain_of, past_unavailable
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.packet.providers_config import AccountSpec, Catalog, ProviderSpec
from awp_pipelines.core.planning.target_probe import probe

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from e2e_support import awp, stored_attempts  # noqa: E402

BASE = "http://probe.test/v1"
KEY = "sk-or-probe-secret-0123456789abcdef"
MISSING = "/nonexistent/awp-probe-missing-cli"


def _http(var: str = "AWP_PROBE_KEY") -> Catalog:
    return Catalog(providers={"router": ProviderSpec(kind="openai_http", base_url=BASE)},
                   accounts={"router-a": AccountSpec(provider="router", credential_env=var)})


@responses.activate
def test_an_http_probe_gets_the_models_list_with_the_accounts_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_PROBE_KEY", KEY)
    responses.get(f"{BASE}/models", json={"data": [{"id": "m"}]})
    answer = probe(_http(), "router", "router-a")
    assert answer.ok and f"GET {BASE}/models: 200" in answer.detail
    assert responses.calls[0].request.headers["Authorization"] == f"Bearer {KEY}"
    assert KEY not in answer.detail


@pytest.mark.parametrize(("reply", "said"), [
    ({"status": 401, "json": {"error": "bad key"}}, "401"),
    ({"status": 503, "body": "down"}, "503"),
    ({"body": requests.ConnectionError("reset")}, "ConnectionError"),
])
@responses.activate
def test_an_http_probe_fails_on_a_refusal_an_outage_or_no_connection(reply: dict, said: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_PROBE_KEY", KEY)
    responses.get(f"{BASE}/models", **reply)
    answer = probe(_http(), "router", "router-a")
    assert not answer.ok and said in answer.detail and KEY not in answer.detail


def test_an_http_probe_without_the_credential_names_the_missing_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWP_PROBE_UNSET_KEY", raising=False)
    with responses.RequestsMock() as mocked:
        mocked.get(f"{BASE}/models", json={"data": []})  # an open endpoint: the credential check alone fails
        answer = probe(_http("AWP_PROBE_UNSET_KEY"), "router", "router-a")
        assert "Authorization" not in mocked.calls[0].request.headers
    assert not answer.ok and answer.detail == "$AWP_PROBE_UNSET_KEY is not set"


def test_a_cli_probe_fails_when_the_executable_is_missing_and_passes_when_it_answers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENCODE_API_KEY", KEY)
    missing = Catalog(providers={"oc": ProviderSpec(kind="opencode", command=MISSING,
                                                    credential_env="OPENCODE_API_KEY")})
    answer = probe(missing, "oc", None)
    assert not answer.ok and f"{MISSING} not found on PATH" in answer.detail
    present = Catalog(providers={"oc": ProviderSpec(kind="opencode", command=str(FAKES / "opencode"),
                                                    credential_env="OPENCODE_API_KEY")})
    answer = probe(present, "oc", None)
    assert answer.ok and str(FAKES / "opencode") in answer.detail and "$OPENCODE_API_KEY is set" in answer.detail


def test_past_an_unavailable_target_come_its_other_accounts_then_the_next_targets() -> None:
    from awp_pipelines.core.packet.model.execution import TargetSpec

    chain = chain_of("p", "m", None, ["a", "b"], [TargetSpec(provider="q", probe=True), TargetSpec(provider="r")],
                     probe=True)
    first = Target("p", "m", "a", None)
    assert past_unavailable(chain, first, {("p", "a", "m")}).target == Target("p", "m", "b", None)  # type: ignore[union-attr]
    after_q = past_unavailable(chain, Target("q", None, None, None), {("p", "a", "m"), ("q", None, None)})
    assert after_q is not None and after_q.target == Target("r", None, None, None)  # never back to p
    assert past_unavailable(chain, Target("r", None, None, None), {("r", None, None)}) is None


def _probing_packet(root: Path, make_git_repo: Callable[[Path], Path], first: dict) -> Path:
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "probing", "model": "probing", "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    front = {"id": "01", "verify": {"files_exist": ["done.txt"]},
             "simulate": {"attempts": [{"writes": [{"path": "done.txt", "text": "ok"}]}]}}
    (root / "prompts" / "01_p.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\n# P\n")
    (root / "providers.yaml").write_text(yaml.safe_dump({
        "providers": {"first": first},
        "accounts": {"sim-a": {"provider": "simulated"}},
        "aliases": {"probing": {"targets": [{"provider": "first", "probe": True},
                                            {"provider": "simulated", "accounts": ["sim-a"]}]}}}))
    return root


def _run_to_the_fallback(root: Path) -> AttemptRecord:
    """`awp run` of the probing packet: its one Attempt, which must have completed on the fallback sim-a."""
    result = awp("run", root, "--providers", root / "providers.yaml", "--json")
    assert result.exit_code == 0, result.output
    packet_run = json.loads(result.stdout)["packet_run"]
    [record] = stored_attempts(root, packet_run)
    assert (record.target.provider, record.target.account, record.result) == ("simulated", "sim-a", "completed")
    return record


@pytest.mark.slow
@pytest.mark.parametrize("case", ["missing_cli", "http_503"])
def test_awp_run_skips_a_probed_target_that_is_unavailable_and_records_why(
        case: str, tmp_path: Path, make_git_repo: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_PROBE_KEY", KEY)
    first = ({"kind": "opencode", "command": MISSING} if case == "missing_cli" else
             {"kind": "openai_http", "base_url": BASE, "credential_env": "AWP_PROBE_KEY"})
    root = _probing_packet(tmp_path / "pkt", make_git_repo, first)
    with responses.RequestsMock(assert_all_requests_are_fired=case == "http_503") as mocked:
        mocked.get(f"{BASE}/models", status=503, body="overloaded")
        record = _run_to_the_fallback(root)
    said = f"{MISSING} not found on PATH" if case == "missing_cli" else f"GET {BASE}/models: 503"
    assert "probe of first/" in record.target.reason and f": unavailable ({said})" in record.target.reason
    assert record.target.reason.startswith("primary target of the plan")


def test_the_resource_keeps_every_field_of_the_catalogs_providers_and_accounts() -> None:
    """The compute probes and runs from the resource's catalog: a per-account base_url, the plain `env`
    settings and the provider's model prefixes must survive (a hand-kept copy of the fields lost them)."""
    from awp_pipelines.orchestration.compute.resources import AwpResource

    catalog = Catalog(providers={"router": ProviderSpec(kind="openai_http", models=["gpt-"], env={"A": "1"})},
                      accounts={"router-a": AccountSpec(provider="router", credential_env="AWP_PROBE_KEY",
                                                        base_url=BASE, env={"IS_SANDBOX": "1"}, cooldown_s=7)})
    resource = AwpResource().with_catalog(catalog)
    assert resource.catalog() == catalog
    assert resource.account("router-a") == catalog.accounts["router-a"]
    assert resource.provider("router") == catalog.providers["router"]


@pytest.mark.slow
def test_awp_run_probes_a_per_account_endpoint(tmp_path: Path, make_git_repo: Callable[[Path], Path],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider has no base_url, its account has one: the probe asks that endpoint (it used to report
    "unavailable (no base_url)" without asking anything)."""
    monkeypatch.setenv("AWP_PROBE_KEY", KEY)
    root = _probing_packet(tmp_path / "pkt", make_git_repo, {"kind": "openai_http"})
    providers = yaml.safe_load((root / "providers.yaml").read_text())
    providers["accounts"]["router-a"] = {"provider": "first", "credential_env": "AWP_PROBE_KEY", "base_url": BASE}
    providers["aliases"]["probing"]["targets"][0]["accounts"] = ["router-a"]
    (root / "providers.yaml").write_text(yaml.safe_dump(providers))
    with responses.RequestsMock() as mocked:
        mocked.get(f"{BASE}/models", status=503, body="overloaded")
        record = _run_to_the_fallback(root)
        assert mocked.calls[0].request.headers["Authorization"] == f"Bearer {KEY}"
    assert "probe of first/" in record.target.reason
    assert f"(router-a): unavailable (GET {BASE}/models: 503)" in record.target.reason


@pytest.mark.slow
def test_a_free_model_not_offered_moves_down_its_alias_chain_to_the_next_alias(
        tmp_path: Path, make_git_repo: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The seed's free chain: factory-free-useful's probe says its model is not offered, so the Attempt runs on
    factory-free-fallback (the alias's `fallback`), not "trying it anyway" on the missing model."""
    monkeypatch.setenv("AWP_PROBE_KEY", KEY)
    root = _probing_packet(tmp_path / "pkt", make_git_repo, {})
    (root / "packet.yaml").write_text((root / "packet.yaml").read_text().replace("model: probing",
                                                                                "model: factory-free-useful"))
    (root / "providers.yaml").write_text(yaml.safe_dump({
        "providers": {"zen": {"kind": "openai_http", "base_url": BASE, "credential_env": "AWP_PROBE_KEY"}},
        "accounts": {"sim-a": {"provider": "simulated"}},
        "aliases": {"factory-free-useful": {"fallback": ["factory-free-fallback"], "targets": [
                        {"provider": "zen", "model": "deepseek-v4-flash-free", "probe": True}]},
                    "factory-free-fallback": {"targets": [{"provider": "simulated", "accounts": ["sim-a"]}]}}}))
    with responses.RequestsMock() as mocked:
        mocked.get(f"{BASE}/models", json={"data": [{"id": "some-paid-model"}]})
        record = _run_to_the_fallback(root)
    assert "probe of zen/deepseek-v4-flash-free: unavailable" in record.target.reason
    assert "trying it anyway" not in record.target.reason
