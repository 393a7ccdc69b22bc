"""`glob` never leaves the repo through a symlink and always finishes: `ln -s / rootlink`, symlink loops and a
link to /etc are walked past, inside the verifier's bound, reading no directory outside the repo."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from awp_pipelines.core.verifiers import VerifyContext, VerifyContract, run_contract
from awp_pipelines.core.verifiers.clauses import globs
from awp_pipelines.core.verifiers.clauses.globs import MAX_SECONDS, BoundedGlob

CASES: dict[str, Callable[[Path, Path], None]] = {
    "root link": lambda repo, outside: os.symlink("/", repo / "rootlink"),
    "loop to self": lambda repo, outside: os.symlink(".", repo / "loop"),
    "mutual loop": lambda repo, outside: (
        (repo / "a").mkdir(), os.symlink("../b", repo / "a" / "to_b"),
        (repo / "b").mkdir(), os.symlink("../a", repo / "b" / "to_a")),
    "dangling link": lambda repo, outside: os.symlink("nowhere/at/all", repo / "dangling"),
    "link outside": lambda repo, outside: os.symlink(outside, repo / "link_out"),
    "self-referencing link": lambda repo, outside: os.symlink("selfref", repo / "selfref"),
}
PATTERNS = ["**/*.x", "**/*", "*/*", "link_out/*", "rootlink/etc/*", "loop/**/*.x", "**"]


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every directory the glob lists, by its real path."""
    seen: list[str] = []
    real_scandir = os.scandir

    def recording(path: str) -> object:
        seen.append(os.path.realpath(path))
        return real_scandir(path)

    monkeypatch.setattr(globs.os, "scandir", recording)
    return seen


def setup_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "in.x").write_text("inside\n")
    outside.mkdir()
    (outside / "secret.x").write_text("outside\n")
    return repo, outside


def glob_item(repo: Path, pattern: str) -> object:
    contract = VerifyContract.model_validate({"glob": [{"path": pattern, "min_matches": 0}]})
    (item,) = run_contract(contract, VerifyContext(repo, {"app": repo}, "app")).items
    return item


@pytest.mark.parametrize("case", sorted(CASES))
def test_symlinks_never_take_glob_out_of_the_repo(case: str, tmp_path: Path, scanned: list[str],
                                                  reliability_row: Callable[..., None]) -> None:
    repo, outside = setup_repo(tmp_path)
    CASES[case](repo, outside)
    real_repo = os.path.realpath(repo)
    survived, started = 0, time.monotonic()
    for pattern in PATTERNS:
        begun = time.monotonic()
        item = glob_item(repo, pattern)
        assert time.monotonic() - begun < MAX_SECONDS
        assert item.fault is None, item.details
        assert not any("secret.x" in line or line.strip().startswith("etc") for line in item.details)
        assert all(p == real_repo or p.startswith(real_repo + os.sep) for p in scanned), scanned
        survived += 1
    reliability_row("symlink glob (loops, / and outside links)", tries=len(PATTERNS), survived=survived,
                    seconds=time.monotonic() - started, note="each pattern within the bound, nothing outside read")


def test_a_symlink_is_listed_as_not_followed(tmp_path: Path) -> None:
    repo, outside = setup_repo(tmp_path)
    os.symlink(outside, repo / "link_out")
    item = glob_item(repo, "**/*.x")
    assert "  src/in.x" in item.details
    assert item.details[-1] == "symlinks not followed: link_out"


def test_a_matched_symlink_to_a_file_outside_still_fails_and_is_not_read(tmp_path: Path) -> None:
    repo, outside = setup_repo(tmp_path)
    os.symlink(outside / "secret.x", repo / "leak.x")
    contract = VerifyContract.model_validate({"glob": [{"path": "*.x", "non_empty": True}]})
    (item,) = run_contract(contract, VerifyContext(repo, {"app": repo}, "app")).items
    assert not item.passed
    assert item.details[0] == "matches escaping the repo through a symlink: leak.x"
    assert not any("empty or not a regular file" in line for line in item.details)


def test_the_walk_stops_at_its_entry_bound(tmp_path: Path) -> None:
    repo, _ = setup_repo(tmp_path)
    for index in range(50):
        (repo / "src" / f"f{index}.x").write_text("x")
    with pytest.raises(globs.GlobBoundExceeded, match="more than 20 directory entries"):
        BoundedGlob(str(repo), max_entries=20).matches("**/*.x")


def test_a_bound_exceeded_is_a_verifier_fault_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, _ = setup_repo(tmp_path)
    monkeypatch.setattr(globs, "MAX_ENTRIES", 1)
    item = glob_item(repo, "**/*.x")
    assert item.fault == "verifier_fault"
    assert item.details[0].startswith("glob could not finish: more than 1 directory entries")


def test_the_walk_stops_at_its_time_bound(tmp_path: Path) -> None:
    repo, _ = setup_repo(tmp_path)
    with pytest.raises(globs.GlobBoundExceeded, match="longer than 0 s"):
        BoundedGlob(str(repo), max_seconds=0.0).matches("**/*.x")
