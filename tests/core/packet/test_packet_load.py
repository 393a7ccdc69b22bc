"""Loading a packet folder: Prompt Runner's packets unchanged, the native packet.yaml, ids, repos, recovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.model.recovery import ClassAttempts, RetryConfig
from awp_pipelines.core.packet.packet import CHECKLIST_SUFFIX, load_packet, normalize_id

COMPAT = {
    "authoring_packet": 2,
    "claude_packet": 2,
    "multi_repo_packet": 2,
    "simulated_recovery_packet": 9,
    "single_repo_packet": 2,
}


def write(root: Path, files: dict[str, str]) -> Path:
    """Files by path relative to `root`, written as given."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize("name", sorted(COMPAT))
def test_every_compat_packet_loads_with_its_prompts_in_order(prompt_runner_root: Path, name: str) -> None:
    packet = load_packet(prompt_runner_root / name)
    assert packet.name == name.replace("_", "-")
    assert packet.manifest_file.name == "prompt_runner_packet.md"
    assert [p.id for p in packet.prompts] == [f"{n:02d}" for n in range(1, COMPAT[name] + 1)]
    assert [p.number for p in packet.prompts] == list(range(1, COMPAT[name] + 1))
    assert all(p.filename_id == p.id for p in packet.prompts)


def test_checklist_files_next_to_prompts_are_not_prompts(prompt_runner_root: Path, tmp_path: Path) -> None:
    folder = prompt_runner_root / "claude_packet" / "prompts"
    files = sorted(f.name for f in folder.iterdir())
    checklists = [f for f in files if f.endswith(CHECKLIST_SUFFIX)]
    assert len(checklists) == 2 and len(files) == 4
    assert [p.file.name for p in load_packet(prompt_runner_root / "claude_packet").prompts] == [
        f for f in files if f not in checklists]
    root = write(tmp_path, {"packet.yaml": "name: demo\n",
                            "prompts/01_a.prompt.md": "---\nid: '01'\n---\nA\n",
                            "prompts/01_a.prompt.checklist.md": "- [ ] file exists: a.txt\n",
                            "prompts/notes.md": "not a prompt\n"})
    assert [p.file.name for p in load_packet(root).prompts] == ["01_a.prompt.md"]


def test_repos_resolve_against_the_packet_root_not_the_cwd(prompt_runner_root: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    root = prompt_runner_root / "multi_repo_packet"
    packet = load_packet(root)
    assert {name: repo.path for name, repo in packet.repos.items()} == {
        "alpha": (root / "repos" / "alpha").resolve(), "beta": (root / "repos" / "beta").resolve()}
    assert packet.default_repo == "alpha"
    assert packet.root == root.resolve()


def test_prompt_recovery_deep_merges_over_the_packets_and_keeps_the_other_values(prompt_runner_root: Path) -> None:
    packet = load_packet(prompt_runner_root / "simulated_recovery_packet")
    seventh = packet.prompt("07").recovery
    assert seventh.retry.class_attempts.provider_runtime_claim == 1
    defaults = ClassAttempts().model_dump()
    assert seventh.retry.class_attempts.model_dump() == defaults | {"provider_runtime_claim": 1}
    # The packet's own values survive the merge: zero backoff (not the default 1000 ms), no jitter.
    assert (seventh.retry.base_delay_ms, seventh.retry.max_delay_ms, seventh.retry.jitter) == (0, 0, False)
    assert seventh.retry.max_attempts == RetryConfig().max_attempts
    assert seventh.repair.max_attempts == 2 and seventh.resume_attempts == 2
    assert packet.prompt("01").recovery.retry.class_attempts.provider_runtime_claim == 3


def test_prompt_recovery_merges_key_by_key_at_every_level(tmp_path: Path) -> None:
    root = write(tmp_path, {
        "packet.yaml": "name: demo\nrecovery:\n  retry: {base_delay_ms: 10, class_attempts: {unknown: 7}}\n",
        "prompts/01_a.prompt.md": "---\nrecovery:\n  retry: {max_attempts: 5, class_attempts: {protocol_error: 1}}\n"
                                  "---\nA\n"})
    retry = load_packet(root).prompts[0].recovery.retry
    assert (retry.base_delay_ms, retry.max_attempts) == (10, 5)
    assert (retry.class_attempts.unknown, retry.class_attempts.protocol_error) == (7, 1)
    assert retry.class_attempts.provider_capacity == 5


def test_only_the_body_after_the_front_matter_is_the_prompt_text(prompt_runner_root: Path, tmp_path: Path) -> None:
    prompt = load_packet(prompt_runner_root / "simulated_recovery_packet").prompt("07")
    heading = f"# {prompt.name}"  # both sources open each body with the prompt's name as its title
    assert prompt.body.startswith(heading + "\n")
    assert "simulate:" not in prompt.body and "provider_runtime_claim" not in prompt.body
    lines = prompt.file.read_text().splitlines()
    assert lines[prompt.body_line - 2] == "---" and lines[prompt.body_line - 1] == heading
    root = write(tmp_path, {"packet.yaml": "name: demo\n",
                            "prompts/01_a.prompt.md": "---\nid: '01'\n---\n# A\n\n---\n\nafter a rule\n"})
    assert load_packet(root).prompts[0].body == "# A\n\n---\n\nafter a rule\n"


def test_a_native_packet_yaml_loads(tmp_path: Path) -> None:
    root = write(tmp_path, {
        "packet.yaml": "name: native\ndescription: A native packet\nprovider: simulated\nprompt_dir: steps\n"
                       "repos:\n  app: {path: ./app, default: true}\n",
        "steps/01_first.prompt.md": "---\nname: First\n---\nDo one.\n",
        "steps/02_second.prompt.md": "---\n---\nDo two.\n"})
    packet = load_packet(root)
    assert (packet.name, packet.manifest.description, packet.manifest_file.name) == (
        "native", "A native packet", "packet.yaml")
    assert packet.body == ""
    assert [(p.id, p.name, p.body) for p in packet.prompts] == [("01", "First", "Do one.\n"),
                                                               ("02", "Second", "Do two.\n")]
    assert packet.repos["app"].path == (root / "app").resolve()
    assert load_packet(root / "packet.yaml").name == "native"  # the manifest file works as well as the folder


@pytest.mark.parametrize(("written", "hint"), [("promts", "did you mean 'prompts'?"),
                                               ("nope", "folders holding prompts: prompts")])
def test_a_prompt_dir_that_is_not_there_is_an_error_at_its_line(tmp_path: Path, written: str, hint: str) -> None:
    """Not a packet of no prompts (`no prompt of x matches  (prompts: )` at run)."""
    root = write(tmp_path, {"packet.yaml": f"name: typo\nprovider: simulated\nprompt_dir: {written}\n",
                            "prompts/01_a.prompt.md": "---\n---\nx\n"})
    with pytest.raises(PacketError) as err:
        load_packet(root)
    assert (err.value.file, err.value.line, err.value.key, err.value.hint) == (root / "packet.yaml", 3, "prompt_dir",
                                                                               hint)
    assert err.value.message == f"'{written}' is no folder of the packet"
    (root / "packet.yaml").write_text("name: typo\nprovider: simulated\n")
    assert load_packet(root).prompt_dir == root / "prompts"


@pytest.mark.parametrize(("manifest", "message", "hint"), [
    ("provider: simulated\n", "required key is missing", "add `name:`"),
    ("name: x\ndirty_tree: maybe\n", "invalid value 'maybe'; allowed: 'refuse' or 'set_aside'",
     "write one of the allowed values"),
    ("name: x\naccounts: 7\n", "Input should be a valid list", "write a valid list here"),
    ("name: x\nzzz: 1\n", "unknown key; allowed keys here: accounts, ", "remove it, or write one of the allowed keys"),
    ("- name\n", "the manifest must be a YAML mapping of keys", "write one `key: value` per line, "),
])
def test_a_manifest_error_says_how_to_fix_it(tmp_path: Path, manifest: str, message: str, hint: str) -> None:
    """Every bad value ends `(how to fix)`, not only the misspelt keys that have a did-you-mean."""
    root = write(tmp_path, {"packet.yaml": manifest})
    with pytest.raises(PacketError) as err:
        load_packet(root)
    assert err.value.message.startswith(message) and (err.value.hint or "").startswith(hint)


@pytest.mark.parametrize(("written", "shown"), [("'  '", '"  "'), ('"a\\n\\nb"', '"a\\n\\nb"')])
def test_a_key_that_is_no_plain_word_is_shown_quoted_on_its_one_line(tmp_path: Path, written: str, shown: str) -> None:
    """A key of spaces or with a newline in it printed as written broke the one line (found by `make fuzz`)."""
    root = write(tmp_path, {"packet.yaml": f"name: x\n{written}: 1\n"})
    with pytest.raises(PacketError) as err:
        load_packet(root)
    line = str(err.value)
    assert "\n" not in line and f":2: {shown}: unknown key" in line


def test_repos_in_list_form(tmp_path: Path) -> None:
    root = write(tmp_path / "packet", {
        "packet.yaml": "name: listed\nrepos:\n  - {name: app, path: ../app}\n"
                       "  - {name: lib, path: ../lib, default: true}\n"})
    packet = load_packet(root)
    assert {n: r.path for n, r in packet.repos.items()} == {"app": tmp_path / "app", "lib": tmp_path / "lib"}
    assert packet.default_repo == "lib"
    assert packet.prompts == []


def test_prompt_ids_are_normalised_from_the_filename_or_the_front_matter(tmp_path: Path) -> None:
    root = write(tmp_path, {"packet.yaml": "name: ids\n",
                            "prompts/1_x.prompt.md": "---\n---\nx\n",
                            "prompts/002-y.prompt.md": "---\nid: 2\n---\ny\n",
                            "prompts/10_z.prompt.md": "---\nid: '010'\n---\nz\n",
                            "prompts/setup.prompt.md": "---\n---\nunnumbered\n"})
    prompts = load_packet(root).prompts
    assert [(p.id, p.slug, p.filename_id) for p in prompts] == [
        ("01", "x", "01"), ("02", "y", "02"), ("10", "z", "10"), ("setup", "setup", None)]
    assert prompts[0].name == "X"
    assert [normalize_id(v) for v in ("1", 1, "001", "intro")] == ["01", "01", "01", "intro"]


def test_resolved_file_is_the_prompt_files_resolved_path_through_any_link(tmp_path: Path) -> None:
    """The asset's code reference opens the prompt file on this machine: `resolved_file` resolves the prompt
    folder once per packet, and must still give what `Path.resolve` gives for a linked folder or file."""
    real = tmp_path / "real"
    write(real, {"packet.yaml": "name: linked\nprompt_dir: steps\n",
                 "store/01_a.prompt.md": "---\nname: A\n---\nA.\n"})
    (real / "stepsdir").mkdir()
    (real / "steps").symlink_to(real / "stepsdir")  # the prompt folder is a link, and so is one prompt
    (real / "stepsdir" / "01_a.prompt.md").symlink_to(real / "store" / "01_a.prompt.md")
    (real / "stepsdir" / "02_b.prompt.md").write_text("---\nname: B\n---\nB.\n", encoding="utf-8")
    (tmp_path / "view").mkdir()
    (tmp_path / "view" / "pk").symlink_to(real)
    for loaded in (load_packet(tmp_path / "view" / "pk"), load_packet(real)):
        resolved = {p.id: loaded.resolved_file(p) for p in loaded.prompts}
        assert resolved == {p.id: p.file.resolve() for p in loaded.prompts}
        assert resolved["02"] == real / "stepsdir" / "02_b.prompt.md"
        assert resolved["01"] == real / "store" / "01_a.prompt.md"
