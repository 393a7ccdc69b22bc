"""commands: pass, failure, fault and timeout are four different answers; regenerates restores on failure."""

from __future__ import annotations

import time

import pytest
from verify_helpers import Workspace


def test_exit_zero_passes(ws: Workspace) -> None:
    ws.script("bin/check", "echo all good")
    item = ws.item({"commands": [{"exec": "bin/check"}]})
    assert item.passed and item.fault is None and item.exit_code == 0
    assert (item.command, item.cwd, item.repo) == ("bin/check", str(ws.repos["app"]), "app")


def test_nonzero_exit_is_a_repairable_failure_with_its_output(ws: Workspace) -> None:
    ws.script("bin/check", "echo 'expected 3 got 2' >&2\nexit 1")
    item = ws.item({"commands": [{"exec": "bin/check"}]})
    assert not item.passed and item.fault is None and item.exit_code == 1
    assert item.details == ["failed: exit 1", "expected 3 got 2"]


def test_exit_listed_in_fault_exit_codes_is_a_fault(ws: Workspace) -> None:
    ws.script("bin/check", "echo 'database not reachable'\nexit 3")
    report = ws.verify({"commands": [{"exec": "bin/check", "fault_exit_codes": [3]}]})
    (item,) = report.items
    assert item.fault == "verifier_fault" and not item.passed
    assert report.faults == [item] and report.failures == []
    assert item.details[0] == "verifier_fault: exit 3 is listed in fault_exit_codes"


def test_bare_name_missing_from_path_is_a_fault(ws: Workspace) -> None:
    item = ws.item({"commands": [{"exec": "no-such-tool-awp"}]})
    assert item.fault == "verifier_fault"
    assert item.details == ["executable not found on PATH: no-such-tool-awp"]


def test_missing_absolute_executable_is_a_fault(ws: Workspace, tmp_path) -> None:
    item = ws.item({"commands": [{"exec": str(tmp_path / "gone" / "tool")}]})
    assert item.fault == "verifier_fault" and item.details[0].startswith("executable not found:")


def test_missing_relative_executable_is_an_ordinary_failure(ws: Workspace) -> None:
    report = ws.verify({"commands": [{"exec": "bin/generated-check"}]})
    (item,) = report.items
    assert item.fault is None and not item.passed and report.failures == [item]
    assert item.details[0].startswith("executable not found: bin/generated-check")


def test_relative_executable_left_without_exec_bit_is_an_ordinary_failure(ws: Workspace) -> None:
    ws.write("bin/check", "#!/bin/sh\nexit 0\n")
    item = ws.item({"commands": [{"exec": "bin/check"}]})
    assert item.fault is None and not item.passed and "could not start" in item.details[0]


def test_relative_executable_outside_the_repo_fails_naming_it(ws: Workspace) -> None:
    ws.script("tool", "exit 0", repo="packet")
    item = ws.item({"commands": [{"exec": "../tool"}]})
    assert not item.passed and item.details == ["entry 'exec ../tool' escapes repo 'app' through '..'"]


def test_timeout_is_a_verifier_timeout_and_kills_the_command(ws: Workspace) -> None:
    ws.script("bin/slow", "echo started\nsleep 30 &\nsleep 30")
    started = time.monotonic()
    item = ws.item({"commands": [{"exec": "bin/slow", "timeout_ms": 300}]})
    # Far above 0.3 s on any load, far below the 30 s a background child holding the pipe would cost.
    assert time.monotonic() - started < 25
    assert item.fault == "verifier_timeout" and not item.passed and item.exit_code is None
    assert item.details == ["verifier_timeout: killed after 300 ms", "started"]


def test_bare_name_on_path_runs_with_args_in_cwd(ws: Workspace) -> None:
    ws.write("sub/marker.txt", "here\n")
    item = ws.item({"commands": [{"exec": "cat", "args": ["marker.txt"], "cwd": "sub", "stdout_contains": "here"}]})
    assert item.passed, item.details
    assert item.cwd == str(ws.repos["app"] / "sub")


def test_args_are_argv_not_shell(ws: Workspace) -> None:
    item = ws.item({"commands": [{"exec": "echo", "args": ["$HOME", "; exit 1"], "stdout_contains": "$HOME ; exit 1"}]})
    assert item.passed, item.details


def test_missing_cwd_is_a_fault_and_an_escaping_cwd_fails(ws: Workspace) -> None:
    assert ws.item({"commands": [{"exec": "true", "cwd": "nope"}]}).fault == "verifier_fault"
    item = ws.item({"commands": [{"exec": "true", "cwd": "../.."}]})
    assert item.fault is None and not item.passed and "escapes repo 'app'" in item.details[0]


def test_command_runs_in_its_named_repo(ws: Workspace) -> None:
    ws.script("check.sh", "test -f NOTES.md", repo="beta")
    ws.write("NOTES.md", repo="beta")
    item = ws.item({"commands": [{"repo": "beta", "exec": "./check.sh"}]})
    assert item.passed and item.repo == "beta"


def test_stdout_contains_and_matches(ws: Workspace) -> None:
    ws.script("bin/check", "echo '12 passed in 0.3s'")
    assert ws.item({"commands": [{"exec": "bin/check", "stdout_contains": "12 passed"}]}).passed
    # As in Prompt Runner, stdout_matches is case-insensitive.
    assert ws.item({"commands": [{"exec": "bin/check", "stdout_matches": r"\d+ PASSED"}]}).passed
    item = ws.item({"commands": [{"exec": "bin/check", "stdout_contains": "0 failed", "stdout_matches": "error"}]})
    assert item.fault is None and not item.passed
    assert item.details[:2] == ["output does not contain '0 failed'", "output does not match /error/i"]


def test_command_sees_a_minimal_environment_plus_context_and_entry_env(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWP_TEST_SECRET", "leak")
    ws.script("bin/env", "env")
    item = ws.item(
        {"commands": [{"exec": "bin/env", "env": {"FROM_ENTRY": "1"}, "stdout_contains": "NOPE"}]},
        env={"FROM_CONTEXT": "2"},
    )
    names = {line.split("=", 1)[0] for line in item.details[1:]}
    assert {"PATH", "HOME", "FROM_ENTRY", "FROM_CONTEXT"} <= names
    assert "AWP_TEST_SECRET" not in names


def test_unmet_output_is_capped_at_40_lines_keeping_the_end(ws: Workspace) -> None:
    ws.script("bin/noisy", 'i=1\nwhile [ $i -le 100 ]; do echo "line $i"; i=$((i+1)); done\nexit 1')
    item = ws.item({"commands": [{"exec": "bin/noisy"}]})
    assert len(item.details) == 40
    assert item.details[:2] == ["failed: exit 1", "... 62 lines omitted"]
    assert item.details[-1] == "line 100"


def _regen(ws: Workspace, body: str, **extra) -> dict:
    ws.script("bin/gen", body)
    return {"commands": [{"exec": "bin/gen", "regenerates": ["out/schema.json"], **extra}]}


def test_regenerates_keeps_the_fresh_output_and_drops_the_backup(ws: Workspace) -> None:
    old = ws.write("out/schema.json", "old\n")
    item = ws.item(_regen(ws, "echo new > out/schema.json"))
    assert item.passed
    assert old.read_text() == "new\n"
    assert sorted(p.name for p in old.parent.iterdir()) == ["schema.json"]


def test_regenerates_restores_the_previous_output_when_the_command_fails(ws: Workspace) -> None:
    old = ws.write("out/schema.json", "old\n")
    item = ws.item(_regen(ws, "echo half > out/schema.json\nexit 1"))
    assert not item.passed
    assert old.read_text() == "old\n"
    assert sorted(p.name for p in old.parent.iterdir()) == ["schema.json"]


def test_regenerates_requires_a_fresh_non_empty_output(ws: Workspace) -> None:
    old = ws.write("out/schema.json", "old\n")
    item = ws.item(_regen(ws, ": > out/schema.json"))
    assert not item.passed and item.fault is None
    assert item.details == [f"regenerated output missing or empty: {old}"]
    assert old.read_text() == "old\n"


def test_regenerates_fails_when_the_command_did_not_write_the_output(ws: Workspace) -> None:
    old = ws.write("out/schema.json", "old\n")
    assert not ws.item(_regen(ws, "exit 0")).passed
    assert old.read_text() == "old\n"


def test_regenerates_restores_after_a_timeout(ws: Workspace) -> None:
    old = ws.write("out/schema.json", "old\n")
    item = ws.item(_regen(ws, "echo partial > out/schema.json\nsleep 30", timeout_ms=300))
    assert item.fault == "verifier_timeout"
    assert old.read_text() == "old\n"


def test_regenerates_recovers_a_backup_left_by_a_crashed_run(ws: Workspace) -> None:
    ws.write("out/schema.json.awp-verifier-backup", "old\n")
    item = ws.item(_regen(ws, "cat out/schema.json > /dev/null && echo new > out/schema.json"))
    assert not item.passed  # the recovered file was moved aside again, so `cat` finds nothing
    assert (ws.repos["app"] / "out" / "schema.json").read_text() == "old\n"
    assert not (ws.repos["app"] / "out" / "schema.json.awp-verifier-backup").exists()


def test_regenerates_output_may_not_exist_beforehand(ws: Workspace) -> None:
    (ws.repos["app"] / "out").mkdir()
    assert ws.item(_regen(ws, "echo new > out/schema.json")).passed
