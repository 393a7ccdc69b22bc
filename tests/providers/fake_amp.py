"""A local stand-in for Amp's server (AMP_URL), as far as the real Amp CLI goes before a session: its RPCs
(`POST /api/internal?getUserInfo`, `loadPlugins`, `loadSkills`: `{"ok": true, "result": …}`) and the creation of the
session's thread (`POST /api/thread-actors`). The session itself runs on Amp's server (a thread actor the CLI stays
connected to), which nothing here speaks: a session's events are tested with replayed ones (fakes/amp).

`scenario`: "refused_key" answers getUserInfo with no user (what Amp's server says of a key it does not know);
"thread_429" and "thread_503" refuse the thread with that status.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from local_servers import send_json, serving

USER = {"id": "u-awp-test", "email": "agent@example.invalid", "username": "agent", "displayName": "Agent",
        "siteAdmin": False, "teams": [], "features": [], "credits": 100}


class _Handler(BaseHTTPRequestHandler):
    server: FakeAmpServer

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.requests.append((self.path, self.headers.get("authorization")))
        method = self.path.partition("?")[2]
        scenario = self.server.scenario
        if method == "getUserInfo":
            self._json(200, {"ok": True, "result": None if scenario == "refused_key" else USER})
        elif method in ("loadPlugins", "loadSkills"):
            self._json(200, {"ok": True, "result": []})
        elif self.path.startswith("/api/thread-actors") and scenario.startswith("thread_"):
            status = int(scenario.removeprefix("thread_"))
            self._json(status, {"error": {"code": "fake", "message": f"the fake refuses the thread ({status})"}})
        else:
            self._json(404, {"error": "not here"})

    def _json(self, status: int, body: object) -> None:
        send_json(self, status, body)


class FakeAmpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, scenario: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scenario = scenario
        self.requests: list[tuple[str, str | None]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def fake_amp(scenario: str) -> Iterator[FakeAmpServer]:
    with serving(FakeAmpServer(scenario)) as server:
        yield server
