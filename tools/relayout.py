"""Move the package's modules into the layout of docs/architecture.md, and rewrite every reference to them.

Run from the repository root:

    python tools/relayout.py                  # git mv what is still at its old path, then rewrite references
    python tools/relayout.py --rewrite-only   # only rewrite references (files merged after the move)
    python tools/relayout.py --check          # say what would change; exit 1 if anything would

It is idempotent: a second run changes nothing. A file whose new path already exists is not moved (the old
path then holds a shim or a merged re-creation; the script says so). A line holding the text `relayout: keep`
is never rewritten (a shim's docstring naming its old path on purpose). Imports are re-sorted with
`ruff check --select I --fix` when ruff is installed, so longer module paths still fit the line length.
Stdlib only, so it runs before `make install`.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "awp_pipelines"
KEEP = "relayout: keep"
# The SDK's functions, re-exported at the package root: `from awp_pipelines import plan` names the function
# once plan.py has moved, so it is rewritten only where the file reads an attribute of it (`plan.build_plan`: a
# module; a function has none worth reading). `awp_pipelines.lint(` is never rewritten.
SDK_NAMES = frozenset({"load", "lint", "plan", "run", "status", "repair", "verify"})

# New folders: path -> the docstring of its __init__.py (created when missing).
FOLDERS: dict[str, str] = {
    "awp_pipelines/core": "The pure core: no Dagster. One folder per layer; docs/architecture.md says which may "
                          "import which.",
    "awp_pipelines/core/records": "What an Attempt leaves behind and how it is written: events, transcript, "
                                  "live lines, commit, usage, failure envelope, run tags, all redacted.",
    "awp_pipelines/core/packet": "What a packet is, read from disk: the packet, its models, and the project's "
                                 "settings files (providers.yaml, prices.yaml, automation.yaml, home profile).",
    "awp_pipelines/core/decisions": "The decision function: what happens next from a packet run's history "
                                    "(policy, launches, budget, rotation, agent-run state, stops, agent control).",
    "awp_pipelines/core/planning": "The plan of a packet run: prompts selected, targets resolved, providers "
                                   "checked before and during the run.",
    "awp_pipelines/core/engine": "The Attempt engine: one Attempt run end to end, and what reads its records back "
                                 "(status report).",
    "awp_pipelines/cli_features": "Features only the CLI uses: prompt authoring, blame, JSON Schemas.",
    "awp_pipelines/orchestration/compute": "The compute of a prompt asset: `prompt_compute.py` (what the asset "
                                           "calls), `attempt_compute.py` (a thin sequence) over the launch choice, "
                                           "the target check, the work trees, the stops and the Attempt's marks.",
    "awp_pipelines/dagster_compat": "Every use of Dagster's private names, one module per concern (docs/upstream.md). "
                                    "None is imported when a module here loads: a name renamed upstream fails the "
                                    "function that uses it and its canary test (tests/test_dagster_compat.py), "
                                    "never the import of awp_pipelines.",
}

# old path -> new path (a file, or a whole package folder). Keep sorted by new folder.
MOVES: dict[str, str] = {
    # core/records: the bottom; imports no other core folder
    "awp_pipelines/redact.py": "awp_pipelines/core/records/redact.py",
    "awp_pipelines/tags.py": "awp_pipelines/core/records/run_tags.py",
    "awp_pipelines/usage.py": "awp_pipelines/core/records/usage.py",
    "awp_pipelines/jsonl.py": "awp_pipelines/core/records/jsonl.py",
    "awp_pipelines/failures.py": "awp_pipelines/core/records/failures.py",
    "awp_pipelines/lifecycle.py": "awp_pipelines/core/records/attempt_lifecycle.py",
    "awp_pipelines/events.py": "awp_pipelines/core/records/events.py",
    "awp_pipelines/transcript.py": "awp_pipelines/core/records/transcript.py",
    "awp_pipelines/live.py": "awp_pipelines/core/records/live_lines.py",
    "awp_pipelines/agent_files.py": "awp_pipelines/core/records/agent_files.py",
    "awp_pipelines/committer.py": "awp_pipelines/core/records/committer.py",
    "awp_pipelines/workspace.py": "awp_pipelines/core/records/workspace.py",
    # core/packet
    "awp_pipelines/packet.py": "awp_pipelines/core/packet/packet.py",
    "awp_pipelines/model": "awp_pipelines/core/packet/model",
    "awp_pipelines/errors.py": "awp_pipelines/core/packet/errors.py",
    "awp_pipelines/ids.py": "awp_pipelines/core/packet/ids.py",
    "awp_pipelines/yamlsrc.py": "awp_pipelines/core/packet/yamlsrc.py",
    "awp_pipelines/validation.py": "awp_pipelines/core/packet/validation.py",
    "awp_pipelines/bounds.py": "awp_pipelines/core/packet/bounds.py",
    "awp_pipelines/templates.py": "awp_pipelines/core/packet/templates.py",
    "awp_pipelines/profile.py": "awp_pipelines/core/packet/home_profile.py",
    "awp_pipelines/automation.py": "awp_pipelines/core/packet/automation.py",
    "awp_pipelines/catalog.py": "awp_pipelines/core/packet/providers_config.py",
    "awp_pipelines/prices.py": "awp_pipelines/core/packet/prices.py",
    # core/decisions
    "awp_pipelines/policy.py": "awp_pipelines/core/decisions/policy.py",
    "awp_pipelines/launches.py": "awp_pipelines/core/decisions/next_launches.py",
    "awp_pipelines/budget.py": "awp_pipelines/core/decisions/budget.py",
    "awp_pipelines/rotation.py": "awp_pipelines/core/decisions/rotation.py",
    "awp_pipelines/agent_run.py": "awp_pipelines/core/decisions/agent_run.py",
    "awp_pipelines/stops.py": "awp_pipelines/core/decisions/stops.py",
    "awp_pipelines/control.py": "awp_pipelines/core/decisions/agent_control.py",
    # providers, verifiers, lint: whole folders into core/
    "awp_pipelines/providers": "awp_pipelines/core/providers",
    "awp_pipelines/verifiers": "awp_pipelines/core/verifiers",
    "awp_pipelines/lint": "awp_pipelines/core/lint",
    # core/planning
    "awp_pipelines/plan.py": "awp_pipelines/core/planning/plan.py",
    "awp_pipelines/selection.py": "awp_pipelines/core/planning/selection.py",
    "awp_pipelines/preflight.py": "awp_pipelines/core/planning/preflight.py",
    "awp_pipelines/doctor.py": "awp_pipelines/core/planning/provider_checks.py",
    "awp_pipelines/probe.py": "awp_pipelines/core/planning/target_probe.py",
    "awp_pipelines/model_lists.py": "awp_pipelines/core/planning/model_lists.py",
    # core/engine
    "awp_pipelines/attempts.py": "awp_pipelines/core/engine/attempts.py",
    "awp_pipelines/interrupts.py": "awp_pipelines/core/engine/interrupts.py",
    "awp_pipelines/orphans.py": "awp_pipelines/core/engine/orphans.py",
    "awp_pipelines/progress.py": "awp_pipelines/core/engine/progress.py",
    "awp_pipelines/cleantree.py": "awp_pipelines/core/engine/cleantree.py",
    "awp_pipelines/remote.py": "awp_pipelines/core/engine/remote.py",
    "awp_pipelines/confirmation.py": "awp_pipelines/core/engine/confirmation.py",
    "awp_pipelines/provenance.py": "awp_pipelines/core/engine/provenance.py",
    "awp_pipelines/runlock.py": "awp_pipelines/core/engine/runlock.py",
    "awp_pipelines/hosts.py": "awp_pipelines/core/engine/hosts.py",
    "awp_pipelines/status.py": "awp_pipelines/core/engine/status_report.py",
    # CLI-only features, beside cli/
    "awp_pipelines/authoring.py": "awp_pipelines/cli_features/authoring.py",
    "awp_pipelines/blame.py": "awp_pipelines/cli_features/blame.py",
    "awp_pipelines/schema.py": "awp_pipelines/cli_features/schema.py",
    # the Dagster layer: all of it in orchestration/, with names that say what they hold
    "awp_pipelines/definitions.py": "awp_pipelines/orchestration/definitions.py",
    "awp_pipelines/components.py": "awp_pipelines/orchestration/components.py",
    "awp_pipelines/orchestration/state.py": "awp_pipelines/orchestration/standing.py",
    "awp_pipelines/orchestration/manual.py": "awp_pipelines/orchestration/manual_repair.py",
    "awp_pipelines/orchestration/attempt_step.py": "awp_pipelines/orchestration/compute/attempt_compute.py",
    # Dagster's private names, one module per concern (issue 25): see SPLITS for storage.py
    "awp_pipelines/orchestration/quiet_tail.py": "awp_pipelines/dagster_compat/log_mirrors.py",
    # The compute of a prompt asset, in a folder of its own
    "awp_pipelines/orchestration/attempt_compute.py": "awp_pipelines/orchestration/compute/attempt_compute.py",
    "awp_pipelines/orchestration/launch_choice.py": "awp_pipelines/orchestration/compute/launch_choice.py",
    "awp_pipelines/orchestration/target_check.py": "awp_pipelines/orchestration/compute/target_check.py",
    "awp_pipelines/orchestration/work_trees.py": "awp_pipelines/orchestration/compute/work_trees.py",
    "awp_pipelines/orchestration/attempt_stops.py": "awp_pipelines/orchestration/compute/attempt_stops.py",
    "awp_pipelines/orchestration/attempt_marks.py": "awp_pipelines/orchestration/compute/attempt_marks.py",
    "awp_pipelines/orchestration/prompt_compute.py": "awp_pipelines/orchestration/compute/prompt_compute.py",
}

# Modules split by concept: old file -> {new file: the top-level names it takes}. `python tools/relayout.py` moves
# each top-level statement (with the comments above it) to the file that lists its name, gives each new file the
# imports it uses (and imports of the names it uses from its sister files) and removes the old file; a name no
# file lists stops the split (the old file stays whole). Each name then moves for every importer (NAMES).
COMPAT = "awp_pipelines/dagster_compat"
SPLITS: dict[str, dict[str, list[str]]] = {
    "awp_pipelines/orchestration/storage.py": {
        f"{COMPAT}/tags.py": ["ROOT_RUN_ID_TAG", "SENSOR_NAME_TAG", "REPOSITORY_LABEL_TAG", "REPOSITORY_TAG"],
        f"{COMPAT}/events.py": ["RECORD_EVENTS", "plain_value", "AttemptEvent", "_CHUNK", "attempt_events",
                                "events_by_run", "_events_by_sql", "_stored_metadata", "run_event_page",
                                "latest_event_time", "report_materialization"],
        f"{COMPAT}/kvs.py": ["kv_get", "kv_set", "_sql_run_storage", "kv_insert", "kv_value", "kv_swap",
                             "kv_prefixed", "prefixed_query", "kv_delete"],
        f"{COMPAT}/config_schema.py": ["shared_config_schema", "_shared_schema_class"],
        f"{COMPAT}/executor.py": ["multi_or_in_process", "STEP_IMPORTS", "PRELOAD_JOB_ENV", "_MAX_ENV",
                                  "start_step_server", "build_preloaded_job"],
        f"{COMPAT}/migrations.py": ["_MigrationsReadOnce", "read_migrations_once"],
        # (ExecutionResult and UnresolvedAssetJobDefinition: Dagster's types, re-exported for type checking only)
        f"{COMPAT}/runs.py": ["__all__", "ExecutionResult", "UnresolvedAssetJobDefinition", "UNFINISHED",
                              "execute_run", "ended_by_interrupt"],
        f"{COMPAT}/pools.py": ["pools_supported", "_pools_lock", "_KNOWN_POOLS", "ensure_pool", "claim_slot",
                               "_claim_idle", "free_slot", "_free_in_one", "free_run_slots", "slot_holders",
                               "claimed_slots"],
        f"{COMPAT}/embedded_instance.py": ["DEFAULT_RUN_COORDINATOR", "CONSOLIDATED_EVENT_LOG",
                                           "instance_from_folder", "stamp_consolidated_event_log"],
    },
    # The checkpoints of dead Attempts leave the reaper (which ends dead runs and frees their slots).
    "awp_pipelines/orchestration/reaper.py": {
        "awp_pipelines/orchestration/interrupted_work.py": ["checkpoint_interrupted", "save_unrecorded_work"],
        "awp_pipelines/orchestration/reaper.py": ["*"],
    },
    # The packet's executor leaves parallel.py, which builds and runs the job: assets.py imports the executor,
    # parallel.py imports assets.py, and no longer the other way round too (the assets <-> parallel cycle).
    "awp_pipelines/orchestration/parallel.py": {
        "awp_pipelines/orchestration/step_executor.py": ["DEFAULT_PARALLEL", "STEP_PRELOAD", "parallel_executor"],
        "awp_pipelines/orchestration/parallel.py": ["*"],
    },
}
# The docstring of each file a split makes.
SPLIT_DOCS: dict[str, str] = {
    f"{COMPAT}/tags.py": "Run tags Dagster owns, spelled as Dagster spells them (its constants live in a private "
                         "module; the canary test compares these with them).",
    f"{COMPAT}/events.py": "Event queries: a packet run's Attempt events read from the event-log table by its "
                           "run-id index, the stored serdes JSON decoded here (SQL storages); a run's event "
                           "records, newest or by page; a materialization reported into an ended run's log.",
    f"{COMPAT}/kvs.py": "A key-value store: the run storage's key-value table (`set_cursor_values`), for the "
                        "accounts' cooldowns and usage, the user's stops and the Attempt claims (a unique insert, "
                        "then compare-and-set).",
    f"{COMPAT}/config_schema.py": "The op config schema of every prompt asset, inferred once (a subclass of "
                                  "Dagster's private schema class, or a plain mapping without it).",
    f"{COMPAT}/executor.py": "The packet's executor: Dagster's public multi-or-in-process executor with AWP's "
                             "defaults, whose forkserver imports the step's modules and builds the run's job "
                             "before it forks a step.",
    f"{COMPAT}/migrations.py": "Dagster's migration scripts read once in the forkserver (alembic's ScriptDirectory "
                               "replaced inside Dagster's private SQL module, there only).",
    f"{COMPAT}/runs.py": "Runs: the statuses of an unfinished run, a created run executed, and whether a signal "
                         "ended it.",
    f"{COMPAT}/pools.py": "Pool slots: Dagster's global concurrency pools, created, claimed and freed with AWP's "
                          "own SQL over Dagster's slot and queue tables (docs/upstream.md: the two Dagster bugs it "
                          "works around), and their holders listed.",
    "awp_pipelines/orchestration/interrupted_work.py": "The partial work of Attempts that died (no record), saved "
                                                       "as their AgentRun's checkpoint before anything else edits "
                                                       "the tree: the next `awp run`, or the next Attempt's "
                                                       "compute, does it.",
    "awp_pipelines/orchestration/step_executor.py": "The packet job's executor: prompts that may overlap run as "
                                                    "step processes forked from a forkserver that imported AWP "
                                                    "and Dagster once (parallel.py builds and runs the job).",
    f"{COMPAT}/embedded_instance.py": "The embedded instance's Dagster parts: the run coordinator and the "
                                      "consolidated SQLite event log named in its dagster.yaml, its alembic stamp, "
                                      "and an instance opened from its folder.",
}

TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".cfg", ".ini", ".sh", ".txt", ".json"}
TEXT_NAMES = {"Makefile", "Dockerfile"}
# the table itself, and its test (which spells old paths on purpose)
SELF = {Path("tools/relayout.py"), Path("tests/test_relayout.py")}


def dotted(path: str) -> str:
    """`awp_pipelines/core/x.py` -> `awp_pipelines.core.x` (a folder's path is its package)."""
    return path.removesuffix(".py").replace("/", ".")


# old dotted module -> new dotted module; a folder's entry maps every module under it by prefix
MODULES: dict[str, str] = {dotted(old): dotted(new) for old, new in MOVES.items()}
# a split module's names: old dotted name -> new dotted name (`from old import name` imports it from its new home)
NAMES: dict[str, str] = {f"{dotted(old)}.{name}": f"{dotted(new)}.{name}"
                         for old, parts in SPLITS.items() for new, names in parts.items() for name in names
                         if new != old and not name.startswith("__")}
MODULES.update(NAMES)
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# an old module name standing alone: not inside a longer dotted name or identifier
_DOTTED = re.compile(r"(?<![\w.])(" + "|".join(re.escape(m) for m in sorted(MODULES, key=len, reverse=True))
                     + r")(?![\w(])")
_PATHS = re.compile(r"(?<![\w.])(" + "|".join(re.escape(p) for p in sorted(MOVES, key=len, reverse=True))
                    + r")(?![\w])")
# `from awp_pipelines[.sub] import a, b as c` (one line, or parenthesised over several)
_FROM = re.compile(r"^(?P<indent>[ \t]*)from[ \t]+(?P<pkg>awp_pipelines(?:\.\w+)*)[ \t]+import[ \t]+"
                   r"(?:\((?P<paren>[^)]*)\)|(?P<line>[^\n#]*?))(?P<tail>[ \t]*(?:#[^\n]*)?)$", re.M)


def new_module(name: str) -> str:
    """The module's new dotted name (itself when it did not move)."""
    for old in sorted(MODULES, key=len, reverse=True):
        if name == old or name.startswith(old + "."):
            return MODULES[old] + name[len(old):]
    return name


def _split_from(match: re.Match[str], text: str) -> str:
    """`from P import a, b`, where P.a moved, becomes `from P' import a` lines grouped by the new package."""
    pkg = match["pkg"]
    body = match["paren"] if match["paren"] is not None else match["line"]
    names = [n.strip() for n in body.replace("\n", " ").split(",") if n.strip()]
    if not names or any(not re.fullmatch(rf"{_NAME}(?:\s+as\s+{_NAME})?", n) for n in names):
        return match[0]
    groups: dict[str, list[str]] = {}
    moved = False
    for entry in names:
        name, _, alias = (part.strip() for part in entry.partition(" as "))
        full = f"{pkg}.{name}"
        sdk_function = pkg == PACKAGE and name in SDK_NAMES and not re.search(
            rf"(?<![\w.]){alias or name}\.[A-Za-z_]", text)
        if full in MODULES and not sdk_function:
            moved = True
            parent, _, leaf = MODULES[full].rpartition(".")
            local = alias or name
            groups.setdefault(parent, []).append(leaf if leaf == local else f"{leaf} as {local}")
        else:
            groups.setdefault(pkg, []).append(entry)
    if not moved:
        return match[0]
    lines = [f"{match['indent']}from {parent} import {', '.join(items)}" for parent, items in groups.items()]
    lines[0] += match["tail"]
    return "\n".join(lines)


def _resolve(package: str, level: int, module: str | None) -> str:
    base = package.split(".")
    base = base[:len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _old_location(path: Path) -> str:
    """The dotted package a file was in before the move (its current one when it did not move)."""
    text = path.as_posix()
    for old, new in sorted(MOVES.items(), key=lambda kv: len(kv[1]), reverse=True):
        if text == new or text.startswith(new + "/"):
            text = old + text[len(new):]
            break
    return dotted(text).rpartition(".")[0] if not text.endswith("/__init__.py") else dotted(text[:-12])


def _fix_relative(path: Path, text: str) -> str:
    """A relative import that reached a module which moved elsewhere becomes absolute."""
    if "from ." not in text:
        return text
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    here = dotted(path.as_posix()).rpartition(".")[0] if path.name != "__init__.py" else dotted(path.parent.as_posix())
    before = _old_location(path)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.level and node.lineno == node.end_lineno):
            continue
        old_target = _resolve(before, node.level, node.module)
        if new_module(old_target) == old_target or _resolve(here, node.level, node.module) == new_module(old_target):
            continue
        line = lines[node.lineno - 1]
        relative = "." * node.level + (node.module or "")
        lines[node.lineno - 1] = re.sub(rf"from\s+{re.escape(relative)}\s+import",
                                        f"from {new_module(old_target)} import", line, count=1)
    return "".join(lines)


def rewrite(path: Path, text: str) -> str:
    """Every reference to an old module or file path in `text`, rewritten; lines marked `relayout: keep` kept."""
    if path.suffix == ".py":
        text = _fix_relative(path, text)
        whole = text
        text = _FROM.sub(lambda m: m[0] if KEEP in m[0] else _split_from(m, whole), text)
    out = []
    for line in text.splitlines(keepends=True):
        if KEEP not in line:
            line = _DOTTED.sub(lambda m: MODULES[m[1]], line)
            line = _PATHS.sub(lambda m: MOVES[m[1]], line)
        out.append(line)
    return "".join(out)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def tracked(prefix: str = "") -> list[str]:
    return [f for f in git("ls-files", "-z", *([prefix] if prefix else [])).split("\0") if f]


@dataclass
class Report:
    moved: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    rewritten: list[str] = field(default_factory=list)


def _ensure_package(folder: Path, report: Report, dry: bool) -> None:
    for parent in reversed([folder, *folder.parents]):
        if parent.as_posix() in ("", ".", PACKAGE) or not parent.as_posix().startswith(PACKAGE + "/"):
            continue
        init = parent / "__init__.py"
        if init.exists() or init.as_posix() in report.created or (
                parent.as_posix() not in FOLDERS and parent.exists()):
            continue
        report.created.append(init.as_posix())
        if not dry:
            parent.mkdir(parents=True, exist_ok=True)
            doc = FOLDERS.get(parent.as_posix(), "")
            text = "\n".join(textwrap.wrap(f'"""{doc}"""', 116)) + "\n" if doc else ""
            init.write_text(text, encoding="utf-8")
            git("add", init.as_posix())


def move(report: Report, dry: bool) -> None:
    for old, new in MOVES.items():
        if not tracked(old):
            continue
        if Path(new).exists():
            report.skipped.append(f"{old} (its new path {new} exists already; left where it is)")
            continue
        _ensure_package(Path(new).parent, report, dry)
        report.moved.append(f"{old} -> {new}")
        if dry:
            continue
        git("mv", old, new)
        leftover = Path(old)
        if leftover.is_dir():  # caches the move left behind would make a namespace package of the old name
            for cache in leftover.rglob("__pycache__"):
                shutil.rmtree(cache, ignore_errors=True)
            for folder in sorted((d for d in [leftover, *leftover.rglob("*")] if d.is_dir()), reverse=True):
                if not any(folder.iterdir()):
                    folder.rmdir()


def _defined(node: ast.stmt) -> list[str]:
    """The names a top-level statement binds."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, ast.AnnAssign | ast.AugAssign) else []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _used(nodes: Iterable[ast.AST]) -> set[str]:
    """The names these statements read (and the names an `__all__` list spells)."""
    found: set[str] = set()
    for node in nodes:
        names: set[str] = set()
        local: set[str] = set()  # imported inside the function itself: no module-level import needed for it
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                names.add(sub.id)
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value.isidentifier():
                names.add(sub.value)  # `__all__` entries and quoted annotations
            elif isinstance(sub, ast.Import | ast.ImportFrom):
                local |= {_bound(alias) for alias in sub.names}
            if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):  # annotations read module-level names
                notes = [a.annotation for a in [*sub.args.args, *sub.args.kwonlyargs] if a.annotation]
                found |= {n.id for note in [*notes, sub.returns] if note for n in ast.walk(note)
                          if isinstance(n, ast.Name)}
        found |= names - local
    return found


def _bound(alias: ast.alias) -> str:
    return alias.asname or alias.name.split(".")[0]


def _import_lines(node: ast.Import | ast.ImportFrom, wanted: set[str], indent: str = "") -> list[str]:
    names = [a for a in node.names if _bound(a) in wanted]
    if not names:
        return []
    spelled = ", ".join(f"{a.name} as {a.asname}" if a.asname else a.name for a in names)
    if isinstance(node, ast.Import):
        return [f"{indent}import {spelled}"]
    return [f"{indent}from {'.' * node.level}{node.module or ''} import {spelled}"]


def split_text(text: str, parts: dict[str, list[str]], stays: str | None = None) -> dict[str, str]:
    """The new files' texts from the old file's: each top-level statement (with its decorators and the
    comments right above it; `# ---` section rulers dropped) in the file that lists its name. With `stays`
    (the old file's own path, listed with `["*"]`), what no other file lists stays there, verbatim: the old
    file only loses the moved statements (its unused imports go with ruff)."""
    tree = ast.parse(text)
    lines = text.splitlines()
    moved_lines: set[int] = set()  # 0-based lines of the statements (and comments) that leave the old file
    home = {name: new for new, names in parts.items() if new != stays for name in names}
    imports: list[ast.Import | ast.ImportFrom] = []
    guarded: list[ast.Import | ast.ImportFrom] = []  # under `if TYPE_CHECKING:`
    body: dict[str, list[tuple[ast.stmt, str]]] = {new: [] for new in parts if new != stays}
    unlisted: list[str] = []
    kept: list[ast.stmt] = []  # statements that stay in the old file (with `stays`)
    previous_end = 0
    for index, node in enumerate(tree.body):
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        lead = lines[previous_end:start - 1]  # between the statement before and this one
        previous_end = node.end_lineno or node.lineno
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the old module's docstring
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.append(node)
            continue
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            guarded.extend(n for n in node.body if isinstance(n, ast.Import | ast.ImportFrom))
            continue
        names = _defined(node)
        targets = {home.get(name) for name in names}
        if stays is not None and targets == {None}:
            kept.append(node)
            continue  # stays where it is
        if not names or None in targets or len(targets) != 1:
            unlisted.append(", ".join(names) or f"line {start}: {lines[start - 1].strip()}")
            continue
        first_comment = start - 1 - len(lead) + next((i for i, line in enumerate(lead) if line.strip()), len(lead))
        moved_lines |= set(range(first_comment, node.end_lineno or start))
        comments = [line for line in lead if line.strip().startswith("#") and not line.strip().startswith("# ---")]
        source = "\n".join([*comments, *lines[start - 1:node.end_lineno]])
        body[targets.pop() or ""].append((node, source))
    if unlisted:
        raise SystemExit("relayout: a split lists no new file for: " + "; ".join(unlisted))
    defined_in = {name: new for new, items in body.items() for node, _ in items for name in _defined(node)}
    if stays is not None:
        defined_in.update({name: stays for node in kept for name in _defined(node)})
    out: dict[str, str] = {}
    for new, items in body.items():
        used = _used(node for node, _ in items)
        own = {name for node, _ in items for name in _defined(node)}
        head = ["from __future__ import annotations", ""]
        head += [line for node in imports if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
                 for line in _import_lines(node, used)]
        sisters: dict[str, list[str]] = {}
        for name in sorted(used - own):
            if name in defined_in:
                sisters.setdefault(dotted(defined_in[name]), []).append(name)
        head += [f"from {module} import {', '.join(names)}" for module, names in sisters.items()]
        checking = [line for node in guarded for line in _import_lines(node, used, "    ")]
        if checking:
            head += ["from typing import TYPE_CHECKING"] if "TYPE_CHECKING" not in used else []
            head += ["", "if TYPE_CHECKING:", *checking]
        doc = "\n".join(textwrap.wrap(f'"""{SPLIT_DOCS.get(new, "")}"""', 116))
        blocks = "\n\n\n".join(source for _, source in items)
        out[new] = f"{doc}\n\n" + "\n".join(head) + f"\n\n\n{blocks}\n"
    if stays is not None:
        needed: dict[str, list[str]] = {}
        for name in sorted(_used(kept) - {n for node in kept for n in _defined(node)}):
            if name in defined_in and defined_in[name] != stays:
                needed.setdefault(dotted(defined_in[name]), []).append(name)
        last_import = max((n.end_lineno or n.lineno for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)),
                          default=0)
        staying = [line for index, line in enumerate(lines[:last_import]) if index not in moved_lines]
        staying += [f"from {module} import {', '.join(names)}" for module, names in needed.items()]
        staying += [line for index, line in enumerate(lines) if index >= last_import and index not in moved_lines]
        out[stays] = re.sub(r"\n{4,}", "\n\n\n", "\n".join(staying)).rstrip("\n") + "\n"
    return out


def split(report: Report, dry: bool) -> None:
    for old, parts in SPLITS.items():
        if not Path(old).is_file():
            continue
        stays = old if old in parts else None
        existing = [new for new in parts if new != stays and Path(new).exists()]
        if existing:
            report.skipped.append(f"{old} (split already: {', '.join(existing)} exist; remove them to split again)")
            continue
        texts = split_text(Path(old).read_text(encoding="utf-8"), parts, stays)
        for new, text in texts.items():
            _ensure_package(Path(new).parent, report, dry)
            if new != stays:
                report.moved.append(f"{old} -> {new}")
            if not dry:
                Path(new).write_text(text, encoding="utf-8")
                git("add", new)
        if not dry:
            if stays is None:
                git("rm", "-q", old)
            python = list(texts)
            ruff = Path(".venv/bin/ruff") if Path(".venv/bin/ruff").exists() else shutil.which("ruff")
            if ruff:  # imports sorted; the file that stays loses the imports only its moved statements used
                subprocess.run([str(ruff), "check", "--quiet", "--select", "I", "--fix", *python], check=False)
                if stays:
                    subprocess.run([str(ruff), "check", "--quiet", "--select", "F401", "--fix", stays], check=False)


def text_files() -> Iterable[Path]:
    for name in tracked():
        path = Path(name)
        if path in SELF or not path.is_file():
            continue
        if path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES or (not path.suffix and _shebang(path)):
            yield path


def _shebang(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(2) == b"#!"


def rewrite_all(report: Report, dry: bool) -> None:
    for path in text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(path, text)
        if new != text:
            report.rewritten.append(path.as_posix())
            if not dry:
                path.write_text(new, encoding="utf-8")


def sort_imports(files: list[str]) -> None:
    """Longer module paths and split imports re-sorted and re-wrapped to the line length, if ruff is here."""
    ruff = Path(".venv/bin/ruff") if Path(".venv/bin/ruff").exists() else shutil.which("ruff")
    python = [f for f in files if f.endswith(".py")]
    if ruff and python:
        subprocess.run([str(ruff), "check", "--quiet", "--select", "I", "--fix", *python], check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rewrite-only", action="store_true", help="rewrite references; move nothing")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a run would change files")
    args = parser.parse_args(argv)
    if not Path(PACKAGE, "__init__.py").is_file():
        parser.error("run it from the repository root")
    report = Report()
    if not args.rewrite_only:
        move(report, args.check)
        split(report, args.check)
    rewrite_all(report, args.check)
    if not args.check:
        sort_imports(report.rewritten)
    verb = "would " if args.check else ""
    for line in report.created:
        print(f"{verb}create {line}")
    for line in report.moved:
        print(f"{verb}move {line}")
    for line in report.skipped:
        print(f"skip {line}")
    for line in report.rewritten:
        print(f"{verb}rewrite {line}")
    changed = report.created or report.moved or report.rewritten
    if not changed:
        print("nothing to do: the layout and every reference are current")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
