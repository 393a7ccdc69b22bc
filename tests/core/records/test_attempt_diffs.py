"""Each Attempt stores its diff beside its events: the commit's, or the checkpoint's for one that did not
complete; bounded per file and in all, redacted, and readable after the work tree moved on."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from engine_support import WRITES_DONE, _attempt

from awp_pipelines.core.records import diffs
from awp_pipelines.core.records.diffs import attempt_diff, read_diff
from awp_pipelines.core.records.redact import Redactor


def _commit_all(repo: Path, message: str) -> str:
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", message], check=True)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_completed_attempt_stores_its_commits_diff_and_it_outlives_the_work_tree(
        tmp_path: Path, make_git_repo: Any) -> None:
    record, repo = _attempt(tmp_path, make_git_repo, WRITES_DONE)
    assert record.diff_file == str(tmp_path / "events.diff.json")
    (repo / "done.txt").write_text("moved on\n")  # the tree moves on; the stored diff does not
    _commit_all(repo, "later work")
    stored = read_diff(record.diff_file)
    assert stored is not None and stored.attempt == "pr-1.01.a1"
    [file] = stored.files
    assert (file.repo, file.path, file.status, file.added, file.removed) == ("app", "done.txt", "A", 1, 0)
    assert file.patch.splitlines()[1:] == ["+done"] and file.cut is None
    [repo_diff] = stored.repos
    assert (repo_diff.source, repo_diff.to) == ("commit", record.commits[0].sha)


def test_a_failed_attempt_stores_its_checkpoints_diff(tmp_path: Path, make_git_repo: Any) -> None:
    record, _ = _attempt(tmp_path, make_git_repo, {"writes": [{"path": "done.txt", "text": "not yet\n"}]})
    assert record.result == "verification_failed"
    stored = read_diff(record.diff_file or "")
    assert stored is not None and [f.patch.splitlines()[-1] for f in stored.files] == ["+not yet"]
    assert [(r.source, r.to) for r in stored.repos] == [("checkpoint", record.wip["app"])]


def test_the_diff_is_redacted_and_capped_per_file_and_in_all(tmp_path: Path, make_git_repo: Any,
                                                              monkeypatch: Any) -> None:
    repo = make_git_repo(tmp_path / "r")
    base = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    secret = "sk-ant-api03-diffcanary-0123456789abcdefghij"
    (repo / "key.txt").write_text(f"token = {secret}\n")
    (repo / "long.txt").write_text("".join(f"line {n}\n" for n in range(50)))
    (repo / "zz.txt").write_text("x\n" * 30)
    to = _commit_all(repo, "work")
    monkeypatch.setattr(diffs, "FILE_MAX_LINES", 10)
    monkeypatch.setattr(diffs, "TOTAL_MAX_CHARS", 150)
    stored = attempt_diff("a", {"app": (repo, base, to, "commit")}, Redactor((secret,)))
    by_path = {f.path: f for f in stored.files}
    assert secret not in stored.model_dump_json() and "[REDACTED" in by_path["key.txt"].patch
    long = by_path["long.txt"]
    assert (long.added, len(long.patch.splitlines())) == (50, 10)  # counts whole, lines capped
    assert long.cut is not None and "41 of 51 lines not stored" in long.cut
    assert by_path["zz.txt"].patch == "" and "in all" in (by_path["zz.txt"].cut or "")
