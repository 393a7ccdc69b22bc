"""Authoring commands, run as a user runs them: `awp packet new`, `prompt new`, `checklist sync`, `profile`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from packet_sources import PACKET_NAMES

from awp_pipelines.cli import cli
from awp_pipelines.cli_features.authoring import VERIFY_PLACEHOLDER, checklist_path, new_prompt, sync_checklists
from awp_pipelines.core.packet.home_profile import load_profile, profiles_dir, templates_dir
from awp_pipelines.core.packet.packet import CHECKLIST_SUFFIX, load_packet


def awp(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def said(result: Result) -> str:
    """The output with line wrapping undone (error lines are wrapped at the console width)."""
    return " ".join(result.output.split())


@pytest.fixture
def packet(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    assert awp("packet", "new", folder, "--repo", "app=../app").exit_code == 0
    return folder


def copy_packet(prompt_runner_root: Path, name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(prompt_runner_root / name, tmp_path / name))


def test_packet_new_writes_a_native_manifest_that_loads(tmp_path: Path) -> None:
    result = awp("packet", "new", tmp_path / "my-packet", "--repo", "app=../app", "--repo", "docs=../docs")
    assert result.exit_code == 0, result.output
    loaded = load_packet(tmp_path / "my-packet")
    assert loaded.manifest_file.name == "packet.yaml"
    assert loaded.name == "my-packet"
    assert loaded.manifest.provider is None and loaded.manifest.model is None
    assert {name: repo.default for name, repo in loaded.repos.items()} == {"app": True, "docs": False}
    assert loaded.repos["app"].path == (tmp_path / "app").resolve()
    assert loaded.prompt_dir.is_dir() and loaded.prompts == []


def test_packet_new_prompt_runner_manifest_with_name_and_json(tmp_path: Path) -> None:
    result = awp("packet", "new", tmp_path / "x", "--prompt-runner", "--name", "pr-demo", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert Path(payload["manifest"]).name == "prompt_runner_packet.md"
    loaded = load_packet(tmp_path / "x")
    assert loaded.name == "pr-demo" and loaded.repos == {}
    assert loaded.body.startswith("# pr-demo")


def test_packet_new_refuses_an_existing_packet_and_bad_input(tmp_path: Path, packet: Path) -> None:
    again = awp("packet", "new", packet, "--prompt-runner")
    assert again.exit_code == 2 and "already exists" in said(again)
    assert awp("packet", "new", tmp_path / "y", "--name", "Bad Name").exit_code == 2
    bad_repo = awp("packet", "new", tmp_path / "z", "--repo", "app")
    assert bad_repo.exit_code == 2 and "NAME=PATH" in said(bad_repo)
    assert not (tmp_path / "y").exists() and not (tmp_path / "z" / "packet.yaml").exists()


def test_prompt_new_picks_the_next_free_number(packet: Path) -> None:
    assert awp("prompt", "new", packet, "first").exit_code == 0
    (packet / "prompts" / "07_later.prompt.md").write_text("---\nid: '07'\n---\n# Later\n")
    result = awp("prompt", "new", packet, "add-parser", "--name", "Add the parser", "--json")
    assert result.exit_code == 0, result.output
    created = Path(json.loads(result.output)["file"])
    assert created.name == "08_add-parser.prompt.md"
    loaded = load_packet(packet)
    assert [p.id for p in loaded.prompts] == ["01", "07", "08"]
    prompt = loaded.prompt("08")
    assert prompt.name == "Add the parser"
    assert prompt.front.targets == ["app"]
    assert prompt.front.commit == "feat: add parser"
    assert prompt.front.verify is not None and prompt.front.verify.files_exist == [VERIFY_PLACEHOLDER]
    for heading in ("## Mission", "## Deliverables", "## Verification Notes"):
        assert heading in prompt.body
    assert prompt.body.startswith("# Add the parser\n")


def test_prompt_new_prefers_the_packet_template_then_the_home_template(packet: Path) -> None:
    home_templates = templates_dir()
    home_templates.mkdir(parents=True)
    (home_templates / "spec.prompt.md").write_text("# {{name}} from home\n\n## Mission\n\nHome.\n")
    from_home = new_prompt(packet, "one", template="spec")
    assert from_home.read_text().split("---\n", 2)[2] == "# One from home\n\n## Mission\n\nHome.\n"

    (packet / "templates").mkdir()
    (packet / "templates" / "spec.prompt.md").write_text(
        "---\nverify:\n  contains:\n    - path: OUT.md\n      text: done\n---\n# {{name}} from the packet\n")
    result = awp("prompt", "new", packet, "two", "--template", "spec")
    assert result.exit_code == 0, result.output
    prompt = load_packet(packet).prompt("02")
    assert prompt.body == "# Two from the packet\n"
    assert prompt.front.template == "spec"
    assert prompt.front.verify is not None
    assert [c.path for c in prompt.front.verify.contains] == ["OUT.md"]
    assert prompt.front.verify.files_exist == [VERIFY_PLACEHOLDER]


def test_prompt_new_for_an_agent_starts_from_the_agents_template(packet: Path, tmp_path: Path) -> None:
    (packet / "templates").mkdir()
    (packet / "templates" / "review.prompt.md").write_text("# {{name}}: review\n\n## Mission\n\nReview it.\n")
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({"agents": {"critic": {"role": "reviewer", "template": "review"}}}))
    result = awp("prompt", "new", packet, "check", "--agent", "critic", "--providers", providers)
    assert result.exit_code == 0, result.output
    prompt = load_packet(packet).prompt("01")
    assert (prompt.front.agent, prompt.front.template) == ("critic", "review")
    assert prompt.body == "# Check: review\n\n## Mission\n\nReview it.\n"
    unknown = awp("prompt", "new", packet, "other", "--agent", "poet", "--providers", providers)
    assert unknown.exit_code == 2 and "no agent 'poet'" in unknown.output


def test_prompt_new_uses_the_manifest_prompt_template_and_previous_phase(prompt_runner_root: Path,
                                                                         tmp_path: Path) -> None:
    folder = copy_packet(prompt_runner_root, "authoring_packet", tmp_path)
    result = awp("prompt", "new", folder, "define_api")
    assert result.exit_code == 0, result.output
    loaded = load_packet(folder)
    prompt = loaded.prompt("03")
    assert loaded.manifest.prompt_template and prompt.front.template == loaded.manifest.prompt_template
    assert str(prompt.front.phase) == "2"
    assert prompt.body.startswith("# Define api\n\n## Required Reading")


@pytest.mark.parametrize(("args", "message"), [
    (["--template", "missing"], "no template 'missing'"),
    (["--phase", "9"], "no phase '9'"),
    (["--target", "nope"], "unknown target repo 'nope'"),
])
def test_prompt_new_rejects_unknown_template_phase_and_target(prompt_runner_root: Path, tmp_path: Path,
                                                              args: list[str], message: str) -> None:
    folder = copy_packet(prompt_runner_root, "authoring_packet", tmp_path)
    result = awp("prompt", "new", folder, "x", *args)
    assert result.exit_code == 2 and message in said(result)
    assert len(load_packet(folder).prompts) == 2


def test_prompt_new_rejects_a_bad_slug(packet: Path) -> None:
    result = awp("prompt", "new", packet, "Bad Slug")
    assert result.exit_code == 2 and "invalid prompt slug" in said(result)


@pytest.mark.parametrize("name", PACKET_NAMES)
def test_checklist_sync_reproduces_prompt_runner_checklists_byte_for_byte(prompt_runner_root: Path, tmp_path: Path,
                                                                          name: str) -> None:
    folder = copy_packet(prompt_runner_root, name, tmp_path)
    committed = {f.name: f.read_bytes() for f in (folder / "prompts").glob(f"*{CHECKLIST_SUFFIX}")}
    assert committed
    for file in (folder / "prompts").glob(f"*{CHECKLIST_SUFFIX}"):
        file.unlink()
    result = awp("checklist", "sync", folder)
    assert result.exit_code == 0, result.output
    regenerated = {f.name: f.read_bytes() for f in (folder / "prompts").glob(f"*{CHECKLIST_SUFFIX}")}
    assert regenerated == committed


def test_checklist_sync_rewrites_only_changed_files(prompt_runner_root: Path, tmp_path: Path) -> None:
    folder = copy_packet(prompt_runner_root, "claude_packet", tmp_path)
    assert sync_checklists(folder) == []
    stale = checklist_path(load_packet(folder).prompt("02").file)
    stale.write_text("old\n")
    assert sync_checklists(folder) == [stale]
    assert stale.read_bytes() == (prompt_runner_root / "claude_packet" / "prompts" / stale.name).read_bytes()


def test_checklist_check_detects_drift_and_writes_nothing(prompt_runner_root: Path, tmp_path: Path) -> None:
    folder = copy_packet(prompt_runner_root, "single_repo_packet", tmp_path)
    clean = awp("checklist", "sync", folder, "--check")
    assert clean.exit_code == 0, clean.output
    prompt = load_packet(folder).prompt("01")
    front = yaml.safe_load(prompt.file.read_text().split("---\n", 2)[1])
    front["verify"]["files_exist"].append("extra.txt")
    prompt.file.write_text(f"---\n{yaml.safe_dump(front, sort_keys=False)}---\n{prompt.body}")
    checklist = checklist_path(prompt.file)
    before = checklist.read_bytes()
    drift = awp("checklist", "sync", folder, "--check", "--json")
    assert drift.exit_code == 1
    assert json.loads(drift.output)["out_of_date"] == [str(checklist.resolve())]
    assert checklist.read_bytes() == before
    assert awp("checklist", "sync", folder).exit_code == 0
    assert b"- [ ] file exists: extra.txt" in checklist.read_bytes()
    assert awp("checklist", "sync", folder, "--check").exit_code == 0


def test_profile_new_and_list_round_trip() -> None:
    result = awp("profile", "new", "fast", "--provider", "codex", "--model", "gpt-5.6-luna", "--effort", "low")
    assert result.exit_code == 0, result.output
    assert awp("profile", "new", "bare").exit_code == 0
    loaded = load_profile("fast")
    assert loaded is not None and loaded.file == profiles_dir() / "fast.md"
    assert (loaded.settings.provider, loaded.settings.model, loaded.settings.reasoning_effort) == (
        "codex", "gpt-5.6-luna", "low")
    listing = awp("profile", "list", "--json")
    assert listing.exit_code == 0
    rows = {row["name"]: row for row in json.loads(listing.output)}
    assert set(rows) == {"bare", "fast"}
    assert rows["fast"]["model"] == "gpt-5.6-luna" and rows["bare"]["model"] is None
    assert "fast  provider=codex model=gpt-5.6-luna reasoning_effort=low" in awp("profile", "list").output


def test_profile_new_refuses_to_overwrite_without_force() -> None:
    assert awp("profile", "new", "fast", "--model", "haiku").exit_code == 0
    refused = awp("profile", "new", "fast", "--model", "sonnet")
    assert refused.exit_code == 2 and "--force" in said(refused)
    assert load_profile("fast").settings.model == "haiku"  # type: ignore[union-attr]
    assert awp("profile", "new", "fast", "--model", "sonnet", "--force").exit_code == 0
    assert load_profile("fast").settings.model == "sonnet"  # type: ignore[union-attr]


def test_profile_new_validates_name_and_effort() -> None:
    assert awp("profile", "new", "../escape").exit_code == 2
    bad = awp("profile", "new", "fast", "--effort", "ultra")
    assert bad.exit_code == 2 and "reasoning_effort" in said(bad)
    assert not profiles_dir().exists() or list(profiles_dir().iterdir()) == []


def test_profile_list_without_profiles_says_how_to_create_one() -> None:
    result = awp("profile", "list")
    assert result.exit_code == 0 and "awp profile new" in said(result)
    assert json.loads(awp("profile", "list", "--json").output) == []


def test_init_sets_up_the_home_once_and_keeps_what_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_CONFIG_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    made = json.loads(awp("init", "demo", "--json").output)
    assert load_profile("simulated-default") is not None and load_profile("simulated-default").settings.provider \
        == "simulated"
    assert Path(made["default_template"]).read_text().startswith("# {{name}}")
    assert load_packet(tmp_path / "demo").name == "demo"  # as `awp packet new demo` made it
    Path(made["config"]).write_text("---\nmodel: sonnet\n---\n")
    assert awp("init").exit_code == 0
    assert Path(made["config"]).read_text() == "---\nmodel: sonnet\n---\n"  # a second init changes nothing


def test_list_shows_each_packet_and_its_prompts_in_order(tmp_path: Path, packet: Path) -> None:
    for slug in ("first", "second"):
        new_prompt(packet, slug)
    other = tmp_path / "other"
    assert awp("packet", "new", other).exit_code == 0
    listed = json.loads(awp("list", tmp_path, "--json").output)
    assert [(p["packet"], [(q["id"], q["depends_on"]) for q in p["prompts"]]) for p in listed] == [
        ("demo", [("01", []), ("02", ["01"])]), ("other", [])]
    assert listed[0]["packet_run"] is None and listed[0]["prompts"][0]["state"] is None  # never run here
    text = awp("list", packet).output
    assert "demo" in text and "01 First" in text and "02 Second" in text
    refused = awp("list", tmp_path / "demo" / "prompts")
    assert refused.exit_code == 2 and "no packet here" in said(refused)
