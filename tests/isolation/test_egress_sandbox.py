"""The egress end to end in a real `bwrap --unshare-net`: from inside, a granted local server is reached
through the proxy (CONNECT and plain HTTP) and through the forwarded loopback port; a server on any other
port is not, nor anything at all under `network: none`; the agent's command keeps its exit status, and the
in-sandbox forwarder ends with it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from egress_support import http_server

from awp_pipelines.core.isolation.egress import INSIDE_DIR, EgressHandle, start_egress
from awp_pipelines.core.isolation.network_policy import NetworkPolicy

# The client inside: each URL fetched directly, through the proxy as an absolute URI, and through a CONNECT
# tunnel; prints one line per way: the answer's body, or the error.
CLIENT = r"""
import http.client, sys, urllib.request
proxy = sys.argv[1]
def direct(host, port):
    c = http.client.HTTPConnection(host, port, timeout=5); c.request("GET", "/"); return c.getresponse()
def absolute(host, port):
    name = f"[{host}]" if ":" in host else host
    c = http.client.HTTPConnection("127.0.0.1", proxy, timeout=5); c.request("GET", f"http://{name}:{port}/")
    return c.getresponse()
def tunnel(host, port):
    c = http.client.HTTPConnection("127.0.0.1", proxy, timeout=5); c.set_tunnel(host, port); c.request("GET", "/")
    return c.getresponse()
for target in sys.argv[2:]:
    host, port = target.rsplit(":", 1)
    for way in (direct, absolute, tunnel):
        try:
            r = way(host.strip("[]"), int(port)); answer = f"{r.status} {r.read().decode().strip()}"
        except Exception as e:
            answer = f"error {type(e).__name__}"
        print(target, way.__name__, answer)
"""


def _bwrap(egress: EgressHandle, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """The agent's command in a sandbox built like the project's: the system read-only, a private /tmp, then
    the egress's arguments last."""
    args = ["bwrap", "--unshare-user", "--unshare-pid", "--die-with-parent"]
    for path in ("/usr", "/bin", "/sbin", "/lib", "/lib64"):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    prefix = os.path.realpath(sys.base_prefix)  # the project's sandbox binds the runner's Python (the awp shim)
    args += ["--ro-bind", prefix, prefix, "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
             "--tmpfs", "/tmp", "--tmpfs", "/run",
             *egress.bwrap_args(), "--", *egress.wrap_command(argv)]
    env = {"PATH": "/usr/bin:/bin", **egress.env()}
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, check=False)


def _answers(run: subprocess.CompletedProcess[str]) -> dict[tuple[str, str], str]:
    assert run.returncode == 0, run.stderr
    return {(target, way): answer for target, way, answer in (line.split(" ", 2) for line in run.stdout.splitlines())}


def _python() -> str:
    return os.path.realpath(sys.executable)  # the base install the egress binds in for its forwarder


def test_inside_only_the_granted_port_answers_through_proxy_or_forward(tmp_path: Path) -> None:
    with http_server("api") as api, http_server("other") as other, start_egress(
            NetworkPolicy(), tmp_path, kind="claude_code", base_url=f"http://127.0.0.1:{api.port}") as egress:
        api_at, other_at = f"127.0.0.1:{api.port}", f"127.0.0.1:{other.port}"
        answers = _answers(_bwrap(egress, [_python(), "-I", "-S", "-c", CLIENT, str(egress.proxy_port),
                                           api_at, other_at, f"[::1]:{api.port}"]))
        # The forwarded port answers on the sandbox's IPv6 loopback too (a client resolving localhost to ::1).
        assert answers[(f"[::1]:{api.port}", "direct")] == "200 server api"
        assert {way: answers[(api_at, way)] for way in ("direct", "absolute", "tunnel")} == {
            "direct": "200 server api", "absolute": "200 server api", "tunnel": "200 server api"}
        assert answers[(other_at, "direct")] == "error ConnectionRefusedError"  # the sandbox's own loopback
        assert answers[(other_at, "absolute")].startswith("403 awp egress")
        assert answers[(other_at, "tunnel")] == "error OSError"  # http.client: "Tunnel connection failed: 403"
        assert other.seen == []
        assert {(d.host, d.port) for d in egress.denials() if d.host == "127.0.0.1"} == {("127.0.0.1", other.port)}
        # Through the proxy, ::1 is not the granted 127.0.0.1: refused (as unreadable, from this client's CONNECT).
        assert not any(answers[(f"[::1]:{api.port}", way)].startswith("200") for way in ("absolute", "tunnel"))


def test_curl_inside_uses_the_proxy_from_the_environment(tmp_path: Path) -> None:
    curl = shutil.which("curl")
    assert curl, "curl is installed with the test tools (tests/run_tests.sh)"
    with http_server("api") as api, http_server("other") as other, \
            start_egress(NetworkPolicy(network=[f"localhost:{api.port}"]), tmp_path, kind="command",
                         base_url=None) as egress:
        # A name outside NO_PROXY goes through the proxy: a granted one is carried, another refused.
        code = "curl -s -m 5 -o /dev/null -w '%{http_code}\\n'"
        script = (f"{code} --noproxy '' http://localhost:{api.port}/; "
                  f"{code} --noproxy '' http://localhost:{other.port}/; "
                  f"{code} http://127.0.0.1:{other.port}/ || echo refused")
        run = _bwrap(egress, ["sh", "-c", script])
        assert run.stdout.split() == ["200", "403", "000", "refused"]
        assert other.seen == [] and len(api.seen) == 1


def test_network_none_reaches_nothing_and_adds_no_forwarder(tmp_path: Path) -> None:
    with http_server("api") as api, start_egress(NetworkPolicy(network="none"), tmp_path, kind="claude_code",
                                                 base_url=f"http://127.0.0.1:{api.port}") as egress:
        assert egress.wrap_command(["true"]) == ["true"] and egress.env() == {}
        assert egress.bwrap_args() == ["--unshare-net"]
        answers = _answers(_bwrap(egress, [_python(), "-I", "-S", "-c", CLIENT, "3128", f"127.0.0.1:{api.port}"]))
        assert set(answers.values()) == {"error ConnectionRefusedError"}
        assert api.seen == [] and not (tmp_path / "egress" / "sockets").exists()


def test_the_command_keeps_its_exit_status_and_the_forwarder_ends_with_it(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["a-long-folder-name"] * 6)  # past a unix socket path's 108 bytes
    with start_egress(NetworkPolicy(network=["example.org"]), deep, kind="command", base_url=None) as egress:
        assert len(str(egress.socket_dir / "proxy")) > 108
        # The command prints its children (the forwarder, forked before the exec) and its own pid.
        run = _bwrap(egress, ["sh", "-c", f"read -r c < /proc/$$/task/$$/children; echo $c; ls {INSIDE_DIR}; exit 7"])
        assert run.returncode == 7, run.stderr
        children, listing = run.stdout.split("\n", 1)
        assert len(children.split()) == 1 and listing.split() == ["proxy"]


def test_the_forwarder_dies_with_the_agent_even_without_a_pid_namespace(tmp_path: Path) -> None:
    """No --unshare-pid: nothing but the parent-death signal ends the forwarder when the agent is killed."""
    with start_egress(NetworkPolicy(network=["example.org"]), tmp_path, kind="command", base_url=None) as egress:
        argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/run", *egress.bwrap_args(), "--",
                *egress.wrap_command(["sh", "-c", "read -r c < /proc/$$/task/$$/children; echo $c; exec sleep 60"])]
        agent = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True)
        assert agent.stdout is not None
        forwarder = int(agent.stdout.readline().split()[0])
        assert Path(f"/proc/{forwarder}").exists()
        agent_pid = int(Path(f"/proc/{forwarder}/stat").read_text().rsplit(")", 1)[1].split()[1])
        os.kill(agent_pid, 9)  # the agent alone: its forwarder child must follow
        agent.wait(10)
        deadline = time.monotonic() + 5
        while _running(forwarder) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _running(forwarder)


def _running(pid: int) -> bool:
    """Alive, not a zombie waiting for the machine's init to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
