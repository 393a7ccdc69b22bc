"""`awp serve`: the Attempt pages, one process beside dagster-webserver, reading the same instance and the
Attempts' stored files (events, diffs) and commits. Standard library HTTP; binds 127.0.0.1 unless told."""

from __future__ import annotations

import itertools
import os
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import click
from dagster import DagsterInstance
from rich.markup import escape

from awp_pipelines.cli.common import out, user_errors
from awp_pipelines.cli_features.attempt_page import (
    EVENTS_SHOWN,
    AttemptView,
    DagsterLinks,
    agent_run_html,
    attempt_html,
    page,
)
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.diffs import read_diff
from awp_pipelines.core.records.events import iter_events
from awp_pipelines.core.records.redact import redact
from awp_pipelines.core.records.workspace import WorkspaceError, git
from awp_pipelines.orchestration.compile.page_link import DEFAULT_PAGE_PORT
from awp_pipelines.orchestration.ledger.attempt_lookup import FoundAttempt, agent_run_attempts, find_attempt
from awp_pipelines.orchestration.ledger.instance import instance_home, open_instance_folder


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
                messages[commit.repo] = redact(git(repo, "show", "-s", "--format=%B", commit.sha, read_only=True,
                                                   timeout_s=10).stdout.strip())
            except WorkspaceError:
                messages[commit.repo] = "(the commit is not in this repository any more)"
    return AttemptView(attempt_id=found.attempt_id, number=found.number, run_id=found.run_id,
                       asset_key=found.asset_key, started=found.started, record=rec, events=events,
                       diff=read_diff(rec.diff_file) if rec and rec.diff_file else None, commit_messages=messages,
                       running=found.running, more_events=more)


def _handler(instance: DagsterInstance, links: DagsterLinks) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet: the page polls every 2 s
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urlparse(self.path)
            route, _, name = url.path.strip("/").partition("/")
            name = unquote(name)
            fragment = parse_qs(url.query).get("part") == ["main"]
            if route == "attempts" and name:
                found = find_attempt(instance, name)
                if found is None:
                    return self._send(HTTPStatus.NOT_FOUND, _missing(f"No Attempt {name} in this instance."))
                return self._send(HTTPStatus.OK, attempt_html(attempt_view(found), links, fragment))
            if route == "agent-runs" and name:
                views = [attempt_view(a) for a in agent_run_attempts(instance, name)]
                if not views:
                    return self._send(HTTPStatus.NOT_FOUND, _missing(f"No AgentRun {name} in this instance."))
                return self._send(HTTPStatus.OK, agent_run_html(name, views, links))
            return self._send(HTTPStatus.OK if not route else HTTPStatus.NOT_FOUND, _missing(
                "Attempt pages: /attempts/&lt;attempt id&gt;, /agent-runs/&lt;agent run id&gt; "
                "(the asset page in Dagster links to them)."))

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
    return page("awp serve", "<h1>AWP Attempt pages</h1>", f"<p>{text}</p>", False)


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
    home = instance_dir or (Path(os.environ["DAGSTER_HOME"]) if os.environ.get("DAGSTER_HOME") else
                            instance_home(packet.resolve()))
    if not (home / "dagster.yaml").is_file():  # never create an empty instance to serve nothing from
        raise click.UsageError(f"no Dagster instance at {home} (no dagster.yaml): pass --instance DIR, set "
                               "DAGSTER_HOME, or name a packet that has run (`awp serve assets/demo`)")
    instance = open_instance_folder(home)
    server = ThreadingHTTPServer((host, port), _handler(instance, DagsterLinks(dagster_url)))
    server.daemon_threads = True
    out.print(f"Attempt pages on http://{host}:{server.server_address[1]} (instance {escape(str(home))}); "
              "Ctrl-C stops", highlight=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        instance.dispose()


def register(cli: click.Group) -> None:
    cli.add_command(serve_command)
