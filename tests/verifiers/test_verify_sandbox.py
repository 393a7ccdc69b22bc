"""A contract's command runs the agent's code: in the verifier's sandbox it reaches only its trees, and with
`isolation: none` (the old way, beside the runner) the same command reaches what the runner does.

Each attack is a real command in real bubblewrap; each is shown escaping under `isolation: none`, so the
test checks the sandbox, not the script."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from verify_helpers import Workspace

from awp_pipelines.core.isolation import bwrap
from awp_pipelines.core.isolation.bwrap import unavailable
from awp_pipelines.core.packet.model.contract import CommandCheck

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")
CANARY = "canary-verifier-7f3a1e"


def run(ws: Workspace, body: str, isolation: str, **command: object):  # type: ignore[no-untyped-def]
    ws.script("bin/attack", body)
    return ws.item({"commands": [{"exec": "bin/attack", **command}]}, isolation=isolation)


@pytest.mark.parametrize(("isolation", "leaks"), [("sandbox", False), ("none", True)])
def test_the_runners_environment_and_its_proc_are_out_of_reach(ws: Workspace, isolation: str, leaks: bool) -> None:
    """/proc/<pid>/environ of a runner process (one started with a secret, as `awp run` is) is the way in."""
    runner = subprocess.Popen(["sleep", "60"], env={"AWP_PG_PASSWORD": CANARY})
    try:
        item = run(ws, f"env; cat /proc/{runner.pid}/environ | tr '\\0' '\\n'; exit 1", isolation)
    finally:
        runner.kill()
        runner.wait()
    assert any(CANARY in line for line in item.details) is leaks, item.details


@pytest.mark.parametrize(("isolation", "leaks"), [("sandbox", False), ("none", True)])
def test_the_operators_home_and_files_beside_the_packet_are_out_of_reach(
        ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str, leaks: bool) -> None:
    home = tmp_path / "operator-home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(CANARY)
    monkeypatch.setenv("HOME", str(home))
    item = run(ws, f"cat {home}/.ssh/id_ed25519; echo; echo HOME=$HOME; exit 1", isolation)
    assert any(CANARY in line for line in item.details) is leaks, item.details
    if not leaks:
        assert "HOME=/tmp" in item.details  # a private HOME of its own


@pytest.mark.parametrize(("isolation", "escapes"), [("sandbox", False), ("none", True)])
def test_a_write_outside_the_tree_never_lands_while_the_tree_stays_writable(
        ws: Workspace, tmp_path: Path, isolation: str, escapes: bool) -> None:
    outside = tmp_path / "outside.txt"
    item = run(ws, f"echo built > out.txt; echo x > {outside}; exit 0", isolation)
    assert item.passed, item.details
    assert (ws.repos["app"] / "out.txt").read_text() == "built\n"
    assert outside.exists() is escapes


@pytest.mark.parametrize(("isolation", "escapes"), [("sandbox", False), ("none", True)])
def test_nothing_the_check_starts_outlives_it(ws: Workspace, isolation: str, escapes: bool) -> None:
    """A `setsid` child leaves the check's process group: only the sandbox's pid namespace ends it."""
    late = ws.repos["app"] / "late.txt"
    item = run(ws, f"setsid sh -c 'sleep 1; echo late > {late}' </dev/null >/dev/null 2>&1 &\nsleep 0.3", isolation)
    assert item.passed, item.details
    time.sleep(2.5)
    assert late.exists() is escapes


def test_awps_state_in_the_packet_is_hidden_and_the_packet_is_read_only(ws: Workspace) -> None:
    state = ws.root / ".awp"
    state.mkdir()
    (state / "runs.db").write_text(CANARY)
    (ws.root / "notes.md").write_text("packet file\n")
    item = run(ws, f"cat {state}/runs.db; cat {ws.root}/notes.md; echo y >> {ws.root}/notes.md; exit 1",
               "sandbox")
    assert not any(CANARY in line for line in item.details)
    assert "packet file" in item.details  # readable: a contract may run the packet's own scripts
    assert (ws.root / "notes.md").read_text() == "packet file\n"


def test_no_network_unless_the_contract_asks(ws: Workspace) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        port = server.getsockname()[1]
        probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('REACHED')"
        ws.script("bin/net", f"exec {sys.executable} -c \"{probe}\"")
        contract = {"commands": [{"exec": "bin/net", "stdout_contains": "REACHED"}]}
        sandboxed, bare = ws.item(contract), ws.item(contract, isolation="none")
        # Asked for, through the agent's egress: a loopback host:port rule is forwarded as that port inside.
        granted = ws.item({"commands": [{**contract["commands"][0], "network": [f"127.0.0.1:{port}"]}]})
    finally:
        server.close()
    assert not sandboxed.passed and sandboxed.details[0] == "failed: exit 1", sandboxed.details
    assert bare.passed
    assert granted.passed, granted.details


def test_a_contract_cannot_ask_for_the_provider_network() -> None:
    with pytest.raises(ValueError, match="no provider"):
        CommandCheck.model_validate({"exec": "make", "network": "provider"})
    assert CommandCheck.model_validate({"exec": "make", "network": ["pypi.org"]}).network == ["pypi.org"]


def test_pytest_on_the_agents_own_tests_passes_inside(ws: Workspace) -> None:
    ws.write("calc.py", "def add(a, b):\n    return a + b\n")
    ws.write("test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    item = ws.item({"commands": [{"exec": sys.executable, "args": ["-m", "pytest", "-q", "-p", "no:cacheprovider"],
                                  "stdout_contains": "1 passed"}]})
    assert item.passed, item.details


def test_without_bubblewrap_a_sandboxed_check_is_a_fault_that_names_the_fix(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bwrap.BWRAP_VAR, "/nonexistent/bwrap")
    bwrap.unavailable.cache_clear()
    try:
        ws.script("bin/check", "exit 0")
        item = ws.item({"commands": [{"exec": "bin/check"}]})
        bare = ws.item({"commands": [{"exec": "bin/check"}]}, isolation="none")
    finally:
        monkeypatch.undo()
        bwrap.unavailable.cache_clear()
    assert item.fault == "verifier_fault" and not item.passed
    assert item.details[0].startswith("the verifier's sandbox cannot start: ")
    assert "isolation: none" in item.details[0]  # the same opt-out the agent's sandbox names
    assert bare.passed


def test_regenerates_never_reaches_out_through_a_folder_swapped_for_a_link(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "gen.txt").write_text("not AWP's to remove\n")
    ws.write("out/gen.txt", "old\n")
    ws.script("bin/gen", f"mv out out.moved; ln -s {outside} out; exit 0")
    item = ws.item({"commands": [{"exec": "bin/gen", "regenerates": ["out/gen.txt"]}]})
    assert not item.passed and "replaced by a link out of the repo" in item.details[0]
    assert (outside / "gen.txt").read_text() == "not AWP's to remove\n"


RUNNER = """
import sys
from pathlib import Path
from awp_pipelines.core.verifiers import VerifyContext, VerifyContract, run_contract
tree = Path(sys.argv[1])
contract = VerifyContract.model_validate({"commands": [{"exec": "bin/slow", "timeout_ms": 60000}]})
run_contract(contract, VerifyContext(tree.parent, {"app": tree}, "app", isolation=sys.argv[2]))
"""


@pytest.mark.parametrize(("isolation", "escapes"), [("sandbox", False), ("none", True)])
def test_a_check_ends_with_a_killed_runner(ws: Workspace, isolation: str, escapes: bool) -> None:
    """`kill -9` of the process running the check: bwrap's --die-with-parent ends the check and all it started."""
    tree = ws.repos["app"]
    ws.script("bin/slow", f"touch {tree}/started; sleep 2; echo late > {tree}/late.txt")
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(tree), isolation])
    deadline = time.monotonic() + 30
    while not (tree / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    runner.kill()
    runner.wait()
    time.sleep(3)
    assert (tree / "started").exists()
    assert (tree / "late.txt").exists() is escapes


@pytest.mark.parametrize(("isolation", "escapes"), [("sandbox", False), ("none", True)])
def test_the_check_cannot_write_the_git_dir(ws: Workspace, isolation: str, escapes: bool) -> None:
    """Issue 38: a check that stages a nested repository, writes MERGE_HEAD or moves the branch before AWP's
    commit. The whole git dir is read-only in the sandbox, as in the agent's."""
    git_dir = ws.repos["app"] / ".git"
    before = sorted(p.name for p in git_dir.iterdir())
    item = run(ws, "mkdir -p n && git -C n init -q && git add n 2>&1; echo 0000 > .git/MERGE_HEAD; "
               "git update-ref refs/heads/main HEAD 2>&1; touch .git/planted; exit 0", isolation)
    assert item.passed, item.details
    assert (git_dir / "MERGE_HEAD").exists() is escapes and (git_dir / "planted").exists() is escapes
    if not escapes:
        assert sorted(p.name for p in git_dir.iterdir()) == before
