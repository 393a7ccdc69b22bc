"""Secrets through the side doors (issue 23, item 7): a packet that `awp run` refuses (a pattern secret in a
verify argv) and that writes the literal canary credentials in its commit message, a verify argv and a
`contains` text. Every `awp` command is run on it, text and --json, then the canary scan reads what they
printed and every file under HOME, the XDG homes, the AWP config and cache homes (the parse cache) and the
packet's `.awp/`: 0 copies. `awp plan` refuses as `awp run` does; `awp doctor` asks a `command` agent that
says every credential it holds for its version, and hands it none."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import yaml
from reliability.canaries import CANARY_IN_USE, CANARY_OTHER, PATTERN_SECRET
from reliability.canary_scan import awp_outputs, count_canaries, every_command, files, side_door_catalog

from awp_pipelines.core.packet.packet import load_packet

REFUSAL = "refusing to run: a anthropic key is written on line"


def _refused_packet(root: Path, make_git_repo: Callable[[Path], Path]) -> Path:
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "sidedoors", "provider": "sim-keyed", "model": "sim-keyed-1", "accounts": ["in-use"],
        "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    fronts = {"01_write": {"id": "01", "commit": f"feat: notes (in use {CANARY_IN_USE})",
                           "verify": {"files_exist": ["notes.md"]}},
              "02_check": {"id": "02", "verify": {
                  "commands": [{"exec": "true", "args": ["--key", CANARY_OTHER, PATTERN_SECRET]}],
                  "contains": [{"path": "notes.md", "text": f"key {CANARY_IN_USE}"}]}}}
    for name, front in fronts.items():
        (root / "prompts" / f"{name}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    return root


def test_no_command_prints_or_stores_a_canary_of_a_packet_run_refuses(
        tmp_path: Path, make_git_repo: Callable[[Path], Path], canaries: None, home_folders: Path) -> None:
    packet = _refused_packet(tmp_path / "packet", make_git_repo)
    providers = side_door_catalog(tmp_path / "catalog")
    outputs = awp_outputs(*every_command(packet, providers, tmp_path / "instance"))
    load_packet(packet)  # as the daemon and the webserver load it, whether a run would refuse it or not

    # plan and verify refuse as run does, the file and line named, the secret never echoed
    for args in ("plan {} --providers {}", "plan {} --providers {} --json", "run {} --providers {} --dry-run",
                 "verify {} --providers {}"):
        shown = outputs["awp " + args.format(packet, providers)]
        assert REFUSAL in shown and "02_check.prompt.md" in shown, shown
    doctor = json.loads(outputs[f"awp doctor --providers {providers} --json"])
    [cli] = [c for c in doctor["checks"] if c["subject"] == "cmd" and c["what"] == "cli"]
    assert cli["status"] == "ok" and "say-credentials 1.0" in cli["detail"]  # it ran, and said nothing held

    places = {**outputs, **dict(files(home_folders))}
    if (packet / ".awp").exists():
        places.update(files(packet / ".awp"))
    assert [p for p in places if "/parse/" in p], "no parse cache written: the scan would prove nothing of it"
    leaked = count_canaries(places)
    print(f"{len(places)} places scanned; leaks: {leaked}")
    assert not leaked, leaked
