"""Nothing a more trusted reader takes as configuration is the agent's to write, tested on real files and
real bubblewrap: scoped copies of config folders (discarded, reported), masks over packets and instances in a
tree, the run's isolation notices, the sandbox's rlimits, and what a killed runner left."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from awp_pipelines.core.isolation import leftovers
from awp_pipelines.core.isolation.bwrap import unavailable
from awp_pipelines.core.isolation.grants import Grants, PathGrant
from awp_pipelines.core.isolation.limits import DEFAULT_LIMITS, ResourceLimits, resolved
from awp_pipelines.core.isolation.notice import isolation_notices
from awp_pipelines.core.isolation.sandbox import Sandbox
from awp_pipelines.core.isolation.scoped_config import changed_names, scoped_config
from awp_pipelines.core.isolation.trusted_files import trusted_in

needs_bwrap = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")


def _run(grants: list[PathGrant], script: str, cwd: Path, limits: ResourceLimits = DEFAULT_LIMITS,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    sandbox = Sandbox(grants=Grants(paths=grants), limits=limits)
    return subprocess.run(sandbox.command(["/bin/sh", "-c", script], cwd), env={"PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=timeout, check=False)


@needs_bwrap
def test_a_config_folder_is_a_scoped_copy_whose_changes_are_discarded_and_named(tmp_path: Path) -> None:
    original = tmp_path / "claude"
    (original / "projects").mkdir(parents=True)
    (original / "settings.json").write_text("{}\n")
    (original / ".credentials.json").write_text("token\n")
    (original / "projects" / "old.jsonl").write_text("history\n")
    for credential_mode, writes in (("ro", False), ("rw", True)):
        copy = tmp_path / f"copy-{credential_mode}"
        grants = scoped_config(original, copy, kind="claude_code", credential_mode=credential_mode, why="login")
        done = _run(grants, f"cd {original} && echo hook > settings.json && echo new > added.json && "
                            f"ls projects; echo refreshed > .credentials.json; echo cred=$?", tmp_path)
        assert "old.jsonl" not in done.stdout  # history is not copied
        assert (original / "settings.json").read_text() == "{}\n" and not (original / "added.json").exists()
        assert changed_names(original, copy, kind="claude_code") == ["added.json", "settings.json"]
        assert (original / ".credentials.json").read_text() == ("refreshed\n" if writes else "token\n"), done
    # A link the agent leaves in its copy is named, never read through.
    os.symlink("/dev/zero", tmp_path / "copy-rw" / "zero")
    assert "zero" in changed_names(original, tmp_path / "copy-rw", kind="claude_code")


@needs_bwrap
def test_packets_instances_and_their_configs_inside_a_tree_are_hidden_or_read_only(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    other = tree / "sub" / "other-packet"
    (other / ".awp" / "dagster").mkdir(parents=True)
    (other / ".awp" / "dagster" / "dagster.yaml").write_text("telemetry: {enabled: false}\n")
    (other / "packet.yaml").write_text("name: other\n")
    (other / "prompts").mkdir()
    (tree / "home").mkdir()
    (tree / "home" / "dagster.yaml").write_text("{}\n")
    (tree / "packet.yaml").write_text("name: me\n")
    masks = trusted_in(tree)
    modes = {Path(g.path).relative_to(tree).as_posix(): g.mode for g in masks}
    assert modes == {"packet.yaml": "ro", "sub/other-packet/packet.yaml": "ro",
                     "sub/other-packet/prompts": "ro", "sub/other-packet/.awp": "hidden", "home/dagster.yaml": "ro"}
    grants = [PathGrant(path=str(tree), mode="rw"), *masks]
    done = _run(grants, "echo 'isolation: none' >> packet.yaml; echo x > sub/other-packet/prompts/02.prompt.md; "
                        "echo 'python_logs: {}' >> home/dagster.yaml; ls -A sub/other-packet/.awp; "
                        "echo work > work.txt", tree)
    assert (tree / "packet.yaml").read_text() == "name: me\n"
    assert not (other / "prompts" / "02.prompt.md").exists()
    assert (tree / "home" / "dagster.yaml").read_text() == "{}\n"
    assert "dagster" not in done.stdout and (tree / "work.txt").exists()


def test_awp_run_names_isolation_off_and_a_change_since_the_last_run(tmp_path: Path) -> None:
    assert isolation_notices({"01_a": None}, tmp_path) == []
    lines = isolation_notices({"01_a": "none"}, tmp_path)
    assert len(lines) == 2 and "turns isolation off" in lines[0] and "01_a" in lines[0]
    assert "changed since the last run (unset → none)" in lines[1]
    assert len(isolation_notices({"01_a": "none"}, tmp_path)) == 1  # still off, no longer a change


@needs_bwrap
@pytest.mark.parametrize(("limits", "script", "says"), [
    (ResourceLimits(memory_mb=128), "python3 -c 'b = bytearray(512 * 1024 * 1024)'", "MemoryError"),
    (ResourceLimits(file_size_mb=1), "head -c 4000000 /dev/zero > big; echo rc=$?", "File size limit exceeded"),
    (ResourceLimits(cpu_seconds=1), "python3 -c 'while True: pass'", "CPU time limit exceeded"),
])
def test_the_sandbox_meets_its_limits(tmp_path: Path, limits: ResourceLimits, script: str, says: str) -> None:
    done = _run([PathGrant(path=str(tmp_path), mode="rw")], script, tmp_path, resolved(limits), timeout=30)
    assert says in done.stdout + done.stderr, done
    assert not (tmp_path / "big").exists() or (tmp_path / "big").stat().st_size <= 1024 * 1024


def test_a_dead_runners_sockets_and_copies_are_swept_a_live_ones_kept(tmp_path: Path) -> None:
    sandboxes = tmp_path / "sandbox"
    for name in ("dead", "live"):
        (sandboxes / name / "egress" / "sockets").mkdir(parents=True)
        (sandboxes / name / "config-0").mkdir()
    fd = leftovers.hold(sandboxes / "live")
    dead = subprocess.run(["python3", "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | "
                           "os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX)", str(sandboxes / "dead" / "live.lock")],
                          check=True)
    assert dead.returncode == 0  # its holder exited: the lock is free
    try:
        assert leftovers.sweep(sandboxes) == [sandboxes / "dead"]
    finally:
        leftovers.release(fd)
    assert not (sandboxes / "dead" / "egress" / "sockets").exists() and not (sandboxes / "dead" / "config-0").exists()
    assert (sandboxes / "live" / "egress" / "sockets").is_dir()


@needs_bwrap
def test_without_prlimit_the_python_launcher_sets_the_same_limits(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from awp_pipelines.core.isolation import sandbox

    monkeypatch.setattr(sandbox.shutil, "which", lambda *args, **kwargs: None)
    done = _run([PathGrant(path=str(tmp_path), mode="rw")], "ulimit -f; ulimit -t; head -c 4000000 /dev/zero > big",
                tmp_path, resolved(ResourceLimits(file_size_mb=1, cpu_seconds=7)), timeout=30)
    assert done.stdout.split() == ["2048", "7"] and "File size limit exceeded" in done.stderr, done
