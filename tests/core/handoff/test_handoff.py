"""The hand-off's pure core: a real push to a local bare remote, the forge's API recorded with `responses`.
The packet run's records come as a status report made here (the end-to-end run is tests/e2e/test_handoff_runs.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import responses
from pydantic import ValidationError
from repo_paths import REPO_ROOT

from awp_pipelines.core.engine.status_report import AttemptSummary, PromptStatus, StatusReport, totals_of
from awp_pipelines.core.handoff.body import body_of, title_of
from awp_pipelines.core.handoff.handoff import hand_off
from awp_pipelines.core.handoff.push import token_env
from awp_pipelines.core.packet.model.handoff import HandoffSpec
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.records.handoff_record import HandoffResult
from tests.forge_support import (
    GITHUB_PULLS,
    GITLAB_MRS,
    TOKEN,
    TOKEN_VAR,
    ForgeDemo,
    forge_demo,
    git_out,
    github_open_then_update,
    github_pr,
    gitlab_mr,
    sent,
)


def _page(attempt: str) -> str:
    return f"http://pages.test/attempts/{attempt}"


def _report(packet_run: str = "pr-0001", state: str = "completed") -> StatusReport:
    def attempt(prompt: str, number: int, mode: str, result: str, cost: float | None = None) -> AttemptSummary:
        return AttemptSummary(attempt=f"{packet_run}.{prompt}.a{number}", number=number, mode=mode,
                              provider="simulated", model="simulated-demo", result=result, duration_s=1.5,
                              cost_usd=cost, failure_class="verification_failed" if result != "completed" else None)

    prompts = [PromptStatus(prompt="01", name="Write the greeting", state="completed",
                            attempts=[attempt("01", 1, "run", "completed", 0.01)]),
               PromptStatus(prompt="02", name="Write the changelog", state=state,  # type: ignore[arg-type]
                            attempts=[attempt("02", 1, "run", "verification_failed"),
                                      attempt("02", 2, "repair", "completed", 0.02)])]
    return StatusReport(packet="demo", packet_run=packet_run, state=state,  # type: ignore[arg-type]
                        prompts=prompts, totals=totals_of(prompts, 3))


@pytest.fixture
def forged(demo_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ForgeDemo:
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    return forge_demo(demo_copy, tmp_path)


def _hand_off(demo: ForgeDemo, report: StatusReport, automatic: bool = True) -> HandoffResult:
    results = hand_off(load_packet(demo.packet), load_catalog(demo.providers), report, _page, automatic=automatic)
    assert len(results) == 1
    return results[0]


def test_first_hand_off_opens_the_pull_request_and_the_next_updates_it(forged: ForgeDemo) -> None:
    with responses.RequestsMock() as forge:
        github_open_then_update(forge)
        first = _hand_off(forged, _report("pr-0001"))
        (forged.workspace / "more.md").write_text("more\n")
        git_out(forged.workspace, "add", "more.md")
        git_out(forged.workspace, "commit", "--quiet", "-m", "more")
        second = _hand_off(forged, _report("pr-0002"))
        calls = [(c.request.method, c.request.url) for c in forge.calls]
        bodies = [sent(c) for c in forge.calls if c.request.method in ("POST", "PATCH")]
        auth = {c.request.headers["Authorization"] for c in forge.calls}
    assert (first.action, first.number, first.url) == ("opened", 7, "https://github.com/acme/docs/pull/7")
    assert second.action == "updated" and second.url == first.url
    found = f"{GITHUB_PULLS}?head=acme%3Aawp%2Fdemo%2Fhandoff&state=open"
    assert calls == [("GET", found), ("POST", GITHUB_PULLS), ("GET", found), ("PATCH", f"{GITHUB_PULLS}/7")]
    assert (bodies[0]["head"], bodies[0]["base"], bodies[0]["draft"]) == ("awp/demo/handoff", "main", False)
    assert "pr-0001" in bodies[0]["title"] and "pr-0002" in bodies[1]["title"] and "pr-0002" in bodies[1]["body"]
    assert auth == {f"Bearer {TOKEN}"}
    # The branch really is on the remote, at the tree's HEAD each time; the token is nowhere on disk.
    assert first.commit != second.commit and forged.remote_branch() == second.commit == forged.head()
    assert TOKEN not in (forged.workspace / ".git" / "config").read_text()
    assert TOKEN not in first.model_dump_json() + second.model_dump_json()


def test_gitlab_merge_request_is_opened_then_updated(demo_copy: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    demo = forge_demo(demo_copy, tmp_path, forge="gitlab", draft=True)
    with responses.RequestsMock() as forge:
        forge.get(GITLAB_MRS, json=[])
        forge.post(GITLAB_MRS, json=gitlab_mr(3), status=201)
        forge.get(GITLAB_MRS, json=[gitlab_mr(3)])
        forge.put(f"{GITLAB_MRS}/3", json=gitlab_mr(3))
        first = _hand_off(demo, _report("pr-0001"))
        second = _hand_off(demo, _report("pr-0002"))
        calls = [(c.request.method, c.request.url.split("?")[0]) for c in forge.calls]
        created, updated = sent(forge.calls[1]), sent(forge.calls[3])
        tokens = {c.request.headers["PRIVATE-TOKEN"] for c in forge.calls}
        params = forge.calls[0].request.params
    assert (first.action, second.action, second.url) == ("opened", "updated",
                                                        "https://gitlab.com/acme/docs/-/merge_requests/3")
    assert calls == [("GET", GITLAB_MRS), ("POST", GITLAB_MRS), ("GET", GITLAB_MRS), ("PUT", f"{GITLAB_MRS}/3")]
    assert params == {"source_branch": "awp/demo/handoff", "state": "opened"}
    assert (created["source_branch"], created["target_branch"]) == ("awp/demo/handoff", "main")
    assert created["title"].startswith("Draft: ") and updated["title"].startswith("Draft: ")  # stays a draft
    assert "pr-0002" in updated["description"] and tokens == {TOKEN}


def test_a_refused_pull_request_is_one_redacted_line_and_the_pushed_branch_stays(forged: ForgeDemo) -> None:
    with responses.RequestsMock() as forge:
        forge.get(GITHUB_PULLS, json=[])
        forge.post(GITHUB_PULLS, status=422, json={"message": "Validation Failed", "errors": [
            {"message": f"No commits between main and awp/demo/handoff (token {TOKEN})"}]})
        result = _hand_off(forged, _report())
    assert result.action == "failed" and result.url is None
    assert result.message.startswith("open the pull request: HTTP 422: Validation Failed; No commits between")
    assert TOKEN not in result.message and "\n" not in result.message
    assert forged.remote_branch() == forged.head()  # lose nothing: the push stands, `awp handoff` retries the rest


def test_a_push_the_remote_refuses_fails_before_any_api_call(forged: ForgeDemo, tmp_path: Path) -> None:
    # Someone pushed to the head branch a commit this tree lacks: a fast-forward only, never overwritten.
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "--quiet", str(forged.origin), str(other)], check=True)
    git_out(other, "-c", "user.name=R", "-c", "user.email=r@x.invalid", "commit", "--quiet", "--allow-empty",
            "-m", "reviewer's fix")
    git_out(other, "push", "--quiet", "origin", "HEAD:refs/heads/awp/demo/handoff")
    theirs = forged.remote_branch()
    with responses.RequestsMock() as forge:
        result = _hand_off(forged, _report())
        assert not forge.calls
    assert result.action == "failed" and result.message.startswith("push to origin awp/demo/handoff failed:")
    assert "[rejected]" in result.message and "hint:" not in result.message and forged.remote_branch() == theirs


def test_a_missing_token_or_account_says_which(forged: ForgeDemo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_VAR)
    unset = _hand_off(forged, _report())
    assert unset.action == "failed" and unset.message == (
        f"{TOKEN_VAR} (account forge-bot's credential) is not set in AWP's environment")
    forged.providers.write_text("accounts: {}\n")
    assert "account 'forge-bot' is not in providers.yaml" in _hand_off(forged, _report()).message
    assert forged.remote_branch() is None


def test_when_completed_skips_an_unfinished_packet_run_unless_asked_by_hand(forged: ForgeDemo) -> None:
    failed = _report(state="failed")
    skipped = _hand_off(forged, failed)
    assert skipped.action == "skipped" and "the packet run is failed" in skipped.message
    with responses.RequestsMock() as forge:
        forge.get(GITHUB_PULLS, json=[])
        forge.post(GITHUB_PULLS, json=github_pr(9), status=201)
        assert _hand_off(forged, failed, automatic=False).action == "opened"


def test_the_ephemeral_credential_helper_gives_git_the_token_and_no_other_helper_is_asked(tmp_path: Path) -> None:
    # The operator's own helper, configured globally, would store the token: the ephemeral one replaces it.
    stored = tmp_path / "stored"
    (tmp_path / ".gitconfig").write_text(f"[credential]\n\thelper = store --file {stored}\n")
    # Real git asks as it would for an https push: the token comes from that process's variables alone.
    asked = subprocess.run(["git", "credential", "fill"], input="protocol=https\nhost=gitlab.com\n\n",
                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                                                **token_env("gitlab", TOKEN)}, check=True)
    assert f"username=oauth2\npassword={TOKEN}\n" in asked.stdout
    subprocess.run(["git", "credential", "approve"], input=asked.stdout, text=True, check=True,
                   env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **token_env("gitlab", TOKEN)})
    assert not stored.exists()  # no helper but the ephemeral one was told the token


def test_body_lists_each_prompt_its_attempts_links_verifier_and_cost() -> None:
    report = _report()
    body = body_of(report, _page, "awp/demo/handoff")
    assert title_of(report) == "AWP demo: 2/2 prompts completed (packet run pr-0001)"
    assert "### 01 Write the greeting: completed" in body and "### 02 Write the changelog: completed" in body
    assert body.count("http://pages.test/attempts/") == 3
    assert "| [pr-0001.02.a1](http://pages.test/attempts/pr-0001.02.a1) | run | verification_failed " \
           "(verification_failed) | simulated/–/simulated-demo | 1.5 s | not reported |" in body
    assert "cost $0.0300" in body and "Verifier: no report." in body


def test_handoff_settings_are_strict() -> None:
    with pytest.raises(ValidationError, match="neither `owner/name`"):
        HandoffSpec(forge="github", project="just-a-name", account="a")
    with pytest.raises(ValidationError, match=r"names \{run\}"):
        HandoffSpec(forge="github", project="o/r", account="a", branch="awp/{run}")
    with pytest.raises(ValidationError, match="carries a credential"):
        HandoffSpec(forge="gitlab", project="g/r", account="a", api_url="https://u:p@gitlab.example/api/v4")
    with pytest.raises(ValidationError, match="Extra inputs"):
        HandoffSpec.model_validate({"forge": "github", "project": "o/r", "account": "a", "token": "x"})
    spec = HandoffSpec(forge="github", project="o/r", account="a", branch="awp/{packet}/{packet_run}")
    assert spec.head_branch("de mo", "pr-1") == "awp/de-mo/pr-1"


def test_plan_shows_the_hand_off_and_awp_handoff_refuses_what_it_cannot_hand_off(forged: ForgeDemo,
                                                                                demo_copy: Path) -> None:
    from click.testing import CliRunner

    from awp_pipelines import api
    from awp_pipelines.cli import cli

    assert api.plan(forged.packet).handoff["docs"].project == "acme/docs"
    shown = CliRunner().invoke(cli, ["plan", str(forged.packet)], catch_exceptions=False)
    assert ("hand-off of docs: github pull request acme/docs: awp/demo/handoff → the base branch via remote "
            "origin, token of account forge-bot, when completed") in " ".join(shown.output.split())
    none_yet = CliRunner().invoke(cli, ["handoff", str(forged.packet)], catch_exceptions=False)
    assert none_yet.exit_code == 2 and "no packet run of demo in this instance yet" in none_yet.output
    plain = demo_copy.parent / "plain"
    subprocess.run(["cp", "-r", str(REPO_ROOT / "assets" / "demo"), str(plain)], check=True)
    refused = CliRunner().invoke(cli, ["handoff", str(plain)], catch_exceptions=False)
    assert refused.exit_code == 2 and "no repo of the packet has a `handoff:`" in refused.output


def test_a_remote_repo_hands_off_its_packet_run_branch_as_another_host_pushed_it(
        tmp_path: Path, make_git_repo: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from awp_pipelines.core.engine.remote import RemoteTrees, run_branch

    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(make_git_repo(tmp_path / "seed")), str(bare)], check=True)
    root = tmp_path / "travel"
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(f"name: travel\nrepos:\n  app:\n    remote: {{url: '{bare}', branch: main}}\n"
                                      "    handoff: {forge: github, project: acme/docs, account: forge-bot}\n")
    providers = tmp_path / "providers.yaml"
    providers.write_text(f"accounts: {{forge-bot: {{provider: github, credential_env: {TOKEN_VAR}}}}}\n")
    # Host A works on the packet run's branch and pushes; host B (this one) has an older clone of it.
    monkeypatch.setenv("AWP_WORK_ROOT", str(tmp_path / "host-b"))
    host_b = RemoteTrees(load_packet(root), "pr-0001")
    host_b.sync([tmp_path / "host-b" / "travel" / "app"])
    monkeypatch.setenv("AWP_WORK_ROOT", str(tmp_path / "host-a"))
    clone_a = tmp_path / "host-a" / "travel" / "app"
    RemoteTrees(load_packet(root), "pr-0001").sync([clone_a])
    (clone_a / "work.md").write_text("work\n")
    git_out(clone_a, "add", "work.md")
    git_out(clone_a, "commit", "--quiet", "-m", "work on host A")
    git_out(clone_a, "push", "--quiet", "origin", f"HEAD:refs/heads/{run_branch('travel', 'pr-0001')}")
    monkeypatch.setenv("AWP_WORK_ROOT", str(tmp_path / "host-b"))
    with responses.RequestsMock() as forge:
        forge.get(GITHUB_PULLS, json=[])
        forge.post(GITHUB_PULLS, json=github_pr(2), status=201)
        [result] = hand_off(load_packet(root), load_catalog(providers), _report(), _page)
        base = sent(forge.calls[1])["base"]
    on_remote = git_out(bare, "rev-parse", "refs/heads/awp/travel/handoff")
    assert result.action == "opened" and base == "main"
    assert on_remote == result.commit == git_out(clone_a, "rev-parse", "HEAD")  # host A's tip, not B's stale one


def test_lint_names_a_hand_off_account_missing_from_providers_yaml(forged: ForgeDemo) -> None:
    from awp_pipelines.core.lint import lint_packet

    missing = [f for f in lint_packet(forged.packet, load_catalog(None)).findings if f.kind == "unknown_account"]
    assert [(f.key, "'forge-bot' of repo docs" in f.message) for f in missing] == [("repos.docs.handoff.account", True)]
    assert missing[0].line == next(n for n, line in enumerate((forged.packet / "packet.yaml").read_text().splitlines(),
                                                               1) if "account: forge-bot" in line)
    assert not [f for f in lint_packet(forged.packet, load_catalog(forged.providers)).findings
                if f.kind == "unknown_account"]


def test_what_leaves_for_the_forge_is_redacted(forged: ForgeDemo) -> None:
    report = _report(state="failed")
    leaky = report.prompts[1].model_copy(update={"reason": f"the agent printed {TOKEN}"})
    report = report.model_copy(update={"prompts": [report.prompts[0], leaky]})
    with responses.RequestsMock() as forge:
        forge.get(GITHUB_PULLS, json=[])
        forge.post(GITHUB_PULLS, json=github_pr(4), status=201)
        assert _hand_off(forged, report, automatic=False).action == "opened"
        body = sent(forge.calls[1])["body"]
    assert "the agent printed" in body and TOKEN not in body


def test_an_https_remote_gets_the_token_from_the_ephemeral_helper_and_keeps_no_trace(
        forged: ForgeDemo, tmp_path: Path) -> None:
    from local_servers import git_http

    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "--quiet", "--bare", str(forged.origin), str(served / "docs.git")], check=True)
    with git_http(served, TOKEN) as (prefix, users), responses.RequestsMock() as forge:
        git_out(forged.workspace, "remote", "set-url", "origin", f"{prefix}docs.git")
        forge.get(GITHUB_PULLS, json=[])
        forge.post(GITHUB_PULLS, json=github_pr(8), status=201)
        result = _hand_off(forged, _report())
    assert result.action == "opened", result.message
    assert git_out(served / "docs.git", "rev-parse", "refs/heads/awp/demo/handoff") == forged.head()
    assert users and set(users) == {"x-access-token"}  # the helper's answer, the token as its password
    config = (forged.workspace / ".git" / "config").read_text()
    assert TOKEN not in config and f"{prefix}docs.git" in config  # the remote URL as it was, no credential
