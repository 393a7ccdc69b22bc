"""Shared fixtures. Keep this file small: a fixture used by one test module lives in that module."""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import suite_tiers
from packet_sources import PacketSource, packet_sources

# The reliability summary table (tests/reliability/summary.py). Registered here, in the conftest every process
# loads, because the xdist controller collects nothing and so never loads tests/reliability/conftest.py.
from reliability.summary import pytest_runtest_logreport, pytest_terminal_summary  # noqa: F401

pytest_plugins = ["pytester"]  # tests/test_suite_rules.py runs pytest on this conftest

REPO_ROOT = Path(__file__).resolve().parent.parent
E2E_DIR = REPO_ROOT / "tests" / "e2e"
DAEMON_DIR = REPO_ROOT / "tests" / "daemon"  # marked `daemon`: the oldest-Dagster leg runs them (oldest_dagster.sh)
# Slow tests outside tests/e2e, by node id, each with why: kept out of `make test-fast`.
SLOW_ELSEWHERE = {
    "tests/orchestration/test_definitions.py::test_dagster_validates_the_workspace":
        "a `dagster` subprocess loads the code location",
    "tests/ledger/test_account_lease.py::test_racing_processes_hold_one_accounts_lease_one_at_a_time":
        "4 processes import Dagster and race for one lease",
    "tests/reliability/test_instance_init.py::test_eight_processes_opening_a_fresh_instance_leave_it_intact":
        "8 processes import Dagster and open one fresh instance",
    "tests/reliability/test_run_lock.py::test_of_eight_racing_processes_exactly_one_wins_and_the_rest_name_it":
        "8 processes race for one lock",
    "tests/providers/test_account_store.py::test_cooldown_set_by_one_process_is_honoured_by_another_on_sqlite":
        "a second process imports Dagster",
    # Large examples and repository-wide greps: each keeps a small or unit variant in the fast loop.
    "tests/reliability/test_fuzz_inputs.py::test_no_input_ends_in_a_traceback":
        "400 fuzzed packets (10,000 with `make fuzz`) through four commands; test_a_few_fuzzed_inputs_… stays fast",
    "tests/core/records/test_redact.py::test_the_prefilter_never_skips_a_text_a_pattern_would_change":
        "3,000 hypothesis examples; the `_small` variant (200) stays fast",
    "tests/core/records/test_redact.py::test_the_prefilter_knows_every_letter_ignorecase_matches_in_an_anchor":
        "walks every Unicode code point",
    "tests/test_vocabulary.py::test_no_module_but_tags_spells_an_awp_key": "parses every module of the package",
    "tests/dagster_compat/test_storage_boundary.py::test_no_module_but_dagster_compat_touches_dagster_internals":
        "reads every module of the package; the finder's own test stays fast",
    "tests/test_vocabulary.py::test_each_vocabulary_word_is_defined_in_one_module":
        "parses every module of the package",
    "tests/test_vocabulary.py::test_a_target_is_where_an_attempt_runs_never_a_repo":
        "parses every module of the package",
    "tests/ledger/test_attempt_claim.py::test_of_four_racing_workers_of_one_run_exactly_one_starts_the_attempt":
        "4 processes import Dagster and race for one Attempt's claim",
    "tests/ledger/test_attempt_claim.py::test_of_four_racing_workers_on_postgres_exactly_one_starts_the_attempt":
        "4 processes import Dagster and race for one Attempt's claim",
}
# Whole modules: the real agent CLIs (Node processes) against local fake APIs.
SLOW_MODULES = ("test_real_*.py",)
UI_DIR = REPO_ROOT / "tests" / "ui"  # a real browser (and often a real webserver): slow, every module
# What differs between Dagster releases, run again on the oldest one (tests/oldest_dagster.sh): every fast test of
# a module that imports Dagster or AWP's Dagster layer (marked `dagster_api` here), and one end-to-end scenario
# under a real daemon (ON_OLDEST). The rest is AWP's own logic, the same on any Dagster.
DAGSTER_IMPORT = re.compile(r"^\s*(?:from|import)\s+(?:dagster\b|awp_pipelines\.(?:orchestration|dagster_compat)\b)",
                            re.MULTILINE)
# End-to-end tests of AWP's own flags and paths (a dry run, --no-commit, --remaining, PostgreSQL, a missing CLI) run
# on the project's fixture packets only; on ../shared/compat's real packets, the runs that show the packet format
# works end to end (each packet to completion) are enough. Their fast tests run on both.
FIXTURE_PACKETS_ONLY = {
    "test_unmet_contract_without_overlay_fails_and_leaves_no_commit",
    "test_no_commit_flag_verifies_but_leaves_the_work_uncommitted",
    "test_dry_run_prints_the_plan_and_runs_nothing",
    "test_remaining_skips_prompts_completed_in_stored_history",
    "test_authoring_packet_runs_with_the_instance_on_postgres",
    "test_single_and_multi_repo_packets_run_with_the_instance_on_postgres",
    "test_a_provider_whose_cli_is_missing_is_refused_before_any_run_starts",
}
ON_OLDEST = {
    "tests/daemon/test_daemon_runs.py::test_ui_launch_of_the_demo_completes_through_sensor_launched_repair_and_retry",
}


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background (`make test &`, a CI script) inherits SIGINT ignored; a job run in process
    then leaves SIGTERM ignored too (Dagster's capture_interrupts, docs/upstream.md 8), and every process a later
    test starts would ignore SIGTERM (a `git daemon` that never stops, an agent only SIGKILL ends)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


@pytest.fixture(scope="session")
def pg_url() -> str:
    """SQLAlchemy URL of the test PostgreSQL server that tests/run_tests.sh starts (AWP_TEST_PG_URL)."""
    url = os.environ.get("AWP_TEST_PG_URL", "").strip()
    if not url:
        msg = "AWP_TEST_PG_URL is not set: run the tests with `make test` (bash tests/run_tests.sh)"
        if _in_ci():
            pytest.fail(f"{msg}; CI must run the PostgreSQL tests")
        pytest.skip(msg)
    return url


@pytest.fixture
def make_git_repo() -> Callable[[str | os.PathLike[str]], Path]:
    """Factory: make_git_repo(path) -> a real git repo at path (branch main, one commit adding README.md)."""

    def make(path: str | os.PathLike[str]) -> Path:
        repo = Path(path)
        repo.mkdir(parents=True, exist_ok=True)

        def git(*args: str) -> None:
            subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)

        git("init", "--quiet", "--initial-branch=main")
        git("config", "user.name", "AWP Test")
        git("config", "user.email", "awp-test@example.invalid")
        git("config", "commit.gpgsign", "false")
        (repo / "README.md").write_text(f"# {repo.name}\n")
        git("add", "README.md")
        git("commit", "--quiet", "-m", "Add README")
        return repo

    return make


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """assets/demo copied to tmp_path (without its state), with a fresh workspace repo made by its setup.sh."""
    import shutil

    packet = tmp_path / "demo"
    shutil.copytree(REPO_ROOT / "assets" / "demo", packet, ignore=shutil.ignore_patterns("workspace", ".awp"))
    subprocess.run(["bash", str(packet / "setup.sh")], check=True, capture_output=True)
    return packet


@pytest.fixture(scope="session", params=packet_sources(), ids=str)
def prompt_runner_root(request: pytest.FixtureRequest) -> Path:
    """A folder of the five Prompt Runner-format packets: the project's fixtures, and ../shared/compat too
    when present. A missing fixture packet fails the test; it never skips."""
    source: PacketSource = request.param
    if missing := source.missing():
        pytest.fail(f"{source.name}: Prompt Runner packets missing under {source.root}: {', '.join(missing)}")
    return source.root


@pytest.fixture(scope="session")
def compat_root(prompt_runner_root: Path) -> Path:
    """The old name of `prompt_runner_root`, kept while tests still use it."""
    return prompt_runner_root


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Own HOME, XDG/AWP config homes, parse cache and DAGSTER_HOME per test: the developer's are never read."""
    base = tmp_path_factory.mktemp("home")
    home = base / "home"
    for name, var in [
        ("home", "HOME"),
        ("xdg-config", "XDG_CONFIG_HOME"),
        ("awp-config", "AWP_CONFIG_HOME"),
        ("dagster-home", "DAGSTER_HOME"),
        ("awp-cache", "AWP_CACHE_HOME"),
    ]:
        (base / name).mkdir()
        monkeypatch.setenv(var, str(base / name))
    for var in ("AWP_PROVIDER", "AWP_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return home


@contextmanager
def pg_database(pg_url: str, prefix: str) -> Iterator[sa.URL]:
    """A new database on the test server, dropped (connections and all) on the way out."""
    from e2e_support import fresh_database

    with fresh_database(pg_url, prefix.rstrip("_")) as url:
        yield url


@pytest.fixture
def fresh_pg_database(pg_url: str) -> Iterator[sa.URL]:
    """A database of its own on the test server, so concurrent tests never share Dagster's tables."""
    with pg_database(pg_url, "awp_deploy_") as url:
        yield url


@pytest.fixture(scope="session")
def session_pg_database(pg_url: str) -> Iterator[sa.URL]:
    """One database for a whole session (per xdist worker): for fixtures as expensive as a served UI."""
    with pg_database(pg_url, "awp_session_") as url:
        yield url


def pytest_report_header() -> list[str]:
    """Say which packets the Prompt Runner tests run on, so a run without ../shared says so."""
    lines = [f"prompt runner packets: {s.name} ({s.root})" for s in packet_sources()]
    if len(lines) == 1:
        lines.append("prompt runner packets: ../shared/compat absent; the fixture packets stand in for it")
    return lines


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Under CI=true a skip is a failure: CI must run every test, and a green run means they all ran."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if _in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where every test must run: {reason}"


@functools.cache
def imports_dagster(path: Path) -> bool:
    """Whether a test module imports Dagster or AWP's Dagster layer (at any indentation)."""
    return bool(DAGSTER_IMPORT.search(path.read_text(encoding="utf-8")))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tests here, by where they live, so the end-to-end modules need no marker of their own:
    everything under tests/e2e/ (Dagster runs of whole packets) and tests/ui/ (a browser), the real CLIs
    (SLOW_MODULES) and the few in SLOW_ELSEWHERE; what the oldest-Dagster leg runs (`dagster_api`, `oldest`); and
    what `make test-fast` leaves out (`heavy`, tests/suite_tiers.py)."""
    for item in items:
        if (item.path.is_relative_to(E2E_DIR) or item.path.is_relative_to(UI_DIR)
                or item.nodeid.split("[")[0] in SLOW_ELSEWHERE
                or any(item.path.match(pattern) for pattern in SLOW_MODULES)):
            item.add_marker(pytest.mark.slow)
        if item.path.is_relative_to(DAEMON_DIR):
            item.add_marker(pytest.mark.daemon)
        if item.path.suffix == ".py" and imports_dagster(item.path):
            item.add_marker(pytest.mark.dagster_api)
        if item.nodeid.split("[")[0] in ON_OLDEST:
            item.add_marker(pytest.mark.oldest)
        if suite_tiers.heavy(item.nodeid):
            item.add_marker(pytest.mark.heavy)
    shared_twice = [item for item in items if item.name.split("[")[0] in FIXTURE_PACKETS_ONLY
                    and item.name.endswith("[shared]")]
    tier = suite_tiers.tier()  # the scenarios `make test` leaves to `make test-all` (tests/suite_tiers.py)
    left_out = [item for item in items if tier != "all" and suite_tiers.extended(item.name) != (tier == "only")]
    dropped = set(shared_twice) | set(left_out)
    if dropped:
        config.hook.pytest_deselected(items=[item for item in items if item in dropped])
        items[:] = [item for item in items if item not in dropped]
    # The slow tests first, then the heavy ones (a stable sort keeps each module's order): with -n 2 the last minutes
    # are then short tests both workers share, not one worker's end-to-end run while the other idles.
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, item.get_closest_marker("heavy") is None))
