"""`awp blame`: from a line of a committed file, through the commit's AWP trailers, to the Attempt and its run."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from e2e_support import decided_launch
from repo_paths import REPO_ROOT

from awp_pipelines.cli import cli
from awp_pipelines.cli_features.blame import BlameError, blame, dagster_run_url, parse_target
from awp_pipelines.core.records.committer import commit_targets

MakeRepo = Callable[[Path], Path]
RUN_ID = "5f0c8a2e-1111-4c3b-9d7e-0123456789ab"


def trailers(attempt: str, **more: str) -> dict[str, str]:
    base = {"AWP-Packet": "demo", "AWP-Prompt": "02", "AWP-Agent-Run": "r1.02", "AWP-Attempt": attempt,
            "AWP-Mode": "repair", "AWP-Reason": "unmet: contains CHANGELOG.md '## Unreleased'",
            "AWP-Provider": "simulated", "AWP-Account": "sim-a", "AWP-Model": "simulated-demo",
            "AWP-Dagster-Run": RUN_ID}
    return {**base, **more}


def awp(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], env=env, catch_exceptions=False)


@pytest.fixture
def repo(make_git_repo: MakeRepo, tmp_path: Path) -> Path:
    """README by a person; CHANGELOG.md lines 1-2 by Attempt r1.02.a1, line 3 by its repair r1.02.a2."""
    root = make_git_repo(tmp_path / "docs")
    (root / "CHANGELOG.md").write_text("# Changelog\n\n- Added a greeting.\n")
    commit_targets({"docs": root}, "docs: add changelog",
                   trailers("r1.02.a1", **{"AWP-Mode": "run", "AWP-Reason": "primary target of the plan"}))
    (root / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n- Added a greeting.\n")
    commit_targets({"docs": root}, "docs: add changelog", trailers("r1.02.a2"))
    return root


def test_a_line_names_the_attempt_its_mode_reason_target_and_dagster_run(repo: Path) -> None:
    [entry] = blame(repo / "CHANGELOG.md", 3, base_url="http://127.0.0.1:3000/")
    assert (entry.start, entry.end, entry.text) == (3, 3, ["## Unreleased"])
    assert entry.commit is not None and entry.commit.summary == "docs: add changelog"
    awp_ = entry.awp
    assert (awp_.packet, awp_.prompt, awp_.agent_run, awp_.attempt) == ("demo", "02", "r1.02", "r1.02.a2")
    assert (awp_.mode, awp_.reason) == ("repair", "unmet: contains CHANGELOG.md '## Unreleased'")
    assert (awp_.provider, awp_.account, awp_.model) == ("simulated", "sim-a", "simulated-demo")
    assert awp_.dagster_run == RUN_ID
    assert awp_.dagster_run_url == f"http://127.0.0.1:3000/runs/{RUN_ID}"


def test_an_older_line_names_the_earlier_attempt_not_the_latest_commit(repo: Path) -> None:
    [entry] = blame(repo / "CHANGELOG.md", 1)
    assert entry.awp.attempt == "r1.02.a1" and entry.awp.mode == "run"
    assert entry.awp.dagster_run_url is None  # no webserver URL configured


def test_a_whole_file_groups_consecutive_lines_by_commit(repo: Path) -> None:
    entries = blame(repo / "CHANGELOG.md")
    assert [(e.start, e.end, e.awp.attempt) for e in entries] == [
        (1, 2, "r1.02.a1"), (3, 4, "r1.02.a2"), (5, 5, "r1.02.a1")]


def test_cli_prints_the_provenance_and_exits_0(repo: Path) -> None:
    result = awp("blame", f"{repo / 'CHANGELOG.md'}:3", env={"AWP_DAGSTER_URL": "http://ui.example:3000"})
    assert result.exit_code == 0, result.output
    for text in ("CHANGELOG.md:3", "r1.02.a2", "repair", "unmet: contains CHANGELOG.md", "sim-a",
                 f"http://ui.example:3000/runs/{RUN_ID}", "docs: add changelog"):
        assert text in result.output


def test_cli_json_carries_every_field(repo: Path) -> None:
    result = awp("blame", f"{repo / 'CHANGELOG.md'}:5", "--json", "--dagster-url", "http://h:1")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    [line] = data["lines"]
    assert data["by_awp"] is True and line["file"] == "CHANGELOG.md" and line["start"] == 5
    assert line["awp"]["attempt"] == "r1.02.a1" and line["awp"]["dagster_run_url"] == f"http://h:1/runs/{RUN_ID}"
    assert len(line["commit"]["sha"]) == 40


def test_a_line_not_written_by_awp_says_so_and_exits_1(repo: Path) -> None:
    result = awp("blame", f"{repo / 'README.md'}:1")
    assert result.exit_code == 1
    assert "not written by AWP" in result.output and "Add README" in result.output
    assert json.loads(awp("blame", f"{repo / 'README.md'}:1", "--json").output)["by_awp"] is False


def test_an_uncommitted_line_has_no_commit_and_no_attempt(repo: Path) -> None:
    (repo / "CHANGELOG.md").write_text("# Changelog\nlocal edit\n")
    [first, second] = blame(repo / "CHANGELOG.md")
    assert first.awp.attempt == "r1.02.a1"
    assert second.commit is None and not second.by_awp
    result = awp("blame", f"{repo / 'CHANGELOG.md'}:2")
    assert result.exit_code == 1 and "not committed yet" in result.output


def test_a_whole_file_lists_each_attempt_with_its_line_ranges(repo: Path) -> None:
    result = awp("blame", repo / "CHANGELOG.md")
    assert result.exit_code == 0, result.output
    assert "5 of 5 lines written by AWP" in result.output
    assert "lines 1-2, 5" in result.output and "lines 3-4" in result.output


@pytest.mark.parametrize("target, message", [
    ("missing.md:1", "no such file"),
    ("CHANGELOG.md:99", "has only 5 lines"),
])
def test_unanswerable_questions_exit_2_with_one_line(repo: Path, target: str, message: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    result = awp("blame", target)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_a_file_outside_any_repository_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "loose.txt").write_text("x\n")
    with pytest.raises(BlameError, match="not inside a git repository"):
        blame(tmp_path / "loose.txt", 1)


def test_file_and_line_parse_and_a_path_with_a_colon_stays_a_path(tmp_path: Path) -> None:
    assert parse_target("a/b.md:12") == (Path("a/b.md"), 12)
    assert parse_target("a/b.md") == (Path("a/b.md"), None)
    odd = tmp_path / "notes:3"
    odd.write_text("x\n")
    assert parse_target(str(odd)) == (odd, None)
    with pytest.raises(BlameError):
        parse_target("a.md:0")


def test_run_url_needs_both_a_base_and_a_run() -> None:
    assert dagster_run_url("abc", "http://h:3000/runs/") == "http://h:3000/runs/abc"
    assert dagster_run_url(None, "http://h:3000") is None
    assert dagster_run_url("abc", "") is None


@pytest.mark.slow
def test_blame_on_a_line_the_demo_wrote_names_its_attempt_and_dagster_run(tmp_path: Path) -> None:
    """The real path: `awp run` commits with trailers (attempts._commit), `awp blame` reads them back."""
    from dagster import DagsterInstance, RunsFilter

    packet = tmp_path / "demo"
    shutil.copytree(REPO_ROOT / "assets" / "demo", packet, ignore=shutil.ignore_patterns("workspace", ".awp"))
    subprocess.run(["bash", str(packet / "setup.sh")], check=True, capture_output=True)
    home = tmp_path / "home"
    assert awp("run", packet, "01", "02", "--instance", home,
               "--providers", REPO_ROOT / "resources" / "providers.yaml").exit_code == 0
    result = awp("blame", f"{packet / 'workspace' / 'CHANGELOG.md'}:3", "--json",
                 "--dagster-url", "http://127.0.0.1:3000")
    assert result.exit_code == 0, result.output
    [line] = json.loads(result.output)["lines"]
    awp_ = line["awp"]
    assert line["text"] == ["## Unreleased"]
    assert (awp_["prompt"], awp_["mode"]) == ("02", "repair")
    assert awp_["attempt"].endswith(".02.a2") and awp_["reason"]
    with DagsterInstance.from_ref(_ref(home)) as instance:
        [run] = instance.get_runs(filters=RunsFilter(run_ids=[awp_["dagster_run"]]))
    # The run is the repair's: its decided launch (run config) is 02's repair in the attempt's packet run.
    assert decided_launch(run)[:2] == ("02", "repair")
    assert awp_["attempt"].startswith(run.tags["awp/packet_run"] + ".")
    assert awp_["dagster_run_url"] == f"http://127.0.0.1:3000/runs/{run.run_id}"


def _ref(home: Path):  # type: ignore[no-untyped-def]
    from dagster._core.instance.ref import InstanceRef

    return InstanceRef.from_dir(str(home))


def test_blame_never_prints_a_secret_git_holds(make_git_repo: MakeRepo, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A credential committed before push protection (or by a person): the line's provenance, not the value."""
    monkeypatch.setenv("AWP_PG_PASSWORD", "canary-runner-only-7f3e")
    root = make_git_repo(tmp_path / "app")
    key = "sk-ant-" + "a1B2c3D4" * 4
    (root / "config.py").write_text(f"KEY = '{key}'\nDB = 'canary-runner-only-7f3e'\n-----BEGIN OPENSSH PRIVATE "
                                    "KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\nok = 1\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", f"add {key}"], cwd=root, check=True)
    printed = awp("blame", root / "config.py", "--json").output
    for secret in (key, "canary-runner-only", "b3BlbnNzaC1rZXktdjEAAAAA"):
        assert secret not in printed
    texts = [text for line in json.loads(printed)["lines"] for text in line["text"]]
    assert texts[-1] == "ok = 1" and texts.count("[REDACTED]") == 3


def test_a_commit_with_awp_trailers_but_no_seal_is_shown_forged_never_as_the_attempt(make_git_repo: MakeRepo,
                                                                                      tmp_path: Path) -> None:
    """Issue 38: anyone can write `AWP-Attempt:` in a message; only AWP's seal makes the commit AWP's."""
    root = make_git_repo(tmp_path / "app")
    (root / "x.md").write_text("forged line\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    body = "\n".join(f"{k}: {v}" for k, v in trailers("r1.02.a7").items())
    subprocess.run(["git", "commit", "-qm", f"looks like AWP's\n\n{body}\nAWP-Seal: {'0' * 64}"], cwd=root, check=True)
    [entry] = blame(root / "x.md", 1)
    assert not entry.by_awp and entry.awp.forged and entry.awp.attempt is None
    result = awp("blame", f"{root / 'x.md'}:1")
    assert result.exit_code == 1 and "seal does not hold" in result.output and "r1.02.a7" not in result.output
