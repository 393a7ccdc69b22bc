"""The resolved plan: precedence layers, provider inference, aliases, bounds, commit messages, selection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from awp_pipelines.cli import cli
from awp_pipelines.core.packet.bounds import SEVEN_DAYS_MS
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.home_profile import config_home, list_profiles, profiles_dir, prompt_runner_home
from awp_pipelines.core.packet.model.execution import TargetSpec
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN, load_catalog
from awp_pipelines.core.planning.plan import Overrides, PacketPlan, PlanContext, PromptPlan, build_plan, commit_message
from awp_pipelines.core.planning.selection import selection_from_flags

COMPAT_EXPECTED = {
    "authoring_packet": ("simulated", "simulated-demo", ["01", "02"]),
    "claude_packet": ("claude", "haiku", ["01", "02"]),
    "multi_repo_packet": ("codex", "gpt-5.6-luna", ["01", "02"]),
    "simulated_recovery_packet": ("simulated", "simulated-demo", [f"{n:02d}" for n in range(1, 10)]),
    "single_repo_packet": ("codex", "gpt-5.6-luna", ["01", "02"]),
}

PROVIDERS_YAML = """\
accounts:
  spark-a: {provider: codex, credential_env: SPARK_A_KEY}
  spark-b: {provider: codex, credential_env: SPARK_B_KEY}
aliases:
  factory-throwaway:
    rotation: between_attempts
    targets:
      - provider: codex
        model: gpt-5.3-codex-spark
        effort: low
        accounts: [spark-a, spark-b]
      - provider: claude
        model: sonnet
"""


def write_front_matter(file: Path, keys: dict[str, Any], body: str = "") -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(f"---\n{yaml.safe_dump(keys, sort_keys=False)}---\n{body}")


def make_packet(root: Path, manifest: dict[str, Any] | None = None,
                prompts: list[tuple[dict[str, Any], str]] | None = None) -> Path:
    """A native packet; prompts are (front matter, body) pairs numbered 01, 02, …"""
    root.mkdir(parents=True, exist_ok=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "demo", **(manifest or {})}, sort_keys=False))
    for number, (front, body) in enumerate(prompts or [({}, "# Work\n")], start=1):
        write_front_matter(root / "prompts" / f"{number:02d}_step.prompt.md", {"id": f"{number:02d}", **front}, body)
    return root


def plan_of(root: Path, overrides: Overrides | None = None, catalog: Any = BUILTIN, **selection: Any) -> PacketPlan:
    ctx = PlanContext(catalog=catalog, overrides=overrides or Overrides())
    return build_plan(load_packet(root), ctx, selection_from_flags(**selection) if selection else None)


def first(root: Path, overrides: Overrides | None = None, catalog: Any = BUILTIN) -> PromptPlan:
    return plan_of(root, overrides, catalog).prompts[0]


def write_home_config(keys: dict[str, Any]) -> None:
    write_front_matter(config_home() / "config.md", keys)


def write_profile(name: str, keys: dict[str, Any]) -> None:
    write_front_matter(profiles_dir() / f"{name}.md", keys)


# --- precedence: each layer overrides the one below, and `sources` names the winner ---------------------------


def test_default_model_is_haiku_on_the_inferred_claude_provider(tmp_path: Path) -> None:
    plan = first(make_packet(tmp_path / "p"))
    assert (plan.provider, plan.model, plan.effort) == ("claude", "haiku", None)
    assert plan.sources["model"] == "default"
    assert plan.sources["provider"] == "inferred from model 'haiku'"


def test_env_overrides_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_MODEL", "sonnet")
    monkeypatch.setenv("AWP_PROVIDER", "claude_code")
    plan = first(make_packet(tmp_path / "p"))
    assert (plan.provider, plan.model) == ("claude", "sonnet")
    assert plan.sources["model"] == plan.sources["provider"] == "env"


def test_home_config_overrides_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_MODEL", "sonnet")
    monkeypatch.setenv("AWP_PROVIDER", "claude")
    write_home_config({"model": "gpt-5.6-luna", "provider": "codex"})
    plan = first(make_packet(tmp_path / "p"))
    assert (plan.provider, plan.model) == ("codex", "gpt-5.6-luna")
    assert plan.sources["model"] == f"home:{config_home() / 'config.md'}"


def test_named_profile_overrides_home_config(tmp_path: Path) -> None:
    write_home_config({"model": "sonnet", "reasoning_effort": "high"})
    write_profile("fast", {"model": "opus", "reasoning_effort": "low"})
    plan = first(make_packet(tmp_path / "p", {"profile": "fast"}))
    assert (plan.model, plan.effort) == ("opus", "low")
    assert plan.sources["model"] == plan.sources["reasoning_effort"] == "profile:fast"


def test_prompt_runners_profile_folder_is_read_where_awps_has_none(tmp_path: Path) -> None:
    """A Prompt Runner user's ~/.config/prompt_runner/ (config.md, profiles/) still applies under AWP; AWP's own
    profile of the same name wins."""
    write_front_matter(prompt_runner_home() / "config.md", {"reasoning_effort": "medium"})
    write_front_matter(prompt_runner_home() / "profiles" / "fast.md", {"model": "opus"})
    write_front_matter(prompt_runner_home() / "profiles" / "both.md", {"model": "opus"})
    write_profile("both", {"model": "sonnet"})
    fast = first(make_packet(tmp_path / "p", {"profile": "fast"}))
    assert (fast.model, fast.sources["model"], fast.effort) == ("opus", "profile:fast", "medium")
    assert first(make_packet(tmp_path / "q", {"profile": "both"})).model == "sonnet"
    assert [p.name for p in list_profiles()] == ["both", "fast"]


def test_profile_flag_replaces_the_manifest_profile(tmp_path: Path) -> None:
    write_profile("fast", {"model": "opus"})
    write_profile("cheap", {"model": "haiku"})
    plan = plan_of(make_packet(tmp_path / "p", {"profile": "fast"}), Overrides(profile="cheap"))
    assert plan.profile == "cheap"
    assert (plan.prompts[0].model, plan.prompts[0].sources["model"]) == ("haiku", "profile:cheap")


def test_packet_overrides_the_named_profile(tmp_path: Path) -> None:
    write_profile("fast", {"model": "opus", "reasoning_effort": "low"})
    plan = first(make_packet(tmp_path / "p", {"profile": "fast", "model": "sonnet"}))
    assert (plan.model, plan.sources["model"]) == ("sonnet", "packet")
    assert (plan.effort, plan.sources["reasoning_effort"]) == ("low", "profile:fast")


def test_prompt_front_matter_overrides_the_packet(tmp_path: Path) -> None:
    root = make_packet(tmp_path / "p", {"model": "sonnet", "reasoning_effort": "low"},
                       [({"model": "opus"}, "# One\n"), ({}, "# Two\n")])
    one, two = plan_of(root).prompts
    assert (one.model, one.sources["model"]) == ("opus", "prompt")
    assert (one.effort, one.sources["reasoning_effort"]) == ("low", "packet")
    assert (two.model, two.sources["model"]) == ("sonnet", "packet")


def test_cli_flags_override_prompt_front_matter(tmp_path: Path) -> None:
    root = make_packet(tmp_path / "p", {}, [({"model": "opus", "provider": "claude", "reasoning_effort": "low"},
                                             "# One\n")])
    plan = first(root, Overrides(provider="codex", model="gpt-5.6-luna", effort="high"))
    assert (plan.provider, plan.model, plan.effort) == ("codex", "gpt-5.6-luna", "high")
    assert plan.sources["provider"] == plan.sources["model"] == plan.sources["reasoning_effort"] == "cli"


# --- provider inference and aliases ---------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "provider"), [("haiku", "claude"), ("gpt-5.6-luna", "codex")])
def test_provider_is_inferred_from_the_model(tmp_path: Path, model: str, provider: str) -> None:
    plan = first(make_packet(tmp_path / "p", {"model": model}))
    assert plan.provider == provider
    assert plan.sources["provider"] == f"inferred from model '{model}'"


def test_alias_expands_to_primary_target_and_fallback_chain(tmp_path: Path) -> None:
    providers = tmp_path / "providers.yaml"
    providers.write_text(PROVIDERS_YAML)
    plan = first(make_packet(tmp_path / "p", {"model": "factory-throwaway"}), catalog=load_catalog(providers))
    assert (plan.provider, plan.model, plan.effort) == ("codex", "gpt-5.3-codex-spark", "low")
    assert plan.accounts == ["spark-a", "spark-b"]
    assert plan.fallback == [TargetSpec(provider="claude", model="sonnet", rotation="between_attempts")]  # the alias's
    assert plan.sources["model"] == plan.sources["provider"] == "packet (alias factory-throwaway)"
    assert plan.sources["reasoning_effort"] == plan.sources["accounts"] == "alias factory-throwaway"


def test_alias_effort_yields_to_an_explicit_effort(tmp_path: Path) -> None:
    providers = tmp_path / "providers.yaml"
    providers.write_text(PROVIDERS_YAML)
    plan = first(make_packet(tmp_path / "p", {"model": "factory-throwaway", "reasoning_effort": "high"}),
                 catalog=load_catalog(providers))
    assert (plan.effort, plan.sources["reasoning_effort"]) == ("high", "packet")


def test_alias_target_without_model_uses_the_provider_default_model(tmp_path: Path) -> None:
    providers = tmp_path / "providers.yaml"
    providers.write_text("aliases:\n  cheap:\n    targets:\n      - provider: claude\n")
    plan = first(make_packet(tmp_path / "p", {"model": "cheap"}), catalog=load_catalog(providers))
    assert (plan.provider, plan.model) == ("claude", "haiku")


# --- bounds from the single `timeout` key ---------------------------------------------------------------------


@pytest.mark.parametrize(("timeout", "ms", "source"), [
    (None, SEVEN_DAYS_MS, "default (unset)"),
    ("45m", 45 * 60_000, "timeout"),
    ("unbounded", SEVEN_DAYS_MS, "unbounded"),
    ("30d", SEVEN_DAYS_MS, "clamped to 7 days"),
    (SEVEN_DAYS_MS + 1, SEVEN_DAYS_MS, "clamped to 7 days"),
    (10_000, 10_000, "timeout"),
])
def test_bounds_come_from_timeout(tmp_path: Path, timeout: Any, ms: int, source: str) -> None:
    manifest = {} if timeout is None else {"timeout": timeout}
    bounds = first(make_packet(tmp_path / "p", manifest)).bounds
    assert (bounds.timeout_ms, bounds.source) == (ms, source)
    assert bounds.transport_timeout_ms == bounds.stream_timeout_ms == bounds.run_deadline_ms == ms
    assert bounds.idle_timeout_ms == max(120_000, ms + 30_000)


def test_idle_bound_never_drops_below_two_minutes(tmp_path: Path) -> None:
    assert first(make_packet(tmp_path / "p", {"timeout": "5s"})).bounds.idle_timeout_ms == 120_000
    assert first(make_packet(tmp_path / "q", {"timeout": "2h"})).bounds.idle_timeout_ms == 2 * 3_600_000 + 30_000


def test_prompt_timeout_overrides_the_packet_timeout(tmp_path: Path) -> None:
    root = make_packet(tmp_path / "p", {"timeout": "2h"}, [({"timeout": "45m"}, "# One\n")])
    plan = first(root)
    assert (plan.bounds.timeout_ms, plan.sources["timeout"]) == (45 * 60_000, "prompt")


def test_timeout_that_is_no_duration_is_an_error_naming_the_prompt(tmp_path: Path) -> None:
    root = make_packet(tmp_path / "p", {}, [({"timeout": "soon"}, "# One\n")])
    with pytest.raises(PacketError) as err:
        plan_of(root)
    assert err.value.key == "timeout" and Path(err.value.file).name == "01_step.prompt.md"


# --- profile warnings -----------------------------------------------------------------------------------------


def test_missing_profile_is_a_warning_not_an_error(tmp_path: Path) -> None:
    plan = plan_of(make_packet(tmp_path / "p", {"profile": "nowhere", "model": "sonnet"}))
    assert len(plan.warnings) == 1 and "profile 'nowhere' not found" in plan.warnings[0]
    assert plan.prompts[0].model == "sonnet"


def test_a_model_set_in_a_later_layer_than_the_provider_brings_its_own_provider(tmp_path: Path) -> None:
    root = make_packet(tmp_path / "p", {"provider": "claude", "model": "haiku"})
    ctx = PlanContext(catalog=BUILTIN, overrides=Overrides(model="gpt-5.6-luna"))
    prompt = build_plan(load_packet(root), ctx).prompts[0]
    assert (prompt.provider, prompt.model) == ("codex", "gpt-5.6-luna")
    assert prompt.sources["provider"].startswith("inferred from model")
    # The same model named in the same layer as the provider keeps the provider the author chose.
    same_layer = make_packet(tmp_path / "q", {"provider": "simulated", "model": "gpt-5.6-luna"})
    assert build_plan(load_packet(same_layer), PlanContext(catalog=BUILTIN)).prompts[0].provider == "simulated"


# --- commit messages ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("front", "body", "message"), [
    ({"commit": "docs: add hello"}, "## Mission\n\nCreate hello.\n", "docs: add hello"),
    ({}, "# Title\n\n## Mission\n\n  Create `hello.txt`.\nMore.\n", "feat: Create `hello.txt`."),
    ({}, "## Mission\nfeat: already prefixed\n", "feat: already prefixed"),
    ({}, "## Mission\nfix(core): keep its own type\n", "fix(core): keep its own type"),
    ({"name": "Create hello"}, "## Mission\n\n## Deliverables\n\n- hello.txt\n", "feat: Create hello"),
    ({"name": "Create hello"}, "# Create hello\n\nNo mission here.\n", "feat: Create hello"),
])
def test_commit_message_rules(tmp_path: Path, front: dict[str, Any], body: str, message: str) -> None:
    root = make_packet(tmp_path / "p", {}, [(front, body)])
    prompt = load_packet(root).prompts[0]
    assert commit_message(prompt) == message
    assert first(root).commit_message == message


# --- selection ------------------------------------------------------------------------------------------------


@pytest.fixture
def four_prompts(tmp_path: Path) -> Path:
    return make_packet(tmp_path / "p", {"phases": {1: "Build", 2: "Ship"}},
                       [({"phase": 1}, "# A\n"), ({"phase": 1}, "# B\n"), ({"phase": 2}, "# C\n"),
                        ({"phase": 2}, "# D\n")])


@pytest.mark.parametrize(("selection", "ids"), [
    ({}, ["01", "02", "03", "04"]),
    ({"ids": ("1", "003")}, ["01", "03"]),
    ({"from_id": "02"}, ["02", "03", "04"]),
    ({"through_id": "02"}, ["01", "02"]),
    ({"from_id": "02", "through_id": "03"}, ["02", "03"]),
    ({"phase": "2"}, ["03", "04"]),
    ({"remaining": True, "completed": {"01", "03"}}, ["02", "04"]),
    ({"remaining": True, "completed": {"01", "02", "03", "04"}}, []),
    ({"completed": {"01"}}, ["01", "02", "03", "04"]),
])
def test_selection_flags_choose_prompts(four_prompts: Path, selection: dict[str, Any], ids: list[str]) -> None:
    assert [p.id for p in plan_of(four_prompts, **selection).prompts] == ids


def test_selecting_an_unknown_prompt_is_an_error(four_prompts: Path) -> None:
    with pytest.raises(PacketError, match="no prompt '9'"):
        plan_of(four_prompts, from_id="9")


def test_plan_cli_applies_selection_flags(four_prompts: Path) -> None:
    result = CliRunner().invoke(cli, ["plan", str(four_prompts), "--phase", "1", "--json"])
    assert result.exit_code == 0, result.output
    assert [p["id"] for p in json.loads(result.output)["prompts"]] == ["01", "02"]


# --- `awp plan --json` on Prompt Runner's packets -------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(COMPAT_EXPECTED))
def test_plan_json_on_compat_packet(prompt_runner_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    name: str) -> None:
    monkeypatch.chdir(tmp_path)  # no ./resources/providers.yaml: the built-in catalog
    monkeypatch.delenv("AWP_PROVIDERS", raising=False)
    result = CliRunner().invoke(cli, ["plan", str(prompt_runner_root / name), "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    provider, model, ids = COMPAT_EXPECTED[name]
    assert [p["id"] for p in plan["prompts"]] == ids
    packet = load_packet(prompt_runner_root / name)
    for entry, prompt in zip(plan["prompts"], packet.prompts, strict=True):
        assert (entry["provider"], entry["model"]) == (provider, model)
        assert entry["sources"]["model"] == "packet"
        assert Path(entry["file"]) == prompt.file
        assert prompt.front.verify is not None
        clauses = {k for k, v in prompt.front.verify.model_dump(by_alias=True).items() if v}
        assert entry["verify_items"] and {i["kind"] for i in entry["verify_items"]} == clauses
    assert any(f"profile '{packet.manifest.profile}' not found" in w for w in plan["warnings"])


@pytest.mark.parametrize(("ms", "text"), [(604_800_000, "7d"), (600_000, "10m"), (90_000, "1m30s"), (5, "5ms")])
def test_bounds_print_as_human_durations(ms: int, text: str) -> None:
    from awp_pipelines.core.packet.bounds import human_duration

    assert human_duration(ms) == text


def test_plan_text_shows_each_failure_classes_retry_budget(tmp_path: Path) -> None:
    """The decision counts a rate limit against its own budget (5 by default), a transport drop against 4:
    `awp plan` shows those, not one `retry 3` that no class is counted against."""
    root = make_packet(tmp_path / "p", {"recovery": {"retry": {"class_attempts": {"provider_rate_limit": 7}}}})
    result = CliRunner().invoke(cli, ["plan", str(root)], terminal_width=400)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "rate limit 7" in text and "capacity 5" in text and "transport disconnect 4" in text, text
    assert "retry 3," not in text


def test_skip_preflight_lets_a_run_past_a_missing_agent_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from awp_pipelines.core.planning.preflight import refuse_unknown_providers

    monkeypatch.setenv("PATH", str(tmp_path))  # no agent CLI on it
    root = make_packet(tmp_path / "p", {"provider": "claude"})
    prompts = plan_of(root).prompts
    with pytest.raises(PacketError, match="not on PATH"):
        refuse_unknown_providers(prompts, BUILTIN, root / "packet.yaml")
    # --skip-preflight:
    refuse_unknown_providers(prompts, BUILTIN, root / "packet.yaml", executables=False, logins=False)
    with pytest.raises(PacketError, match="unknown provider"):  # a provider that does not exist is never skipped
        refuse_unknown_providers(plan_of(make_packet(tmp_path / "q", {"provider": "nope"})).prompts, BUILTIN,
                                 root / "packet.yaml", executables=False, logins=False)
