"""No traceback on any input: fuzzed manifests and prompt front matter through `awp lint`, `awp plan`,
`awp verify` and `awp run --dry-run`, in process. Every call ends in exit 0, 1, 2 or 3 and never in an
uncaught exception.

The `references` shard fuzzes what points from one part of a packet to another: `depends_on` (unknown ids,
cycles, duplicates), `targets` and verify entries naming repos, `phase` against `phases`, `prompt_dir`, the
`prompt_template` and `template` files, a profile, and the repos' work trees (a git tree, a plain folder, none,
a file, a remote). AWP has no include key: these are all the files a packet names. There each bad input is one
clear line: exit 2 prints exactly one `error: FILE[:LINE]: ... (how to fix)` line; lint's broken references are
refused by `awp plan` and `awp run` with lint's own message; and the code location the UI loads
(build_definitions) builds the packet or raises that one PacketError, never anything else.

Cases: AWP_FUZZ_EXAMPLES (default 400, the same fixed budget in CI and locally; `make fuzz` runs 10,000),
split across SHARDS so xdist spreads them; that run is slow (tests/conftest.py), and `make test-fast` drives
FAST_PER_SHARD cases per shard instead. One case is one generated packet driven through all four commands.
"""

from __future__ import annotations

import json
import os
import re
import string
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from awp_pipelines.cli import cli
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.verifiers.process import Finished

SHARDS = ("native", "prompt_runner", "front_matter", "raw_text", "references")
ALLOWED_EXITS = {0, 1, 2, 3}


def _examples() -> int:
    # A fixed small budget for every suite run: CI's 15 minutes go to new behaviour, not to more random cases.
    return int(os.environ.get("AWP_FUZZ_EXAMPLES", 400))


PER_SHARD = max(1, -(-_examples() // len(SHARDS)))
FAST_PER_SHARD = 5  # the fast variant's cases per shard

# ---- values: plausible ones mixed with hostile ones ------------------------------------------------------

hostile_text = st.sampled_from([
    "", " ", "\x00", "a\x00b", "\x01", "\x7f", "\ufeff", "\u202e", "../../x", "/", "/etc/passwd", "..",
    "~", "$HOME", "${X}", "a" * 300, "9" * 400 + "d", "1e400", "-1", "0", "nan", "inf", "[", "]]", "{",
    "&a", "*a", "!!python/object:os.system", "%YAML 1.1", "---", "...", "#", ": x", "- x", "\\", "'",
    '"', "\n", "\t", "\r\n", "é", "日本", "😀", "sk-ant-" + "A" * 24, "**", "**/*", "*", "?", "[!a]",
    "(?P<x", "(a+)+$", ".*", "\\d{99999999999}", "x" * 5000,
])
short_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
text = st.one_of(hostile_text, short_text)
numbers = st.one_of(st.integers(-3, 5), st.integers(), st.sampled_from([10**400, -(10**30), 2**63, 2**64]),
                    st.floats(allow_nan=True, allow_infinity=True))
scalars = st.one_of(text, numbers, st.booleans(), st.none())
DEEP = "DEEPLY-NESTED-"
# The values that broke things before: NUL, control bytes, numbers no float holds, deep nesting, long names.
worst = st.sampled_from(["\x00", "a\x00b", "./work\x00space", "\x1b[2J", 10**400, "9" * 400 + "d",
                         "x" * 300, "d/" * 2100, f"{DEEP}65", f"{DEEP}3000", "../../x", "/"])
hostile = st.one_of(
    worst,
    scalars,
    st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                  st.dictionaries(text, inner, max_size=3)), max_leaves=6),
    # A marker that dump() turns into that many nested brackets (cheaper than building and dumping them).
    st.sampled_from([8, 63, 65, 3000]).map(lambda depth: f"{DEEP}{depth}"),
)

# ---- a plausible packet: valid in shape, with the awkward values a real one may carry ----------------------

paths = st.sampled_from(["hello.txt", "app:hello.txt", "packet:prompts", "../outside", "/etc/passwd",
                         "**/*.txt", "*", "missing/x", "sub/../hello.txt", "hello.txt/", ".", "app:",
                         "nope:x", "link_out/x", "loop/x", "link_out/**/*", "d/" + "x" * 300,
                         "x" * 5000])
durations = st.sampled_from(["10m", "1d", "30d", "unbounded", "250ms", 1, 600000, "2h", " 5 s "])
words = st.sampled_from(["hello", "Hello", "", "x" * 100, "# heading", "ünï", "[x]", "sk-ant-" + "B" * 20])
VERIFY = {
    "files_exist": st.lists(paths, max_size=3),
    "files_absent": st.lists(paths, max_size=2),
    "contains": st.lists(st.fixed_dictionaries({"path": paths, "text": words}), max_size=2),
    "matches": st.lists(st.fixed_dictionaries({"path": paths, "pattern": st.sampled_from(
        ["hel+o", "^#", "(a|b)*c", "[", "(?i)x"])}), max_size=2),
    "doc": st.lists(st.one_of(paths, st.fixed_dictionaries({"path": paths}, optional={
        "min_lines": st.integers(0, 5), "requires_sections": st.lists(words, max_size=2)})), max_size=2),
    "yaml": st.lists(st.fixed_dictionaries({"path": paths}, optional={"root": st.sampled_from(
        ["map", "list", "scalar"])}), max_size=2),
    "json": st.lists(st.fixed_dictionaries({"path": paths}, optional={
        "required_paths": st.lists(st.sampled_from(["a", "a.b", "0", ""]), max_size=2)}), max_size=2),
    "glob": st.lists(st.fixed_dictionaries({"path": paths}, optional={
        "min_matches": st.integers(0, 3), "max_matches": st.integers(0, 3), "non_empty": st.booleans()}),
        max_size=2),
    "source_absent": st.lists(st.fixed_dictionaries({"path": paths, "patterns": st.lists(
        st.sampled_from(["TODO", "(", "x+"]), min_size=1, max_size=2)}), max_size=2),
    # Never a real program: run_bounded is replaced below, and these names are harmless anyway.
    "commands": st.lists(st.fixed_dictionaries(
        {"exec": st.sampled_from(["true", "false", "echo", "./gen.sh", "no-such-awp-tool"])},
        optional={"args": st.lists(words, max_size=2), "cwd": paths, "timeout_ms": st.integers(1, 10**6),
                  "regenerates": st.lists(paths, max_size=1), "stdout_matches": st.sampled_from(["x", "["]),
                  "fault_exit_codes": st.lists(st.integers(-2, 3), max_size=2)}), max_size=2),
    "changed_paths_only": st.lists(paths, max_size=2),
    "repos_clean": st.lists(st.fixed_dictionaries({}, optional={"repo": st.sampled_from(["app", "nope"]),
                                                                "pushed": st.booleans()}), max_size=1),
}
recovery = st.fixed_dictionaries({}, optional={
    "retry": st.fixed_dictionaries({}, optional={"max_attempts": st.integers(1, 5),
                                                 "base_delay_ms": st.integers(0, 10**6)}),
    "repair": st.fixed_dictionaries({}, optional={"max_attempts": st.integers(0, 3), "enabled": st.booleans()}),
    "resume_attempts": st.integers(0, 3)})
manifests = st.fixed_dictionaries(
    {"name": st.sampled_from(["fuzz", "demo-2", "x"]),
     "repos": st.sampled_from([{"app": {"path": "./workspace", "default": True}},
                               [{"name": "app", "path": "./workspace"}],
                               {"app": {"path": "./workspace"}, "other": {"path": "."}}])},
    optional={
        "provider": st.sampled_from(["simulated", "claude", "nope"]),
        "model": st.sampled_from(["simulated-demo", "haiku", "gpt-5", "factory-free"]),
        "timeout": durations,
        "prompt_dir": st.sampled_from(["prompts", "missing", "."]),
        "phases": st.dictionaries(st.sampled_from(["1", "2"]), words, max_size=2),
        "recovery": recovery,
        "fallback": st.lists(st.one_of(st.sampled_from(["claude", "factory-free"]),
                                       st.fixed_dictionaries({"provider": st.sampled_from(["claude", "x"])})),
                             max_size=2),
        "accounts": st.lists(st.sampled_from(["a1", "a2"]), max_size=2),
        "profile": st.sampled_from(["missing-profile", "../../etc/passwd", "p" * 250]),
        "prompt_template": st.sampled_from(["missing", "../x", "t" * 250]),
        "reasoning_effort": st.sampled_from(["low", "high"]),
        "agent_control": st.fixed_dictionaries({}, optional={"enabled": st.booleans()}),
    })
prompt_fronts = st.fixed_dictionaries({}, optional={
    "id": st.sampled_from(["01", "1", 1, "02", "03", "x" * 40]),
    "name": words,
    "phase": st.sampled_from([1, "1", "2", 3]),
    "timeout": durations,
    "targets": st.lists(st.sampled_from(["app", "other", "nope"]), max_size=2),
    "commit": words,
    "depends_on": st.one_of(st.sampled_from(["01", "02", 1, "09"]), st.lists(st.sampled_from(["01", "02"]),
                                                                              max_size=2)),
    "verify": st.fixed_dictionaries({}, optional=VERIFY),
    "simulate": st.fixed_dictionaries({}, optional={"attempts": st.lists(st.fixed_dictionaries(
        {}, optional={"messages": st.lists(words, max_size=2)}), max_size=2)}),
    "recovery": recovery,
    "model": st.sampled_from(["simulated-demo", "haiku"]),
    "references": st.lists(words, max_size=2),
    "max_turns": st.integers(1, 50),
})
PROMPT_NAMES = st.sampled_from(["01_hello.prompt.md", "02_next.prompt.md", "hello.prompt.md",
                                "1-x.prompt.md", "000003_pad.prompt.md", "01_hello.prompt.checklist.md"])


@st.composite
def perturbed(draw: st.DrawFn, data: Any, times: int) -> Any:
    """`data` with up to `times` values (or keys) somewhere inside it replaced by hostile ones."""
    for _ in range(draw(st.integers(0, times))):
        data = _perturb_once(draw, data)
    return data


def _perturb_once(draw: st.DrawFn, node: Any) -> Any:
    if isinstance(node, dict) and node and draw(st.integers(0, 3)):
        key = draw(st.sampled_from(sorted(node, key=str)))
        return {**node, key: _perturb_once(draw, node[key])}
    if isinstance(node, dict) and draw(st.booleans()):
        return {**node, draw(text): draw(hostile)}  # an unknown key, or a known one with a hostile value
    if isinstance(node, list) and node and draw(st.integers(0, 3)):
        index = draw(st.integers(0, len(node) - 1))
        return [*node[:index], _perturb_once(draw, node[index]), *node[index + 1:]]
    return draw(hostile)


_NESTED = re.compile(re.escape(DEEP) + r"(\d+)")


def dump(data: Any) -> str:
    # libyaml's dumper when present: generating cases must cost less than checking them.
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text = yaml.dump(data, Dumper=dumper, allow_unicode=True, sort_keys=False, width=10**6)
    return _NESTED.sub(lambda m: "[" * int(m.group(1)) + "x" + "]" * int(m.group(1)), text)


@st.composite
def mutated(draw: st.DrawFn, source: str) -> str:
    """Text-level damage: YAML a serializer would never write (raw control bytes, stray brackets, cuts)."""
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(source)))
        junk = draw(st.one_of(st.sampled_from(["\x00", "[" * 3000, "\t", "---\n", ": ", "&a ", "*a", "\"", "'",
                                               "\n  - ", "{", "\x85", "\ufeff", "!!binary ", "? ", "<<: *a\n"]),
                              st.text(alphabet=string.printable, max_size=5)))
        source = source[:at] + junk + source[at + draw(st.integers(0, 3)):]
    return source


@st.composite
def packets(draw: st.DrawFn, shard: str) -> dict[str, str]:
    """{relative path: text} of a packet folder: a plausible packet, then a little damage per the shard."""
    manifest = draw(manifests)
    if shard in ("native", "prompt_runner"):
        manifest = draw(perturbed(manifest, 3))
    manifest_text = dump(manifest)
    if shard == "raw_text":
        manifest_text = draw(mutated(manifest_text))
    files = {"packet.yaml": manifest_text} if shard == "native" else {
        "prompt_runner_packet.md": f"---\n{manifest_text}---\n# Fuzz\n"}
    for name in draw(st.lists(PROMPT_NAMES, min_size=1, max_size=3, unique=True)):
        front = draw(prompt_fronts)
        if shard == "front_matter":
            front = draw(perturbed(front, 3))
        front_text = dump(front)
        if shard == "raw_text":
            front_text = draw(mutated(front_text))
        closing = draw(st.sampled_from(["---\n", "---\n", "---\n", "", "--- \n"]))
        files[f"prompts/{name}"] = f"---\n{front_text}{closing}# Body\n\n{draw(words)}\n"
    return files


# ---- references between prompts, folders, templates and work trees ------------------------------------------

# The folders and files every references case has beside its manifest (tree_kinds: what each path is).
TREES = {"./workspace": "git", "./plain": "plain", "./missing": "none", "./afile": "file"}
REPO_NAMES = st.sampled_from(["app", "web"])
REFERENCED_IDS = st.sampled_from(["01", "02", "03", "07", 1, "1"])
repo_entries = st.one_of(st.sampled_from(sorted(TREES)).map(lambda path: {"path": path}),
                         st.just({"remote": {"url": "https://forge.invalid/x.git"}}))
reference_fronts = st.fixed_dictionaries({}, optional={
    "id": st.sampled_from(["01", "02", "03"]),
    "depends_on": st.one_of(REFERENCED_IDS, st.lists(REFERENCED_IDS, max_size=3)),
    "targets": st.lists(st.sampled_from(["app", "web", "nope"]), max_size=2),
    "phase": st.sampled_from([1, "2", 9]),
    "template": st.sampled_from(["tpl", "gone"]),
    "agent": st.sampled_from(["coder", "reviewer"]),
    "verify": st.fixed_dictionaries({"files_exist": st.lists(st.one_of(
        st.just("hello.txt"), st.fixed_dictionaries({"repo": st.sampled_from(["app", "web", "nope", "packet"]),
                                                     "path": st.just("hello.txt")})), min_size=1, max_size=2)}),
})


@st.composite
def referencing_packets(draw: st.DrawFn) -> dict[str, str]:
    """A packet whose parts name each other, rightly or not; `TREES` are made beside it (write_packet)."""
    repos = draw(st.dictionaries(REPO_NAMES, repo_entries, min_size=1, max_size=2))
    manifest: dict[str, Any] = {"name": "refs", "provider": "simulated", "model": "simulated-demo",
                                "repos": repos if draw(st.booleans()) else [{"name": n, **r} for n, r in repos.items()]}
    manifest.update(draw(st.fixed_dictionaries({}, optional={
        "prompt_dir": st.sampled_from(["prompts", "steps", "promts", "afile", "."]),
        "prompt_template": st.sampled_from(["tpl", "missing-tpl"]),
        "phases": st.just({"1": "Build", "2": "Ship"}),
        "profile": st.just("missing-profile")})))
    written = manifest.get("prompt_dir", "prompts")  # mostly where the manifest says: the rest goes on from there
    folder = draw(st.sampled_from([written] * 4 + ["prompts", "steps"])) if written in ("prompts", "steps") \
        else draw(st.sampled_from(["prompts", "steps"]))
    files = {"packet.yaml": dump(manifest)}
    if draw(st.booleans()):
        files["templates/tpl.prompt.md"] = "---\n---\n# From the template\n"
    for stem in draw(st.lists(st.sampled_from(["01_a", "02_b", "03_c"]), min_size=1, max_size=3, unique=True)):
        files[f"{folder}/{stem}.prompt.md"] = f"---\n{dump(draw(reference_fronts))}---\n# Body\n"
    return files


LINE_OF_ERROR = re.compile(r"^error: (?P<file>/[^:]+)(?::(?P<line>\d+))?: \S.*$")
HOW_TO_FIX = re.compile(r"\S \(.+\)$")


def one_clear_line(output: str, root: Path, fix: bool = True) -> str | None:
    """What is wrong with an exit-2 output, if anything: one line naming a file of the packet (and `fix`: how to
    fix it, in parentheses at its end)."""
    lines = output.rstrip("\n").split("\n")  # what a terminal shows as lines (splitlines also cuts at \x1c, \x85)
    if len(lines) != 1:
        return f"{len(lines)} lines, not one"
    match = LINE_OF_ERROR.match(lines[0])
    if match is None or (fix and not HOW_TO_FIX.search(lines[0])):
        return f"not `error: FILE[:LINE]: what{' (how to fix)' if fix else ''}`: {lines[0]!r}"
    if not Path(match["file"]).is_relative_to(root):
        return f"names {match['file']}, outside the packet"
    return None


def drive_references(files: dict[str, str]) -> list[str]:
    """Problems found: a traceback, an exit outside 0-3, an exit-2 output that is not one clear line, a broken
    reference lint reports that plan or run lets through, or a code location that fails otherwise than with it."""
    from awp_pipelines.core.lint.references import REFUSED
    from awp_pipelines.orchestration.definitions import build_definitions

    problems = []
    with tempfile.TemporaryDirectory(prefix="awp-fuzz-") as tmp:
        root = Path(tmp) / "project" / "assets" / "refs"
        root.mkdir(parents=True)
        write_packet(root, files)
        (root / "plain").mkdir()
        (root / "afile").write_text("a file, not a tree\n")
        results = {command[0] + ("-dry" if len(command) > 1 else ""): CliRunner().invoke(cli, [*command, str(root)])
                   for command in COMMANDS}
        for name, result in results.items():
            uncaught = result.exception is not None and not isinstance(result.exception, SystemExit)
            if uncaught or result.exit_code not in ALLOWED_EXITS or "Traceback" in result.output:
                problems.append(f"{name}: {type(result.exception).__name__}: {result.exception!r} "
                                f"(exit {result.exit_code})")
            elif result.exit_code == 2 and (wrong := one_clear_line(result.output, root)):
                problems.append(f"{name}: {wrong}")
        lint = CliRunner().invoke(cli, ["lint", "--json", str(root)])
        refused = [f for f in _findings(lint.output) if f["kind"] in REFUSED]
        for name in ("plan", "run-dry"):
            if refused and refused[0]["message"] not in results[name].output:
                problems.append(f"{name}: lets through what lint refuses: {refused[0]['message']}")
        try:
            build_definitions(root.parent.parent)
        except PacketError:
            pass  # one line in the UI, with its file
        except Exception as err:  # anything else is a traceback in the UI
            problems.append(f"code location: {type(err).__name__}: {err!r}")
    return problems


def _findings(output: str) -> list[dict[str, Any]]:
    try:
        report = json.loads(output)
    except ValueError:
        return []  # the packet does not load: lint's one line, checked above
    return list(report.get("findings", [])) if isinstance(report, dict) else []


# ---- driving the CLI -------------------------------------------------------------------------------------

COMMANDS = (("lint",), ("plan",), ("verify",), ("run", "--dry-run"))


@contextmanager
def no_real_commands() -> Iterator[None]:
    """`commands` entries never start a process: the fuzzer checks input handling, not programs."""
    fake = Finished(exit_code=0, output="", timed_out=False)
    with mock.patch("awp_pipelines.core.verifiers.clauses.commands.run_bounded", return_value=fake):
        yield


def write_packet(root: Path, files: dict[str, str]) -> None:
    (root / "workspace" / ".git").mkdir(parents=True)  # a git work tree, as `awp run`'s preflight sees one
    (root / "workspace" / "hello.txt").write_text("hello\n")
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8", errors="surrogatepass"))


def drive(files: dict[str, str]) -> list[str]:
    """Problems found: a traceback or an exit code outside 0-3, per command."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="awp-fuzz-") as tmp:
        root = Path(tmp) / "packet"
        root.mkdir()
        write_packet(root, files)
        for command in COMMANDS:
            result = CliRunner().invoke(cli, [*command, str(root)])
            uncaught = result.exception is not None and not isinstance(result.exception, SystemExit)
            if uncaught or result.exit_code not in ALLOWED_EXITS or "Traceback" in result.output:
                kind = type(result.exception).__name__ if result.exception else "exit"
                problems.append(f"{' '.join(command)}: {kind}: {result.exception!r} (exit {result.exit_code})")
            elif result.exit_code == 2 and (wrong := one_clear_line(result.output, root, fix=False)):
                problems.append(f"{' '.join(command)}: {wrong}")
    return problems


@pytest.mark.parametrize("shard", SHARDS)
def test_no_input_ends_in_a_traceback(shard: str, reliability_row: Callable[..., None]) -> None:
    """The full run: PER_SHARD cases per shard (marked slow in tests/conftest.py)."""
    fuzz(shard, PER_SHARD, reliability_row)


@pytest.mark.parametrize("shard", SHARDS)
def test_a_few_fuzzed_inputs_end_without_a_traceback(shard: str, reliability_row: Callable[..., None]) -> None:
    """The inner loop's share of the fuzz: a handful of cases per shard, so a packet that crashes a command
    shows up in `make test-fast` too."""
    fuzz(shard, FAST_PER_SHARD, reliability_row)


def fuzz(shard: str, examples: int, reliability_row: Callable[..., None]) -> None:
    tally = [0, 0]  # cases, cases with a problem
    started = time.monotonic()

    # No shrinking: each step re-runs four commands, and CI's time limit is better spent on new cases; the
    # failure message carries the packet's files as generated.
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(files=referencing_packets() if shard == "references" else packets(shard))
    def case(files: dict[str, str]) -> None:
        problems = drive_references(files) if shard == "references" else drive(files)
        tally[0] += 1
        tally[1] += bool(problems)
        assert not problems, "\n".join(problems) + "\n\nfiles:\n" + repr(files)[:4000]

    with no_real_commands():
        try:
            case()
        finally:
            reliability_row("fuzzed manifests and front matter", tries=tally[0], survived=tally[0] - tally[1],
                            seconds=time.monotonic() - started,
                            note="a try = one packet through lint, plan, verify, run --dry-run (references: and "
                            "the code location); survived = no traceback, exit 0-3, an exit 2 one line")
