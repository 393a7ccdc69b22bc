"""The code location: packets under assets/ compile into asset groups, checks and jobs Dagster accepts."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey
from dagster.components.testing import create_defs_folder_sandbox
from repo_paths import REPO_ROOT

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.verifiers.items import contract_items
from awp_pipelines.orchestration.compile.naming import prompt_key
from awp_pipelines.orchestration.components import PacketComponent
from awp_pipelines.orchestration.definitions import REPO_PACKETS_DIR, build_definitions, discover_packets
from tools.import_graph import strongly_connected

# A snapshot of the demo packet's graph: an accidental reshape shows up here in review.
G, C, S = "demo/01_write_greeting", "demo/02_write_changelog", "demo/03_write_status_report"
DEMO_ASSETS = {G: [], C: [G], S: [G]}
DEMO_CHECKS = {
    f"{G}:changed_paths_only", f"{G}:greeting_md_contains_hello_from_awp_pipelines", f"{G}:greeting_md_exists",
    f"{C}:changed_paths_only", f"{C}:changelog_md_contains_unreleased", f"{C}:changelog_md_contains_added_a_greeting",
    f"{C}:changelog_md_exists", f"{S}:changed_paths_only", f"{S}:status_md_contains_status_green",
    f"{S}:status_md_is_a_document", f"{S}:status_md_exists",
    *(f"{k}:command_git_diff_quiet_head_readme_md" for k in (G, C, S)),
}


def test_dagster_validates_the_workspace(tmp_path: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    result = subprocess.run([str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w",
                             "workspace.yaml"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Validation successful for code location awp_pipelines" in result.stdout + result.stderr


def test_demo_packet_graph_matches_its_snapshot() -> None:
    graph = build_definitions(REPO_ROOT).resolve_asset_graph()
    demo = {k.to_user_string(): sorted(p.to_user_string() for p in graph.get(k).parent_keys)
            for k in graph.get_all_asset_keys() if k.path[0] == "demo"}
    assert demo == DEMO_ASSETS
    assert {c.to_user_string() for c in graph.asset_check_keys if c.asset_key.path[0] == "demo"} == DEMO_CHECKS


def test_every_packet_is_one_group_and_one_job_with_one_blocking_check_per_verifier_item() -> None:
    defs = build_definitions(REPO_ROOT)
    graph = defs.resolve_asset_graph()
    packets = discover_packets(REPO_ROOT / REPO_PACKETS_DIR)
    assert packets, "assets/ holds at least the demo packet"
    for packet in packets:
        group = packet.name.replace("-", "_")
        keys = {prompt_key(packet, p.id) for p in packet.prompts}
        assert {k for k in graph.get_all_asset_keys() if graph.get(k).group_name == group} == keys
        job = defs.resolve_job_def(f"packet__{group}")
        assert job.asset_layer.executable_asset_keys == keys
        for prompt in packet.prompts:
            expected = {i.check_name for i in contract_items(prompt.front.verify)} if prompt.front.verify else set()
            checks = {c for c in graph.asset_check_keys if c.asset_key == prompt_key(packet, prompt.id)}
            assert {c.name for c in checks} == expected
            assert all(graph.get_check_spec(c).blocking for c in checks)
    # One recovery sensor for every packet of the location, none of a packet's own.
    assert [s.name for s in defs.sensors if "recovery" in s.name] == ["awp_recovery"]
    assert {t.job_name for t in defs.resolve_sensor_def("awp_recovery").targets} == {
        f"packet__{p.name.replace('-', '_')}" for p in packets}


def test_compat_packets_compile_to_groups_with_their_contract_items(compat_root: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(compat_root, project / "assets")
    defs = build_definitions(project)
    graph = defs.resolve_asset_graph()
    groups = {graph.get(k).group_name for k in graph.get_all_asset_keys()}
    assert groups == {"authoring_packet", "claude_packet", "multi_repo_packet", "simulated_recovery_packet",
                      "single_repo_packet"}
    recovery_checks = {c for c in graph.asset_check_keys if c.asset_key.path[0] == "simulated_recovery_packet"}
    assert len(recovery_checks) == 27  # nine prompts × (files_exist, contains or second file, changed paths)


def test_the_code_location_shares_one_resource_and_keeps_each_resolved_plan(compat_root: Path,
                                                                           tmp_path: Path) -> None:
    """One `awp` resource for every packet (200 of them bound to 2,000 assets made the load quadratic), the
    config schema Dagster infers from AttemptConfig (given once, not inferred per asset), and each binding's
    plan and chains as resolved at load, though kept as JSON until read."""
    from awp_pipelines.core.decisions.policy import chain_of
    from awp_pipelines.core.packet.providers_config import load_catalog
    from awp_pipelines.core.planning.plan import PlanContext, build_plan
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.compile.attempt_config import AttemptConfig

    project = tmp_path / "project"
    shutil.copytree(compat_root, project / "assets")
    defs = build_definitions(project)
    repo = defs.get_repository_def()
    assert set(repo.get_top_level_resources()) == {"awp"}
    inferred = AttemptConfig.to_config_schema().as_field()
    for assets_def in repo.assets_defs_by_key.values():
        assert assets_def.required_resource_keys - {"io_manager"} == {"awp"}
        field = assets_def.op.config_schema.as_field()
        assert (field.config_type.key, field.default_value, field.description) == (
            inferred.config_type.key, inferred.default_value, inferred.description)
    catalog = load_catalog(None)
    for packet in discover_packets(project / "assets"):
        binding = packet_assets(packet, catalog).binding
        plans = {p.id: p for p in build_plan(packet, PlanContext(catalog=catalog)).prompts}
        assert binding.plans == plans
        assert binding.chains == {pid: chain_of(p.provider, p.model, p.effort, catalog.accounts_of(
            p.accounts, p.provider), p.fallback, p.rotation, p.probe, (p.agent, p.agent_providers, p.agent_models))
            for pid, p in plans.items()}


def test_two_packet_components_load_side_by_side_in_one_defs_folder(compat_root: Path, tmp_path: Path) -> None:
    """Each component builds through the one builder, with a resource of its own: they merge."""
    for name in ("authoring_packet", "single_repo_packet"):
        shutil.copytree(compat_root / name, tmp_path / name)
    with create_defs_folder_sandbox() as sandbox:
        for name in ("authoring_packet", "single_repo_packet"):
            sandbox.scaffold_component(
                component_cls=PacketComponent, defs_path=name,
                defs_yaml_contents={"type": "awp_pipelines.orchestration.components.PacketComponent",
                                    "attributes": {"path": str(tmp_path / name)}})
        with sandbox.build_all_defs() as defs:
            graph = defs.resolve_asset_graph()
            assert {k.path[0] for k in graph.get_all_asset_keys()} == {"authoring_packet", "single_repo_packet"}
            authoring = load_packet(tmp_path / "authoring_packet")
            assert prompt_key(authoring, "01") in graph.get_all_asset_keys()
            assert len([c for c in graph.asset_check_keys if c.asset_key.path[0] == "authoring_packet"]) == 8
            for job in ("packet__authoring_packet", "packet__single_repo_packet"):
                assert defs.resolve_job_def(job) is not None
                assert defs.resolve_sensor_def(f"{job}__recovery") is not None


def test_a_component_takes_its_translator_and_its_own_resource_settings(compat_root: Path, tmp_path: Path) -> None:
    """`translator:` names a PacketTranslator subclass (as DbtProjectComponent takes one): its keys, group and
    pool are the assets'. A component that does not commit loads beside one that does."""
    from translators import TEAM_POOL

    for name in ("authoring_packet", "single_repo_packet"):
        shutil.copytree(compat_root / name, tmp_path / name)
    with create_defs_folder_sandbox() as sandbox:
        for name, attributes in (("authoring_packet", {"translator": "translators.TeamTranslator", "commit": False}),
                                 ("single_repo_packet", {})):
            component = "awp_pipelines.orchestration.components.PacketComponent"
            sandbox.scaffold_component(component_cls=PacketComponent, defs_path=name,
                                       defs_yaml_contents={"type": component,
                                                           "attributes": {"path": str(tmp_path / name),
                                                                          **attributes}})
        with sandbox.build_all_defs() as defs:
            graph = defs.resolve_asset_graph()
            team = {k for k in graph.get_all_asset_keys() if k.path[0] == "team"}
            assert {k.path[1] for k in team} == {"authoring_packet"} and len(team) == len(
                load_packet(tmp_path / "authoring_packet").prompts)
            assert all(graph.get(k).group_name == "team" and graph.get(k).pools == {TEAM_POOL} for k in team)
            assert {c.asset_key for c in graph.asset_check_keys if c.asset_key.path[0] == "team"} == team
            authoring = next(k for k in team if graph.get(k).parent_keys)  # the graph's edges use the team keys
            assert all(p in team for p in graph.get(authoring).parent_keys)


def test_the_resource_shows_each_accounts_credential_variable_never_its_value(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The UI shows resource config: an account's credential is there by its variable's name only."""
    from awp_pipelines.core.packet.providers_config import BUILTIN, AccountSpec, Catalog
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.compute.resources import AwpResource

    secret = "sk-ant-api03-" + "x" * 40
    monkeypatch.setenv("AWP_TEAM_KEY", secret)
    catalog = Catalog(accounts={"team": AccountSpec(provider="claude", credential_env="AWP_TEAM_KEY")}).merged_over(
        BUILTIN)
    compiled = packet_assets(load_packet(REPO_ROOT / "assets" / "demo"), catalog, AwpResource(state_dir=str(tmp_path)))
    [(key, resource)] = compiled.resources.items()
    shown = repr(resource.model_dump()) + repr(compiled.definitions().get_repository_def().get_top_level_resources())
    assert key == "awp_demo" and "AWP_TEAM_KEY" in shown and secret not in shown
    assert isinstance(resource, AwpResource) and resource.secrets(["team"]) == {"AWP_TEAM_KEY": secret}


# The Dagster layer, and the modules that merge it with the core (SDK, CLI, code location, dg registry).
DAGSTER_LAYER = ("awp_pipelines.orchestration", "awp_pipelines.dagster_compat", "awp_pipelines.cli",
                 "awp_pipelines.api")


def _within(module: str, prefixes: tuple[str, ...] | list[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_pure_core_imports_nothing_from_dagster() -> None:
    """Every module outside the Dagster layer, found by walking the package, not from a hand-kept list."""
    package = REPO_ROOT / "awp_pipelines"
    pure = sorted(".".join(("awp_pipelines", *f.relative_to(package).with_suffix("").parts)).removesuffix(".__init__")
                  for f in package.rglob("*.py"))
    pure = [m for m in pure if not _within(m, DAGSTER_LAYER)]
    assert 'awp_pipelines.cli_features.blame' in pure
    assert "awp_pipelines.core.decisions.next_launches" in pure and "awp_pipelines.core.decisions.policy" in pure
    code = ("import importlib, sys\n"
            f"for m in {pure!r}: importlib.import_module(m)\n"
            "print(sorted(n for n in sys.modules if n == 'dagster' or n.startswith('dagster.')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_demo_asset_carries_owners_kinds_and_a_code_reference_to_its_prompt() -> None:
    from dagster import CodeReferencesMetadataValue

    graph = build_definitions(REPO_ROOT).resolve_asset_graph()
    node = graph.get(AssetKey(["demo", "02_write_changelog"]))
    assert node.owners == ["team:release-notes"]  # from the manifest's `owners`
    assert node.kinds == {"simulated", "docs", "agent"}  # provider, repo, then agent: at most three
    reference = node.metadata["dagster/code_references"]
    assert isinstance(reference, CodeReferencesMetadataValue)
    [ref] = reference.code_references
    assert ref.file_path == str(REPO_ROOT / "assets/demo/prompts/02_write_changelog.prompt.md") and ref.line_number == 1
    assert node.metadata["awp/prompt_file"].value == "demo/prompts/02_write_changelog.prompt.md"


def test_kinds_stay_within_dagsters_limit_of_three() -> None:
    from types import SimpleNamespace

    from awp_pipelines.orchestration.compile.translator import PacketTranslator

    plan = SimpleNamespace(provider="claude", repos=[SimpleNamespace(name=n) for n in ("api", "web", "docs")])
    # a stand-in plan: kinds() reads only its provider and repos
    assert PacketTranslator().kinds(None, plan) == {"claude", "api", "web"}  # type: ignore[arg-type]


CORE = "awp_pipelines.core"
RECORDS, ISOLATION, PACKET, DECISIONS, PROVIDERS, VERIFIERS, PLANNING, LINT, ENGINE, HANDOFF = (
    f"{CORE}.{name}" for name in ("records", "isolation", "packet", "decisions", "providers", "verifiers",
                                  "planning", "lint", "engine", "handoff"))
# Each folder and what it may import besides itself (docs/architecture.md, "Which may import which"). The core's
# folders form a ladder: records at the bottom imports nothing else; the engine at the top drives the rest.
ROOT, ORCH, COMPAT = "awp_pipelines", "awp_pipelines.orchestration", "awp_pipelines.dagster_compat"
COMPILE, LEDGER, VIEWS, COMPUTE, SENSORS, DRIVER = (f"{ORCH}.{name}" for name in ("compile", "ledger", "views",
                                                                                  "compute", "sensors", "driver"))
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    CORE: (),  # core/__init__.py: a docstring
    RECORDS: (),
    ISOLATION: (RECORDS,),
    PACKET: (ISOLATION, RECORDS),
    DECISIONS: (PACKET, RECORDS),
    PROVIDERS: (DECISIONS, PACKET, ISOLATION, RECORDS),
    VERIFIERS: (PACKET, ISOLATION, RECORDS),  # a check runs the agent's code in the verifier's sandbox
    PLANNING: (PROVIDERS, VERIFIERS, DECISIONS, PACKET, ISOLATION, RECORDS),
    LINT: (PLANNING, PROVIDERS, VERIFIERS, PACKET, ISOLATION, RECORDS),
    ENGINE: (PLANNING, PROVIDERS, VERIFIERS, DECISIONS, PACKET, ISOLATION, RECORDS),
    HANDOFF: (ENGINE, VERIFIERS, PACKET, RECORDS),
    "awp_pipelines.cli_features": (CORE,),
    # Dagster's private names, behind one package (docs/upstream.md): it imports nothing of AWP's.
    COMPAT: (),
    # The Dagster layer's folders form a ladder too (docs/architecture.md); its root (the builder `assets.py`, the
    # code location `definitions.py`, the component and the Docker launcher) merges the folders below it.
    COMPILE: (CORE, COMPAT),
    LEDGER: (CORE, COMPAT, COMPILE),
    # What the fronts read through the ledger (status, watch, the pages) and the hand-off: the sensor hands off.
    VIEWS: (CORE, COMPAT, COMPILE, LEDGER),
    COMPUTE: (CORE, COMPAT, COMPILE, LEDGER),
    SENSORS: (CORE, COMPAT, COMPILE, LEDGER, VIEWS),
    ORCH: (CORE, COMPAT, COMPILE, LEDGER, VIEWS, COMPUTE, SENSORS),
    DRIVER: (CORE, COMPAT, ORCH),
    "awp_pipelines.api": (CORE, "awp_pipelines.orchestration"),
    "awp_pipelines.cli": (CORE, "awp_pipelines.cli_features", "awp_pipelines.orchestration", "awp_pipelines.api", ROOT),
    # The package root re-exports the SDK (lazily) and the version; nothing below the front imports it back.
    ROOT: (PACKET, "awp_pipelines.api"),
}
# Finer edges inside a folder: the model is data; it reads no settings file and no template.
FORBIDDEN_EDGES = ((f"{PACKET}.model", f"{PACKET}.templates"), (f"{PACKET}.model", f"{PACKET}.providers_config"))


def _imports(file: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text())):  # function-level imports count too
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return names


def _folder(module: str) -> str | None:
    """The folder of MAY_IMPORT a module is in; the package root is a place of its own (only itself)."""
    if module == ROOT:
        return ROOT
    return next((f for f in sorted(MAY_IMPORT, key=len, reverse=True) if f != ROOT and _within(module, [f])), None)


def layering_violations(package: Path) -> list[str]:
    wrong = []
    for file in package.rglob("*.py"):
        parts = file.relative_to(package).with_suffix("").parts
        module = ".".join(("awp_pipelines", *parts)).removesuffix(".__init__")
        home = _folder(module)
        if home is None:
            continue
        for name in _imports(file):
            there = _folder(name)
            if there is not None and there != home and not _within(there, MAY_IMPORT[home]):
                wrong.append(f"{module} imports {name}")
        wrong += [f"{module} imports {name}" for importer, imported in FORBIDDEN_EDGES if _within(module, [importer])
                  for name in _imports(file) if _within(name, [imported])]
    return sorted(wrong)


def test_every_module_is_in_a_folder_of_the_layering() -> None:
    package = REPO_ROOT / "awp_pipelines"
    modules = [".".join(("awp_pipelines", *f.relative_to(package).with_suffix("").parts)).removesuffix(".__init__")
               for f in package.rglob("*.py") if f.parent != package or f.stem != "__init__"]
    assert [m for m in modules if _folder(m) is None or (_folder(m) == CORE and m != CORE)] == []


def test_layering_edges_point_the_right_way() -> None:
    assert layering_violations(REPO_ROOT / "awp_pipelines") == []


def import_loops(package: Path) -> list[list[str]]:
    """The loops of the package's import graph, every import counted (function-level ones and the package root's
    lazy SDK import too): each a strongly connected set of two modules or more."""
    modules = {".".join(f.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__"): f
               for f in package.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    arrows = {(m, t) for m, f in modules.items() for n in _imports(f) if (t := resolve(n)) and t != m}
    return strongly_connected(set(modules), arrows)[0]


def test_no_import_loop_counting_the_package_root() -> None:
    """The core never imports the package root (whose SDK loads the Dagster layer), so no import closes a loop."""
    assert import_loops(REPO_ROOT / "awp_pipelines") == []


def test_the_loop_finder_sees_a_loop_through_the_root(tmp_path: Path) -> None:
    package = tmp_path / "awp_pipelines"
    (package / "core").mkdir(parents=True)
    (package / "__init__.py").write_text("def __getattr__(name):\n    from awp_pipelines import api\n")
    (package / "api.py").write_text("from awp_pipelines.core import x\n")
    (package / "core" / "x.py").write_text("import awp_pipelines\n")
    assert import_loops(package) == [["awp_pipelines", "awp_pipelines.api", "awp_pipelines.core.x"]]


def test_the_layering_walk_sees_a_wrong_edge(tmp_path: Path) -> None:
    """The check can fail: a record importing the engine, or the model importing the catalog, is caught."""
    package = tmp_path / "awp_pipelines"
    (package / "core" / "records").mkdir(parents=True)
    (package / "core" / "packet" / "model").mkdir(parents=True)
    (package / "core" / "records" / "events.py").write_text("from awp_pipelines.core.engine import attempts\n")
    (package / "core" / "packet" / "model" / "x.py").write_text(
        "def f():\n    from awp_pipelines.core.packet.providers_config import Catalog\n")
    assert layering_violations(package) == [
        "awp_pipelines.core.packet.model.x imports awp_pipelines.core.packet.providers_config",
        "awp_pipelines.core.packet.model.x imports awp_pipelines.core.packet.providers_config.Catalog",
        "awp_pipelines.core.records.events imports awp_pipelines.core.engine",
        "awp_pipelines.core.records.events imports awp_pipelines.core.engine.attempts"]


KEY = "sk-ant-" + "api03-" + "Z" * 24  # built here: no file of the repository holds a key-shaped text


def _load_refusal(project: Path, prompt_file: str, prompt: str) -> str:
    """The error that loading a project of one packet (one prompt) raises: what the UI and the daemon show."""
    packet = project / REPO_PACKETS_DIR / "leaky"
    (packet / "prompts").mkdir(parents=True)
    (packet / "packet.yaml").write_text("name: leaky\nprovider: simulated\n")
    (packet / "prompts" / prompt_file).write_text(prompt)
    with pytest.raises(PacketError) as refused:
        build_definitions(project)
    return str(refused.value)


def test_the_code_location_refuses_a_packet_with_a_secret_in_a_verify_argv_as_awp_run_does(tmp_path: Path) -> None:
    """The UI and the daemon load the definitions, not `awp run`: the same refusal, with file and line, and no
    definitions (no snapshot, no check name) holding the key."""
    message = _load_refusal(tmp_path, "01_call.prompt.md", "---\nid: '01'\nverify:\n  commands:\n    - exec: curl\n"
                            f"      args: ['-H', '{KEY}']\n---\nCall.\n")
    assert "01_call.prompt.md" in message and "refusing to run: a anthropic key is written on line 6" in message
    assert "Z" * 8 not in message


def test_the_code_location_refuses_a_key_in_a_prompt_file_name_without_echoing_it(tmp_path: Path) -> None:
    """The file name becomes the prompt's asset key: it would be in every run's snapshot."""
    message = _load_refusal(tmp_path, f"01_{KEY}.prompt.md", "---\nid: '01'\n---\nCall.\n")
    assert "the file name of prompt 01 holds a anthropic key" in message and "Z" * 8 not in message


def test_the_code_location_refuses_an_unknown_depends_on_at_its_line_as_awp_run_does(tmp_path: Path) -> None:
    """The UI loads the definitions, not `awp run`: the same line, not a KeyError while binding the assets."""
    message = _load_refusal(tmp_path, "01_a.prompt.md", "---\nid: '01'\ndepends_on: ['07']\n---\nA.\n")
    assert message.startswith(f"{tmp_path}/assets/") and "01_a.prompt.md:3: depends_on: depends on prompt '07'" \
        in message


def test_a_packet_with_no_prompts_yet_is_left_out_of_the_location_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Just made by `awp packet new`: the other packets load (it raised Dagster's TypeError for a job of no assets,
    found by the references fuzz), and the console says why it is not there."""
    from awp_pipelines.core.packet.providers_config import BUILTIN
    from awp_pipelines.orchestration.assets import packet_assets

    for name, prompts in (("empty", {}), ("full", {"01_a.prompt.md": "---\nverify: {files_exist: [a]}\n---\nA.\n"})):
        folder = tmp_path / REPO_PACKETS_DIR / name
        (folder / "prompts").mkdir(parents=True)
        (folder / "packet.yaml").write_text(f"name: {name}\nprovider: simulated\n")
        for file, text in prompts.items():
            (folder / "prompts" / file).write_text(text)
    with caplog.at_level("WARNING"):
        defs = build_definitions(tmp_path)
    assert [g for g in defs.get_repository_def().assets_defs_by_key] == [AssetKey(["full", "01_a"])]
    assert "packet empty" in caplog.text and "has no prompts yet" in caplog.text
    with pytest.raises(PacketError, match="packet empty has no prompts"):
        packet_assets(load_packet(tmp_path / REPO_PACKETS_DIR / "empty"), BUILTIN)


def test_the_build_defers_full_collections_and_restores_the_thresholds(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Full collections walk every object the load built, for nothing to free: none while it builds, and the
    process's own thresholds again after it, whether it succeeded or not."""
    import gc

    from awp_pipelines.orchestration import definitions

    seen: list[tuple[int, int, int]] = []
    discover = definitions.discover_packets

    def watched(assets_dir: Path) -> list:  # type: ignore[type-arg]
        seen.append(gc.get_threshold())
        return discover(assets_dir)

    monkeypatch.setattr(definitions, "discover_packets", watched)
    before = gc.get_threshold()
    definitions.build_definitions(REPO_ROOT)
    (tmp_path / "sensors").mkdir()
    (tmp_path / "sensors" / "automation.yaml").write_text("schedules:\n  - {packet: nowhere, cron: '0 * * * *'}\n",
                                                          encoding="utf-8")
    with pytest.raises(PacketError, match="unknown packet"):
        definitions.build_definitions(tmp_path)
    assert gc.get_threshold() == before and len(seen) == 2
    assert all(t[:2] == before[:2] and t[2] >= 1_000_000 for t in seen)
