"""The Attempt page as HTML (`awp serve`): it reads like a chat. The prompt as sent (Markdown), the agent's
messages, each tool call as one line that opens to its input and output, each with its time, the files changed
with their diffs, the verifier's items, the commit with its trailers, tokens and cost, links to Dagster and to
the Attempts before and after it. Pure: it renders what it is given.

Every text is HTML-escaped and passes the secret patterns once more (events and diffs were redacted when they
were written; a page is one more place a secret must never reach). Markdown goes through markdown-it with raw
HTML off: a `<script>` in a prompt is text, and links keep markdown-it's scheme check (no `javascript:`).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from markdown_it import MarkdownIt

from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.diffs import AttemptDiff, FileDiff
from awp_pipelines.core.records.plural import counted
from awp_pipelines.core.records.redact import redact
from awp_pipelines.core.records.transcript import Counters, one_line

DIFF_LINES_SHOWN = 80  # per file; the rest one click away
TOOL_TEXT_CHARS = 20_000  # a tool's input or output on the page
EVENTS_SHOWN = 5_000  # a page renders this many events; the JSONL holds them all
STREAM_MS = 1000  # how often `awp serve` looks for new events of a running Attempt (the page streams them)

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})


def esc(value: Any) -> str:
    return html.escape(redact(str(value)), quote=True)


def markdown_html(text: str) -> str:
    """Markdown as HTML, redacted first; raw HTML in it stays text (markdown-it's `html: False`)."""
    return _MARKDOWN.render(redact(text))


def clock(ts: Any) -> str:
    """`<time>` of an event's ISO-8601 UTC stamp, shown as HH:MM:SS (the full stamp on hover)."""
    text = str(ts or "")
    if len(text) < 19:
        return ""
    return f"<time datetime='{esc(text)}' title='{esc(text)}'>{esc(text[11:19])}</time>"


@dataclass(frozen=True)
class AttemptChip:
    """One Attempt as a link with its state: for the index, a packet run's page and an Attempt's neighbours."""

    attempt_id: str
    number: int
    prompt: str
    prompt_name: str
    mode: str
    result: str
    agent_run_state: str = ""  # the AgentRun's state once this Attempt ended, as stored with it (`waiting — …`)

    def html(self) -> str:
        kind = {"completed": "ok", "running": "run"}.get(self.result, "bad")
        mark = {"ok": "✓", "run": "…"}.get(kind, "✗")
        label = f"{self.prompt}·a{self.number} {mark}"
        return (f"<a class='chip {kind}' href='/attempts/{esc(quote(self.attempt_id))}' "
                f"title='{esc(self.prompt_name)}: Attempt {self.number}, {esc(self.mode)}, "
                f"{esc(self.result.replace('_', ' '))}' data-result='{esc(self.result)}'>{esc(label)}</a>")


@dataclass(frozen=True)
class DagsterLinks:
    """URLs into the Dagster webserver at `base`."""

    base: str

    def run(self, run_id: str) -> str:
        return f"{self.base.rstrip('/')}/runs/{run_id}"

    def asset(self, key: Sequence[str]) -> str:
        return f"{self.base.rstrip('/')}/assets/" + "/".join(quote(part, safe="") for part in key)

    def runs_tagged(self, key: str, value: str) -> str:
        return f"{self.base.rstrip('/')}/runs?" + urlencode({"q[]": f"tag:{key}={value}"})


@dataclass
class AttemptView:
    """What the page shows of one Attempt, read by the server: `record` None while it runs."""

    attempt_id: str
    number: int
    run_id: str
    asset_key: list[str]
    started: Mapping[str, Any]
    record: AttemptRecord | None
    events: list[dict[str, Any]]
    diff: AttemptDiff | None
    commit_messages: dict[str, str] = field(default_factory=dict)  # repo → the commit's message
    running: bool = False
    more_events: int = 0  # past EVENTS_SHOWN
    neighbours: Sequence[AttemptChip] = ()  # the packet run's Attempts in the order they started, this one too
    packet: str = ""


# -- the page ---------------------------------------------------------------------------------------------

_CSS = """
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#f6f8fa;--ok:#1a7f37;--bad:#cf222e;--run:#0969da;
--warn:#9a6700}
*{box-sizing:border-box}body{margin:0;font:15px/1.5 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;
color:var(--fg);background:#fff}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid var(--line);z-index:2}
.bar,main{max-width:1100px;margin:0 auto;padding:10px 24px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid var(--line);
padding-bottom:4px}
a{color:var(--run);text-decoration:none}a:hover{text-decoration:underline}
.links a{margin-right:14px;font-size:13px}.meta{color:var(--muted);font-size:13px}
.badge{display:inline-block;border-radius:12px;padding:1px 10px;font-size:13px;font-weight:600;color:#fff;
vertical-align:middle;margin-left:8px}
.badge.ok{background:var(--ok)}.badge.bad{background:var(--bad)}.badge.run{background:var(--run)}
.badge.warn{background:var(--warn)}
.msg{margin:12px 0;padding:10px 14px;border-radius:10px;white-space:pre-wrap;word-wrap:break-word}
.user{background:#ddf4ff;border:1px solid #b6e3ff}.agent{background:var(--bg);border:1px solid var(--line)}
.who{font-size:12px;font-weight:600;color:var(--muted);margin-bottom:2px;white-space:normal}
.thinking{color:var(--muted);font-style:italic;font-size:13px;margin:6px 0 6px 14px}
.note{margin:8px 0;padding:6px 12px;border-left:4px solid var(--warn);background:#fff8c5;font-size:14px;
white-space:pre-wrap}
.note.bad{border-color:var(--bad);background:#ffebe9}.note.ok{border-color:var(--ok);background:#dafbe1}
details.tool{margin:4px 0 4px 14px;border:1px solid var(--line);border-radius:6px}
details.tool>summary{cursor:pointer;padding:4px 10px;font:13px/1.6 ui-monospace,SFMono-Regular,Menlo,monospace;
white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
details.tool>summary .name{font-weight:700;margin-right:8px}
details.tool .io{padding:4px 10px 8px;border-top:1px solid var(--line)}
.io h4{margin:6px 0 2px;font-size:12px;color:var(--muted)}
pre{margin:0;font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;white-space:pre-wrap;
word-break:break-word;background:var(--bg);padding:6px 8px;border-radius:4px;max-height:480px;overflow:auto}
.ok-t{color:var(--ok)}.bad-t{color:var(--bad)}.run-t{color:var(--run)}
.file{border:1px solid var(--line);border-radius:6px;margin:10px 0;overflow:hidden}
.file>.head{background:var(--bg);padding:6px 10px;font:13px ui-monospace,Menlo,monospace;
border-bottom:1px solid var(--line)}
.diff{font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;white-space:pre;overflow-x:auto}
.diff div{padding:0 10px;min-height:1.45em}.diff .add{background:#dafbe1}.diff .del{background:#ffebe9}
.diff .hunk{background:#ddf4ff;color:var(--muted)}
.diff details>summary{cursor:pointer;padding:4px 10px;color:var(--run);font-family:sans-serif;font-size:13px}
table{border-collapse:collapse;width:100%;font-size:14px}td,th{border-bottom:1px solid var(--line);
padding:5px 8px;text-align:left;vertical-align:top}th{color:var(--muted);font-weight:600}
td pre{max-height:160px}
.stats span{margin-right:18px}
.msg.md{white-space:normal}.msg.md p{margin:4px 0}.msg.md pre{margin:6px 0}.msg.md h1,.msg.md h2{font-size:16px;
border:0;margin:8px 0 4px}.msg.md h3{font-size:15px;margin:6px 0 2px}.msg.md code{font-size:13px}
time{color:var(--muted);font:12px ui-monospace,Menlo,monospace;margin-left:8px;font-weight:400}
details.tool>summary time{float:right}
.chip{display:inline-block;border-radius:10px;padding:0 8px;margin:2px 4px 2px 0;font:12.5px/1.6 ui-monospace,
Menlo,monospace;border:1px solid var(--line)}.chip.ok{background:#dafbe1;color:var(--ok)}
.chip.bad{background:#ffebe9;color:var(--bad)}.chip.run{background:#ddf4ff;color:var(--run)}
a:focus-visible,input:focus-visible,summary:focus-visible{outline:2px solid var(--run);outline-offset:2px}
.nav{display:flex;gap:18px;font-size:13px;margin:4px 0}.nav .here{color:var(--muted)}
.followed{margin:10px 0;padding:6px 12px;border-left:4px solid var(--run);background:#ddf4ff;font-size:14px}
.prun td{vertical-align:middle}.prun .when{color:var(--muted);font-size:13px;white-space:nowrap}
input#filter{font:14px sans-serif;padding:4px 8px;width:320px;border:1px solid var(--line);border-radius:6px}
kbd{font:12px ui-monospace,Menlo,monospace;border:1px solid var(--line);border-radius:3px;padding:0 4px}
"""

# A running Attempt's page streams (server-sent events from `?part=stream`): each message is the page's main part
# again, sent when it changed; `end` when the Attempt ended, and the page reloads whole. Keys: `[` and `]` walk
# to the previous and next Attempt, `u` goes up to the packet run, `/` focuses the filter.
_JS = """
(function(){var main=document.getElementById('main');
document.addEventListener('keydown',function(e){var t=e.target;if(t&&(t.tagName==='INPUT'||t.isContentEditable))
return;if(e.ctrlKey||e.metaKey||e.altKey)return;var rel={'[':'prev',']':'next','u':'up'}[e.key];
if(rel){var a=document.querySelector("a[rel='"+rel+"']");if(a){e.preventDefault();location.href=a.href}}
else if(e.key==='/'){var f=document.getElementById('filter');if(f){e.preventDefault();f.focus()}}});
var f=document.getElementById('filter');if(f){var apply=function(){var q=f.value.toLowerCase();
[].forEach.call(document.querySelectorAll('[data-filter]'),function(r){
r.hidden=q&&r.dataset.filter.toLowerCase().indexOf(q)<0})};f.addEventListener('input',apply);apply()}
if(!main||main.dataset.running!=='1'||!window.EventSource)return;
var es=new EventSource(location.pathname+'?part=stream');
es.onmessage=function(m){var open=[].map.call(document.querySelectorAll('details[open]'),function(d){return d.id});
var y=window.scrollY;var atEnd=window.innerHeight+y>=document.body.scrollHeight-40;main.innerHTML=m.data;
open.forEach(function(id){var d=id&&document.getElementById(id);if(d)d.open=true});
if(atEnd)window.scrollTo(0,document.body.scrollHeight);else window.scrollTo(0,y)};
es.addEventListener('end',function(){es.close();location.reload()})})();
"""


def page(title: str, header: str, body: str, running: bool = False) -> str:
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{esc(title)}</title>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'><style>{_CSS}</style></head><body>"
            f"<header><div class=bar>{header}</div></header>"
            f"<main id=main data-running={'1' if running else '0'}>{body}</main>"
            f"<script>{_JS}</script></body></html>")


def result_badge(result: str) -> str:
    kind = {"completed": "ok", "running": "run"}.get(result, "bad")
    return f"<span class='badge {kind}' data-result='{esc(result)}'>{esc(result.replace('_', ' '))}</span>"


def _result(view: AttemptView) -> str:
    if view.record is not None:
        return view.record.result
    return "running" if view.running else "interrupted"


def attempt_header(view: AttemptView, links: DagsterLinks, own: str = "") -> str:
    rec, started = view.record, view.started
    mode = rec.identity.mode if rec else str(started.get(tags.MODE) or "run")
    prompt = rec.prompt_name if rec else view.asset_key[-1] if view.asset_key else ""
    provider = rec.target.provider if rec else str(started.get(tags.PROVIDER) or "")
    account = rec.target.account if rec else started.get(tags.ACCOUNT)
    model = rec.target.model if rec else str(started.get(tags.MODEL) or "")
    packet_run, _, _ = view.attempt_id.partition(".")
    agent_run = view.attempt_id.rpartition(".a")[0]
    nav = [("Dagster run", links.run(view.run_id)), ("asset", links.asset(view.asset_key)),
           ("packet run", links.runs_tagged(tags.PACKET_RUN, packet_run)),
           ("all Attempts of this AgentRun", f"/agent-runs/{quote(agent_run)}")]
    link_html = "".join(f"<a href='{esc(url)}'>{esc(label)}</a>" for label, url in nav if label and url)
    target = " / ".join(esc(p) for p in (provider, account, model) if p)
    packet = f"packet {esc(view.packet)} · " if view.packet else ""
    return (f"<h1>Attempt {view.number} · {esc(mode)} · {esc(prompt)}{result_badge(_result(view))}</h1>"
            f"<div class=meta>{packet}{esc(view.attempt_id)} · {target}{own}</div>{walk_nav(view)}"
            f"<div class=links>{link_html}</div>")


def walk_nav(view: AttemptView) -> str:
    """Up to the packet run, and the packet run's Attempts before and after this one (in the order they
    started), as links with `rel` (the keys `[`, `]` and `u` follow them)."""
    packet_run = view.attempt_id.partition(".")[0]
    ids = [c.attempt_id for c in view.neighbours]
    at = ids.index(view.attempt_id) if view.attempt_id in ids else -1
    prev = view.neighbours[at - 1] if at > 0 else None
    nxt = view.neighbours[at + 1] if 0 <= at < len(ids) - 1 else None

    def link(chip: AttemptChip | None, rel: str, arrow: str) -> str:
        if chip is None:
            return f"<span class=here>{arrow} none</span>"
        text = f"{chip.prompt} Attempt {chip.number} ({chip.mode}, {chip.result.replace('_', ' ')})"
        return f"<a rel={rel} href='/attempts/{esc(quote(chip.attempt_id))}'>{arrow} {esc(text)}</a>"

    return (f"<nav class=nav aria-label='walk the packet run'><a rel=up href='/packet-runs/{esc(quote(packet_run))}'>"
            f"↑ packet run {esc(packet_run)}</a>{link(prev, 'prev', '←')}{link(nxt, 'next', '→')}"
            "<span class=here><kbd>[</kbd> <kbd>]</kbd> <kbd>u</kbd></span></nav>")


def followed_by(view: AttemptView) -> str:
    """The Attempt of the same AgentRun that came after this one (its repair, retry…), said first."""
    after = [c for c in view.neighbours if c.prompt == _prompt_of(view.attempt_id) and c.number == view.number + 1]
    if not after:
        return ""
    chip = after[0]
    return (f"<div class=followed>followed by <a href='/attempts/{esc(quote(chip.attempt_id))}'>Attempt "
            f"{chip.number}</a>: {esc(chip.mode)}, {esc(chip.result.replace('_', ' '))}</div>")


def _prompt_of(attempt_id: str) -> str:
    return attempt_id.rpartition(".a")[0].partition(".")[2]


def attempt_html(view: AttemptView, links: DagsterLinks, fragment: bool = False) -> str:
    body = f"<div data-running={'1' if view.running else '0'}>{attempt_body(view)}</div>"
    if fragment:
        return body
    return page(f"Attempt {view.attempt_id}", attempt_header(view, links), body, view.running)


def attempt_body(view: AttemptView) -> str:
    rec = view.record
    parts = [_summary(view), followed_by(view)]
    if rec is not None and rec.target.reason:
        parts.append(f"<div class=meta>why this target: {esc(rec.target.reason)}</div>")
    parts.append("<h2>Conversation</h2>")
    parts.append(conversation(view.events, rec.cwd if rec else None))
    if view.more_events:
        parts.append(f"<div class=note>{view.more_events} more events are not shown here; "
                     f"the events file holds them all</div>")
    if view.running:
        parts.append("<div class='note' id=live>the agent is working; this page follows it</div>")
    parts.append(files_section(view.diff, view.events))
    if rec is not None:
        parts.append(verifier_section(rec))
        parts.append(commit_section(rec, view.commit_messages))
        if rec.failure is not None:
            parts.append(f"<h2>Failure</h2><div class='note bad'>{esc(rec.failure.failure_class)}: "
                         f"{esc(rec.failure.message)}</div>")
        parts.append(f"<h2>Lifecycle</h2><div class=meta>{' → '.join(esc(t.state) for t in rec.transitions)}</div>")
    return "".join(parts)


def _summary(view: AttemptView) -> str:
    rec = view.record
    counters = Counters()
    for event in view.events:
        counters.count(event)
    tokens_in = rec.usage.input_tokens if rec else counters.tokens["input_tokens"]
    tokens_out = rec.usage.output_tokens if rec else counters.tokens["output_tokens"]
    cost = rec.usage.cost_usd if rec else (counters.cost_usd or None)
    items = [f"messages {counters.messages}", f"tool calls {counters.tool_calls}",
             f"tokens in/out {tokens_in}/{tokens_out}", "cost " + (f"${cost:.4f}" if cost is not None else "unknown")]
    if rec is not None:
        items.append(f"duration {rec.duration_s:.1f} s")
        items.append(f"started {rec.started_at[:19].replace('T', ' ')} UTC")
    return "<div class='stats meta'>" + "".join(f"<span>{esc(i)}</span>" for i in items) + "</div>"


# -- the conversation ---------------------------------------------------------------------------------------

def _text_of(value: Any) -> str:
    """A tool's input or output as text: a content list's texts joined, a mapping as indented JSON."""
    if isinstance(value, list) and all(isinstance(v, Mapping) and "text" in v for v in value):
        return "\n".join(str(v.get("text") or "") for v in value)
    if isinstance(value, Mapping | list):
        return json.dumps(value, indent=2, ensure_ascii=False)
    return "" if value is None else str(value)


def _capped(text: str, limit: int = TOOL_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… {len(text) - limit} more characters"


def tool_line(name: str, value: Any) -> str:
    """The one readable line of a tool call: `$ cmd` for a shell, the file for an edit, else its gist."""
    if isinstance(value, Mapping):
        if value.get("command") or value.get("cmd"):
            return "$ " + one_line(value.get("command") or value.get("cmd"), 160)
        for key in ("file_path", "path", "pattern", "url", "query"):
            if value.get(key):
                return one_line(value[key], 160)
    return one_line(value, 160)


def conversation(events: Iterable[Mapping[str, Any]], cwd: str | None = None) -> str:
    """`cwd`: the agent's folder; the files its tools name are shown relative to it."""
    out: list[str] = []
    calls: dict[str, tuple[int, str, Any, Any]] = {}  # call id → (its block's index in `out`, name, input, time)
    stream: list[str] = []

    def flush() -> None:
        if stream:
            out.append(_message("agent", "".join(stream)))
            stream.clear()

    for n, event in enumerate(events):
        kind = event.get("type")
        if kind == "message_streamed":
            stream.append(str(event.get("delta") or ""))
            continue
        flush()
        ts = event.get("ts")
        if kind == "prompt_sent":
            out.append(_message("user", str(event.get("text") or ""), "Prompt as sent", ts))
        elif kind == "resume_started":
            out.append(_message("user", str(event.get("prompt") or "Continue"), "Resumed the session with", ts))
        elif kind == "steer_received":  # a person's message into the running session (awp control steer)
            refused = "" if event.get("delivered", True) else f" (refused: {event.get('refused') or ''})"
            out.append(_message("user", str(event.get("text") or ""), f"Steer from {event.get('author') or '?'}"
                                + refused, ts))
        elif kind == "message_received" and str(event.get("text") or "").strip():
            out.append(_message("agent", str(event["text"]), ts=ts))
        elif kind == "thinking" and event.get("text"):
            out.append(f"<div class=thinking>thinking: {esc(one_line(event['text'], 400))}</div>")
        elif kind == "tool_call_started":
            call = str(event.get("call_id") or f"n{n}")
            name = str(event.get("name") or "tool")
            calls[call] = (len(out), name, event.get("input"), ts)
            out.append(_tool(call, name, event.get("input"), None, None, cwd, ts))
        elif kind in ("tool_call_completed", "tool_call_failed"):
            call = str(event.get("call_id") or "")
            failed = kind == "tool_call_failed"
            result = event.get("error") if failed else event.get("output")
            if call in calls:
                index, name, value, at = calls[call]
                out[index] = _tool(call, name, value, result, failed, cwd, at)
            else:
                out.append(_tool(call or f"n{n}", str(event.get("name") or "tool"), None, result, failed, ts=ts))
        elif kind == "rate_limit_notice":
            info = ", ".join(f"{k}: {event[k]}" for k in ("status", "resets_at", "retry_in_ms") if event.get(k))
            out.append(f"<div class=note>rate limit{(' (' + esc(info) + ')') if info else ''}</div>")
        elif kind in ("run_failed", "error_occurred", "run_cancelled"):
            label = {"run_failed": "run failed", "error_occurred": "error", "run_cancelled": "run cancelled"}[kind]
            cls = f" ({event['failure_class']})" if event.get("failure_class") else ""
            message = event.get("message") or event.get("error") or ""
            out.append(f"<div class='note bad'>{esc(label + cls)}{(': ' + esc(message)) if message else ''}</div>")
        elif kind == "run_completed":
            out.append("<div class='note ok'>the agent's session ended</div>")
        elif kind == "tree_set_aside":
            out.append(f"<div class=note>changes left in {esc(event.get('repo'))} were set aside as git stash "
                       f"{esc(event.get('sha'))}</div>")
    flush()
    return "".join(out) or "<div class=meta>no events yet</div>"


def _message(who: str, text: str, label: str | None = None, ts: Any = None) -> str:
    """A turn of the chat, its text rendered as Markdown (prompts and agents both write it)."""
    title = label or ("Prompt" if who == "user" else "Agent")
    return (f"<div class='msg md {who}'><div class=who>{esc(title)}{clock(ts)}</div>"
            f"{markdown_html(text.strip())}</div>")


def _tool(call: str, name: str, value: Any, result: Any, failed: bool | None, cwd: str | None = None,
          ts: Any = None) -> str:
    mark = ("<span class=run-t>…</span>" if failed is None else
            "<span class=bad-t>✗</span>" if failed else "<span class=ok-t>✓</span>")
    ident = "tool-" + "".join(c if c.isalnum() else "-" for c in call)
    io = []
    if value is not None:
        io.append(f"<h4>input</h4><pre>{esc(_capped(_text_of(value)))}</pre>")
    if result is not None:
        io.append(f"<h4>{'error' if failed else 'output'}</h4><pre>{esc(_capped(_text_of(result)))}</pre>")
    line = tool_line(name, value)
    if cwd and line.startswith(cwd.rstrip("/") + "/"):
        line = line[len(cwd.rstrip("/")) + 1:]
    return (f"<details class=tool id='{esc(ident)}' data-tool='{esc(name)}'><summary>{mark} <span class=name>"
            f"{esc(name)}</span>{esc(line)}{clock(ts)}</summary><div class=io>{''.join(io)}</div></details>")


# -- files, verifier, commit --------------------------------------------------------------------------------

def files_section(diff: AttemptDiff | None, events: Sequence[Mapping[str, Any]]) -> str:
    head = "<h2>Files changed</h2>"
    if diff is None:
        counted = [f for e in events if e.get("type") == "files_changed" for f in e.get("files") or []]
        if not counted:
            return head + "<div class=meta>no diff stored yet</div>"
        return head + "".join(f"<div class=meta>{esc(f.get('path'))} +{f.get('added') or 0} "
                              f"−{f.get('removed') or 0}</div>" for f in counted)
    if not diff.files:
        return head + "<div class=meta>no changes</div>"
    sources = ", ".join(f"{r.repo}: {r.source} {r.to[:12]}" for r in diff.repos)
    parts = [head, f"<div class=meta>{esc(sources)}</div>"]
    parts += [file_diff(f) for f in diff.files]
    if diff.left_out:
        parts.append(f"<div class=note>{diff.left_out} more files changed; their diffs were not stored</div>")
    return "".join(parts)


def file_diff(file: FileDiff) -> str:
    status = {"A": "new", "D": "deleted", "B": "binary", "M": ""}[file.status]
    lines = file.patch.split("\n") if file.patch else []
    shown, rest = lines[:DIFF_LINES_SHOWN], lines[DIFF_LINES_SHOWN:]
    body = "".join(_diff_line(line) for line in shown)
    if rest:
        body += (f"<details><summary>{counted(len(rest), 'more line', 'more lines')}</summary>"
                 + "".join(_diff_line(line) for line in rest) + "</details>")
    cut = f"<div class=note>{esc(file.cut)}</div>" if file.cut else ""
    return (f"<div class=file data-path='{esc(file.path)}'><div class=head>{esc(file.repo)}: <b>{esc(file.path)}</b>"
            f" {esc(status)} <span class=ok-t>+{file.added}</span> <span class=bad-t>−{file.removed}</span></div>"
            f"<div class=diff>{body}</div>{cut}</div>")


def _diff_line(line: str) -> str:
    kind = "add" if line.startswith("+") else "del" if line.startswith("-") else "hunk" if line.startswith("@@") \
        else "ctx"
    return f"<div class={kind}>{esc(line) or ' '}</div>"


def verifier_section(rec: AttemptRecord) -> str:
    report = rec.verifier
    if report is None:
        return "<h2>Verification</h2><div class=meta>no contract</div>"
    rows = []
    for item in report.items:
        ok = item.passed and item.fault is None
        mark = ("<span class=ok-t>pass</span>" if ok else
                f"<span class=bad-t>{'FAULT' if item.fault else 'FAIL'}</span>")
        details = "\n".join(item.details[:20])
        rows.append(f"<tr data-passed='{'1' if ok else '0'}'><td>{mark}</td><td>{esc(item.readable)}</td>"
                    f"<td>{f'<pre>{esc(details)}</pre>' if details else ''}</td></tr>")
    verdict = "<span class=ok-t>passed</span>" if report.passed else "<span class=bad-t>not met</span>"
    return (f"<h2>Verification: {verdict}</h2><table><tr><th></th><th>item</th><th>details</th></tr>"
            + "".join(rows) + "</table>")


def commit_section(rec: AttemptRecord, messages: Mapping[str, str]) -> str:
    parts = ["<h2>Commit</h2>"]
    if not rec.commits:
        saved = ", ".join(f"{repo}: checkpoint {sha[:12]}" for repo, sha in rec.wip.items())
        parts.append(f"<div class=meta>no commit{('; partial work saved as ' + esc(saved)) if saved else ''}</div>")
    for commit in rec.commits:
        sha = commit.sha or ""
        parts.append(f"<div class=meta>{esc(commit.repo)}: {esc(commit.status)} <code>{esc(sha)}</code></div>")
        if commit.repo in messages:
            parts.append(f"<pre class=commit>{esc(messages[commit.repo])}</pre>")
    return "".join(parts)


# -- the AgentRun page --------------------------------------------------------------------------------------

def agent_run_html(agent_run: str, views: Sequence[AttemptView], links: DagsterLinks) -> str:
    rows = []
    for view in views:
        rec = view.record
        mode = rec.identity.mode if rec else str(view.started.get(tags.MODE) or "")
        target = "/".join(str(p) for p in ((rec.target.provider, rec.target.account, rec.target.model) if rec else
                          (view.started.get(tags.PROVIDER), view.started.get(tags.ACCOUNT),
                           view.started.get(tags.MODEL))) if p)
        cost = f"${rec.usage.cost_usd:.4f}" if rec and rec.usage.cost_usd is not None else ""
        unmet = "; ".join(i.readable for i in rec.verifier.items if not i.passed) if rec and rec.verifier else ""
        rows.append(f"<tr><td><a href='/attempts/{esc(quote(view.attempt_id))}'>Attempt {view.number}</a></td>"
                    f"<td>{esc(mode)}</td><td>{result_badge(_result(view))}</td><td>{esc(target)}</td>"
                    f"<td>{esc(f'{rec.duration_s:.1f} s') if rec else ''}</td><td>{esc(cost)}</td>"
                    f"<td>{esc(unmet)}</td><td><a href='{esc(links.run(view.run_id))}'>{esc(view.run_id[:8])}</a>"
                    "</td></tr>")
    running = any(v.running for v in views)
    packet_run, _, prompt = agent_run.partition(".")
    named = next((v.record.prompt_name for v in views if v.record is not None), "")
    packet = next((v.packet for v in views if v.packet), "")
    header = (f"<h1>AgentRun of prompt {esc(prompt)} {esc(named)}</h1><div class=meta>packet {esc(packet or '?')} · "
              f"packet run {esc(packet_run)} · {esc(agent_run)}</div><nav class=nav><a rel=up href='/packet-runs/"
              f"{esc(quote(packet_run))}'>↑ packet run {esc(packet_run)}</a><a href='"
              f"{esc(links.runs_tagged(tags.PACKET_RUN, packet_run))}'>its runs in Dagster</a></nav>")
    body = (f"<div data-running={'1' if running else '0'}><table><tr><th>Attempt</th><th>mode</th><th>result</th>"
            "<th>target</th><th>duration</th><th>cost</th><th>unmet</th><th>run</th></tr>" + "".join(rows)
            + "</table></div>")
    return page(f"AgentRun {agent_run}", header, body, running)
