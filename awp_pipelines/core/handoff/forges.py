"""The forges' pull-request APIs over `requests`: find the open one of a head branch, open one, update one.

GitHub's REST API (pulls) and GitLab's API v4 (merge requests). A refusal is a `ForgeError` naming what failed,
the HTTP status and the forge's own message, the token redacted from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import requests

from awp_pipelines.core.packet.model.handoff import HandoffSpec
from awp_pipelines.core.records.redact import redact

_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class PullRequest:
    number: int  # GitHub's number, GitLab's iid: what the URL shows
    url: str  # the web page reviewers open


class ForgeError(RuntimeError):
    """One line: what failed, the HTTP status (None: no answer) and the forge's message, redacted."""

    def __init__(self, what: str, status: int | None, message: str, token: str | None = None) -> None:
        self.what = what
        self.status = status
        self.message = redact(message, [token] if token else []).strip()
        code = f"HTTP {status}" if status is not None else "no answer"
        super().__init__(f"{what}: {code}: {self.message or 'no message'}")


class Forge(Protocol):
    def find_open(self, head: str) -> PullRequest | None: ...

    def create(self, head: str, base: str, title: str, body: str, draft: bool) -> PullRequest: ...

    def update(self, number: int, title: str, body: str, draft: bool) -> PullRequest: ...


class _Client:
    """One session with the token in its headers; every answer checked the same way."""

    def __init__(self, api: str, headers: dict[str, str], token: str) -> None:
        self._api = api
        self._token = token
        self._session = requests.Session()
        self._session.headers.update(headers)

    def call(self, what: str, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._session.request(method, self._api + path, timeout=_TIMEOUT_S, **kwargs)
        except requests.RequestException as err:
            raise ForgeError(what, None, str(err), self._token) from None
        if not response.ok:
            raise ForgeError(what, response.status_code, _message(response), self._token)
        return response.json()


def _message(response: requests.Response) -> str:
    """The forge's words: GitHub's `message` and `errors[].message`, GitLab's `message` or `error`."""
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    if not isinstance(data, dict):
        return str(data)[:300]
    parts = [str(data.get("message") or data.get("error") or "")]
    for error in data.get("errors") or []:
        parts.append(str(error.get("message") or error) if isinstance(error, dict) else str(error))
    return "; ".join(p for p in parts if p)[:500]


class GitHub:
    def __init__(self, spec: HandoffSpec, token: str) -> None:
        self._repo = f"/repos/{spec.project}"
        self._owner = spec.project.split("/", 1)[0]
        self._client = _Client(spec.api_root(), {"Authorization": f"Bearer {token}",
                                                 "Accept": "application/vnd.github+json",
                                                 "X-GitHub-Api-Version": "2022-11-28"}, token)

    def find_open(self, head: str) -> PullRequest | None:
        found = self._client.call("find the open pull request", "GET", f"{self._repo}/pulls",
                                  params={"head": f"{self._owner}:{head}", "state": "open"})
        return _github(found[0]) if found else None

    def create(self, head: str, base: str, title: str, body: str, draft: bool) -> PullRequest:
        return _github(self._client.call("open the pull request", "POST", f"{self._repo}/pulls",
                                         json={"title": title, "head": head, "base": base, "body": body,
                                               "draft": draft}))

    def update(self, number: int, title: str, body: str, draft: bool) -> PullRequest:
        del draft  # GitHub keeps a draft a draft: only a person marks it ready
        return _github(self._client.call(f"update pull request #{number}", "PATCH", f"{self._repo}/pulls/{number}",
                                         json={"title": title, "body": body}))


def _github(data: dict[str, Any]) -> PullRequest:
    return PullRequest(int(data["number"]), str(data["html_url"]))


class GitLab:
    def __init__(self, spec: HandoffSpec, token: str) -> None:
        self._project = f"/projects/{quote(spec.project, safe='')}"
        self._client = _Client(spec.api_root(), {"PRIVATE-TOKEN": token}, token)

    def find_open(self, head: str) -> PullRequest | None:
        found = self._client.call("find the open merge request", "GET", f"{self._project}/merge_requests",
                                  params={"source_branch": head, "state": "opened"})
        return _gitlab(found[0]) if found else None

    def create(self, head: str, base: str, title: str, body: str, draft: bool) -> PullRequest:
        return _gitlab(self._client.call("open the merge request", "POST", f"{self._project}/merge_requests",
                                         json={"source_branch": head, "target_branch": base,
                                               "title": _draft(title, draft),
                                               "description": body}))

    def update(self, number: int, title: str, body: str, draft: bool) -> PullRequest:
        # GitLab's draft is the title's prefix: a new title without it would mark the request ready.
        return _gitlab(self._client.call(f"update merge request !{number}", "PUT",
                                         f"{self._project}/merge_requests/{number}",
                                         json={"title": _draft(title, draft), "description": body}))


def _draft(title: str, draft: bool) -> str:
    return f"Draft: {title}" if draft else title


def _gitlab(data: dict[str, Any]) -> PullRequest:
    return PullRequest(int(data["iid"]), str(data["web_url"]))


def forge_for(spec: HandoffSpec, token: str) -> Forge:
    return GitHub(spec, token) if spec.forge == "github" else GitLab(spec, token)
