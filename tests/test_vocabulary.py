"""One vocabulary: each word of the domain is defined in one place, and `awp/` keys are spelled only in run_tags.py.

The greps read the package's source with `ast`, so comments and docstrings may name a word or a key freely;
only code that defines or spells one counts.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "awp_pipelines"
KEY_HOME = PACKAGE / "core" / "records" / "run_tags.py"
# `awp/` starting a string or after a non-path character: `refs/awp/…` and `.awp/…` are paths, not keys.
AWP_KEY = re.compile(r"(?:^|[^./\w])awp/")


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def awp_key_literals(path: Path, tree: ast.Module) -> list[str]:
    """`file:line: 'literal'` for each string in code (not a docstring) that spells an `awp/` key."""
    docs = _docstrings(tree)
    return [f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            and AWP_KEY.search(node.value)]


def test_no_module_but_tags_spells_an_awp_key() -> None:
    spelled = [hit for path, tree in _modules() if path != KEY_HOME for hit in awp_key_literals(path, tree)]
    assert spelled == [], "use the constants of awp_pipelines/core/records/run_tags.py:\n" + "\n".join(spelled)


def test_the_key_grep_finds_a_literal_and_passes_over_paths_and_docstrings() -> None:
    tree = ast.parse('"""Reads `awp/result`."""\nA = {"awp/result": 1}\nB = "refs/awp/x"\nC = ".awp/events"\n')
    assert awp_key_literals(PACKAGE / "x.py", tree) == ["awp_pipelines/x.py:2: 'awp/result'"]
    home = awp_key_literals(KEY_HOME, ast.parse(KEY_HOME.read_text()))
    assert [hit.rsplit(": ", 1)[1] for hit in home] == ["'awp/'"]  # run_tags.py spells the prefix once


# -- each word's definition, found by what defines it ------------------------------------------------------

def _literal_strings(node: ast.AST) -> set[str]:
    """The strings of a `Literal[...]` subscript (empty for anything else)."""
    name = getattr(node.value, "id", getattr(node.value, "attr", "")) if isinstance(node, ast.Subscript) else ""
    if name != "Literal":
        return set()
    assert isinstance(node, ast.Subscript)
    return {n.value for n in ast.walk(node.slice) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _class_fields(node: ast.AST) -> set[str]:
    if not isinstance(node, ast.ClassDef):
        return set()
    return {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}


def _function_names(node: ast.AST) -> set[str]:
    return {node.name} if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else set()


def _git_subprocess(node: ast.AST) -> bool:
    """`subprocess.run/Popen/check_output(["git", ...])`: a git runner of its own."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"run", "Popen", "check_output", "check_call", "call"}
            and bool(node.args) and isinstance(node.args[0], ast.List) and bool(node.args[0].elts)
            and isinstance(node.args[0].elts[0], ast.Constant) and node.args[0].elts[0].value == "git")


def _two_digit_format(node: ast.AST) -> bool:
    """`f"{n:02d}"` or `.zfill(...)`: a prompt id padded by hand instead of by packet.normalize_id."""
    if isinstance(node, ast.FormattedValue) and isinstance(node.format_spec, ast.JoinedStr):
        spec = "".join(str(v.value) for v in node.format_spec.values if isinstance(v, ast.Constant))
        return spec == "02d"  # the prompt id's width (a timestamp's `03d` milliseconds is not one)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "zfill"


Defines = Callable[[ast.AST], bool]
# word → (what counts as defining it, the one module that may)
DEFINITIONS: dict[str, tuple[Defines, str]] = {
    "modes": (lambda n: bool(_literal_strings(n) & {"retry", "fallback", "iterate"}), "core/records/run_tags.py"),
    "failure classes": (lambda n: bool(_literal_strings(n) & {"provider_rate_limit", "transport_timeout"}),
                        "core/records/failures.py"),
    "token counts": (lambda n: "input_tokens" in _class_fields(n) or "input_tokens" in _literal_strings(n),
                     "core/records/usage.py"),
    "commit record": (lambda n: {"sha", "status"} <= _class_fields(n), "core/records/committer.py"),
    "commit_message": (lambda n: "commit_message" in _function_names(n), "core/planning/plan.py"),
    "git runner": (lambda n: bool(_function_names(n) & {"git", "git_env", "changed_paths"}) or _git_subprocess(n),
                   "core/records/workspace.py"),
    "prompt id rule": (_two_digit_format, "core/packet/packet.py"),
    "packet run and AgentRun states": (lambda n: {"interrupted", "stopped", "blocked"} <= _literal_strings(n),
                                       "core/decisions/agent_run.py"),
}


def defining_modules(defines: Defines) -> dict[str, int]:
    """Module (relative to the package) → how many nodes in it define the word."""
    found: dict[str, int] = {}
    for path, tree in _modules():
        hits = sum(1 for node in ast.walk(tree) if defines(node))
        if hits:
            found[str(path.relative_to(PACKAGE))] = hits
    return found


def test_each_vocabulary_word_is_defined_in_one_module() -> None:
    wrong = {}
    for word, (defines, home) in DEFINITIONS.items():
        modules = defining_modules(defines)
        if list(modules) != [home]:
            wrong[word] = modules
    assert wrong == {}, f"defined elsewhere too (or not in its home): {wrong}"


def test_the_definition_greps_recognise_a_second_definition() -> None:
    second = ast.parse(
        'from typing import Literal\nM = Literal["run", "retry"]\nF = Literal["provider_rate_limit"]\n'
        'S = Literal["interrupted", "stopped", "blocked"]\n'
        "class C:\n    sha: str\n    status: str\n    input_tokens: int\n"
        'def commit_message(p): ...\ndef git(*a): return subprocess.run(["git", *a])\nID = f"{n:02d}"\n')
    for word, (defines, _home) in DEFINITIONS.items():
        assert any(defines(node) for node in ast.walk(second)), word


def test_a_target_is_where_an_attempt_runs_never_a_repo() -> None:
    """`targets:` stays Prompt Runner's front-matter key for a prompt's repos; in the code those are `repos`
    (plan.WorkRepo), and every *Target* record names a provider target: none carries a repo's path."""
    repo_like = [f"{path.relative_to(PACKAGE)}:{node.name}" for path, tree in _modules() for node in ast.walk(tree)
                 if isinstance(node, ast.ClassDef) and "Target" in node.name and "path" in _class_fields(node)]
    assert repo_like == []
    plans = [node for path, tree in _modules() if path.name == "plan.py" for node in ast.walk(tree)
             if isinstance(node, ast.ClassDef) and node.name == "PromptPlan"]
    assert "repos" in _class_fields(plans[0]) and "targets" not in _class_fields(plans[0])


def test_awp_serve_says_a_packet_runs_state_in_the_words_of_awp_status() -> None:
    """One vocabulary for a packet run's state: `awp status` (StatusReport.state), `awp watch` (which reads the same
    report) and `awp serve`'s pages (PacketRunView.state) all give agent_run.PacketRunState; serve said "not done"."""
    import typing

    from awp_pipelines.cli_features.run_index import PacketRunView
    from awp_pipelines.core.decisions.agent_run import PacketRunState
    from awp_pipelines.core.engine.status_report import StatusReport, WatchReading

    assert typing.get_type_hints(PacketRunView.state)["return"] is PacketRunState
    assert StatusReport.model_fields["state"].annotation is PacketRunState
    assert WatchReading.model_fields["state"].annotation is PacketRunState
