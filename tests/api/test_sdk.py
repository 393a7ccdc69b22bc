"""The public SDK without a Dagster run: load, lint, plan and verify on the demo packet over a real git repo,
as the README shows it; and importing it stays light (nothing of Dagster)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT

import awp_pipelines as awp_root
from awp_pipelines import api as awp
from awp_pipelines.core.packet.errors import PacketError


@pytest.fixture
def demo(demo_copy: Path) -> Path:
    return demo_copy


def test_load_lint_and_plan_answer_from_the_sdk(demo: Path) -> None:
    packet = awp.load(demo)
    assert packet.name == "demo" and [p.id for p in packet.prompts] == ["01", "02", "03"]
    report = awp.lint(demo)
    assert report.invalid is None and report.errors == []
    plan = awp.plan(packet, awp.Select(from_id="02"), overrides=awp.Overrides(model="other-model"))
    assert [p.id for p in plan.prompts] == ["02", "03"]
    assert {p.model for p in plan.prompts} == {"other-model"}
    assert all(p.sources["model"] == "cli" for p in plan.prompts)
    assert [p.id for p in awp.plan(demo, ["03"]).prompts] == ["03"]


def test_lint_reports_a_packet_that_does_not_load_and_plan_raises(tmp_path: Path) -> None:
    (tmp_path / "packet.yaml").write_text("name: broken\nunknown_key: 1\n")
    report = awp.lint(tmp_path)
    assert report.invalid is not None and "unknown_key" in (report.invalid.key or report.invalid.message)
    with pytest.raises(PacketError):
        awp.plan(tmp_path)


def test_verify_checks_the_contracts_against_the_repo_as_it_is(demo: Path) -> None:
    before = awp.verify(demo, ["01"])
    assert [(r.prompt_id, r.passed) for r in before] == [("01", False)]
    (demo / "workspace" / "GREETING.md").write_text("# Greeting\n\nHello from AWP Pipelines.\n")
    [after] = awp.verify(demo, ["01"])
    assert after.passed, after.unmet_text()
    (demo / "workspace" / "README.md").write_text("changed\n")  # the contract forbids touching the README
    assert not awp.verify(demo, ["01"])[0].passed


def test_a_plan_preflight_refuses_a_provider_the_catalog_lacks(demo: Path) -> None:
    with pytest.raises(PacketError, match="unknown provider 'nowhere'"):
        awp.plan(demo, overrides=awp.Overrides(provider="nowhere"), preflight=True)
    awp.plan(demo, overrides=awp.Overrides(provider="nowhere"))  # without preflight the plan is just shown


def test_importing_the_sdk_imports_nothing_of_dagster() -> None:
    code = ("import sys\nfrom awp_pipelines import api\napi.load\n"
            "print(sorted(n for n in sys.modules if n == 'dagster' or n.startswith('dagster.')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_package_root_is_the_sdk_and_no_submodule_shadows_it() -> None:
    """`import awp_pipelines as awp; awp.run(...)` as the README shows: the root's names are the SDK's functions,
    loaded on first use (the import itself loads neither the SDK nor Dagster), even after every module of the
    package was imported (a submodule `lint`, `plan` or `status` at the root would replace the function)."""
    code = ("import sys, pkgutil, importlib\nimport awp_pipelines as awp\n"
            "print(sorted(n for n in sys.modules if n.startswith(('dagster', 'awp_pipelines.api'))))\n"
            "for m in pkgutil.walk_packages(awp.__path__, 'awp_pipelines.'):\n"
            "    if not m.name.startswith('awp_pipelines.orchestration'): importlib.import_module(m.name)\n"
            "from awp_pipelines import api\n"
            "print([n for n in awp.SDK if getattr(awp, n) is not getattr(api, n)])")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["[]", "[]"]
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = awp_root.nothing  # type: ignore[attr-defined]
