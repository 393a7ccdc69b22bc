"""`awp serve`: the Attempt pages, one process beside dagster-webserver, reading the same instance and the
Attempts' stored files (events, diffs) and commits. Standard library HTTP; binds 127.0.0.1 unless told.

Every read goes through the `Ledger` it is handed (views/attempt_pages.py). Routes: `/` (packets and their packet
runs), `/packet-runs/<id>`, `/agent-runs/<id>`, `/attempts/<id>`, and `/attempts/<id>?part=stream`, the running
Attempt's page as server-sent events."""

from __future__ import annotations

import itertools
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import click
from rich.markup import escape

from awp_pipelines.cli.common import out, user_errors
from awp_pipelines.cli_features.attempt_page import (
    EVENTS_SHOWN,
    STREAM_MS,
    AttemptChip,
    AttemptView,
    DagsterLinks,
    agent_run_html,
    attempt_html,
    page,
)
from awp_pipelines.cli_features.run_index import PacketRunView, index_html, packet_run_html
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.diffs import read_diff
from awp_pipelines.core.records.events import iter_events
from awp_pipelines.core.records.redact import redact
from awp_pipelines.core.records.workspace import WorkspaceError, message_of_commit
from awp_pipelines.orchestration.compile.page_link import DEFAULT_PAGE_PORT
from awp_pipelines.orchestration.ledger.factory import open_ledger
from awp_pipelines.orchestration.ledger.instance import instance_to_serve
from awp_pipelines.orchestration.ledger.ledger import Ledger, PacketRunEntry
from awp_pipelines.orchestration.views.attempt_pages import (
    FoundAttempt,
    agent_run_attempts,
    packet_run_attempts,
    split_attempt_id,
)

INDEX_PACKET_RUNS = 20  # the front door reads this many packet runs, newest first


def chip(found: FoundAttempt) -> AttemptChip:
    return AttemptChip(found.attempt_id, found.number, found.prompt, found.prompt_name, found.mode, found.result,
                       found.agent_run_state)


def packet_run_view(ledger: Ledger, entry: PacketRunEntry) -> PacketRunView:
    return PacketRunView(entry.packet, entry.packet_run, entry.at_ms,
                         [chip(a) for a in packet_run_attempts(ledger, entry.packet_run)])


def attempt_in_context(ledger: Ledger, attempt: str) -> AttemptView | None:
    """The Attempt's view with its packet run's Attempts beside it (previous, next, the one that followed)."""
    parts = split_attempt_id(attempt)
    if parts is None:
        return None
    everyone = packet_run_attempts(ledger, parts[0])
    found = next((a for a in everyone if a.attempt_id == attempt), None)
    if found is None:
        return None
    view = attempt_view(found)
    view.neighbours = [chip(a) for a in everyone]
    view.packet = next((a.packet for a in everyone if a.packet), "")
    return view


def attempt_view(found: FoundAttempt) -> AttemptView:
    """What the page shows, read from the Attempt's record (or its started marker while it runs) and files."""
    rec = found.record
    source = (rec.events_file if rec else None) or found.started.get(tags.EVENTS)
    events, more = [], 0
    if source and Path(str(source)).is_file():
        stream = iter_events(Path(str(source)))
        events = list(itertools.islice(stream, EVENTS_SHOWN))
        more = sum(1 for _ in stream)
    messages = {}
    for commit in rec.commits if rec else []:
        repo = rec.workspace.get(commit.repo) if rec else None
        if commit.sha and repo:
            try:
                messages[commit.repo] = redact(message_of_commit(repo, commit.sha).strip())
            except WorkspaceError:
                messages[commit.repo] = "(the commit is not in this repository any more)"
    return AttemptView(attempt_id=found.attempt_id, number=found.number, run_id=found.run_id,
                       asset_key=found.asset_key, started=found.started, record=rec, events=events,
                       diff=read_diff(rec.diff_file) if rec and rec.diff_file else None, commit_messages=messages,
                       running=found.running, more_events=more, packet=found.packet)


def _handler(ledger: Ledger, links: DagsterLinks) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet: a running page streams
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urlparse(self.path)
            route, _, name = url.path.strip("/").partition("/")
            name = unquote(name)
            query = parse_qs(url.query)
            part = (query.get("part") or [""])[0]
            if route == "attempts" and name:
                if part == "stream":
                    return self._stream(name)
                view = attempt_in_context(ledger, name)
                if view is None:
                    return self._send(HTTPStatus.NOT_FOUND, _missing(f"No Attempt {name} in this instance."))
                return self._send(HTTPStatus.OK, attempt_html(view, links, part == "main"))
            if route == "agent-runs" and name:
                views = [attempt_view(a) for a in agent_run_attempts(ledger, name)]
                if not views:
                    return self._send(HTTPStatus.NOT_FOUND, _missing(f"No AgentRun {name} in this instance."))
                return self._send(HTTPStatus.OK, agent_run_html(name, views, links))
            if route == "packet-runs" and name:
                entry = next((e for e in ledger.recent_packet_runs(10_000) if e.packet_run == name), None)
                if entry is None:
                    return self._send(HTTPStatus.NOT_FOUND, _missing(f"No packet run {name} in this instance."))
                return self._send(HTTPStatus.OK, packet_run_html(packet_run_view(ledger, entry), links))
            if not route:
                runs = [packet_run_view(ledger, e) for e in ledger.recent_packet_runs(INDEX_PACKET_RUNS)]
                return self._send(HTTPStatus.OK, index_html(runs, (query.get("q") or [""])[0]))
            return self._send(HTTPStatus.NOT_FOUND, _missing(
                "No such page: <a href='/'>packets and their runs</a>, /packet-runs/&lt;id&gt;, "
                "/agent-runs/&lt;id&gt;, /attempts/&lt;id&gt;."))

        def _stream(self, attempt: str) -> None:
            """The running Attempt's main part as server-sent events: sent when it changed, then `end`."""
            self.send_response(HTTPStatus.OK)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-store")
            self.end_headers()
            last = None
            try:
                while True:
                    view = attempt_in_context(ledger, attempt)
                    if view is None:
                        break
                    body = attempt_html(view, links, fragment=True)
                    if body != last:
                        data = "".join(f"data: {line}\n" for line in body.split("\n"))
                        self.wfile.write(f"{data}\n".encode())
                        self.wfile.flush()
                        last = body
                    if not view.running:
                        break
                    time.sleep(STREAM_MS / 1000)
                self.wfile.write(b"event: end\ndata: ended\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):  # the reader left
                return

        def _send(self, status: HTTPStatus, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("cache-control", "no-store")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _missing(text: str) -> str:
    return page("awp serve", "<h1>AWP Attempt pages</h1><nav class=nav><a rel=up href='/'>↑ all packets</a></nav>",
                f"<p>{text}</p>")


@click.command("serve")
@click.argument("packet", type=click.Path(path_type=Path), default=".")
@click.option("--instance", "instance_dir", type=click.Path(path_type=Path, file_okay=False),
              envvar="AWP_DAGSTER_HOME", help="Dagster home the runs are stored in (its dagster.yaml is honoured). "
              "Default: $DAGSTER_HOME when set, else <packet>/.awp/dagster.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (0.0.0.0 in a container).")
@click.option("--port", type=int, default=DEFAULT_PAGE_PORT, show_default=True)
@click.option("--dagster-url", envvar="AWP_DAGSTER_URL", default="http://127.0.0.1:3000", show_default=True,
              help="The Dagster webserver the pages link to (runs, assets, tags).")
@user_errors
def serve_command(packet: Path, instance_dir: Path | None, host: str, port: int, dagster_url: str) -> None:
    """Serve the Attempt pages: each Attempt as a chat (prompt, messages, tool calls, diffs, verifier, commit),
    live while it runs, for the instance the runs are in. Dagster's asset pages link here (AWP_PAGE_URL)."""
    home = instance_to_serve(packet, instance_dir)
    if not (home / "dagster.yaml").is_file():  # never create an empty instance to serve nothing from
        raise click.UsageError(f"no Dagster instance at {home} (no dagster.yaml): pass --instance DIR, set "
                               "DAGSTER_HOME, or name a packet that has run (`awp serve assets/demo`)")
    with open_ledger(home) as (ledger, _):
        server = ThreadingHTTPServer((host, port), _handler(ledger, DagsterLinks(dagster_url)))
        server.daemon_threads = True
        out.print(f"Attempt pages on http://{host}:{server.server_address[1]} (instance {escape(str(home))}); "
                  "Ctrl-C stops", highlight=False)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()


def register(cli: click.Group) -> None:
    cli.add_command(serve_command)
