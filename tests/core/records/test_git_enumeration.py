"""Issue 38's enumeration: every git config key, hook, attribute, .gitmodules command and git-dir file that can
name a program, read from git's own documentation on this machine, planted with a canary program in the outer
repository (where an agent under `isolation: none` could write), a nested repository, a submodule and a
worktree. AWP's whole post-session sequence on the tree runs none of them; plain git on a copy of the same tree
runs them (the control: the plant is real).

The sources: `git help --config` (every key), git-config(1) (which of them are booleans), githooks(5),
gitattributes(5), gitmodules(5) and gitrepository-layout(5), from Debian's git-man (a dependency of git)."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from workspace_support import MakeRepo, sh_git

MAN = Path("/usr/share/man")
# A key's last part that names a program, a command line or where one is looked up.
PROGRAM_NAME = re.compile(r"(cmd|command|program|helper|editor|driver|clean|smudge|process|textconv|hookspath|pager|"
                          r"askpass|gitproxy|proxy|packobjectshook|receivepack|uploadpack|external|difffilter|"
                          r"browser|viewer|fsmonitor|<tool>\.path)$", re.IGNORECASE)
# Named like a program, but git-config(1) says a boolean: a program path there only makes git refuse the config.
BOOLEANS = {"advice.waitingForEditor", "color.pager", "column.clean", "diff.<driver>.cachetextconv"}
# Pointers to another git dir: AWP refuses them outright (test_git_hardening.py), so they are not planted here.
POINTERS = {"commondir", "worktrees/<id>/gitdir", "gitdir"}
# Files git parses as object ids or refs: a program's text there is refused by plain git and libgit2 alike.
PARSED = {"HEAD", "index", "packed-refs", "shallow", "info/refs", "objects/info/packs", "info/grafts"}
# Files of the layout that hold config or attributes: they get the keys (config.worktree) or the drivers.
CONFIGS = {"config", "config.worktree", "worktrees/<id>/config.worktree"}
PLACEHOLDERS = {"<driver>": "canary", "<tool>": "canary", "<name>": "canary", "<format>": "openpgp", "*": "canary"}


def _man(section: str, page: str) -> str:
    path = MAN / f"man{section}" / f"{page}.{section}.gz"
    if not path.exists():
        pytest.skip(f"{path} missing: install Debian's git-man")
    return gzip.open(path, "rt", encoding="utf-8").read()


def _plain(text: str) -> str:
    return re.sub(r"\\f[BIRP]|\\&|\\\(\w\w", "", text).replace("\\-", "-")


def program_keys() -> list[str]:
    keys = subprocess.run(["git", "help", "--config"], capture_output=True, text=True, check=True).stdout.split()
    return sorted(k for k in keys if (PROGRAM_NAME.search(k) or k == "alias.*") and k not in BOOLEANS)


def hooks() -> list[str]:
    return [_plain(name) for name in re.findall(r'^\.SS "([^"]+)"', _man("5", "githooks"), re.MULTILINE)]


def layout_files() -> list[str]:
    text = _man("5", "gitrepository-layout")
    entries = [_plain(m).strip() for m in re.findall(r"^\.PP\n([^.\n][^\n]*)", text, re.MULTILINE)]
    return [e for e in entries if e and " " not in e]


def attributes() -> list[str]:
    """The attributes of gitattributes(5) whose section says they select a driver that runs a command."""
    found = []
    for block in _man("5", "gitattributes").split(".ps +1\n")[1:]:
        heading = re.match(r"\\fB([a-z-]+)\\fR\n", block)
        body = _plain(block)
        if heading and "driver" in body and "command" in body and heading.group(1) not in found:
            found.append(heading.group(1))
    assert "!command" in _plain(_man("5", "gitmodules"))
    return found


def plant(git_dir: Path, program: Path, keys: list[str], hook_names: list[str]) -> int:
    """Every key and hook into `git_dir`, each naming `program`; the number of config entries written."""
    lines = []
    for key in keys:
        name = key
        for placeholder, value in PLACEHOLDERS.items():
            name = name.replace(placeholder, value)
        section, _, rest = name.partition(".")
        sub, _, leaf = rest.rpartition(".")
        value = f"!{program}" if section == "alias" else str(git_dir / "canary-hooks" if leaf == "hooksPath"
                                                              else program)
        header = f'[{section} "{sub}"]' if sub else f"[{section}]"
        lines.append(f'{header}\n\t{leaf} = "{value}"\n')
    with (git_dir / "config").open("a") as config:
        config.write("".join(lines))
    for folder in (git_dir / "hooks", git_dir / "canary-hooks"):
        folder.mkdir(exist_ok=True)
        for hook in hook_names:
            shutil.copy(program, folder / hook)
    return len(lines)


def plant_layout(git_dir: Path, program: Path, files: list[str]) -> list[str]:
    """The canary program at each file of the layout that is not a pointer, a parsed file or already there."""
    planted = []
    for entry in files:
        if entry in POINTERS | PARSED | CONFIGS or "<" in entry or "[" in entry or "/name" in entry:
            continue
        place = git_dir / entry
        if entry == "info/attributes":
            place.write_text("* filter=canary diff=canary merge=canary\n")
        elif place.exists():
            continue
        else:
            place.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(program, place)
        planted.append(entry)
    return planted


@pytest.fixture
def planted(make_git_repo: MakeRepo, tmp_path: Path) -> dict[str, object]:
    marker = tmp_path / "fired"
    program = tmp_path / "canary"
    program.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    program.chmod(0o755)
    keys, hook_names, files = program_keys(), hooks(), layout_files()
    sub = make_git_repo(tmp_path / "subsource")
    repo = make_git_repo(tmp_path / "app")
    subprocess.run(["git", "-c", "protocol.file.allow=always", "-C", str(repo), "submodule", "add", "-q", str(sub),
                    "sub"], check=True, capture_output=True)
    (repo / ".gitattributes").write_text("".join(f"* {a}=canary\n" for a in attributes()))
    with (repo / ".gitmodules").open("a") as modules:
        modules.write(f"\tupdate = !{program}\n")
    sh_git(repo, "add", "-A")
    sh_git(repo, "commit", "-qm", "submodule, attributes")
    sh_git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "wt")
    sh_git(repo, "config", "extensions.worktreeConfig", "true")
    nested = make_git_repo(repo / "vendor" / "nested")
    (nested / ".gitattributes").write_text("* filter=canary diff=canary\n")
    count = 0
    layout: list[str] = []
    worktree_git = repo / ".git" / "worktrees" / "wt"
    for git_dir in (repo / ".git", nested / ".git", repo / ".git" / "modules" / "sub"):
        count += plant(git_dir, program, keys, hook_names)
        layout += plant_layout(git_dir, program, files)
    (worktree_git / "config.worktree").write_text("")
    count += plant(worktree_git, program, [k for k in keys if not k.startswith("core.hooksPath")], [])
    for tree in (repo, tmp_path / "wt"):
        (tree / "work.txt").write_text("the agent's work\n")
        (tree / "README.md").write_text("changed\n")
        (tree / "sub" / "inside.txt").write_text("x\n") if (tree / "sub").is_dir() else None
    return {"repo": repo, "worktree": tmp_path / "wt", "marker": marker, "keys": keys, "hooks": hook_names,
            "layout": layout, "entries": count}


def awp_sequence(tree: Path, tmp_path: Path) -> None:
    """What AWP does on a tree after the session: status, digest, diff, checkpoint, reset, restore, the
    verifier's git clauses, commit, the commit's and the work tree's stored diffs, adoption's reads, blame."""
    from awp_pipelines.cli_features.blame import blame
    from awp_pipelines.core.records.committer import commit_targets
    from awp_pipelines.core.records.diffs import WORK_TREE, repo_files
    from awp_pipelines.core.records.workspace import (
        changed_paths,
        commit_of_attempt,
        commits_naming,
        diff_stat,
        discard_changes,
        head,
        restore_checkpoint,
        save_checkpoint,
        snapshot,
    )
    from awp_pipelines.core.verifiers import VerifyContext, VerifyContract, run_contract

    base = head(tree)
    snapshot({"t": tree})
    assert "work.txt" in changed_paths(tree)
    diff_stat(tree, base)
    repo_files("t", tree, base, WORK_TREE, str)
    sha = save_checkpoint(tree, base, "refs/awp/checkpoints/p.01/p.01.a1", "cp")
    assert sha is not None
    discard_changes(tree)
    assert restore_checkpoint(tree, sha)
    ctx = VerifyContext(packet_root=tmp_path, repos={"t": tree}, default_repo="t", isolation="none")
    run_contract(VerifyContract.model_validate({"repos_clean": [{"repo": "t"}], "changed_paths_only": ["**"]}), ctx)
    [result] = commit_targets({"t": tree}, "feat: work", {"AWP-Attempt": "p.01.a1"}, bases={"t": base}).values()
    repo_files("t", tree, base, str(result.sha), str)
    assert commit_of_attempt(tree, "p.01.a1") == result.sha
    assert commits_naming(tree, "p.")
    assert blame(tree / "work.txt", 1)[0].by_awp


def test_no_program_git_documents_runs_under_awps_git(planted: dict[str, object], tmp_path: Path) -> None:
    marker = planted["marker"]
    assert isinstance(marker, Path)
    keys, hook_names, layout = planted["keys"], planted["hooks"], planted["layout"]
    assert isinstance(keys, list) and isinstance(hook_names, list) and isinstance(layout, list)
    # What the documentation gave on this machine (the counts the note quotes).
    print(f"\n{len(keys)} program keys, {len(hook_names)} hooks, {len(layout)} layout files planted, "
          f"{planted['entries']} config entries in all")
    assert len(keys) >= 40 and {"core.fsmonitor", "filter.<driver>.clean", "credential.helper"} <= set(keys)
    assert len(hook_names) >= 25 and "pre-commit" in hook_names and "post-index-change" in hook_names
    assert {"filter", "diff", "merge"} <= set(attributes())
    # The control: plain git on a copy of the same tree runs the agent's programs.
    repo, worktree = planted["repo"], planted["worktree"]
    assert isinstance(repo, Path) and isinstance(worktree, Path)
    copy = tmp_path / "control"
    shutil.copytree(repo, copy, symlinks=True)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    for args in (["status"], ["add", "-A"], ["commit", "-qm", "x"], ["diff", "HEAD~1"]):
        subprocess.run(["git", *args], cwd=copy, env=env, capture_output=True, check=False, timeout=60)
    assert marker.exists(), "plain git ran none of the planted programs: the plant is not real"
    marker.unlink()
    for tree in (repo, worktree):
        awp_sequence(tree, tmp_path)
    assert not marker.exists(), marker.read_text()
