"""Secrets at the boundary: an account's literal credential (any account of the catalog, not only the one in
use) and pattern secrets, echoed by a verifier or written in a commit message, never reach a git object, the
Attempt record or the event log. And `awp run`'s check refuses a packet that lint finds a secret in."""

from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from reliability.canaries import CANARY_IN_USE, CANARY_OTHER, CANARY_PROVIDER, PATTERN_SECRET, PROVIDERS, SECRETS

from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget
from awp_pipelines.core.engine.attempts import AttemptSpec, execute_attempt
from awp_pipelines.core.lint import lint_packet, refuse_secrets
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN, Catalog, load_catalog
from awp_pipelines.core.planning.plan import PlanContext, build_plan
from awp_pipelines.core.providers.registry import adapter_for
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.redact import REDACTED, Redactor


def write_packet(root: Path, make_git_repo: Callable[[Path], Path]) -> Path:
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(textwrap.dedent("""\
        name: leaky
        provider: sim-keyed
        model: sim-keyed-1
        accounts: [in-use]
        repos:
          app: {path: ./workspace, default: true}
        """))
    (root / "prompts").mkdir()
    # The secrets are built into the front matter at runtime; a real packet would get them from an agent or
    # a tool's output (this test is about the boundary, not about where they came from).
    (root / "prompts" / "01_write.prompt.md").write_text(textwrap.dedent(f"""\
        ---
        id: "01"
        commit: "feat: notes (in use {CANARY_IN_USE}, other {CANARY_OTHER})"
        verify:
          files_exist: [notes.md]
          commands:
            - exec: echo
              args: ["{CANARY_OTHER}", "{CANARY_PROVIDER}"]
        simulate:
          attempts:
            - writes: [{{path: notes.md, text: "notes\\n"}}]
        ---
        Write notes.
        """))
    (root / "prompts" / "02_check.prompt.md").write_text(textwrap.dedent(f"""\
        ---
        id: "02"
        verify:
          commands:
            - exec: sh
              args: ["-c", "echo token leaked: $1 $2; exit 1", "sh", "{CANARY_IN_USE}", "{PATTERN_SECRET}"]
              fault_exit_codes: [1]
        ---
        Check.
        """))
    return root


def run_prompt(root: Path, catalog: Catalog, prompt_id: str, tmp_path: Path) -> tuple[AttemptRecord, Path]:
    """One Attempt as the asset's compute runs it, with the boundary redactor it is meant to pass."""
    packet = load_packet(root)
    plan = next(p for p in build_plan(packet, PlanContext(catalog=catalog)).prompts if p.id == prompt_id)
    prompt = packet.prompt(prompt_id)
    identity = AttemptIdentity(attempt_id=f"pr-t.{prompt_id}.a1", agent_run=f"pr-t.{prompt_id}", number=1,
                               packet=packet.name, packet_run="pr-t", prompt=prompt_id, mode="run")
    target = AttemptTarget(provider=plan.provider, provider_kind="simulated", account="in-use",
                           model=plan.model, reason="test")
    redactor = Redactor.for_catalog(catalog)
    events = tmp_path / "events" / f"{prompt_id}.jsonl"
    sink = EventSink(events, identity.attempt_id, secrets=redactor.literals)
    spec = AttemptSpec(packet=packet, prompt=prompt, plan=plan, identity=identity, target=target,
                       simulate=prompt.front.simulate, secret_env=catalog.account_secrets("in-use"),
                       redactor=redactor)
    return execute_attempt(spec, adapter_for(catalog.providers[plan.provider]), sink), events


def git_objects(repo: Path) -> str:
    done = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo, check=True,
                          capture_output=True)
    return done.stdout.decode("utf-8", errors="replace")


def leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def test_canaries_never_reach_git_objects_records_or_events(
        tmp_path: Path, make_git_repo: Callable[[Path], Path], canaries: None,
        reliability_row: Callable[..., None]) -> None:
    root = write_packet(tmp_path / "packet", make_git_repo)
    providers = tmp_path / "providers.yaml"
    providers.write_text(PROVIDERS)
    catalog = load_catalog(providers)

    first, first_events = run_prompt(root, catalog, "01", tmp_path)
    second, second_events = run_prompt(root, catalog, "02", tmp_path)

    assert first.result == "completed" and first.commits[0].status == "committed"
    assert second.result == "verifier_fault"
    # The secrets really went through the boundary: the redaction marks are where they were.
    message = subprocess.run(["git", "log", "-1", "--format=%B"], cwd=root / "workspace", check=True,
                             capture_output=True, text=True).stdout
    assert f"in use {REDACTED}, other {REDACTED}" in message
    assert REDACTED in second.failure.message and "token leaked" in second.failure.message
    labels = [item.label for item in first.verifier.items]
    assert f"command: echo {REDACTED} {REDACTED}" in labels

    places = {
        "git objects": git_objects(root / "workspace"),
        "record 01": first.model_dump_json(),
        "record 02": second.model_dump_json(),
        "events 01": first_events.read_text(),
        "events 02": second_events.read_text(),
    }
    leaked = {place: leaks(text) for place, text in places.items() if leaks(text)}
    reliability_row("secrets: canaries in verifier output, argv, commit message", tries=len(places),
                    survived=len(places) - len(leaked), secrets_leaked=sum(map(len, leaked.values())),
                    note="git objects, Attempt records, event logs")
    assert not leaked


def test_the_redactor_knows_every_account_of_the_catalog_read_at_call_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, canaries: None) -> None:
    providers = tmp_path / "providers.yaml"
    providers.write_text(PROVIDERS)
    catalog = load_catalog(providers)
    redactor = Redactor.for_catalog(catalog)
    assert set(redactor.literals) >= {CANARY_IN_USE, CANARY_OTHER, CANARY_PROVIDER}
    monkeypatch.delenv("AWP_TEST_CANARY_OTHER")
    assert CANARY_OTHER not in Redactor.for_catalog(catalog).literals


def test_the_redactor_walks_dicts_lists_and_models() -> None:
    redactor = Redactor((CANARY_OTHER,))
    data = {"a": [f"x {CANARY_OTHER}", (PATTERN_SECRET, 3)], "n": 1, "token": "plain"}
    assert redactor.obj(data) == {"a": [f"x {REDACTED}", (REDACTED, 3)], "n": 1, "token": REDACTED}
    assert redactor(f"{CANARY_OTHER}!") == f"{REDACTED}!"


def secret_packet(tmp_path: Path, body: str) -> Path:
    root = tmp_path / "p"
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text("name: p\nprovider: simulated\n")
    (root / "prompts" / "01_a.prompt.md").write_text(f"---\nid: \"01\"\n---\nline one\n{body}\n")
    return root


def test_refuse_secrets_names_the_file_and_line_lint_reports(tmp_path: Path) -> None:
    root = secret_packet(tmp_path, f"use {PATTERN_SECRET} here")
    with pytest.raises(PacketError) as caught:
        refuse_secrets(load_packet(root))
    err = caught.value
    assert (Path(err.file).name, err.line) == ("01_a.prompt.md", 5)
    assert err.message == "refusing to run: a anthropic key is written on line 5"
    assert PATTERN_SECRET not in str(err)
    lint = lint_packet(root, BUILTIN)
    assert [(f.kind, f.line) for f in lint.findings if f.kind == "secret_in_packet"] == [("secret_in_packet", 5)]


def test_refuse_secrets_lets_a_clean_packet_run(tmp_path: Path) -> None:
    refuse_secrets(load_packet(secret_packet(tmp_path, "api_key: ${ANTHROPIC_API_KEY}")))
