"""A provider entry in providers.yaml is laid over the built-in it names field by field: the README's root fix
written the short way (`claude: {env: {IS_SANDBOX: '1'}}`) keeps the built-in's credential variable, config
folder, command and models, so the real Claude Code CLI (local fake Messages API) runs a packet to 2/2; `awp
plan` says which layer set each field; an entry that leaves the agent no way to authenticate is an error with
its file and line before any Attempt."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from fake_apis import fake_api
from provider_helpers import real_cli

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.providers_config import BUILTIN, load_catalog

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from e2e_support import awp  # noqa: E402

KEY = "sk-ant-api03-layered-config-key-0123456789abcdef"
ROOT_FIX = {"env": {"IS_SANDBOX": "1"}}


def _providers(tmp: Path, claude_entry: dict[str, object]) -> Path:
    file = tmp / "providers.yaml"
    file.write_text("# the README's root fix\n" + yaml.safe_dump({"providers": {"claude": claude_entry}}))
    return file


def _packet(tmp: Path, make_git_repo, prompts: int = 2) -> Path:  # type: ignore[no-untyped-def]
    packet = tmp / "pkt"
    make_git_repo(packet / "workspace")
    (packet / "packet.yaml").write_text(yaml.safe_dump({
        "name": "layered", "provider": "claude", "model": "claude-haiku-4-5", "timeout": "3m",
        "permission_mode": "bypass", "repos": {"work": {"path": "./workspace", "default": True}}}))
    (packet / "prompts").mkdir()
    for n in range(1, prompts + 1):
        (packet / "prompts" / f"0{n}_hello.prompt.md").write_text(f"---\nid: '0{n}'\nname: Hello {n}\n---\n# Hello\n\n"
                                                                   "Say hello.\n")
    return packet


@pytest.mark.parametrize("entry", [ROOT_FIX, {"kind": "claude_code", **ROOT_FIX}], ids=["env-only", "with-kind"])
def test_a_short_entry_keeps_every_builtin_field_it_does_not_write(tmp_path: Path, entry: dict[str, object]) -> None:
    catalog = load_catalog(_providers(tmp_path, entry))
    builtin = BUILTIN.providers["claude"]
    assert catalog.providers["claude"] == builtin.model_copy(update={"env": {"IS_SANDBOX": "1"}})
    assert catalog.set_by("providers", "claude", "credential_env") == "built-in"
    assert catalog.set_by("providers", "claude", "env") == f"{tmp_path / 'providers.yaml'}:4"


def test_a_mapping_merges_key_by_key_and_another_kind_replaces_the_builtin(tmp_path: Path) -> None:
    file = tmp_path / "providers.yaml"
    file.write_text(yaml.safe_dump({"providers": {"claude": {"env": {"A": "1"}}, "codex": {"kind": "command",
                                                                                       "command": "true"}}}))
    base = load_catalog(file)
    over = tmp_path / "over.yaml"
    over.write_text(yaml.safe_dump({"providers": {"claude": {"env": {"B": "2"}}}}))
    merged = load_catalog(over).merged_over(base)
    assert merged.providers["claude"].env == {"A": "1", "B": "2"}
    assert merged.providers["claude"].credential_env == "ANTHROPIC_API_KEY"
    codex = base.providers["codex"]
    assert (codex.kind, codex.credential_env, codex.models) == ("command", None, [])


def test_an_unknown_key_in_a_short_entry_is_an_error_with_its_line(tmp_path: Path) -> None:
    with pytest.raises(PacketError) as err:
        load_catalog(_providers(tmp_path, {"env": {"IS_SANDBOX": "1"}, "credentail_env": "X"}))
    assert (err.value.line, err.value.key) == (4, "providers.claude.credentail_env")
    assert "credential_env" in str(err.value.hint)


def test_plan_shows_each_provider_field_with_the_layer_that_set_it(tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    providers = _providers(tmp_path, ROOT_FIX)
    packet = _packet(tmp_path, make_git_repo, prompts=1)
    result = awp("plan", packet, "--providers", providers, "--json")
    assert result.exit_code == 0, result.output
    [entry] = json.loads(result.stdout)["catalog"]
    assert (entry["section"], entry["name"]) == ("providers", "claude")
    assert {k: f["set_by"] for k, f in entry["fields"].items()} == {
        "kind": "built-in", "command": "built-in", "default_model": "built-in", "credential_env": "built-in",
        "config_dir_env": "built-in", "models": "built-in", "env": f"{providers}:4"}
    text = awp("plan", packet, "--providers", providers)
    assert "provider claude" in text.output and f"{providers}:4" in "".join(text.output.split())


def test_an_entry_with_no_way_to_authenticate_is_an_error_before_any_attempt(
        tmp_path: Path, make_git_repo, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    claude = real_cli("claude")
    monkeypatch.setenv("PATH", f"{claude.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    providers = _providers(tmp_path, {**ROOT_FIX, "credential_env": None, "config_dir_env": None})
    packet = _packet(tmp_path, make_git_repo)
    with fake_api("success") as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        lint = awp("lint", packet, "--providers", providers, "--json")
        run = awp("run", packet, "--providers", providers)
    [error] = [f for f in json.loads(lint.stdout)["findings"] if f["kind"] == "provider_cannot_login"]
    assert (error["file"], error["line"], error["severity"]) == (str(providers), 3, "error")
    assert run.exit_code == 2 and f"{providers}:3" in run.output and "no way to authenticate" in run.output
    assert server.requests == []  # no Attempt started
    assert not (packet / ".awp" / "attempts").exists()


@pytest.mark.slow
@pytest.mark.parametrize("entry", [ROOT_FIX, {"kind": "claude_code", **ROOT_FIX}], ids=["env-only", "with-kind"])
def test_the_readme_root_fix_written_short_runs_the_real_claude_code_to_two_of_two(
        tmp_path: Path, make_git_repo, monkeypatch: pytest.MonkeyPatch, entry: dict[str, object]) -> None:  # type: ignore[no-untyped-def]
    """As root (CI) or as the sandbox's non-root user alike: the entry sets IS_SANDBOX, the built-in the rest."""
    claude = real_cli("claude")
    monkeypatch.setenv("PATH", f"{claude.parent}:{os.environ['PATH']}")
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    packet = _packet(tmp_path, make_git_repo)
    with fake_api("success") as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        run = awp("run", packet, "--providers", _providers(tmp_path, entry), "--json")
    assert run.exit_code == 0, run.output
    outcomes = json.loads(run.stdout)["prompts"]
    assert [o["result"] for o in outcomes] == ["completed", "completed"]
    assert any(key == KEY for _, key, _ in server.requests)
