"""The cost of starting an Attempt's sandbox: the same agent command started bare, and started the way a
sandboxed Attempt starts it (its egress: the allow-list proxy's threads and sockets; `bwrap` with the
project's namespaces, system binds and grants, behind the launcher that sets its rlimits and joins its pids
cgroup; the in-sandbox forwarder, which then execs the command), to its exit and the egress closed. Goal: at
most 100 ms more than bare. `launcher_ms`: what the limits' launcher (isolation/limiter.py) adds.

    .venv/bin/python bench/sandbox_start.py [--repeat 15] [--json]

The commands: a tiny `command` agent (`sh -c 'echo ok'`), and `claude --version` when the real Claude Code
CLI is installed (tests/providers/install_real_clis.sh). Bare and sandboxed runs alternate; medians of
--repeat, after one warm-up of each (the page cache holds the CLI either way)."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from emit import emit  # noqa: E402

from awp_pipelines.core.isolation.bwrap import bwrap_argv, unavailable  # noqa: E402
from awp_pipelines.core.isolation.egress import start_egress  # noqa: E402
from awp_pipelines.core.isolation.grants import Grants, PathGrant  # noqa: E402
from awp_pipelines.core.isolation.network_policy import NetworkPolicy  # noqa: E402
from awp_pipelines.core.isolation.sandbox import Sandbox  # noqa: E402

GOAL_MS = 100.0
CLAUDE = Path.home() / ".cache" / "awp" / "npm" / "node_modules" / ".bin" / "claude"
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}


def _bare(argv: list[str], work: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=work, env=ENV, capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000


def _sandboxed(argv: list[str], work: Path, install: Path | None, network: str = "provider",
               limits: bool = True) -> float:
    """From the egress's start to the command's exit and the egress closed, as an Attempt's session runs."""
    start = time.perf_counter()
    grants = Grants(paths=[PathGrant(path=str(work), mode="rw", why="work tree"),
                           *([PathGrant(path=str(install), mode="ro", why="the agent's install")] if install else [])])
    # The default network (`provider`) of a Claude Code Attempt on a local base_url: a proxy and a forwarded port;
    # `none`: no proxy, no forwarder (what bwrap alone costs).
    with start_egress(NetworkPolicy(network=[network]), work / ".egress", kind="claude_code",
                      base_url="http://127.0.0.1:8123") as egress:
        if limits:  # as an Attempt starts it: the launcher (rlimits), then bwrap
            command = Sandbox(grants=grants, network_args=egress.bwrap_args(), inner=egress.wrap_command).command(
                argv, work)
        else:
            command = bwrap_argv(grants, egress.wrap_command(argv), cwd=work, network_args=egress.bwrap_args())
        subprocess.run(command, cwd=work, env={**ENV, **egress.env()}, capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000


def measure(name: str, argv: list[str], install: Path | None, repeat: int, work: Path) -> dict[str, object]:
    _bare(argv, work), _sandboxed(argv, work, install)  # warm-up
    bare, boxed, offline, unlimited = [], [], [], []
    for _ in range(repeat):
        bare.append(_bare(argv, work))
        boxed.append(_sandboxed(argv, work, install))
        offline.append(_sandboxed(argv, work, install, "none"))
        unlimited.append(_sandboxed(argv, work, install, limits=False))
    bare_ms, boxed_ms, offline_ms = statistics.median(bare), statistics.median(boxed), statistics.median(offline)
    launcher_ms = boxed_ms - statistics.median(unlimited)
    extra = boxed_ms - bare_ms
    return {"command": name, "bare_ms": round(bare_ms, 1), "sandboxed_ms": round(boxed_ms, 1),
            "extra_ms": round(extra, 1), "ratio": round(boxed_ms / bare_ms, 2), "met": extra <= GOAL_MS,
            "no_network_ms": round(offline_ms, 1), "egress_ms": round(boxed_ms - offline_ms, 1),
            "launcher_ms": round(launcher_ms, 1)}


def sandbox_bench_args(doc: str, argv: list[str] | None) -> argparse.Namespace | None:
    """--repeat and --json of a sandbox benchmark; None, having said why, where no sandbox can start."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    why_not = unavailable()
    if why_not is not None:
        print(f"no sandbox here: {why_not}", file=sys.stderr)
        return None
    return args


def main(argv: list[str] | None = None) -> int:
    args = sandbox_bench_args(__doc__, argv)
    if args is None:
        return 1
    commands: list[tuple[str, list[str], Path | None]] = [("a `command` agent (sh -c 'echo ok')",
                                                           ["sh", "-c", "echo ok"], None)]
    if CLAUDE.exists():
        install = Path(*CLAUDE.resolve().parts[:CLAUDE.resolve().parts.index("node_modules") + 1])
        commands.append(("`claude --version` (Claude Code)", [str(CLAUDE), "--version"], install))
    with tempfile.TemporaryDirectory(prefix="awp-bench-sandbox-") as folder:
        rows = [measure(name, command, install, args.repeat, Path(folder)) for name, command, install in commands]
    text = "\n".join(f"{r['command']}: bare {r['bare_ms']} ms, sandboxed {r['sandboxed_ms']} ms "
                     f"(+{r['extra_ms']} ms, {r['ratio']}x; goal <= +{GOAL_MS:g} ms); of which the egress "
                     f"{r['egress_ms']} ms (network: none {r['no_network_ms']} ms), the limits' launcher "
                     f"{r['launcher_ms']} ms" for r in rows)
    return emit({"rows": rows, "repeat": args.repeat, "goal_ms": GOAL_MS}, args.json, text)


if __name__ == "__main__":
    sys.exit(main())
