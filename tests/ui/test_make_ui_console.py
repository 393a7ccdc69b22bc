"""`make ui` prints warnings and errors only, one line each: `dagster dev` launched as the Makefile launches it (its
flags and environment, read from the recipe), "Materialize all" of the demo as the UI sends it, the daemon's repair and
retry, then Ctrl-C. Before console_level.py the demo printed 232 lines here (92 DEBUG, 7 INFO, 3 stack traces: the
runs named no logger, so Dagster's default console logged at DEBUG); now at most 3, the demo's expected failures."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from first_run import demo_project
from ui_server import free_port, stop_group, wait_for_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "daemon"))
from deployment import Deployment  # noqa: E402

pytestmark = [pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RECORD = re.compile(r" - (DEBUG|INFO|WARNING|ERROR|CRITICAL) - ")


def make_ui_launch() -> tuple[dict[str, str], list[str]]:
    """The environment and the `dagster dev` flags of the Makefile's `ui` recipe."""
    recipe = (REPO_ROOT / "Makefile").read_text().split("\nui: ", 1)[1].split("\n\n", 1)[0]
    env = dict(re.findall(r"\b(AWP_CONSOLE_LOG_LEVEL|GRPC_VERBOSITY)=(\S+)", recipe))
    env["PYTHONWARNINGS"] = re.search(r"PYTHONWARNINGS='([^']*)'", recipe).group(1)  # type: ignore[union-attr]
    flags = re.search(r'/dagster" dev -w "\$\(CURDIR\)/workspace.yaml" -p \$\(UI_PORT\) (.*)$', recipe, re.MULTILINE)
    assert flags is not None and env["AWP_CONSOLE_LOG_LEVEL"] and env["GRPC_VERBOSITY"], recipe
    return env, flags.group(1).split()


def _demo_project(base: Path) -> Path:
    project = demo_project(base)
    # As the recipe's first line: the demo's embedded instance, created before `dagster dev` serves it.
    subprocess.run([str(BIN / "python"), "-c", "from pathlib import Path; from awp_pipelines.orchestration.ledger."
                    f"instance import open_instance; open_instance(Path({str(project / 'assets/demo')!r})).dispose()"],
                   check=True)
    return project


def test_make_ui_prints_only_warnings_and_errors_one_line_each(tmp_path: Path) -> None:
    env_of_recipe, flags = make_ui_launch()
    project = _demo_project(tmp_path)
    home = project / "assets" / "demo" / ".awp" / "dagster"
    port = free_port()
    env = {**os.environ, **env_of_recipe, "DAGSTER_HOME": str(home), "AWP_PROJECT_ROOT": str(project),
           "AWP_PAGE_URL": "http://127.0.0.1:3001"}
    log = tmp_path / "make-ui.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(BIN / "dagster"), "dev", "-w", str(REPO_ROOT / "workspace.yaml"), "-p", str(port),
                                 *flags], cwd=home, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_for_server(f"http://127.0.0.1:{port}", proc, log)
        Deployment(home, project, port).materialize_all("demo")
        state, deadline = None, time.monotonic() + 420
        while state != "completed" and time.monotonic() < deadline:  # the daemon's repair of 02 and retry of 03
            time.sleep(3)
            status = subprocess.run([str(BIN / "awp"), "status", str(project / "assets" / "demo"), "--json"],
                                    capture_output=True, text=True, cwd=project)
            state = json.loads(status.stdout)["state"] if status.returncode in (0, 1) and status.stdout else None
        assert state == "completed", log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C, as a person ends `make ui`
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                stop_group(proc)
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    levels = [m.group(1) for line in lines if (m := RECORD.search(line))]
    print(f"make ui: {len(lines)} lines, levels {sorted(set(levels))}: {log}")
    assert len(levels) == len(lines), "a line that is no record (a stack trace, a DEBUG event's tail):\n" + \
        "\n".join(line for line in lines if not RECORD.search(line))
    assert set(levels) <= {"WARNING", "ERROR", "CRITICAL"}
    # The demo's expected failures (02's repair next, 03's retry next: each step's line, when its process's console
    # reaches the terminal, and the run's), one line each, the trace left to the run's page.
    failures = [line for line in lines if "STEP_FAILURE" in line or "RUN_FAILURE" in line]
    assert failures and all(line.endswith("(its stack trace: the run's page)") for line in failures)
    assert any("repair next" in line for line in failures) and len(lines) <= 3
