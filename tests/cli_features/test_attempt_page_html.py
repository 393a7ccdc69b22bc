"""The Attempt page's HTML (cli_features/attempt_page.py), rendered directly from events and a stored diff."""

from __future__ import annotations

import pytest

from awp_pipelines.cli_features import attempt_page
from awp_pipelines.cli_features.attempt_page import (
    AttemptChip,
    AttemptView,
    DagsterLinks,
    agent_run_html,
    attempt_html,
    conversation,
    file_diff,
)
from awp_pipelines.cli_features.run_index import PacketRunView, index_html, packet_run_html
from awp_pipelines.core.records.diffs import FileDiff

SECRET = "sk-ant-api03-" + "Z" * 40


def test_each_tool_call_is_one_line_that_opens_to_its_input_and_output_and_text_is_escaped() -> None:
    html = conversation([
        {"type": "prompt_sent", "text": "Write <b>it</b>"},
        {"type": "message_received", "text": f"done with {SECRET}"},
        {"type": "tool_call_started", "name": "Bash", "input": {"command": "ls -la"}, "call_id": "t1"},
        {"type": "tool_call_completed", "name": "tool", "output": [{"type": "text", "text": "a.txt"}], "call_id": "t1"},
        {"type": "tool_call_started", "name": "Edit", "input": {"file_path": "/w/a.txt"}, "call_id": "t2"},
        {"type": "tool_call_failed", "name": "tool", "error": "no such file", "call_id": "t2"}], cwd="/w")
    assert "Write &lt;b&gt;it&lt;/b&gt;" in html and "<b>it" not in html
    assert SECRET not in html and "[REDACTED" in html
    assert html.count("<details class=tool") == 2  # a result joins its call: one line each
    assert "$ ls -la</summary>" in html and "a.txt</pre>" in html
    assert "</span>a.txt</summary>" in html and "<h4>error</h4><pre>no such file</pre>" in html


def test_a_long_file_diff_shows_its_head_and_the_rest_one_click_away(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(attempt_page, "DIFF_LINES_SHOWN", 3)
    patch = "@@ -0,0 +1,5 @@\n" + "\n".join(f"+line {n} <x>" for n in range(5))
    html = file_diff(FileDiff(repo="app", path="a.txt", status="A", added=5, patch=patch, cut="2 lines not stored"))
    shown, rest = html.split("<details>")
    assert shown.count("<div class=add>") == 2 and "<div class=hunk>" in shown
    assert "<summary>3 more lines</summary>" in rest and rest.count("<div class=add>") == 3
    assert "+line 4 &lt;x&gt;" in rest and "2 lines not stored" in html


def test_a_running_attempt_streams_and_links_into_dagster() -> None:
    view = AttemptView(attempt_id="pr-1.01.a1", number=1, run_id="r" * 36, asset_key=["demo", "01"],
                       started={"awp/mode": "run", "awp/model": "m"}, record=None, events=[], diff=None,
                       running=True)
    html = attempt_html(view, DagsterLinks("http://dag:3000"))
    assert "data-result='running'" in html and "id=main data-running=1" in html
    assert "href='http://dag:3000/runs/" + "r" * 36 + "'" in html and "http://dag:3000/assets/demo/01" in html
    assert "tag%3Aawp%2Fpacket_run%3Dpr-1" in html and "/agent-runs/pr-1.01" in html
    assert "new EventSource(location.pathname+'?part=stream')" in html  # server-sent events, not a poll


def test_a_persons_steer_reads_as_their_message_in_the_conversation() -> None:
    html = conversation([
        {"type": "prompt_sent", "text": "Write the docs."},
        {"type": "steer_received", "text": "check the <README> first", "author": "ada", "delivered": True},
        {"type": "steer_received", "text": "and again", "author": "bob", "delivered": False,
         "refused": "recovery.max_steers (1) reached"},
    ])
    assert "Steer from ada</div><p>check the &lt;README&gt; first</p>" in html
    assert "Steer from bob (refused: recovery.max_steers (1) reached)" in html



def test_a_prompt_renders_as_markdown_with_its_html_as_text_and_no_script_link() -> None:
    html = conversation([{"type": "prompt_sent", "ts": "2026-12-02T05:39:16.009Z",
                          "text": "# Mission\n\nWrite `a.txt`.\n\n<script>alert(1)</script> [x](javascript:alert(1))"},
                         {"type": "tool_call_started", "ts": "2026-12-02T05:39:17.000Z", "name": "Bash",
                          "input": {"command": "ls"}, "call_id": "c"}])
    assert "<h1>Mission</h1>" in html and "<code>a.txt</code>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<a " not in html and "[x](javascript:alert(1))" in html  # refused as a link: it stays text
    # Each turn and tool call carries its time.
    assert ">05:39:16</time>" in html and ">05:39:17</time>" in html


CHIPS = [AttemptChip("pr-1.01.a1", 1, "01", "Greet", "run", "completed"),
         AttemptChip("pr-1.02.a1", 1, "02", "Log", "run", "verification_failed"),
         AttemptChip("pr-1.03.a1", 1, "03", "Status", "run", "provider_failed"),
         AttemptChip("pr-1.02.a2", 2, "02", "Log", "repair", "completed")]


def _view(attempt: str, number: int) -> AttemptView:
    return AttemptView(attempt_id=attempt, number=number, run_id="r1", asset_key=["demo", "02"], started={},
                       record=None, events=[], diff=None, neighbours=CHIPS, packet="demo")


def test_an_attempt_page_walks_its_packet_run_and_names_the_attempt_that_followed_it() -> None:
    html = attempt_html(_view("pr-1.02.a1", 1), DagsterLinks("http://dag:3000"))
    assert "rel=prev href='/attempts/pr-1.01.a1'" in html and "rel=next href='/attempts/pr-1.03.a1'" in html
    assert "rel=up href='/packet-runs/pr-1'" in html and "packet demo" in html
    assert "followed by <a href='/attempts/pr-1.02.a2'>Attempt 2</a>: repair, completed" in html
    last = attempt_html(_view("pr-1.02.a2", 2), DagsterLinks("http://dag:3000"))
    assert "rel=next" not in last and "followed by" not in last  # the last Attempt: nothing after it


def test_the_front_door_lists_packet_runs_newest_first_with_state_chips_and_filters() -> None:
    runs = [PacketRunView("demo", "pr-2", 2_000, CHIPS[:1]), PacketRunView("demo", "pr-1", 1_000, CHIPS),
            PacketRunView("other", "pr-9", 500, [])]
    html = index_html(runs)
    assert html.index("pr-2") < html.index("pr-1") and "<h2>other</h2>" in html
    assert "class='chip bad' href='/attempts/pr-1.02.a1'" in html and "02·a2 ✓" in html
    assert "id=filter" in html
    only = index_html(runs, "other")
    assert "pr-9" in only and "pr-1'" not in only
    page = packet_run_html(runs[1], DagsterLinks("http://dag:3000"))
    assert "/agent-runs/pr-1.02'>02 Log</a>" in page and page.count("class='chip") == 4


@pytest.mark.parametrize(("lasts", "state"), [
    ((("completed", "waiting — repair 1/2: unmet verifier items"),), "running"),  # `awp serve` said "not done"
    ((("provider_failed", "waiting — provider_rate_limit: retry 1/5"),), "running"),
    ((("provider_failed", "failed — provider_config_claim on claude: refused, not retried"),), "failed"),
    ((("completed", "completed — attempt 2 met the contract"),), "completed"),
    ((("running", ""),), "running"),
    ((("interrupted", ""),), "interrupted"),
    ((("provider_failed", "stopped — the user stopped it"),), "stopped"),
    ((("completed", ""), ("verification_failed", "")), "failed"),  # stored before the state was: by the result
])
def test_a_packet_runs_state_is_said_in_the_words_of_awp_status(lasts: tuple[tuple[str, str], ...],
                                                                 state: str) -> None:
    """One vocabulary: the state `awp status` gives the packet run, from what each prompt's last Attempt left."""
    chips = [AttemptChip(f"pr-1.0{i}.a1", 1, f"0{i}", "P", "run", result, stored)
             for i, (result, stored) in enumerate(lasts, start=1)]
    view = PacketRunView("demo", "pr-1", 1_000, chips)
    assert view.state() == state and f"<td>{state}</td>" in index_html([view])


def test_the_agent_run_page_names_its_packet_and_prompt() -> None:
    view = _view("pr-1.02.a1", 1)
    html = agent_run_html("pr-1.02", [view], DagsterLinks("http://dag:3000"))
    assert "AgentRun of prompt 02" in html and "packet demo" in html and "rel=up href='/packet-runs/pr-1'" in html
