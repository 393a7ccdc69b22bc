"""Cooldowns and usage live in the Dagster instance's storage: a fresh process honours them.

Each step runs in its own Python process on the same instance folder (SQLite), or on the same
PostgreSQL database, so nothing can be shared through memory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from e2e_support import postgres_instance_dir  # noqa: E402

_SCRIPT = """
import sys
from pathlib import Path
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance
from awp_pipelines.orchestration.ledger.ledger import now_ms
from awp_pipelines.core.decisions.rotation import choose_account, cooldown_for

home, action = Path(sys.argv[1]), sys.argv[2]
instance = open_instance(home, home)
store = ledger_of(instance)
if action == "limit":
    failure = FailureEnvelope.for_class("provider_rate_limit", "usage limit", suggested_delay_ms=3_600_000)
    store.rest(cooldown_for("acct-a", failure, 60, now_ms()))
    store.record_use("acct-a", now_ms())
elif action == "choose":
    facts = store.availability(["acct-a", "acct-b"], now_ms())
    choice = choose_account(["acct-a", "acct-b"], "fill_first", now_ms=facts.now_ms, cooldowns=facts.cooldowns,
                            usage=facts.usage)
    used = facts.usage
    usage = used["acct-a"].attempts if used else 0
    print(f"{choice.account}|{usage}|{choice.reason}")
instance.dispose()
"""


def _step(home: Path, action: str) -> str:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(home), action], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _fresh_process_honours_the_cooldown(home: Path) -> None:
    assert _step(home, "choose").split("|")[:2] == ["acct-a", "0"]  # nothing stored yet
    _step(home, "limit")
    account, usage, reason = _step(home, "choose").split("|")
    assert account == "acct-b"
    assert usage == "1"
    assert "acct-a cooling down" in reason


def test_cooldown_set_by_one_process_is_honoured_by_another_on_sqlite(tmp_path: Path) -> None:
    _fresh_process_honours_the_cooldown(tmp_path / "home")


@pytest.mark.postgres
def test_cooldown_set_by_one_process_is_honoured_by_another_on_postgres(
        tmp_path: Path, fresh_pg_database: sa.URL) -> None:
    _fresh_process_honours_the_cooldown(postgres_instance_dir(tmp_path / "home", fresh_pg_database))
