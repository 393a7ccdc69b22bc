"""Fixtures of the reliability suite; the summary table's hooks are registered by tests/conftest.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from reliability.canaries import ENV
from reliability.summary import ROW_KEY, make_row


@pytest.fixture
def reliability_row(request: pytest.FixtureRequest) -> Callable[..., None]:
    """reliability_row(fault, tries=, survived=, records_lost=, ..., seconds=, note=): one row of the table."""

    def record(fault: str, **values: Any) -> None:
        request.node.user_properties.append((ROW_KEY, make_row(fault, **values)))

    return record


@pytest.fixture
def canaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The canary credentials (reliability/canaries.py) in the environment, where the catalog's accounts read them."""
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
