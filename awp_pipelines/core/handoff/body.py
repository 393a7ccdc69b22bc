"""The pull request's title and body, from the packet run's status report (what `awp status` reads): each prompt,
its Attempts (mode, outcome, target, cost, a link to the Attempt's page), its last verifier report, the totals."""

from __future__ import annotations

from collections.abc import Callable

from awp_pipelines.core.engine.status_report import AttemptSummary, PromptStatus, StatusReport
from awp_pipelines.core.verifiers.report import VerifierReport

# GitHub refuses a body over 65,536 characters; GitLab's limit is higher. What does not fit is cut, and said so.
MAX_BODY = 60_000
# The body's first line names the packet: a person who finds the pull request knows what wrote it.
MARKER = "<!-- awp-pipelines hand-off: packet {packet} -->"

PageUrl = Callable[[str], str]  # Attempt id → its page (`awp serve`)


def title_of(report: StatusReport) -> str:
    totals = report.totals
    return (f"AWP {report.packet}: {totals.completed}/{totals.prompts} prompts completed "
            f"(packet run {report.packet_run})")


def body_of(report: StatusReport, page_url: PageUrl, branch: str) -> str:
    totals = report.totals
    lines = [MARKER.format(packet=report.packet), "",
             f"Packet **{report.packet}**, packet run `{report.packet_run}`: **{report.state}**"
             + (f" ({report.reason})" if report.reason else "") + ".", "",
             f"{totals.completed}/{totals.prompts} prompts completed in {totals.attempts} Attempts, "
             f"{_duration(totals.duration_s)}, {totals.tokens_in:,} tokens in / {totals.tokens_out:,} out, "
             f"cost {_cost(totals.cost_usd)}. Branch `{branch}`.", ""]
    for prompt in report.prompts:
        if prompt.state != "not_selected":
            lines += _prompt_section(prompt, page_url)
    lines += ["", "<sub>Written by AWP Pipelines from the packet run's records; each packet run of this packet "
              "that hands off updates this description.</sub>"]
    body = "\n".join(lines)
    if len(body) <= MAX_BODY:
        return body
    return body[:MAX_BODY].rsplit("\n", 1)[0] + "\n\n… (cut: `awp status` shows the rest)"


def _prompt_section(prompt: PromptStatus, page_url: PageUrl) -> list[str]:
    cost = [a.cost_usd for a in prompt.attempts if a.cost_usd is not None]
    lines = [f"### {prompt.prompt} {prompt.name}: {prompt.state}", ""]
    if prompt.reason and prompt.state != "completed":
        lines += [f"{prompt.reason}", ""]
    lines += [f"{len(prompt.attempts)} Attempt{'s' if len(prompt.attempts) != 1 else ''}, "
              f"cost {_cost(round(sum(cost), 6) if cost else None)}.", "",
              "| Attempt | mode | outcome | target | duration | cost |", "|---|---|---|---|---|---|"]
    lines += [_attempt_row(a, page_url) for a in prompt.attempts]
    lines += ["", *_verifier_lines(prompt.verifier), ""]
    return lines


def _attempt_row(attempt: AttemptSummary, page_url: PageUrl) -> str:
    outcome = attempt.result + (f" ({attempt.failure_class})" if attempt.failure_class else "")
    target = "/".join(part or "–" for part in (attempt.provider, attempt.account or "", attempt.model))
    duration = _duration(attempt.duration_s) if attempt.duration_s is not None else "–"
    return (f"| [{_cell(attempt.attempt)}]({page_url(attempt.attempt)}) | {attempt.mode} | {_cell(outcome)} | "
            f"{_cell(target)} | {duration} | {_cost(attempt.cost_usd)} |")


def _verifier_lines(report: VerifierReport | None) -> list[str]:
    if report is None or not report.items:
        return ["Verifier: no report."]
    passed = sum(item.passed for item in report.items)
    lines = [f"Verifier (last report): {passed}/{len(report.items)} items passed."]
    lines += [f"- {'✅' if item.passed else '❌'} {_cell(item.label)}"
              + (f": {_cell(item.details[0])}" if item.details and not item.passed else "") for item in report.items]
    return lines


def _cell(text: str) -> str:
    """A table cell or list item on one line: `|` and newlines would break the Markdown table."""
    return " ".join(text.split()).replace("|", "\\|")


def _cost(value: float | None) -> str:
    return f"${value:.4f}" if value is not None else "not reported"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
