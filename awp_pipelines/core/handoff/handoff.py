"""Hand a packet run's work off: for each repo with a `handoff:`, push the work to the head branch and open the
pull request of that branch, or update the open one (found by its head branch) with a new title and body.

A failure loses nothing: the packet run's commits stay in the tree, and the result says in one line what failed
(the push and git's words, or the API call, its HTTP status and the forge's message), redacted. `awp handoff`
tries again.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from awp_pipelines.core.engine.remote import run_branch
from awp_pipelines.core.engine.status_report import StatusReport
from awp_pipelines.core.handoff.body import PageUrl, body_of, title_of
from awp_pipelines.core.handoff.forges import Forge, ForgeError, forge_for
from awp_pipelines.core.handoff.push import fetch_branch, push_branch, token_env
from awp_pipelines.core.packet.model.handoff import HandoffSpec
from awp_pipelines.core.packet.packet import Packet, Repo
from awp_pipelines.core.packet.providers_config import Catalog
from awp_pipelines.core.records.handoff_record import HandoffResult
from awp_pipelines.core.records.redact import Redactor, redact
from awp_pipelines.core.records.workspace import WorkspaceError, is_git_repo


class HandoffError(RuntimeError):
    """A hand-off that cannot start: its account, its token, its tree."""


ForgeFactory = Callable[[HandoffSpec, str], Forge]


def hand_off(packet: Packet, catalog: Catalog, report: StatusReport, page_url: PageUrl, *, automatic: bool = True,
             forge: ForgeFactory = forge_for) -> list[HandoffResult]:
    """Every repo's hand-off. `automatic` (a packet run that just ended) honours each repo's `when`; a person's
    `awp handoff` hands off whatever state the packet run is in."""
    results = []
    for repo in packet.repos.values():
        if repo.handoff is None or report.packet_run is None:
            continue
        results.append(_one(packet, catalog, repo, repo.handoff, report, page_url, automatic, forge))
    return results


def _one(packet: Packet, catalog: Catalog, repo: Repo, spec: HandoffSpec, report: StatusReport,
         page_url: PageUrl, automatic: bool, forge: ForgeFactory) -> HandoffResult:
    packet_run = report.packet_run or ""
    branch = spec.head_branch(packet.name, packet_run)
    at = datetime.now(UTC).isoformat(timespec="seconds")
    result = HandoffResult(repo=repo.name, forge=spec.forge, branch=branch, action="failed", at=at)
    if automatic and spec.when == "completed" and report.state != "completed":
        return result.model_copy(update={"action": "skipped", "message": f"the packet run is {report.state} and "
                                         f"`when` is completed: `awp handoff {packet.root}` hands it off as it is"})
    token: str | None = None
    try:
        token = _token(catalog, spec)
        commit = _push(packet, repo, spec, packet_run, branch, token)
        client = forge(spec, token)
        # What leaves for the forge is redacted of every account's credential, as a page is.
        redactor = Redactor.for_catalog(catalog).with_values([token])
        title, body = redactor(title_of(report)), redactor(body_of(report, page_url, branch))
        found = client.find_open(branch)
        if found is None:
            opened = client.create(branch, _base_branch(repo, spec), title, body, spec.draft)
            return result.model_copy(update={"action": "opened", "url": opened.url, "number": opened.number,
                                             "commit": commit})
        updated = client.update(found.number, title, body, spec.draft)
        return result.model_copy(update={"action": "updated", "url": updated.url, "number": updated.number,
                                         "commit": commit})
    except (HandoffError, ForgeError, WorkspaceError) as err:
        return result.model_copy(update={"message": redact(" ".join(str(err).split()), [token] if token else [])})


def _token(catalog: Catalog, spec: HandoffSpec) -> str:
    account = catalog.accounts.get(spec.account)
    if account is None:
        raise HandoffError(f"account {spec.account!r} is not in providers.yaml: add it with the variable that "
                           "holds the forge token (`credential_env`)")
    if not account.credential_env:
        raise HandoffError(f"account {spec.account!r} names no `credential_env`: the forge token's variable")
    secrets = catalog.account_secrets(spec.account)
    if account.credential_env not in secrets:
        raise HandoffError(f"{account.credential_env} (account {spec.account}'s credential) is not set in AWP's "
                           "environment")
    return secrets[account.credential_env]


def _push(packet: Packet, repo: Repo, spec: HandoffSpec, packet_run: str, branch: str, token: str) -> str:
    if not is_git_repo(repo.path):
        raise HandoffError(f"{repo.path} is not a git repository: nothing to push")
    env = token_env(spec.forge, token)
    # A remote repo's work is on the packet run's own branch of its remote, maybe pushed from another host.
    source = fetch_branch(repo.path, spec.remote, run_branch(packet.name, packet_run), env) if repo.remote else "HEAD"
    try:
        return push_branch(repo.path, spec.remote, source, branch, env)
    except WorkspaceError as err:
        raise HandoffError(f"push to {spec.remote} {branch} failed: {_git_words(err.detail)}") from None


def _git_words(detail: str) -> str:
    """Git's reason, without its hints and the `To <url>` line: the line must stay one line."""
    kept = [line.strip() for line in detail.splitlines()
            if line.strip() and not line.startswith(("hint:", "To "))]
    return " ".join(kept) or detail

def _base_branch(repo: Repo, spec: HandoffSpec) -> str:
    return spec.base or (repo.remote.branch if repo.remote is not None else "main")
