"""Bad input gives one clear message: every packet under tests/malformed/ ends in exit 2 and ONE stderr line
naming the file, the key and (where YAML can say) the line — from `awp lint`, `awp plan` and `awp run` alike."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from repo_paths import TESTS

from awp_pipelines.cli import cli

MALFORMED = TESTS / "malformed"
CASES = sorted(p.name for p in MALFORMED.iterdir() if (p / "expect.yaml").is_file())


def expectation(case: str) -> dict[str, Any]:
    return yaml.safe_load((MALFORMED / case / "expect.yaml").read_text())


def assert_one_clear_line(stderr: str, case: str) -> None:
    expect = expectation(case)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line of stderr, got:\n{stderr}"
    line = lines[0]
    assert "Traceback" not in stderr
    assert line.startswith("error: ")
    file = (MALFORMED / case / expect["file"]).resolve()
    located = f"{file}:{expect['line']}:" if expect["line"] else f"{file}:"
    assert located in line
    if expect["key"]:
        assert f" {expect['key']}: " in line
    assert expect["contains"] in line


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert isinstance(result.exception, SystemExit), result.exception  # never an unhandled error
    return result


def test_there_are_enough_malformed_cases() -> None:
    assert len(CASES) >= 34  # the 30 before issue 9, plus its four traceback classes


@pytest.mark.parametrize("case", CASES)
def test_awp_lint_rejects_malformed_packet_with_one_line_naming_file_and_key(case: str) -> None:
    result = invoke("lint", str(MALFORMED / case))
    assert result.exit_code == expectation(case)["exit"] == 2
    assert result.stdout == ""
    assert_one_clear_line(result.stderr, case)


@pytest.mark.parametrize("command", ["plan", "run"])
@pytest.mark.parametrize("case", CASES)
def test_plan_and_run_show_the_same_line_as_lint(case: str, command: str, tmp_path: Path) -> None:
    lint = invoke("lint", str(MALFORMED / case))
    extra = ["--instance", str(tmp_path / "dagster"), "--state-dir", str(tmp_path)] if command == "run" else []
    other = invoke(command, str(MALFORMED / case), *extra)
    assert other.exit_code == 2
    assert other.stderr == lint.stderr


def test_lint_json_reports_the_load_failure_as_one_invalid_packet_finding() -> None:
    result = invoke("lint", "--json", str(MALFORMED / "unknown_manifest_key"))
    assert result.exit_code == 2
    report = yaml.safe_load(result.stdout)
    assert [f["kind"] for f in report["findings"]] == ["invalid_packet"]
    assert report["findings"][0] | {"file": None} == {
        "kind": "invalid_packet", "severity": "error", "file": None, "line": 5, "key": "reasoning_efort",
        "message": "unknown key", "hint": "did you mean 'reasoning_effort'?"}
    assert_one_clear_line(result.stderr, "unknown_manifest_key")


def test_the_installed_awp_binary_prints_one_line_at_any_terminal_width() -> None:
    awp = Path(sys.executable).parent / "awp"
    case = "bad_simulate_error_kind"  # a long message: rich must not wrap it
    done = subprocess.run([str(awp), "lint", str(MALFORMED / case)], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "40"}, check=False)
    assert done.returncode == 2
    assert_one_clear_line(done.stderr, case)
