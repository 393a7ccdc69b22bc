"""What the `dagster_ui` fixture hands a test: the served UI and the demo run behind it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

SERVER_START_S = 180


@dataclass
class DagsterUi:
    url: str
    home: Path
    project: Path
    run_output: dict[str, Any] = field(default_factory=dict)  # `awp run --json` of the demo

    @property
    def packet(self) -> Path:
        return self.project / "assets" / "demo"

    def attempts(self) -> list[str]:
        """The attempt ids the demo's final outcomes name (one per prompt)."""
        return [p["attempt"] for p in self.run_output.get("prompts", [])]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_server(url: str, proc: subprocess.Popen[bytes], log: Path, path: str = "/server_info") -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server behind {path} exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{url}{path}", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail(f"{url}{path} did not answer in {SERVER_START_S} s:\n{log.read_text()[-4000:]}")


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """The webserver and the code server it spawned: its own process group, started by this fixture."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

