"""The parse cache (core/packet/parse_cache.py): a second load of an unchanged packet composes no YAML, and
what it gives is what a parse gives; any edit, a damaged file and other versions of AWP miss it."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from awp_pipelines.core.packet import parse_cache as pc
from awp_pipelines.core.packet.packet import Packet, load_packet
from awp_pipelines.core.packet.yamlsrc import parse_yaml

PROMPT = '---\nid: "{n:02d}"\nname: Step {n}\ntargets: [w]\nverify:\n  files_exist: [f{n}.md]\n---\nWrite f{n}.md.\n'


def _packet(root: Path, prompts: int = 3) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text("name: cached\nprovider: simulated\nrepos:\n  w: {path: ./w}\n", encoding="utf-8")
    for n in range(1, prompts + 1):
        (root / "prompts" / f"{n:02d}_step.prompt.md").write_text(PROMPT.format(n=n), encoding="utf-8")
    return root


def _shape(packet: Packet) -> list[object]:
    """What a load gives, file by file: data, key-path lines, body."""
    return [packet.manifest, packet.raw, packet.doc.lines, packet.doc.line_offset] + [
        (p.id, p.front, p.raw, p.doc.lines, p.doc.line_offset, p.body, p.body_line, p.recovery) for p in packet.prompts]


def _cache_files() -> list[Path]:
    folder = pc.cache_folder()
    assert folder is not None
    return sorted(folder.glob("*")) if folder.is_dir() else []


def _counting_hits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    hits: list[int] = []
    save = pc.ParseCache.save

    def counted(self: pc.ParseCache) -> None:
        hits.append(self.hits)
        save(self)

    monkeypatch.setattr(pc.ParseCache, "save", counted)
    return hits


def test_a_second_load_reads_the_cache_and_gives_what_the_parse_gave(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = _packet(tmp_path / "pk")
    hits = _counting_hits(monkeypatch)
    cold = load_packet(root)
    [file] = _cache_files()
    warm = load_packet(root)
    assert hits == [0, 4]  # the manifest and three prompts, all from the cache the second time
    assert _shape(warm) == _shape(cold)
    monkeypatch.setenv(pc.CACHE_ENV, "off")
    assert _shape(load_packet(root)) == _shape(cold) and hits[-1] == 0
    assert file.stat().st_size > 0


def test_an_edit_misses_the_cache_even_with_the_same_size_and_mtime(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Keyed by the text, not by (size, mtime): an edit within the file system's timestamp tick still counts."""
    root = _packet(tmp_path / "pk")
    load_packet(root)
    prompt = root / "prompts" / "02_step.prompt.md"
    before = prompt.stat()
    prompt.write_text(prompt.read_text(encoding="utf-8").replace("Step 2", "Stage2"), encoding="utf-8")
    os.utime(prompt, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert prompt.stat().st_size == before.st_size and prompt.stat().st_mtime_ns == before.st_mtime_ns
    hits = _counting_hits(monkeypatch)
    assert load_packet(root).prompt("02").name == "Stage2"
    assert hits == [3]  # the manifest and the two unchanged prompts
    assert load_packet(root).prompt("02").name == "Stage2" and hits[-1] == 4  # rewritten with the new text


@pytest.mark.parametrize("damage", ["truncated", "garbled", "forged entry", "other version", "not json"])
def test_a_damaged_or_foreign_cache_file_is_ignored_and_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 damage: str) -> None:
    root = _packet(tmp_path / "pk")
    expected = _shape(load_packet(root))
    [file] = _cache_files()
    text = file.read_text(encoding="utf-8")
    digest, _, payload = text.partition("\n")
    forged = payload.replace("Step 1", "Forged")  # an entry's data changed, the file's checksum not
    other = json.dumps({**json.loads(payload), "salt": "0.0.1"})  # a whole file, of another version
    assert forged != payload
    file.write_text({"truncated": text[: len(text) // 2],
                     "garbled": text[:-40] + "}" * 40,
                     "forged entry": f"{digest}\n{forged}",
                     "other version": f"{hashlib.sha256(other.encode()).hexdigest()}\n{other}",
                     "not json": "\x00\xff nonsense"}[damage], encoding="utf-8")
    hits = _counting_hits(monkeypatch)
    assert _shape(load_packet(root)) == expected and hits == [0]
    assert _shape(load_packet(root)) == expected and hits == [0, 4]  # the file was written whole again


def test_data_json_would_change_is_parsed_every_time(tmp_path: Path) -> None:
    """A date, or a key that is not a string, would come back from JSON as another type: never stored."""
    file = tmp_path / "x.yaml"
    with pc.parse_cache(tmp_path) as cache:
        for _ in range(2):
            doc = parse_yaml("when: 2026-12-01\n1: one\n", file)
            assert doc.data == {"when": datetime.date(2026, 12, 1), 1: "one"}
        assert cache.hits == 0
    assert _cache_files() == []



def test_a_text_holding_a_secret_is_parsed_every_time_and_never_written(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A key a secret pattern finds, or the value of an environment variable that could be a credential (the
    variable's name says nothing), is never written to the cache; the packet's other texts are."""
    credential = "plain-credential-4d2a9e71"  # no secret pattern finds it: only its being in the environment
    monkeypatch.setenv("AWP_TEST_ANY_NAME", credential)
    shaped = "sk-ant-" + "api03-" + "Z" * 24  # built here: no file holds a key-shaped literal
    root = _packet(tmp_path / "pk")
    prompts = sorted((root / "prompts").iterdir())
    prompts[0].write_text(PROMPT.format(n=1).replace("name: Step 1", f"name: uses {shaped}"), encoding="utf-8")
    prompts[1].write_text(PROMPT.format(n=2).replace("name: Step 2", f"name: uses {credential}"), encoding="utf-8")
    hits = _counting_hits(monkeypatch)
    expected = _shape(load_packet(root))
    assert _shape(load_packet(root)) == expected and hits == [0, 2]  # the manifest and prompt 03 only
    [file] = _cache_files()
    stored = file.read_text(encoding="utf-8")
    assert "Step 3" in stored and credential not in stored and "ZZZZZZZZ" not in stored

_WRITER = """
import sys
from awp_pipelines.core.packet.packet import load_packet
for _ in range(int(sys.argv[2])):
    assert len(load_packet(sys.argv[1]).prompts) == int(sys.argv[3])
"""


def test_concurrent_loads_leave_one_whole_cache_file(tmp_path: Path) -> None:
    """Writers rename a whole file into place: however they interleave, the file is one of theirs, entire."""
    root = _packet(tmp_path / "pk", prompts=6)
    writers = []
    for n in range(6):  # each edits nothing, but half see a cache of other contents: prompts 1-3 changed
        script = tmp_path / f"w{n}.py"
        script.write_text(_WRITER, encoding="utf-8")
        writers.append(subprocess.Popen([sys.executable, str(script), str(root), "5", "6"], env=os.environ.copy()))
        if n == 2:
            for p in sorted((root / "prompts").iterdir())[:3]:
                p.write_text(p.read_text(encoding="utf-8") + "More.\n", encoding="utf-8")
    assert [w.wait(timeout=120) for w in writers] == [0] * 6
    [file] = _cache_files()  # no temporary file left behind
    entries = pc._read(file)
    assert len(entries) == 7  # whole and current: every file of the packet as it is now
