"""Where an Attempt's page is (`awp serve`): the base URL from AWP_PAGE_URL, default the local server `make ui`
starts. The asset's metadata, the run's log and the Attempt history link there."""

from __future__ import annotations

import os
from urllib.parse import quote

PAGE_URL_ENV = "AWP_PAGE_URL"
DEFAULT_PAGE_PORT = 3001
DEFAULT_PAGE_URL = f"http://127.0.0.1:{DEFAULT_PAGE_PORT}"


def page_base() -> str:
    return (os.environ.get(PAGE_URL_ENV) or DEFAULT_PAGE_URL).rstrip("/")


def attempt_page_url(attempt: str) -> str:
    return f"{page_base()}/attempts/{quote(attempt, safe='')}"
