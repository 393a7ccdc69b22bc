"""Ids that become file names and paths that reach the OS are checked where they are written."""

from __future__ import annotations

import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from repo_paths import TESTS

from awp_pipelines.cli import cli
from awp_pipelines.cli.common import packet_run_id
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.ids import MAX_ID_LENGTH, check_id, id_problem
from awp_pipelines.core.packet.packet import load_packet

MALFORMED = TESTS / "malformed"


@pytest.mark.parametrize("value", ["01", "pr-1a2b3c4d", "hello_world", "v1.2", "A" * MAX_ID_LENGTH])
def test_ordinary_ids_are_identifiers(value: str) -> None:
    assert id_problem(value) is None
    assert check_id(value, "prompt id") == value


@pytest.mark.parametrize("value", ["", "../../x", "a/b", "..", ".hidden", "-rf", "a b", "x\0y", "é",
                                   "A" * (MAX_ID_LENGTH + 1)])
def test_path_like_or_odd_ids_are_refused(value: str) -> None:
    assert id_problem(value) is not None
    with pytest.raises(ValueError, match="packet run id"):
        check_id(value, "packet run id")


def packet_with_prompt(tmp_path: Path, name: str, front_id: str | None) -> Path:
    root = tmp_path / "p"
    shutil.copytree(MALFORMED / "bad_timeout_text", root)
    (root / "prompts" / "01_hello.prompt.md").unlink()
    id_line = f'id: "{front_id}"\n' if front_id is not None else ""
    (root / "prompts" / name).write_text(f"---\n{id_line}name: x\n---\nbody\n")
    return root


def test_a_traversal_prompt_id_is_a_load_error_at_its_line(tmp_path: Path) -> None:
    root = packet_with_prompt(tmp_path, "01_hello.prompt.md", "../../x")
    with pytest.raises(PacketError) as caught:
        load_packet(root)
    assert (caught.value.key, caught.value.line) == ("id", 2)
    assert "'../../x' is not an identifier" in caught.value.message


def test_a_prompt_id_taken_from_an_odd_filename_names_the_file(tmp_path: Path) -> None:
    root = packet_with_prompt(tmp_path, "my hello.prompt.md", None)
    with pytest.raises(PacketError) as caught:
        load_packet(root)
    assert caught.value.file == root.resolve() / "prompts" / "my hello.prompt.md"
    assert "from the filename" in caught.value.message


def test_lint_reports_the_traversal_id_as_one_line_exit_2(tmp_path: Path) -> None:
    root = packet_with_prompt(tmp_path, "01_hello.prompt.md", "../../x")
    result = CliRunner().invoke(cli, ["lint", str(root)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and ":2: id: prompt id '../../x'" in result.stderr


def test_the_packet_run_callback_turns_a_bad_id_into_a_usage_error() -> None:
    @click.command()
    @click.option("--packet-run", callback=packet_run_id)
    def command(packet_run: str | None) -> None:
        click.echo(f"ok {packet_run}")

    assert CliRunner().invoke(command, ["--packet-run", "pr-1234"]).output == "ok pr-1234\n"
    refused = CliRunner().invoke(command, ["--packet-run", "../../etc"])
    assert refused.exit_code == 2
    assert "packet run id '../../etc' is not an identifier" in refused.output


@pytest.mark.parametrize(("key", "value", "message"), [
    ("prompt_dir", "x" * 300, "path component is longer"),
    ("prompt_template", "t/" * 2000, "path is longer"),
    ("profile", "../../etc/passwd", "profile name '../../etc/passwd' is not an identifier"),
])
def test_paths_no_os_call_could_take_are_load_errors(tmp_path: Path, key: str, value: str, message: str) -> None:
    root = tmp_path / "p"
    shutil.copytree(MALFORMED / "bad_timeout_text", root)
    manifest = root / "prompt_runner_packet.md"
    manifest.write_text(manifest.read_text().replace("name:", f"{key}: {value}\nname:", 1))
    with pytest.raises(PacketError) as caught:
        load_packet(root)
    assert (caught.value.key, caught.value.line) == (key, 2)
    assert message in caught.value.message


def test_a_verify_entry_too_long_for_the_os_is_a_load_error(tmp_path: Path) -> None:
    root = packet_with_prompt(tmp_path, "01_hello.prompt.md", "01")
    prompt = root / "prompts" / "01_hello.prompt.md"
    prompt.write_text(prompt.read_text().replace("name: x\n", "name: x\nverify:\n  files_exist: [" + "y" * 300
                                                 + "]\n"))
    with pytest.raises(PacketError) as caught:
        load_packet(root)
    assert caught.value.key == "verify.files_exist.0"


@pytest.mark.parametrize(("target", "message"), [("nowhere.md", "dangling symlink (to nowhere.md)"),
                                                 ("02_link.prompt.md", "symlink loop")])
@pytest.mark.parametrize("command", ["lint", "plan"])
def test_a_broken_prompt_symlink_is_an_error_with_its_path(tmp_path: Path, target: str, message: str,
                                                           command: str) -> None:
    root = packet_with_prompt(tmp_path, "01_hello.prompt.md", "01")
    link = root / "prompts" / "02_link.prompt.md"
    link.symlink_to(target)
    result = CliRunner().invoke(cli, [command, str(root)])
    assert result.exit_code == 2
    assert result.stderr == f"error: {link}: prompt file is a {message} (point the link at a real file, or " \
        "remove it)\n"


def test_a_prompt_symlink_to_a_real_file_still_loads(tmp_path: Path) -> None:
    root = packet_with_prompt(tmp_path, "01_hello.prompt.md", "01")
    (tmp_path / "shared.md").write_text("---\nid: \"02\"\nname: y\n---\nbody\n")
    (root / "prompts" / "02_shared.prompt.md").symlink_to(tmp_path / "shared.md")
    assert [p.id for p in load_packet(root).prompts] == ["01", "02"]
