"""The Attempt page's HTML (cli_features/attempt_page.py), rendered directly from events and a stored diff."""

from __future__ import annotations

from awp_pipelines.cli_features import attempt_page
from awp_pipelines.cli_features.attempt_page import AttemptView, DagsterLinks, attempt_html, conversation, file_diff
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


def test_a_running_attempt_polls_and_links_into_dagster() -> None:
    view = AttemptView(attempt_id="pr-1.01.a1", number=1, run_id="r" * 36, asset_key=["demo", "01"],
                       started={"awp/mode": "run", "awp/model": "m"}, record=None, events=[], diff=None,
                       running=True)
    html = attempt_html(view, DagsterLinks("http://dag:3000"))
    assert "data-result='running'" in html and "id=main data-running=1" in html
    assert "href='http://dag:3000/runs/" + "r" * 36 + "'" in html and "http://dag:3000/assets/demo/01" in html
    assert "tag%3Aawp%2Fpacket_run%3Dpr-1" in html and "/agent-runs/pr-1.01" in html


def test_a_persons_steer_reads_as_their_message_in_the_conversation() -> None:
    html = conversation([
        {"type": "prompt_sent", "text": "Write the docs."},
        {"type": "steer_received", "text": "check the <README> first", "author": "ada", "delivered": True},
        {"type": "steer_received", "text": "and again", "author": "bob", "delivered": False,
         "refused": "recovery.max_steers (1) reached"},
    ])
    assert "Steer from ada</div>check the &lt;README&gt; first" in html
    assert "Steer from bob (refused: recovery.max_steers (1) reached)" in html
