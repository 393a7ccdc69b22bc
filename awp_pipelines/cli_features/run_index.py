"""`awp serve`'s front door and packet-run pages: every packet, its packet runs newest first, and in each the
prompts with their Attempts as state chips (each a link to its page). Pure: it renders what it is given; the
filter box hides rows client-side (`/` focuses it) and `?q=` filters the same rows on the server."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import cast, get_args
from urllib.parse import quote

from awp_pipelines.cli_features.attempt_page import AttemptChip, DagsterLinks, esc, page
from awp_pipelines.core.decisions.agent_run import AgentRunState, AgentRunStatus, PacketRunState, packet_run_state
from awp_pipelines.core.records import run_tags as tags


@dataclass
class PacketRunView:
    """One packet run for the index: its packet, when a run last joined it, its Attempts in start order."""

    packet: str
    packet_run: str
    at_ms: int
    attempts: list[AttemptChip] = field(default_factory=list)

    def prompts(self) -> list[tuple[str, str, list[AttemptChip]]]:
        """(prompt, name, its Attempts by number), in the order the prompts first started."""
        by_prompt: dict[str, list[AttemptChip]] = {}
        for chip in self.attempts:
            by_prompt.setdefault(chip.prompt, []).append(chip)
        return [(p, chips[0].prompt_name, sorted(chips, key=lambda c: c.number)) for p, chips in by_prompt.items()]

    def state(self) -> PacketRunState:
        """The packet run's state in `awp status`'s words, from each prompt's AgentRun as its last Attempt left it
        (running while one is active or waits for its retry or repair; interrupted, stopped, completed, blocked,
        failed), by the rule status uses (agent_run.packet_run_state)."""
        return packet_run_state({p: agent_run_of(chips[-1]) for p, _, chips in self.prompts()})[0]

    def filter_text(self) -> str:
        return " ".join([self.packet, self.packet_run, self.state(),
                         *(f"{c.prompt} {c.prompt_name} {c.mode} {c.result}" for c in self.attempts)])


def agent_run_of(last: AttemptChip) -> AgentRunStatus:
    """A prompt's AgentRun from its last Attempt: running while that runs, else the state stored with it (an
    Attempt stored before it was, by its result)."""
    if last.result in ("running", "interrupted"):
        return AgentRunStatus("active" if last.result == "running" else "interrupted")
    word = last.agent_run_state.split(" — ", 1)[0].strip()
    if word in get_args(AgentRunState):
        return AgentRunStatus(cast(AgentRunState, word))
    return AgentRunStatus("completed" if last.result == "completed" else "failed")


def when(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC") if at_ms else ""


def _filter_box(query: str) -> str:
    return (f"<form method=get role=search><label>filter <input id=filter name=q value='{esc(query)}' "
            "placeholder='packet, prompt, state…' autocomplete=off></label> <span class=meta>press <kbd>/</kbd>"
            "</span></form>")


def index_html(runs: Sequence[PacketRunView], query: str = "") -> str:
    """Every packet with its packet runs (newest first), each a row of its prompts' Attempt chips."""
    shown = [r for r in runs if not query or query.lower() in r.filter_text().lower()]
    parts: list[str] = []
    for packet in dict.fromkeys(r.packet for r in shown):
        rows = [_row(r) for r in shown if r.packet == packet]
        parts.append(f"<section data-filter='{esc(' '.join(r.filter_text() for r in shown if r.packet == packet))}'>"
                     f"<h2>{esc(packet)}</h2><table class=prun><tr><th>packet run</th><th>when</th><th>state</th>"
                     f"<th>prompts and their Attempts</th></tr>{''.join(rows)}</table></section>")
    if not parts:
        parts.append("<p class=meta>" + ("nothing matches the filter" if runs else
                                          "no packet run in this instance yet (`awp run` or the UI starts one)")
                     + "</p>")
    header = ("<h1>AWP: packets and their runs</h1><div class=meta>newest first; each chip is an Attempt "
              "(✓ completed, ✗ did not, … running)</div>" + _filter_box(query))
    return page("awp serve", header, "".join(parts))


def _row(run: PacketRunView) -> str:
    prompts = "".join(f"<div><span class=meta title='{esc(name)}'>{esc(p)}</span> "
                      + "".join(c.html() for c in chips) + "</div>" for p, name, chips in run.prompts())
    return (f"<tr data-filter='{esc(run.filter_text())}'><td><a href='/packet-runs/{esc(quote(run.packet_run))}'>"
            f"{esc(run.packet_run)}</a></td><td class=when>{esc(when(run.at_ms))}</td><td>{esc(run.state())}</td>"
            f"<td>{prompts or '<span class=meta>no Attempt yet</span>'}</td></tr>")


def packet_run_html(run: PacketRunView, links: DagsterLinks) -> str:
    """One packet run: each prompt with its name, its AgentRun and every Attempt, in the order they started."""
    rows = []
    for prompt, name, chips in run.prompts():
        agent_run = tags.agent_run_id(run.packet_run, prompt)
        rows.append(f"<tr data-filter='{esc(prompt + ' ' + name + ' ' + ' '.join(c.result for c in chips))}'>"
                    f"<td><a href='/agent-runs/{esc(quote(agent_run))}'>{esc(prompt)} {esc(name)}</a></td>"
                    f"<td>{''.join(c.html() for c in chips)}</td><td>{esc(chips[-1].result.replace('_', ' '))}</td>"
                    "</tr>")
    header = (f"<h1>Packet run {esc(run.packet_run)}</h1><div class=meta>packet {esc(run.packet)} · "
              f"{esc(when(run.at_ms))} · {esc(run.state())}</div><nav class=nav><a rel=up href='/'>↑ all packets</a>"
              f"<a href='{esc(links.runs_tagged(tags.PACKET_RUN, run.packet_run))}'>its runs in Dagster</a></nav>")
    body = ("<table class=prun><tr><th>prompt</th><th>Attempts (oldest first)</th><th>last result</th></tr>"
            + "".join(rows) + "</table>") if rows else "<p class=meta>no Attempt yet</p>"
    return page(f"Packet run {run.packet_run}", header, body)
