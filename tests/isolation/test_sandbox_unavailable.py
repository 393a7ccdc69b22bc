"""Where the sandbox cannot start, the Attempt fails at provisioning, deterministically and once, with the fix
named; the agent never starts, and nothing falls back to running it unsandboxed. `awp doctor` says the same
before the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from attack_support import script_agent_packet
from e2e_support import stored_records

AGENT = "#!/bin/sh\ntouch {marker}\necho ran\n"
# What bwrap prints where user namespaces are off (a container's seccomp, a sysctl).
NO_USERNS = "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not " \
            "allow non-privileged user namespaces.' >&2\nexit 1\n"


def _awp(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # A process of its own: whether bwrap starts is asked once per process.
    return subprocess.run([sys.executable, "-c", "from awp_pipelines.cli import main; main()", *args], env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize(("bwrap", "says"), [
    (None, "apt-get install -y bubblewrap"),  # AWP_BWRAP names no executable: not installed
    (NO_USERNS, "user namespaces"),
])
def test_no_sandbox_fails_the_attempt_at_provisioning_naming_the_fix(
        tmp_path: Path, make_git_repo, bwrap: str | None, says: str) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "agent-ran"
    fake = tmp_path / "bwrap"
    if bwrap is not None:
        fake.write_text(bwrap)
        fake.chmod(0o755)
    packet, providers = script_agent_packet(
        tmp_path, make_git_repo, AGENT.format(marker=marker),
        {"recovery": {"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False}}},
        "---\nverify:\n  files_exist: [a.txt]\n---\nDo it.\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "AWP_BWRAP": str(fake), "LANG": "C.UTF-8"}
    doctor = _awp("doctor", str(packet), "--providers", str(providers), "--json", env=env, cwd=tmp_path)
    [check] = [c for c in json.loads(doctor.stdout)["checks"] if c["what"] == "isolation"]
    assert check["status"] == "blocking" and says in check["detail"] and "isolation: none" in check["detail"]
    marker.unlink(missing_ok=True)  # `awp doctor` itself runs a command agent to see that it starts
    run = _awp("run", str(packet), "--providers", str(providers), "--json", env=env, cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert not marker.exists()  # the agent never started, sandboxed or not
    [record] = stored_records(packet, json.loads(run.stdout)["packet_run"])  # once: not retried
    failure = record["failure"]
    assert (failure["failure_class"], failure["provider_code"]) == ("launch_failed", "sandbox_unavailable")
    assert not failure["retryable"] and failure["local_deterministic"] and says in failure["message"]
    assert [t["state"] for t in record["transitions"]] == ["created", "provisioning", "terminal"]
    assert record["isolation"]["profile"]["isolation"] == "sandbox" and record["isolation"]["grants"] is None
